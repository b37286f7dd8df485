"""Prefix pairs for the Othello compression and distinction metrics (Vafa et al., App. D).

Both draw from a pool of uniformly random legal games simulated once, from the
sampler's own seed (the paper uses 1000 games):

* **compression**: an index maps every unfinished position reached in the pool to the
  distinct openings (move prefixes) that reach it. A trial draws a position uniformly
  among those reached by two or more different openings, then two different openings
  of it. Equal boards have equal disc counts, so the two openings have equal length.
* **distinction**: a trial draws two different games of the pool uniformly and a length
  ``l`` uniformly from 1 to one less than the shorter game (so neither position is
  finished), and takes both games' first ``l`` moves: two prefixes of equal length
  drawn from the empirical distribution of games. If they reach the same position it
  draws again, a few times, before skipping the trial.

All trial randomness comes from the ``rng`` passed in; the pool depends only on
``pool_seed``, so a trial's pair depends only on its own seed.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property

import numpy as np

from ...errors import TrialSkipped, WorldModelError
from ...sampling import PrefixPair, StateSampler, game_pool_distinction_pair
from .engine import Position, random_games
from .world import OthelloWorld


class OthelloSampler(StateSampler):
    """Compression and distinction pairs from a pool of ``games`` simulated random games."""

    def __init__(self, world: OthelloWorld, games: int = 1000, pool_seed: int = 0, retries: int = 20):
        super().__init__(world)
        if games < 2:
            raise WorldModelError(f"the Othello sampler needs a pool of at least 2 games, got {games}")
        self.n_games = int(games)
        self.pool_seed = int(pool_seed)
        self.retries = int(retries)

    @cached_property
    def pool(self) -> list[tuple[str, ...]]:
        """The simulated games, as tuples of square names."""
        names = [self.world.geometry.name(i) for i in range(self.world.geometry.squares)]
        games = random_games(self.n_games, self.world.size, self.pool_seed)
        return [tuple(names[s] for s in g) for g in games]

    @cached_property
    def index(self) -> dict[Position, list[tuple[str, ...]]]:
        """Unfinished position -> its distinct openings in the pool, for positions with ≥ 2."""
        seen: dict[Position, set[tuple[str, ...]]] = defaultdict(set)
        for game in self.pool:
            pos = self.world.initial_state()
            for t, tok in enumerate(game):
                pos = self.world.step(pos, tok)
                if pos.over:
                    break
                seen[pos].add(game[: t + 1])
        return {pos: sorted(ps) for pos, ps in seen.items() if len(ps) >= 2}

    @cached_property
    def _index_keys(self) -> list[Position]:
        # a fixed order (by move count, then key) so draws do not depend on hashing
        return sorted(self.index, key=lambda p: (len(self.index[p][0]), self.world.state_key(p)))

    def compression_pair(self, rng: np.random.Generator) -> PrefixPair:
        keys = self._index_keys
        if not keys:
            raise TrialSkipped(f"no position is reached by two different openings among {self.n_games} simulated games")
        pos = keys[int(rng.integers(len(keys)))]
        openings = self.index[pos]
        i, j = rng.choice(len(openings), size=2, replace=False)
        return self.make_pair(self.world.state_key(pos), openings[int(i)], openings[int(j)])

    def distinction_pair(self, rng: np.random.Generator) -> PrefixPair:
        return game_pool_distinction_pair(self, self.pool, self.retries, rng)
