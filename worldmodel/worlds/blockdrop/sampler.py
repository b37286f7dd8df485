"""Prefix pairs for compression and distinction on drop programs.

Both draw from a pool of drop programs made once from the sampler's seed: random
programs (:func:`random_program`: each drop uniform among the drops valid in the world,
the length uniform in ``min_len..max_len``), or, for a world trained on letters, the
letter generator's programs (each with its letter token first):

* **compression**: a program of the pool cut at a random length, and a *reordering*
  of its drops that reaches the same structure. Two drops whose column footprints
  share no column land where they land in either order, so any order that keeps
  every pair of overlapping drops in their first order builds the same blocks: the
  sampler draws such an order (at each step, uniformly among the drops whose earlier
  overlapping drops are done) until it differs from the original and is valid in the
  world (in the ``stable`` world an intermediate structure of the new order might
  not stand), a few times before skipping the trial.
* **distinction**: two different programs of the pool cut at the same random length
  (from 1 to the shorter one's length), drawn again when they reach the same state.

All trial randomness comes from the ``rng`` passed in; the pool depends only on
``pool_seed``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ...dfa import REJECT, run
from ...errors import TrialSkipped, WorldModelError
from ...api import PrefixPair, StateSampler
from .world import END, BlockDropWorld, parse_drop


def random_program(world: BlockDropWorld, length: int, rng: np.random.Generator, state=None) -> list[str]:
    """``length`` drops (fewer if none is valid), each uniform among the valid drop tokens, from ``state``.

    Drawn by rejection (a uniform drop token, kept when valid), which is uniform over the
    valid drops and checks far fewer of them than listing all; after ``4 ×`` as many
    refusals as there are drops, the valid ones are listed and one is drawn from them.
    """
    s = world.initial_state() if state is None else state
    if world.letters and state is None:
        raise WorldModelError("random_program needs a state after the letter in a letters world")
    drops = world.drops
    out: list[str] = []
    while len(out) < length:
        nxt = None
        for _ in range(4 * len(drops)):
            t = drops[int(rng.integers(len(drops)))]
            nxt = world.step(s, t)
            if nxt is not REJECT:
                break
        else:
            options = [t for t in world.valid_tokens(s) if t != END]
            if not options:
                break
            t = options[int(rng.integers(len(options)))]
            nxt = world.step(s, t)
        out.append(t)
        s = nxt
    return out


def _columns(token: str) -> set[int]:
    kind, x = parse_drop(token)
    half = 1 if kind == "b31" else 0
    return set(range(x - half, x + half + 1))


def reorder(drops: list[str], rng: np.random.Generator) -> list[str]:
    """A random order of ``drops`` keeping every two drops that share a column in their order."""
    cols = [_columns(t) for t in drops]
    n = len(drops)
    preds = [{j for j in range(i) if cols[i] & cols[j]} for i in range(n)]
    done: set[int] = set()
    out = []
    while len(out) < n:
        ready = [i for i in range(n) if i not in done and preds[i] <= done]
        i = ready[int(rng.integers(len(ready)))]
        done.add(i)
        out.append(i)
    return [drops[i] for i in out]


class BlockDropSampler(StateSampler):
    """Compression pairs by reordering drops; distinction pairs from two programs of a pool."""

    def __init__(self, world: BlockDropWorld, programs: int = 1000, min_len: int = 2, max_len: int = 12,
                 pool_seed: int = 0, retries: int = 20, letters: list[str] | None = None):
        super().__init__(world)
        self.letters = list(letters) if letters else None
        if self.letters and not world.letters:
            raise WorldModelError("a pool of letter programs needs a letters world")
        if programs < 2 or not 1 <= min_len <= max_len:
            raise WorldModelError("the blockdrop sampler needs programs >= 2 and 1 <= min_len <= max_len")
        self.n_programs, self.min_len, self.max_len = int(programs), int(min_len), int(max_len)
        self.pool_seed = int(pool_seed)
        self.retries = int(retries)

    @cached_property
    def openings(self) -> list[tuple[str, ...]]:
        """Each pool program's opening (its letter token in a letters pool), else ``()``."""
        self.pool  # noqa: B018  (fills _openings)
        return self._openings

    @cached_property
    def pool(self) -> list[tuple[str, ...]]:
        """The pool's programs, drops only."""
        rng = np.random.default_rng([self.pool_seed, 0xD20])
        if self.letters:
            from .letters import letter_programs

            progs = letter_programs(self.letters, self.n_programs, self.pool_seed)
            self._openings = [(p[0],) for p in progs]
            return [tuple(t for t in p[1:] if t != END) for p in progs]
        self._openings = [()] * self.n_programs
        out = []
        for _ in range(self.n_programs):
            length = int(rng.integers(self.min_len, self.max_len + 1))
            start = self.world.empty() if self.world.letters else None
            out.append(tuple(random_program(self.world, length, rng, start)))
        return out

    def _opening(self, rng, index: int) -> tuple[str, ...]:
        """What pool program ``index`` opens with: its letter (a letters pool), a random letter (a
        random pool in a letters world), or nothing."""
        if self.openings[index]:
            return self.openings[index]
        letters = self.world.letter_tokens
        return (letters[int(rng.integers(len(letters)))],) if letters else ()

    def compression_pair(self, rng: np.random.Generator) -> PrefixPair:
        for _ in range(self.retries):
            index = int(rng.integers(len(self.pool)))
            prog = self.pool[index]
            if len(prog) < 2:
                continue
            length = int(rng.integers(2, len(prog) + 1))
            drops = list(prog[:length])
            other = reorder(drops, rng)
            if other == drops:
                continue
            opening = self._opening(rng, index)
            p1, p2 = opening + tuple(drops), opening + tuple(other)
            s2 = run(self.world, p2)
            if s2 is REJECT:
                continue
            pair = self.make_pair(self.world.state_key(s2), p1, p2)
            if pair.state1 != pair.state2:  # cannot happen: reordering keeps every landing
                raise AssertionError(f"reordered drops reached another state: {p1} vs {p2}")
            return pair
        raise TrialSkipped(f"{self.retries} draws found no valid reordering that differs from its program")

    def distinction_pair(self, rng: np.random.Generator) -> PrefixPair:
        pool = self.pool
        for _ in range(self.retries):
            a, b = (int(x) for x in rng.choice(len(pool), size=2, replace=False))
            shortest = min(len(pool[a]), len(pool[b]))
            if shortest < 1:
                continue
            length = int(rng.integers(1, shortest + 1))
            pair = self.make_pair("", self._opening(rng, a) + pool[a][:length], self._opening(rng, b) + pool[b][:length])
            if pair.state1 != pair.state2:
                key = f"{self.world.state_key(pair.state1)}|{self.world.state_key(pair.state2)}"
                return PrefixPair(key, pair.prefix1, pair.prefix2, pair.state1, pair.state2)
        raise TrialSkipped(f"{self.retries} draws of two equal-length program prefixes all reached the same state")
