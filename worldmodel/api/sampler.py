"""The state-sampler contract: how a metric draws states and the prefixes that lead to them.

Every compression or distinction trial starts from a :class:`PrefixPair`: two prefixes and the
states they reach. Compression wants two *different* prefixes reaching the *same* state;
distinction wants prefixes reaching two *different* states. Each world knows how to draw these
well (random walks on the reversed street graph, games that reach the same board, statements
that do not narrow a set of seatings); the sampler for explicit DFAs is
:class:`worldmodel.sampling.ExplicitDFASampler`.

Seeding rule: a sampler draws only from the ``rng`` it is given (each trial has its own, derived
from the run seed and the trial index), so a trial's pair never depends on how trials were
batched, sharded or resumed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Hashable

import numpy as np

from ..errors import TrialSkipped
from .world import REJECT, Token, World


@dataclass(frozen=True)
class PrefixPair:
    """Two prefixes and the world states they reach.

    ``key`` groups trials for averaging: the state for compression, the ordered pair
    of states for distinction (the paper averages over prefix pairs within a state,
    then over states).
    """

    key: str
    prefix1: tuple[Token, ...]
    prefix2: tuple[Token, ...]
    state1: Hashable
    state2: Hashable


class StateSampler(ABC):
    """Draws prefix pairs for the compression and distinction metrics."""

    def __init__(self, world: World):
        self.world = world

    @abstractmethod
    def compression_pair(self, rng: np.random.Generator) -> PrefixPair:
        """Two different prefixes reaching the same state (raise TrialSkipped if none)."""

    @abstractmethod
    def distinction_pair(self, rng: np.random.Generator) -> PrefixPair:
        """Two prefixes reaching different states (raise TrialSkipped if none)."""

    def make_pair(self, key: str, p1, p2) -> PrefixPair:
        """Build a pair, checking both prefixes against the world."""
        p1, p2 = tuple(p1), tuple(p2)
        s1, s2 = self._reach(p1), self._reach(p2)
        if s1 is REJECT or s2 is REJECT:
            raise TrialSkipped("sampled prefix is not valid in the world")
        return PrefixPair(key, p1, p2, s1, s2)

    def _reach(self, prefix: tuple[Token, ...]) -> Hashable:
        state = self.world.initial_state()
        for t in prefix:
            state = self.world.step(state, t)
            if state is REJECT:
                break
        return state
