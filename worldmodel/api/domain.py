"""The domain contract: :class:`Domain`, one family of worlds behind the tasks that use it.

A task file names its domain (``domain = "toy"``, or ``"my_package.my_module:MyDomain"`` for one
defined outside the package); a Domain turns the task's sections into the world, its data sets,
its state sampler and its held-out sequences.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Schema
from ..errors import WorldModelError
from ..sequences import SPLITS, read_sequences, write_sequences
from .sampler import StateSampler
from .world import World

if TYPE_CHECKING:
    from ..tasks import Task


class Domain(ABC):
    """One family of worlds: what turns a task into what the core needs.

    Required: :meth:`build_world`, :meth:`sampler`, :meth:`generate`. Everything
    else has a default here, and every hook the engine and the commands read is
    declared on this class:

    * :attr:`schema` — the domain's own task sections and their keys;
    * :attr:`boundary` — the true-boundary kind the metrics use unless the task's
      ``[evaluate]`` says otherwise (``None``: the settings' default, ``"exact"``;
      ``"sampled"`` for worlds too large to enumerate, such as Othello);
    * :meth:`datasets`, :meth:`stream` — the training distributions, and a seeded
      stream of fresh sequences for ``[train] data = "stream"``;
    * :meth:`detour_plan` — the ``worldmodel detours`` test, if the world has one;
    * :meth:`extra_metrics` — world-specific evaluations run by ``evaluate``.

    Data layout: ``<data_dir>/<dataset>/{train,val,test}.txt``, one sequence per
    line. Most domains have a single dataset called ``"default"``; navigation has
    one per training distribution (shortest paths, noisy shortest paths, random
    walks), each trained into its own model.
    """

    #: The domain's own sections and their keys (checked when a task is loaded):
    #: section name -> schema (see :mod:`worldmodel.config`).
    schema: dict[str, Schema] = {"world": {}, "data": {}}
    #: The true-boundary kind for distinction recall when ``[evaluate] boundary`` is not set
    #: (``None``: exact, to length ``k``).
    boundary: str | None = None

    def __init__(self, task: "Task"):
        self.task = task
        self.cfg = task.config

    # -- the world -----------------------------------------------------------
    @abstractmethod
    def build_world(self) -> World:
        """Construct the world from ``self.task.section('world')``."""

    @cached_property
    def world(self) -> World:
        return self.build_world()

    @abstractmethod
    def sampler(self) -> StateSampler:
        """The state sampler used by compression and distinction."""

    # -- data ----------------------------------------------------------------
    def datasets(self) -> list[str]:
        """Names of the training distributions this domain can generate."""
        return ["default"]

    @abstractmethod
    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        """Generate ``{"train": [...], "val": [...], "test": [...]}`` for one dataset, seeded."""

    def stream(self, dataset: str):
        """A seeded :class:`~worldmodel.datastream.SequenceStream` of fresh training sequences
        of ``dataset``, or None when the dataset exists only as files (the default)."""
        return None

    def ensure_data(self, dataset: str | None = None, data_dir: str | Path | None = None,
                    force: bool = False) -> Path:
        """Generate a dataset's files unless they already exist; return its folder."""
        dataset = dataset or self.datasets()[0]
        if dataset not in self.datasets():
            raise WorldModelError(
                f"task {self.task.name}: unknown dataset {dataset!r} (known: {', '.join(self.datasets())})"
            )
        folder = self.task.data_dir(data_dir) / dataset
        if force or not all((folder / f"{s}.txt").exists() for s in SPLITS):
            from ..safety import claim

            # one writer per data folder: a second run waits, then finds the files written
            with claim(folder, "data folder", wait=True):
                if force or not all((folder / f"{s}.txt").exists() for s in SPLITS):
                    splits = self.generate(dataset)
                    for split in SPLITS:
                        write_sequences(folder / f"{split}.txt", splits[split])
        return folder

    def sequences(self, split: str, dataset: str | None = None,
                  data_dir: str | Path | None = None) -> list[list[str]]:
        folder = self.ensure_data(dataset, data_dir)
        return read_sequences(folder / f"{split}.txt", self.world, check=False)

    # -- extras --------------------------------------------------------------
    def detour_plan(self, dataset: str, trials: int, seed: int = 0, data_dir: str | Path | None = None):
        """``worldmodel detours`` for this world: a :class:`~worldmodel.detours.DetourPlan` of
        ``trials`` starts drawn with ``seed`` from ``dataset``'s held-out data, or ``None``
        when the world has no detour test (the default)."""
        return None

    def extra_metrics(self, model, dataset: str | None = None, data_dir: str | Path | None = None,
                      progress: bool = False) -> dict:
        """Domain-specific evaluations (e.g. navigation capabilities) on ``dataset``: name -> MetricResult."""
        return {}
