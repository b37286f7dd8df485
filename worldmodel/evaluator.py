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

from pathlib import Path
from typing import Sequence

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


def evaluate(task, model, metrics: Sequence[str], settings, out: str | Path | None = None,
             dataset: str | None = None, data_dir: str | Path | None = None, progress: bool = True,
             extras: bool = True) -> dict:
    """Run ``metrics`` (names from :data:`worldmodel.metrics.ALL_METRICS`) and the domain's extras.

    ``dataset`` picks the held-out data of next-token, probe and the domain's extra
    metrics (default: the task's first dataset); ``data_dir`` where it lives. With
    ``out`` each metric's trials are logged beside it (a rerun resumes) and the summary
    is written there as JSON. ``extras=False`` skips the domain's extra metrics.
    Returns ``{"task", "model", "dataset", "settings", "metrics": {name: result dict}}``.
    """
    from . import metrics as M
    from .results import TrialLog, check_writable, write_json_atomic

    domain = task.domain
    world = domain.world
    out = Path(out) if out is not None else None
    dataset = dataset or domain.datasets()[0]
    if out is not None:
        check_writable(out, "--out")  # before any work: a bad output path fails at once
    results = {}
    source = getattr(model, "source", model.name)
    # the dataset is part of the header: a rerun on other data never resumes these trials
    base_settings = {"task": task.name, "model": source, "dataset": dataset, **settings.to_dict()}

    def log(name):
        if out is None:
            return None
        return TrialLog(out.with_name(out.stem + f".{name}.trials.jsonl"), {**base_settings, "metric": name})

    if "compression" in metrics:
        results["compression_precision"] = M.compression(world, model, domain.sampler(), settings, log("compression"), progress)
    if "distinction" in metrics:
        results.update(M.distinction(world, model, domain.sampler(), settings, log("distinction"), progress))
    if "next-token" in metrics:
        seqs = domain.sequences("test", dataset, data_dir)
        results["next_token"] = M.next_token(world, model, seqs, settings, log("next-token"), progress)
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
    return summary
