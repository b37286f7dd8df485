"""The one runner: a task, a model and settings in; the metrics' summary out.

    from worldmodel import evaluator, load_task
    task = load_task("toy-dfa")
    model = evaluator.build_model(task, checkpoint="runs/toy-dfa/checkpoint")
    settings = evaluator.settings_for(task, trials=50)
    summary = evaluator.evaluate(task, model, ["compression", "distinction"], settings)

The command line (``worldmodel evaluate``), the world commands and the reproduction
scripts all go through :func:`evaluate`; everything it needs is an explicit argument
(no argparse object travels below the command line).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .errors import WorldModelError

#: settings that command-line flags may override, by ``[evaluate]`` key
OVERRIDABLE = ("trials", "M", "k", "seed", "probe_sequences", "probe_epochs", "keep_top", "next_token_positions",
               "next_token_pooling")


def build_model(task, checkpoint: str | Path | None = None, model: str | None = None, seed: int = 0,
                device: str = "cpu"):
    """The model to evaluate: a checkpoint folder, ``"true"`` (the true world model) or ``"untrained"``."""
    from .models import HFModel, TrueWorldModel, Vocabulary

    world = task.world
    if checkpoint:
        from .checkpoints import load

        return load(checkpoint, world, device=device)
    if model == "true":
        return TrueWorldModel(world)
    if model == "untrained":
        return HFModel.untrained(Vocabulary(world.tokens, world.name), task.section("model"), seed=seed, device=device)
    raise WorldModelError("give --checkpoint DIR or --model true|untrained")


def settings_for(task, acceptance: str | None = None, epsilon: float | None = None, **overrides):
    """The task's ``[evaluate]`` settings with explicit overrides (``None`` values are ignored).

    ``overrides`` may set any of :data:`OVERRIDABLE`; ``acceptance`` (a spec such as
    ``"top-k:3"``) wins over ``epsilon``. The domain's ``boundary`` kind applies unless
    the task sets one.
    """
    from .acceptance import Epsilon, parse_acceptance
    from .metrics import Settings

    unknown = set(overrides) - set(OVERRIDABLE)
    if unknown:
        raise TypeError(f"settings_for() got unknown override(s) {sorted(unknown)}")
    cfg = dict(task.section("evaluate"))
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    settings = Settings.from_dict(cfg)
    if acceptance:
        settings.acceptance = parse_acceptance(acceptance)
    elif epsilon is not None:
        settings.acceptance = Epsilon(epsilon)
    boundary = getattr(task.domain, "boundary", None)
    if boundary and "boundary" not in cfg:
        settings.boundary = boundary
    return settings


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
    """Run ``metrics`` (names from :data:`worldmodel.metrics.ALL_METRICS`) and the domain's extras.

    ``dataset`` picks the held-out data of next-token, probe and the domain's extra
    metrics (default: the task's first dataset); ``data_dir`` where it lives. With
    ``out`` each metric's trials are logged beside it (a rerun resumes) and the summary
    is written there as JSON. ``extras=False`` skips the domain's extra metrics.
    Returns ``{"task", "model", "dataset", "settings", "metrics": {name: result dict}}``.

    With ``shard`` (several processes, :meth:`Shard.from_env`), every process runs its
    share of the compression, distinction and next-token trials (whole batches of
    ``batch_trials``, dealt round-robin) into its own part of the trial log; the main
    process merges the parts and computes the summary from all trials, so it equals
    a single-process run's, runs the probe and the domain's extras, writes ``out`` and
    returns the summary; the other processes return None. ``out`` is required (the
    processes meet through its files; on several machines it must be on a shared disk).
    """
    from . import metrics as M
    from .results import ShardedTrialLog, TrialLog, check_writable, merge_trial_logs, write_json_atomic

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
    results = {}
    source = getattr(model, "source", model.name)
    # the dataset is part of the header: a rerun on other data never resumes these trials
    base_settings = {"task": task.name, "model": source, "dataset": dataset, **settings.to_dict()}

    def path(name):
        return out.with_name(out.stem + f".{name}.trials.jsonl")

    def log(name):
        if out is None:
            return None
        return TrialLog(path(name), {**base_settings, "metric": name})

    def trial_metric(name, run):
        """Run a trial-based metric, sharded when asked; the result (main process) from all trials."""
        if shard is None:
            return run(log(name), progress)
        header = {**base_settings, "metric": name}
        part = ShardedTrialLog(path(name), header, shard.rank, shard.size)
        shard.barrier()                   # every process has read what is done before any writes
        run(part, progress and shard.main)
        part.close()
        shard.barrier()
        result = None
        if shard.main:
            merge_trial_logs(path(name), header)
            result = run(log(name), False)  # every trial is logged: this only aggregates
        shard.barrier()
        return result

    if "compression" in metrics:
        results["compression_precision"] = trial_metric(
            "compression", lambda lg, pr: M.compression(world, model, domain.sampler(), settings, lg, pr))
    if "distinction" in metrics:
        got = trial_metric("distinction", lambda lg, pr: M.distinction(world, model, domain.sampler(), settings, lg, pr))
        if main:
            results.update(got)
    if "next-token" in metrics:
        seqs = domain.sequences("test", dataset, data_dir)
        results["next_token"] = trial_metric(
            "next-token", lambda lg, pr: M.next_token(world, model, seqs, settings, lg, pr))
    if not main:
        shard.barrier()                   # wait while the main process runs the rest
        return None
    if "probe" in metrics:
        seqs = domain.sequences("train", dataset, data_dir)
        results["probe"] = M.probe(world, model, seqs, settings, progress)
    if extras:
        results.update(domain.extra_metrics(model, dataset=dataset, data_dir=data_dir, progress=progress))
    summary = {
        "task": task.name, "model": source, "dataset": dataset,
        "settings": settings.to_dict(),
        "metrics": {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in results.items()},
    }
    if out is not None:
        write_json_atomic(out, summary)
    if shard is not None:
        shard.barrier()
    return summary
