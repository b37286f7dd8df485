"""The state sampler for explicit DFAs: prefixes drawn uniformly among the words of a length that reach a state.

The contract (:class:`~worldmodel.api.StateSampler`, :class:`~worldmodel.api.PrefixPair`) is in
:mod:`worldmodel.api`.
"""

from __future__ import annotations

import numpy as np

from .api.sampler import PrefixPair, StateSampler
from .dfa import ExplicitDFA, Token
from .errors import TrialSkipped

__all__ = ["ExplicitDFASampler", "PrefixPair", "StateSampler", "game_pool_distinction_pair"]


class ExplicitDFASampler(StateSampler):
    """Uniform prefixes for an explicit DFA, from counts of words by length.

    ``count[l, q]`` is (proportional to) the number of length-``l`` words leading from
    the start to ``q``. A prefix of length ``l`` reaching ``q`` is drawn uniformly by
    walking backwards: the predecessor ``(p, a)`` is chosen with probability
    ``count[l-1, p] / count[l, q]``; this is the explicit-DFA version of the paper's
    random walks on the reversed graph. States are drawn uniformly among those
    reachable, the length uniformly among lengths in ``[min_len, max_len]`` that reach
    them.
    """

    def __init__(self, world: ExplicitDFA, min_len: int = 1, max_len: int = 12):
        super().__init__(world)
        if min_len < 0 or max_len < min_len:
            raise ValueError("need 0 <= min_len <= max_len")
        self.min_len, self.max_len = min_len, max_len
        n, V = world.delta.shape
        # predecessors: for each target state, arrays of (source, token index)
        src, tok = np.nonzero(world.delta >= 0)
        dst = world.delta[src, tok]
        self._pred = [(src[dst == q], tok[dst == q]) for q in range(n)]
        # exact integer counts would overflow; per-layer scaling keeps ratios exact enough
        counts = np.zeros((max_len + 1, n))
        exact = np.zeros((max_len + 1, n), dtype=object)  # small exact counts, to know ">= 2"
        counts[0, world.start] = 1.0
        exact[0, world.start] = 1
        for l in range(1, max_len + 1):
            layer = np.zeros(n)
            np.add.at(layer, dst, counts[l - 1, src])
            scale = layer.max() or 1.0
            counts[l] = layer / scale
            ex = np.zeros(n, dtype=object)
            for s, d in zip(src, dst):
                ex[d] = min(ex[d] + exact[l - 1, s], 2)  # saturate: we only need 0 / 1 / many
            exact[l] = ex
        self._counts = counts
        self._exact = exact

    def _lengths(self, q: int, at_least: int) -> list[int]:
        return [l for l in range(self.min_len, self.max_len + 1) if self._exact[l, q] >= at_least]

    def _prefix(self, q: int, length: int, rng: np.random.Generator) -> tuple[Token, ...]:
        toks: list[Token] = []
        cur = q
        for l in range(length, 0, -1):
            src, tok = self._pred[cur]
            w = self._counts[l - 1, src]
            j = rng.choice(len(src), p=w / w.sum())
            toks.append(self.world.tokens[tok[j]])
            cur = int(src[j])
        return tuple(reversed(toks))

    def _draw_state(self, rng: np.random.Generator) -> int:
        """One state, uniformly (a subclass may restrict the states it draws)."""
        return int(rng.integers(self.world.n_states))

    def _draw_two_states(self, rng: np.random.Generator) -> tuple[int, int]:
        """Two different states, uniformly."""
        n = self.world.n_states
        if n < 2:
            raise TrialSkipped("the world has a single state")
        q1, q2 = (int(x) for x in rng.choice(n, size=2, replace=False))
        return q1, q2

    def compression_pair(self, rng):
        q = self._draw_state(rng)
        lengths = self._lengths(q, 2)
        if not lengths:
            raise TrialSkipped(f"state {q} has fewer than two prefixes of length {self.min_len}-{self.max_len}")
        length = lengths[int(rng.integers(len(lengths)))]
        p1 = self._prefix(q, length, rng)
        for _ in range(20):
            p2 = self._prefix(q, length, rng)
            if p2 != p1:
                return self.make_pair(str(q), p1, p2)
        raise TrialSkipped("could not draw two different prefixes to the same state")

    def distinction_pair(self, rng):
        q1, q2 = self._draw_two_states(rng)
        common = sorted(set(self._lengths(q1, 1)) & set(self._lengths(q2, 1)))
        if not common:
            raise TrialSkipped(f"states {q1} and {q2} share no prefix length")
        length = common[int(rng.integers(len(common)))]
        return self.make_pair(f"{q1}|{q2}", self._prefix(q1, length, rng), self._prefix(q2, length, rng))


def game_pool_distinction_pair(sampler: StateSampler, pool, retries: int, rng: np.random.Generator) -> PrefixPair:
    """A distinction pair from a pool of games: equal-length prefixes of two different games.

    Two games of ``pool`` are drawn uniformly and a length ``l`` uniformly from 1 to one
    less than the shorter game (so neither position is finished); both games' first ``l``
    moves are the prefixes, drawn from the empirical distribution of games. If they reach
    the same position it draws again, up to ``retries`` times, before skipping the trial.
    """
    for _ in range(retries):
        a, b = (int(x) for x in rng.choice(len(pool), size=2, replace=False))
        shortest = min(len(pool[a]), len(pool[b]))
        if shortest < 2:
            continue
        length = int(rng.integers(1, shortest))
        pair = sampler.make_pair("", pool[a][:length], pool[b][:length])
        if pair.state1 != pair.state2:
            key = f"{sampler.world.state_key(pair.state1)}|{sampler.world.state_key(pair.state2)}"
            return PrefixPair(key, pair.prefix1, pair.prefix2, pair.state1, pair.state2)
    raise TrialSkipped(f"{retries} draws of two equal-length game prefixes all reached the same position")
