"""A world brought from Python: :class:`WorldDomain`, the domain behind :meth:`Task.from_world`.

It turns any :class:`~worldmodel.api.World` into a task's domain with no file and no registration:
the world is the one given, the data are the sequences given (or uniform random valid walks of the
world), and the sampler is the one given (or, for an :class:`~worldmodel.dfa.ExplicitDFA`, the
uniform-prefix sampler). The toy world (:mod:`worldmodel.worlds.toy`) is this domain with a seeded
random DFA for its world.

``[data]`` (walks, when no sequences are given): ``n_train`` (2000), ``n_val`` (200), ``n_test``
(200), ``min_len`` (4), ``max_len`` (24); walks are drawn from ``default_rng(seed + 1)``, the
training split first. Sampled prefixes are 1 to ``max_len // 2`` tokens long, leaving room for the
continuations inside the training lengths.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .api.domain import Domain
from .api.sampler import StateSampler
from .api.world import World
from .dfa import ExplicitDFA, is_valid, random_walk
from .errors import WorldModelError
from .sampling import ExplicitDFASampler
from .sequences import SPLITS

#: default split sizes of the random-walk data
SPLIT_SIZES = {"train": 2000, "val": 200, "test": 200}


class WorldDomain(Domain):
    """A domain around a given world, with given or random-walk data and a given or default sampler."""

    schema = {
        "world": {},
        "data": {"n_train": int, "n_val": int, "n_test": int, "min_len": int, "max_len": int},
    }

    def __init__(self, task, world: World | None = None, sampler: StateSampler | Callable | None = None,
                 data: dict | Callable | None = None):
        super().__init__(task)
        self._given_world = world
        self._given_sampler = sampler
        self._given_data = data

    def build_world(self) -> World:
        if self._given_world is None:
            raise WorldModelError(f"task {self.task.where}: no world was given")
        return self._given_world

    def lengths(self) -> tuple[int, int]:
        """``[data] min_len`` and ``max_len`` (the random walks' lengths), checked."""
        d = self.task.section("data")
        lo, hi = int(d.get("min_len", 4)), int(d.get("max_len", 24))
        if not 1 <= lo <= hi:
            raise WorldModelError(f"task {self.task.where}: need 1 <= min_len <= max_len")
        return lo, hi

    def sampler(self) -> StateSampler:
        given = self._given_sampler
        if isinstance(given, StateSampler):
            return given
        if given is not None:
            return given(self.world)
        if not isinstance(self.world, ExplicitDFA):
            raise WorldModelError(f"task {self.task.where}: the {self.world.name} world is not an ExplicitDFA; "
                                  "give Task.from_world a sampler")
        _, hi = self.lengths()
        # prefixes leave room for the sampled continuations inside the training lengths
        return ExplicitDFASampler(self.world, min_len=1, max_len=max(1, hi // 2))

    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        given = self._given_data
        if given is None:
            return self.random_walks()
        splits = given(self.task) if callable(given) else given
        if not isinstance(splits, dict) or set(splits) != set(SPLITS):
            raise WorldModelError(f"task {self.task.where}: data must give the splits {', '.join(SPLITS)}")
        out = {}
        for split in SPLITS:
            seqs = [list(s) for s in splits[split]]
            for i, seq in enumerate(seqs):
                self.world.check_tokens(seq, what=f"task {self.task.where} {split} sequence {i}")
                if not is_valid(self.world, seq):
                    raise WorldModelError(f"task {self.task.where}: {split} sequence {i} is not valid in the "
                                          f"{self.world.name} world")
            out[split] = seqs
        return out

    def random_walks(self) -> dict[str, list[list[str]]]:
        """Uniform random valid walks from the start, of ``[data]`` sizes and lengths, seeded by the task."""
        d = self.task.section("data")
        lo, hi = self.lengths()
        rng = np.random.default_rng(self.task.seed + 1)
        out = {}
        for split in SPLITS:
            n = int(d.get(f"n_{split}", SPLIT_SIZES[split]))
            out[split] = [list(random_walk(self.world, self.world.initial_state(), int(rng.integers(lo, hi + 1)), rng))
                          for _ in range(n)]
        return out
