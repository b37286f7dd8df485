"""The toy world: a seeded random explicit DFA, trained on random valid walks.

It exercises the whole core (DFA, models, metrics, training, CLI) in seconds, with
no domain code. Task settings (``[world]``): ``n_states``, ``n_tokens``,
``reject_prob`` (share of transitions that go to the reject state); ``[data]``:
``n_train``, ``n_val``, ``n_test``, ``min_len``, ``max_len`` (walk lengths);
``[evaluate]``: prefix lengths for the sampler come from ``min_len``/``max_len``.
"""

from __future__ import annotations

import numpy as np

from ..dfa import ExplicitDFA, random_dfa, random_walk
from ..errors import WorldModelError
from ..sampling import ExplicitDFASampler
from ..tasks import Domain


class ToyDomain(Domain):
    """A random minimal DFA; data are uniform random valid walks from the start."""

    schema = {
        "world": {"n_states": int, "n_tokens": int, "reject_prob": float},
        "data": {"n_train": int, "n_val": int, "n_test": int, "min_len": int, "max_len": int},
    }

    def build_world(self) -> ExplicitDFA:
        w = self.task.section("world")
        try:
            n_states, n_tokens = int(w.get("n_states", 8)), int(w.get("n_tokens", 4))
        except (TypeError, ValueError):
            raise WorldModelError(f"task {self.task.path}: n_states and n_tokens must be integers") from None
        return random_dfa(n_states, n_tokens, self.task.seed, reject_prob=float(w.get("reject_prob", 0.4)),
                          name=self.task.name)

    def _lengths(self) -> tuple[int, int]:
        d = self.task.section("data")
        lo, hi = int(d.get("min_len", 4)), int(d.get("max_len", 24))
        if not 1 <= lo <= hi:
            raise WorldModelError(f"task {self.task.path}: need 1 <= min_len <= max_len")
        return lo, hi

    def sampler(self):
        lo, hi = self._lengths()
        # prefixes leave room for the sampled continuations inside the training lengths
        return ExplicitDFASampler(self.world, min_len=1, max_len=max(1, hi // 2))

    def generate(self, dataset: str):
        d = self.task.section("data")
        lo, hi = self._lengths()
        rng = np.random.default_rng(self.task.seed + 1)
        out = {}
        for split, default in (("train", 2000), ("val", 200), ("test", 200)):
            n = int(d.get(f"n_{split}", default))
            seqs = []
            for _ in range(n):
                walk = random_walk(self.world, self.world.initial_state(), int(rng.integers(lo, hi + 1)), rng)
                seqs.append(list(walk))
            out[split] = seqs
        return out
