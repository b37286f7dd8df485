"""The seating puzzle in likelihood mode: a sequence model over statement tokens.

Each statement is one token (``A_is_in_seat_1``); a training sequence is a run of
uniformly random valid statements from the start state (every statement consistent
with the ones before it). A GPT-2 trained on them is then a :class:`SequenceModel`
like any other and is evaluated by the core metrics (compression precision,
distinction precision and recall, next-token test, probe).

Task settings:

* ``[world]`` ``n`` — people and seats (3 in the paper);
* ``[data]`` ``n_train``, ``n_val``, ``n_test``, ``min_len``, ``max_len`` — sequence
  counts and lengths (statements per sequence, drawn uniformly);
* ``[sampler]`` ``max_statements`` (2) — states are reached by 1..max_statements
  random statements; ``max_prefix`` (12) — longest non-narrowing prefix drawn.
"""

from __future__ import annotations

import numpy as np

from ...errors import WorldModelError
from ...sampling import StateSampler
from ...api.domain import Domain
from .world import SeatingWorld, random_statements, two_prefixes_different_states, two_prefixes_same_state


class SeatingSampler(StateSampler):
    """Prefix pairs as in the paper's App. E.

    A state is the set of seatings left after 1..``max_statements`` uniform random
    valid statements. Its prefixes are built from statements that do not narrow it
    (true of every seating in it), drawn until they pin it down exactly. Compression
    pairs are two different such prefixes to one state; distinction pairs reach two
    different states.
    """

    def __init__(self, world: SeatingWorld, max_statements: int = 2, max_prefix: int = 12):
        super().__init__(world)
        if max_statements < 1 or max_prefix < 1:
            raise WorldModelError("seating sampler: max_statements and max_prefix must be at least 1")
        self.max_statements = int(max_statements)
        self.max_prefix = int(max_prefix)

    def compression_pair(self, rng):
        p1, p2, q = two_prefixes_same_state(self.world, rng, self.max_statements, self.max_prefix)
        return self.make_pair(self.world.state_key(q), p1, p2)

    def distinction_pair(self, rng):
        p1, p2, q1, q2 = two_prefixes_different_states(self.world, rng, self.max_statements, self.max_prefix)
        return self.make_pair(f"{self.world.state_key(q1)}|{self.world.state_key(q2)}", p1, p2)


class SeatingDomain(Domain):
    """The seating puzzle: world, data of random valid statement sequences, sampler."""

    schema = {
        "world": {"n": int},
        "data": {"n_train": int, "n_val": int, "n_test": int, "min_len": int, "max_len": int},
        "sampler": {"max_statements": int, "max_prefix": int},
    }

    def build_world(self) -> SeatingWorld:
        w = self.task.section("world")
        n = w.get("n", 3)
        if isinstance(n, bool) or not isinstance(n, int):
            raise WorldModelError(f"task {self.task.where}: [world] n must be an integer, got {n!r}")
        return SeatingWorld(n)

    def sampler(self) -> SeatingSampler:
        s = self.task.section("sampler")
        return SeatingSampler(self.world, int(s.get("max_statements", 2)), int(s.get("max_prefix", 12)))

    def _lengths(self) -> tuple[int, int]:
        d = self.task.section("data")
        lo, hi = int(d.get("min_len", 1)), int(d.get("max_len", 16))
        if not 1 <= lo <= hi:
            raise WorldModelError(f"task {self.task.where}: [data] needs 1 <= min_len <= max_len")
        return lo, hi

    def generate(self, dataset: str):
        if dataset != "default":
            raise WorldModelError(f"task {self.task.name}: unknown dataset {dataset!r} (known: default)")
        d = self.task.section("data")
        lo, hi = self._lengths()
        rng = np.random.default_rng([self.task.seed, 6])
        out = {}
        for split, default in (("train", 20000), ("val", 1000), ("test", 1000)):
            count = int(d.get(f"n_{split}", default))
            if count < 1:
                raise WorldModelError(f"task {self.task.where}: [data] n_{split} must be at least 1")
            out[split] = [list(random_statements(self.world, int(rng.integers(lo, hi + 1)), rng)[0])
                          for _ in range(count)]
        return out
