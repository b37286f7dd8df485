"""The toy world: a seeded random explicit DFA, trained on random valid walks.

It exercises the whole core (DFA, models, metrics, training, CLI) in seconds, with
no domain code: it is :class:`~worldmodel.custom.WorldDomain` (random-walk data, the
uniform-prefix sampler) with a random DFA for its world. Task settings (``[world]``):
``n_states``, ``n_tokens``, ``reject_prob`` (share of transitions that go to the reject
state); ``[data]``: ``n_train``, ``n_val``, ``n_test``, ``min_len``, ``max_len`` (walk
lengths), ``skew`` (0.9: the ``skewed`` dataset's share of steps that take each state's
preferred token); sampled prefixes are 1 to ``max_len // 2`` tokens long.

Datasets: ``default``, walks choosing uniformly among the valid tokens at every step
(the true world model's distribution); ``skewed``, walks from a narrow policy: each
state has one preferred valid token (drawn once from the task seed), taken with
probability ``skew``, any other valid token otherwise (uniformly). Both exist as
files and as a stream of fresh walks (``[train] data = "stream"``).
"""

from __future__ import annotations

import numpy as np

from ..custom import WorldDomain
from ..datastream import PackedSequences, SequenceStream
from ..dfa import ExplicitDFA, random_dfa
from ..errors import WorldModelError


#: Third seed word of the training stream, so streamed walks never reuse the files' draws.
STREAM_TAG = 0x7051
#: Seed word of the skewed dataset's files (another stream of the same walks).
SKEWED_FILES_TAG = 0x5E3D


class WalkStream(SequenceStream):
    """Fresh random walks from the start state, block by block, on the DFA's table.

    Each step draws one uniform ``u`` per walk: with ``skew = None`` the walk takes
    valid option ``floor(u * n_valid)`` (uniform over valid tokens); with a skew it
    takes the state's preferred token when ``u < skew`` and otherwise one of the other
    valid tokens, uniformly (``(u - skew) / (1 - skew)`` picks it). Lengths are uniform
    in ``[min_len, max_len]``. Block ``i`` is a pure function of ``(seed, tag, i)``.
    """

    def __init__(self, world: ExplicitDFA, seed: int, min_len: int, max_len: int,
                 skew: float | None = None, preferred: np.ndarray | None = None, tag: int = STREAM_TAG):
        self.delta = world.delta
        self.start = world.start
        self.seed, self.tag = int(seed), int(tag)
        self.min_len, self.max_len = int(min_len), int(max_len)
        self.skew, self.preferred = skew, preferred
        n, V = self.delta.shape
        valid = self.delta >= 0
        self.n_valid = valid.sum(axis=1)
        # options[s, j]: the j-th valid token of state s (then the rest, never chosen)
        self.options = np.argsort(~valid, axis=1, kind="stable")
        if skew is not None:
            # the other valid tokens of each state, the preferred one left out
            others = np.where(valid & (np.arange(V)[None, :] != preferred[:, None]), 1, 0)
            self.others = np.argsort(-others, axis=1, kind="stable")
            self.n_others = others.sum(axis=1)

    def block(self, index: int, size: int) -> PackedSequences:
        rng = np.random.default_rng([self.seed, self.tag, int(index)])
        size = int(size)
        lengths = rng.integers(self.min_len, self.max_len + 1, size=size)
        u = rng.random((size, self.max_len))
        rows = np.full((size, self.max_len), -1, dtype=np.int64)
        state = np.full(size, self.start, dtype=np.int64)
        for t in range(self.max_len):
            if self.skew is None:
                pick = np.minimum((u[:, t] * self.n_valid[state]).astype(np.int64), self.n_valid[state] - 1)
                tok = self.options[state, pick]
            else:
                n_o = self.n_others[state]
                rest = np.clip((u[:, t] - self.skew) / (1.0 - self.skew), 0.0, 1.0 - 1e-12)
                j = np.minimum((rest * n_o).astype(np.int64), np.maximum(n_o - 1, 0))
                take_pref = (u[:, t] < self.skew) | (n_o == 0)
                tok = np.where(take_pref, self.preferred[state], self.others[state, j])
            live = t < lengths
            rows[live, t] = tok[live]
            state = np.where(live, self.delta[state, tok], state)
        return PackedSequences.from_padded(rows, pad=-1)


class ToyDomain(WorldDomain):
    """A random minimal DFA; data are random valid walks from the start (uniform or skewed)."""

    schema = {
        "world": {"n_states": int, "n_tokens": int, "reject_prob": float},
        "data": {**WorldDomain.schema["data"], "skew": float},
    }

    def build_world(self) -> ExplicitDFA:
        w = self.task.section("world")
        try:
            n_states, n_tokens = int(w.get("n_states", 8)), int(w.get("n_tokens", 4))
        except (TypeError, ValueError):
            raise WorldModelError(f"task {self.task.where}: n_states and n_tokens must be integers") from None
        return random_dfa(n_states, n_tokens, self.task.seed, reject_prob=float(w.get("reject_prob", 0.4)),
                          name=self.task.name)

    def datasets(self) -> list[str]:
        return ["default", "skewed"]

    def _skew(self) -> float:
        skew = self.task.section("data").get("skew", 0.9)
        if not isinstance(skew, (int, float)) or isinstance(skew, bool) or not 0.0 <= skew < 1.0:
            raise WorldModelError(f"task {self.task.where}: [data] skew must be a number in [0, 1), got {skew!r}")
        return float(skew)

    def preferred_tokens(self) -> np.ndarray:
        """Each state's preferred token (an index into ``world.tokens``) for the skewed walks."""
        delta = self.world.delta
        rng = np.random.default_rng([self.task.seed, SKEWED_FILES_TAG, 0])
        out = np.empty(delta.shape[0], dtype=np.int64)
        for s in range(delta.shape[0]):
            valid = np.flatnonzero(delta[s] >= 0)
            out[s] = valid[int(rng.integers(len(valid)))]
        return out

    def stream(self, dataset: str, tag: int = STREAM_TAG) -> WalkStream:
        """Fresh walks of ``dataset`` every step (``[train] data = "stream"``)."""
        lo, hi = self.lengths()
        if dataset == "skewed":
            return WalkStream(self.world, self.task.seed, lo, hi, self._skew(), self.preferred_tokens(), tag=tag)
        return WalkStream(self.world, self.task.seed, lo, hi, tag=tag)

    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        if dataset != "skewed":
            return super().generate(dataset)
        d = self.task.section("data")
        stream = self.stream(dataset, tag=SKEWED_FILES_TAG)
        out = {}
        for b, (split, default) in enumerate((("train", 2000), ("val", 200), ("test", 200))):
            packed = stream.block(b, int(d.get(f"n_{split}", default)))
            out[split] = [[self.world.tokens[i] for i in packed[r]] for r in range(len(packed))]
        return out
