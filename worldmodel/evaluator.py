"""The one runner: a task, a model and settings in; the metrics' summary out.

    from worldmodel import evaluator, load_task
    task = load_task("toy-dfa")
    model = evaluator.build_model(task, checkpoint="runs/toy-dfa/checkpoint")
    settings = evaluator.settings_for(task, trials=50)
    summary = evaluator.evaluate(task, model, ["compression", "distinction"], settings)

``worldmodel evaluate`` and the reproduction scripts go through :func:`evaluate`; the
world commands build their models with :func:`build_model`. Everything either needs is an
explicit argument (no argparse object travels below the command line). The metrics are
the registered ones (:data:`worldmodel.registry.METRICS`): each is run by its spec, so a
metric added there (or by an installed package) runs here with no change to this module.
``task`` may be a task name or file, a :class:`~worldmodel.tasks.Task`, or a world or
domain built in Python (:func:`worldmodel.tasks.load_task`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .errors import WorldModelError

def build_model(task, checkpoint: str | Path | None = None, model: str | None = None, seed: int = 0,
                device: str = "cpu", missing: str = "error"):
    """The model to evaluate: a checkpoint folder, ``"true"`` (the true world model) or ``"untrained"``.

    ``missing`` (``"error"`` or ``"zero"``): what a checkpoint lacking world tokens gets,
    refusal or those tokens at probability 0 (:mod:`worldmodel.models.missing`).
    """
    from .models import HFModel, TrueWorldModel, Vocabulary
    from .tasks import load_task

    task = load_task(task)
    world = task.world
    if checkpoint:
        from .checkpoints import load

        return load(checkpoint, world, device=device, missing=missing)
    if model == "true":
        return TrueWorldModel(world)
    if model == "untrained":
        return HFModel.untrained(Vocabulary(world.tokens, world.name), task.section("model"), seed=seed, device=device)
    raise WorldModelError("give --checkpoint DIR or --model true|untrained")


def settings_for(task, acceptance: str | None = None, epsilon: float | None = None, **overrides):
    """The task's ``[evaluate]`` settings with explicit overrides (``None`` values are ignored).

    ``overrides`` may set any :class:`~worldmodel.settings.Settings` field or a registered
    metric's setting; ``acceptance`` (a spec such as ``"top-k:3"``) wins over ``epsilon``. The
    domain's :attr:`~worldmodel.api.Domain.boundary` kind applies unless the task sets one.
    """
    from .acceptance import Epsilon, parse_acceptance
    from .settings import Settings, metric_settings
    from .tasks import load_task

    task = load_task(task)
    known = {f for f in Settings.__dataclass_fields__ if f not in ("acceptance", "extra")} | set(metric_settings())
    unknown = set(overrides) - known
    if unknown:
        raise TypeError(f"settings_for() got unknown override(s) {sorted(unknown)}")
    cfg = dict(task.section("evaluate"))
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    settings = Settings.from_dict(cfg)
    if acceptance:
        settings.acceptance = parse_acceptance(acceptance)
    elif epsilon is not None:
        settings.acceptance = Epsilon(epsilon)
    boundary = task.domain.boundary
    if boundary and "boundary" not in cfg:
        settings.boundary = boundary
    return settings


def missing_tokens(model, world) -> list[str]:
    """The world tokens ``model`` lacks (scored at probability 0), in the world's order; [] for most models."""
    lacking = model.missing_tokens
    return [t for t in world.tokens if t in lacking]


@dataclass
class Shard:
    """This process's place in a sharded evaluation: ``rank`` of ``size`` processes.

    ``barrier`` blocks until every process reaches it. :meth:`from_env` builds one
    under ``accelerate launch`` or ``torchrun`` (``WORLD_SIZE`` > 1).
    """

    rank: int
    size: int
    barrier: Callable[[], None]

    @property
    def main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls) -> "Shard | None":
        """The shard of a distributed launch (a gloo process group for the barriers), or None."""
        size = int(os.environ.get("WORLD_SIZE", "1"))
        if size <= 1:
            return None
        import datetime

        import torch.distributed as dist

        if not dist.is_initialized():
            # gloo works on CPUs and GPUs alike; only barriers go through it (trials go through files)
            dist.init_process_group("gloo", timeout=datetime.timedelta(hours=48))
        return cls(dist.get_rank(), dist.get_world_size(), dist.barrier)


def local_device(device: str) -> str:
    """``cuda`` -> ``cuda:<LOCAL_RANK>`` in a distributed launch, so each process gets its own GPU."""
    if device == "cuda" and "LOCAL_RANK" in os.environ:
        return f"cuda:{int(os.environ['LOCAL_RANK'])}"
    return device


def evaluate(task, model, metrics: Sequence[str], settings, out: str | Path | None = None,
             dataset: str | None = None, data_dir: str | Path | None = None, progress: bool = True,
             extras: bool = True, shard: Shard | None = None) -> dict | None:
    """Run ``metrics`` (registered names: :func:`worldmodel.registry.metric_names`) and the domain's extras.

    ``dataset`` picks the held-out data of the metrics that read data and of the domain's
    extra metrics (default: the task's first dataset); ``data_dir`` where it lives. With
    ``out`` each trial-based metric's trials are logged beside it (a rerun resumes) and the
    summary is written there as JSON. ``extras=False`` skips the domain's extra metrics.
    Returns ``{"task", "model", "dataset", "settings", "metrics": {result key: result dict}}``,
    the results in registry order.

    With ``shard`` (several processes, :meth:`Shard.from_env`), every process runs its
    share of the trial-based metrics' trials (whole batches of ``batch_trials``, dealt
    round-robin) into its own part of the trial log; the main process merges the parts and
    computes the summary from all trials, so it equals a single-process run's, runs the
    other metrics and the domain's extras, writes ``out`` and returns the summary; the
    other processes return None. ``out`` is required (the processes meet through its files;
    on several machines it must be on a shared disk).

    ``out`` is claimed for the run (:func:`worldmodel.safety.claim`; by the main process of a
    sharded run), and so is each trial log: a second run on the same ``out`` stops with one
    line naming the first.
    """
    from .safety import claim

    main_process = shard is None or shard.size <= 1 or shard.main
    lock = claim(out, "--out") if out is not None and main_process else None
    try:
        return _evaluate(task, model, metrics, settings, out, dataset, data_dir, progress, extras, shard)
    finally:
        if lock is not None:
            lock.release()


def _evaluate(task, model, metrics, settings, out, dataset, data_dir, progress, extras, shard):
    from . import registry
    from .api.metric import MetricContext
    from .results import ShardedTrialLog, TrialLog, check_writable, merge_trial_logs, write_json_atomic
    from .tasks import load_task

    task = load_task(task)
    specs = [s for s in registry.metrics() if s.name in metrics]
    unknown = sorted(set(metrics) - {s.name for s in specs})
    if unknown:
        raise WorldModelError(f"unknown metric(s) {', '.join(unknown)} (known: {', '.join(registry.metric_names())})")
    domain = task.domain
    world = domain.world
    out = Path(out) if out is not None else None
    dataset = dataset or domain.datasets()[0]
    if shard is not None and shard.size > 1:
        if out is None:
            raise WorldModelError("a sharded evaluation (several processes) needs --out: the processes meet in its files")
    else:
        shard = None
    if out is not None:
        check_writable(out, "--out")  # before any work: a bad output path fails at once
    main = shard is None or shard.main
    source = model.label
    # the dataset is part of the header: a rerun on other data never resumes these trials; so is the
    # length the model is read to (prefix + continuation stop there: metrics.length_bound)
    from .metrics import length_bound

    bound, bound_source = length_bound(model)
    lengths = {"length_bound": bound, "length_bound_source": bound_source}
    base_settings = {"task": task.name, "model": source, "dataset": dataset, **settings.to_dict(), **lengths}
    # and so are what draws the prefixes (the task's [world] and [sampler]) and the weights themselves:
    # a changed sampler or a model retrained under the same label starts afresh instead of resuming
    base_settings["task_sections"] = {k: task.section(k) for k in ("world", "sampler")}
    if model.fingerprint:
        base_settings["weights"] = model.fingerprint
    missing = missing_tokens(model, world)
    if missing:
        base_settings["missing_tokens"] = missing

    def context(progress_here: bool) -> MetricContext:
        return MetricContext(task, domain, world, model, settings, dataset, data_dir, progress_here)

    def path(name):
        return out.with_name(out.stem + f".{name}.trials.jsonl")

    def log(name):
        if out is None:
            return None
        return TrialLog(path(name), {**base_settings, "metric": name})

    def trial_metric(spec):
        """Run a trial-based metric, sharded when asked; the results (main process) from all trials."""
        run = spec.function()
        if shard is None:
            return _closing(run, context(progress), log(spec.name))
        header = {**base_settings, "metric": spec.name}
        part = ShardedTrialLog(path(spec.name), header, shard.rank, shard.size)
        shard.barrier()                   # every process has read what is done before any writes
        try:
            run(context(progress and shard.main), part)
        finally:
            part.close()
        shard.barrier()
        got = None
        if shard.main:
            merge_trial_logs(path(spec.name), header)
            got = _closing(run, context(False), log(spec.name))  # every trial is logged: this only aggregates
        shard.barrier()
        return got

    got: dict[str, dict] = {}
    for spec in specs:
        if spec.trials:
            got[spec.name] = trial_metric(spec)
    if not main:
        shard.barrier()                   # wait while the main process runs the rest
        return None
    for spec in specs:
        if not spec.trials:
            got[spec.name] = spec.function()(context(progress), None)
    results = {}
    for spec in specs:
        for key in spec.keys:
            if key not in got[spec.name]:
                raise WorldModelError(f"metric {spec.name!r} returned no {key!r} (it returned {sorted(got[spec.name])})")
            results[key] = got[spec.name][key]
    if extras:
        results.update(domain.extra_metrics(model, dataset=dataset, data_dir=data_dir, progress=progress))
    summary = {
        "task": task.name, "model": source, "dataset": dataset,
        **({"missing_tokens": missing} if missing else {}),
        "settings": settings.to_dict(), **lengths,
        "metrics": {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in results.items()},
    }
    if out is not None:
        write_json_atomic(out, summary)
    if shard is not None:
        shard.barrier()
    return summary


def _closing(run, ctx, log):
    """``run(ctx, log)``, the log closed (and its claim released) afterwards."""
    try:
        return run(ctx, log)
    finally:
        if log is not None:
            log.close()
