"""Prefix pairs for chess compression and distinction: transpositions and equal-length game prefixes.

Both draw from a pool of ``games`` uniformly random legal games of at most
``max_plies`` moves, simulated once from the sampler's own seed (:mod:`.players`):

* **compression** (one position, two move orders): a trial draws a pool game and a
  length ``l`` uniformly from ``min_len`` to the game's length, then tries up to
  ``tries`` transpositions of its first ``l`` moves: two moves of the same side are
  swapped (the second of them, half the time, is that side's next move), the moves are
  replayed from the start, and the swap counts when every move is still legal and the
  final position, castling and en passant rights included, is the same. Tokens are
  written afresh, so a move that needs a disambiguation or a check sign in one order
  and not the other is spelled as that order requires. A game with no transposition
  found is replaced by another, ``retries`` times, before the trial is skipped. The two
  prefixes have equal length; the state is any position of a random game that some
  swap of two of its moves reaches again.
* **distinction**: two different pool games and a length ``l`` uniform from 1 to one
  less than the shorter, both cut to ``l`` moves (prefixes from the empirical
  distribution of random games, as for Othello); redrawn when the two positions are
  equal.

All trial randomness comes from the ``rng`` passed in; the pool depends only on
``pool_seed``.
"""

from __future__ import annotations

from functools import cached_property

import chess
import numpy as np

from ...errors import TrialSkipped, WorldModelError
from ...sampling import PrefixPair, StateSampler, game_pool_distinction_pair
from .players import RandomPlayer, play_games
from .world import ChessState, ChessWorld


class ChessSampler(StateSampler):
    def __init__(self, world: ChessWorld, games: int = 1000, pool_seed: int = 0, max_plies: int = 60,
                 min_len: int = 3, tries: int = 40, retries: int = 20):
        super().__init__(world)
        if games < 2:
            raise WorldModelError(f"the chess sampler needs a pool of at least 2 games, got {games}")
        if max_plies < 4 or min_len < 3 or min_len > max_plies:
            raise WorldModelError(f"the chess sampler needs 3 <= min_len <= max_plies and max_plies >= 4, "
                                  f"got min_len={min_len}, max_plies={max_plies}")
        self.n_games, self.pool_seed, self.max_plies = int(games), int(pool_seed), int(max_plies)
        self.min_len, self.tries, self.retries = int(min_len), int(tries), int(retries)

    @cached_property
    def pool(self) -> list[tuple[str, ...]]:
        return [tuple(g) for g in play_games(self.world, RandomPlayer(), self.n_games, self.pool_seed, self.max_plies)]

    def _moves(self, tokens) -> list[chess.Move]:
        board, out = chess.Board(), []
        for t in tokens:
            move = self.world._parse(board, t, list(board.generate_legal_moves()))
            out.append(move)
            board.push(move)
        return out

    def _replay(self, moves: list[chess.Move]) -> tuple[tuple[str, ...], ChessState] | None:
        """Tokens and final state of ``moves`` from the start; None if one is illegal."""
        board, tokens = chess.Board(), []
        for m in moves:
            legal = list(board.generate_legal_moves())
            if m not in legal:
                return None
            tokens.append(self.world.token_of(board, m, legal))
            board.push(m)
        return tuple(tokens), ChessState.of(board)

    def _transposition(self, prefix: tuple[str, ...], rng: np.random.Generator) -> tuple[str, ...] | None:
        moves = self._moves(prefix)
        target = ChessState.of(self._board_after(moves))
        if target.over:
            return None
        n = len(moves)
        for _ in range(self.tries):
            i = int(rng.integers(n - 2))
            same_side = list(range(i + 2, n, 2))
            j = same_side[0] if rng.random() < 0.5 else same_side[int(rng.integers(len(same_side)))]
            if moves[i] == moves[j]:
                continue
            swapped = list(moves)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            got = self._replay(swapped)
            if got is not None and got[1] == target and got[0] != prefix:
                return got[0]
        return None

    @staticmethod
    def _board_after(moves) -> chess.Board:
        board = chess.Board()
        for m in moves:
            board.push(m)
        return board

    def compression_pair(self, rng: np.random.Generator) -> PrefixPair:
        long_enough = [g for g in self.pool if len(g) >= self.min_len]
        if not long_enough:
            raise TrialSkipped(f"no pool game has {self.min_len} moves")
        for _ in range(self.retries):
            game = long_enough[int(rng.integers(len(long_enough)))]
            length = int(rng.integers(self.min_len, len(game) + 1))
            prefix = game[:length]
            other = self._transposition(prefix, rng)
            if other is not None:
                pair = self.make_pair("", prefix, other)
                return PrefixPair(self.world.state_key(pair.state1), pair.prefix1, pair.prefix2, pair.state1, pair.state2)
        raise TrialSkipped(f"no transposition found in {self.retries} games ({self.tries} swaps each)")

    def distinction_pair(self, rng: np.random.Generator) -> PrefixPair:
        return game_pool_distinction_pair(self, self.pool, self.retries, rng)
