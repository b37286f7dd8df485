"""``[train]``: every training setting, checked, and the fingerprint a resume must match.

The task schema of ``[train]`` is derived from :class:`TrainConfig`'s fields
(:data:`worldmodel.tasks.TRAIN`), so a setting is declared once, here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

from ..config import option
from ..errors import WorldModelError

if TYPE_CHECKING:
    from ..tasks import Task

PRECISIONS = ("fp32", "bf16", "fp16")
DATA_MODES = ("file", "stream")

@dataclass
class TrainConfig:
    """Every training setting, from the task's ``[train]`` section and overrides."""

    steps: int | None = option(1000, "optimiser steps (default: the task's [train] steps)")  # None: fitted to time_budget
    batch_size: int = option(32, "sequences per optimiser step and process")
    lr: float = option(1e-3, "peak learning rate")
    weight_decay: float = option(0.01, cli=False)
    warmup: int | None = option(None, cli=False)
    eval_every: int | None = option(None, cli=False)
    log_every: int | None = option(None, cli=False)
    keep: str = option("last", cli=False)
    seed: int = option(0, "training seed (default: the task's seed)")
    data: str = option("file", "train on train.txt (file, default) or on fresh seeded sequences every step (stream)",
                       choices=DATA_MODES)
    precision: str | None = option(None, "autocast precision (default: bf16 on CUDA, fp32 on CPU)",
                                   choices=PRECISIONS)      # None: bf16 on CUDA, fp32 elsewhere
    grad_accum: int = option(1, "split each batch into this many micro-batches (same update)")
    compile: bool = option(False, "torch.compile the model (falls back to eager on failure)")
    time_budget: float | None = option(None, "stop and save after this many seconds; without --steps the schedule "
                                             "is fitted to it", metavar="SECONDS")
    save_every: int | None = option(None, "steps between resume saves (default: every validation)")
    snapshots: bool = option(False, "keep a loadable checkpoint at step 0, every --save-every steps and at the end, "
                                    "in OUT/snapshots/step-N (for scripts/emergence.py)")
    data_workers: int | None = option(None, "processes generating streamed batches (default: 0 on CPU)")
    peak_flops: float | None = option(None, "device peak FLOP/s for MFU (default: measured by a matmul probe)")
    cpu_threads: int = option(1, "CPU intra-op threads while training (default: the task's [train] cpu_threads, "
                                 "1; 0: PyTorch's own). A seed gives the same weights only at the same N",
                              metavar="N")                  # fixed_cpu_threads

    @classmethod
    def from_task(cls, task: "Task", steps: int | None = None, seed: int | None = None,
                  overrides: dict | None = None) -> "TrainConfig":
        where = f"task {task.where} [train]"
        raw = {**task.section("train"), **{k: v for k, v in (overrides or {}).items() if v is not None}}
        known = {f.name for f in fields(cls)}
        bad = sorted(set(raw) - known)
        if bad:
            raise WorldModelError(f"{where}: unknown setting(s) {', '.join(bad)} (known: {', '.join(sorted(known))})")
        cfg = cls(**{"seed": task.seed, **raw})
        if seed is not None:
            cfg.seed = int(seed)
        if steps is not None:
            cfg.steps = steps
        elif cfg.time_budget is not None and "steps" not in (overrides or {}):
            cfg.steps = None            # fit the schedule to the budget
        cfg.check(where)
        return cfg

    def check(self, where: str) -> None:
        def whole(name, low):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise WorldModelError(f"{where}: {name} must be a whole number >= {low}, got {v!r}")

        if self.steps is not None:
            if not isinstance(self.steps, int) or isinstance(self.steps, bool) or self.steps < 1:
                raise WorldModelError(f"--steps must be at least 1, got {self.steps!r}")
        for name in ("batch_size", "grad_accum"):
            whole(name, 1)
        whole("cpu_threads", 0)
        for name in ("warmup", "eval_every", "log_every", "save_every", "data_workers"):
            if getattr(self, name) is not None:
                whole(name, 0 if name in ("warmup", "data_workers") else 1)
        if self.batch_size % self.grad_accum:
            raise WorldModelError(f"{where}: batch_size {self.batch_size} is not a multiple of grad_accum {self.grad_accum}")
        if self.keep not in ("last", "best"):
            raise WorldModelError(f"{where}: keep must be 'last' or 'best', got {self.keep!r}")
        if self.data not in DATA_MODES:
            raise WorldModelError(f"{where}: data must be 'file' or 'stream', got {self.data!r}")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise WorldModelError(f"{where}: precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise WorldModelError(f"{where}: {name} must be a number >= 0, got {v!r}")
        for name in ("time_budget", "peak_flops"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
                raise WorldModelError(f"--{name.replace('_', '-')} must be a positive number, got {v!r}")
        if self.steps is None and self.time_budget is None:
            raise WorldModelError("give --steps, or --time-budget to fit the steps to a time budget")
        for name in ("compile", "snapshots"):
            if not isinstance(getattr(self, name), bool):
                raise WorldModelError(f"{where}: {name} must be true or false, got {getattr(self, name)!r}")

    def fingerprint(self, task: "Task", dataset: str, processes: int) -> str:
        """What must match for a rerun to resume: every setting that changes the weights."""
        keep = {k: v for k, v in asdict(self).items()
                if k not in ("time_budget", "data_workers", "peak_flops", "compile", "save_every", "log_every",
                             "snapshots")}
        text = json.dumps({"task": task.config, "dataset": dataset, "processes": processes, **keep},
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]
