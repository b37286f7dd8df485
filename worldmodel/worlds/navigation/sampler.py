"""Prefix pairs for the navigation metrics, following the paper's App. E.1.

A state is a ``(current, destination)`` pair, drawn uniformly among pairs whose
destination is reachable from the current node. A prefix reaching it is
``origin destination`` followed by ``l`` directions obtained by walking ``l`` steps
backwards from the current node on the reversed street graph (each step a uniform
choice among the streets arriving at the node); the node where the backward walk ends
is the origin. The prefix length ``l`` is drawn uniformly.

Compression draws one state, one ``l`` and two different prefixes of that length.
Distinction draws two different states and one ``l`` that both can use.

Context budget: the whole prefix plus the fewest moves to the destination plus ``end``
must fit in ``max_tokens`` (the data's 100-token limit, and the model's context minus
its BOS position), so every sampled prefix can still be completed inside the window the
model was trained on.
"""

from __future__ import annotations

import numpy as np

from worldmodel.errors import TrialSkipped
from worldmodel.sampling import PrefixPair, StateSampler

from .world import NavigationWorld


class NavigationSampler(StateSampler):
    """Reversed-graph random-walk prefixes for (current, destination) states.

    Args:
        world: the navigation world.
        max_tokens: prefix + shortest completion + ``end`` must fit in this many tokens.
        min_len, max_len: range of the number of directions in a prefix (``l``).
        tries: attempts before a trial is skipped (with its reason recorded).
    """

    def __init__(self, world: NavigationWorld, max_tokens: int = 100, min_len: int = 1,
                 max_len: int | None = None, tries: int = 200):
        super().__init__(world)
        self.world: NavigationWorld = world
        self.max_tokens = int(max_tokens)
        self.min_len = int(min_len)
        self.max_len = int(max_len) if max_len is not None else self.max_tokens - 3
        if self.min_len < 0 or self.max_len < self.min_len:
            raise ValueError(f"need 0 <= min_len <= max_len, got {self.min_len}..{self.max_len}")
        self.tries = int(tries)
        m = world.map
        self._nodes = list(m.nodes)
        self._rev = m.reverse_edges()

    # -- pieces ------------------------------------------------------------------
    def _len_cap(self, state: tuple[str, str]) -> int:
        """The longest prefix (directions) for this state that keeps a completion in budget."""
        cur, dest = state
        hops = self.world.hops_to(dest).get(cur)
        if hops is None:
            return -1
        return min(self.max_len, self.max_tokens - 3 - hops)

    def _state(self, rng: np.random.Generator) -> tuple[str, str]:
        """A uniform (current, destination) pair whose destination is reachable in budget."""
        n = len(self._nodes)
        for _ in range(self.tries):
            cur, dest = self._nodes[int(rng.integers(n))], self._nodes[int(rng.integers(n))]
            if self._rev[cur] and self._len_cap((cur, dest)) >= self.min_len:
                return (cur, dest)
        raise TrialSkipped(f"no (current, destination) state with a reachable destination in {self.tries} draws")

    def _prefix(self, state: tuple[str, str], length: int, rng: np.random.Generator) -> tuple[str, ...] | None:
        """``origin destination`` + ``length`` directions ending at the state's node; None at a dead end."""
        cur, dest = state
        dirs: list[str] = []
        node = cur
        for _ in range(length):
            arriving = self._rev[node]
            if not arriving:
                return None
            prev, d = arriving[int(rng.integers(len(arriving)))]
            dirs.append(d)
            node = prev
        return (node, dest) + tuple(reversed(dirs))

    def _prefix_retry(self, state, length, rng) -> tuple[str, ...]:
        for _ in range(self.tries):
            p = self._prefix(state, length, rng)
            if p is not None:
                return p
        raise TrialSkipped(f"backward walks of length {length} from {state[0]} keep hitting nodes with no incoming street")

    # -- StateSampler ------------------------------------------------------------
    def compression_pair(self, rng: np.random.Generator) -> PrefixPair:
        """Two different prefixes of one length to one state.

        The second prefix is drawn up to 8 times until it differs from the first. A
        (state, length) draw with a single prefix (e.g. a node with one incoming street
        and ``l = 1``) is redrawn, so states are uniform among those that have two
        prefixes; after ``tries`` redraws the trial is skipped.
        """
        last = ""
        for _ in range(self.tries):
            state = self._state(rng)
            length = int(rng.integers(self.min_len, self._len_cap(state) + 1))
            p1 = self._prefix(state, length, rng)
            if p1 is None:
                last = f"no backward walk of length {length} from {state[0]}"
                continue
            for _ in range(8):
                p2 = self._prefix(state, length, rng)
                if p2 is not None and p2 != p1:
                    return self.make_pair(self.world.state_key(state), p1, p2)
            last = f"only one prefix of length {length} reaches {self.world.state_key(state)}"
        raise TrialSkipped(f"no state with two different prefixes in {self.tries} draws (last: {last})")

    def distinction_pair(self, rng: np.random.Generator) -> PrefixPair:
        for _ in range(self.tries):
            s1, s2 = self._state(rng), self._state(rng)
            if s1 != s2:
                break
        else:
            raise TrialSkipped("could not draw two different states")
        cap = min(self._len_cap(s1), self._len_cap(s2))
        if cap < self.min_len:
            raise TrialSkipped("the two states share no prefix length within the context budget")
        length = int(rng.integers(self.min_len, cap + 1))
        p1 = self._prefix_retry(s1, length, rng)
        p2 = self._prefix_retry(s2, length, rng)
        key = f"{self.world.state_key(s1)}|{self.world.state_key(s2)}"
        return self.make_pair(key, p1, p2)
