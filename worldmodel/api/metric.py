"""The metric contract: :class:`MetricSpec`, one metric the evaluator can run, and :class:`MetricContext`.

A metric is registered once (:data:`worldmodel.registry.METRICS`, :func:`worldmodel.registry.register_metric`,
or an installed package's ``worldmodel.metrics`` entry point) and everything else follows from its spec:
the ``--metrics`` name and help, the result keys and the table columns, the held-out data it reads, and the
``[evaluate]`` settings it adds.

Its ``run`` function gets a :class:`MetricContext` and, for a trial-based metric, the trial log (a
:class:`worldmodel.results.TrialLog`, or ``None`` when nothing is logged), and returns
``{result key: MetricResult}``. A trial-based metric (``trials=True``) draws each trial from its own seed
(:func:`worldmodel.results.trial_seed`) and logs it as it finishes, so the evaluator can resume it and deal
its batches out to several processes; the others run once, on the main process, after the trial-based ones.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .domain import Domain
    from .model import SequenceModel
    from .sampler import StateSampler
    from .world import World


@dataclass
class MetricContext:
    """What a metric runs on: the task's domain and world, the model, the settings, the held-out data set."""

    task: Any
    domain: "Domain"
    world: "World"
    model: "SequenceModel"
    settings: Any                      #: a :class:`worldmodel.settings.Settings`
    dataset: str
    data_dir: Any = None
    progress: bool = True

    def sampler(self) -> "StateSampler":
        """A fresh state sampler of the domain."""
        return self.domain.sampler()

    def sequences(self, split: str) -> list[list[str]]:
        """The held-out (``"test"``) or training (``"train"``) sequences of the data set."""
        return self.domain.sequences(split, self.dataset, self.data_dir)


@dataclass(frozen=True)
class MetricSpec:
    """One metric: its names, where its results go, and the function that runs it.

    ``run`` is a callable or a ``"module:function"`` string (imported when the metric runs, so a
    registry entry costs nothing until it is used). ``columns`` lists the metric's result keys with
    their table labels, in order. ``data`` names the split it reads (``"test"``, ``"train"``) or is
    ``None``. ``table_rank`` orders the columns of summary tables. ``settings`` are the metric's own
    ``[evaluate]`` keys: ``{key: (type, default, help)}``; their values are in
    ``settings.extra[key]``. ``default``: run when ``--metrics`` is not given.
    """

    name: str
    run: str | Callable
    columns: tuple[tuple[str, str], ...]
    help: str = ""
    data: str | None = None
    trials: bool = True
    table_rank: int = 100
    settings: dict[str, tuple[type, Any, str]] = field(default_factory=dict)
    default: bool = True

    @property
    def keys(self) -> tuple[str, ...]:
        """The result keys this metric writes."""
        return tuple(k for k, _ in self.columns)

    def function(self) -> Callable:
        """The run function (imported now when ``run`` is a string)."""
        if callable(self.run):
            return self.run
        module, _, name = self.run.partition(":")
        return getattr(importlib.import_module(module), name)
