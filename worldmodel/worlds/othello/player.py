"""A greedy positional Othello player: the narrow-data counterpart of synthetic games.

Championship games (Li et al.'s second data set, the paper's Table 3) cover a narrow
part of the game tree: strong players keep to the moves that matter. On 6×6 there are
no championship games, so this module plays its own: at every move the side to move
scores each legal square by a positional table (corners best, the squares next to them
worst, edges good, :func:`positional_weights`) plus the number of discs the move
flips, and plays the best one. With probability ``explore`` it plays a uniformly random
legal move instead, so that games differ; ties are broken uniformly.

Everything is driven by uniforms the caller supplies, two per move (:func:`player_games_array`),
so a game is a pure function of its row of uniforms, batched on numpy bitboards like
:func:`~.engine.random_games_array`.
"""

from __future__ import annotations

import numpy as np

from ...errors import WorldModelError
from .engine import Geometry, _directions, _np_flips, _np_legal, _np_play


def positional_weights(n: int) -> np.ndarray:
    """Square weights of an ``n × n`` board (row-major, square ``r * n + c``).

    Corners 100; the squares touching a corner -20 (edge) and -50 (diagonal); other
    edge squares 10; the ring inside the edge -2, except its corners; the centre 1.
    """
    if n < 4 or n % 2:
        raise WorldModelError(f"the positional player needs an even board of at least 4x4, not {n}x{n}")
    w = np.ones((n, n))
    last = n - 1
    for r in range(n):
        for c in range(n):
            edge_r, edge_c = r in (0, last), c in (0, last)
            near_r, near_c = r in (1, last - 1), c in (1, last - 1)
            if edge_r and edge_c:
                w[r, c] = 100
            elif (edge_r and near_c) or (edge_c and near_r):
                w[r, c] = -20
            elif near_r and near_c:
                w[r, c] = -50
            elif edge_r or edge_c:
                w[r, c] = 10
            elif near_r or near_c:
                w[r, c] = -2
    return w.reshape(-1)


def player_games_array(n: int, u: np.ndarray, explore: float = 0.1, flip_weight: float = 1.0) -> np.ndarray:
    """One game per row of ``u`` (shape ``(rows, max_moves, 2)``) between two greedy positional players.

    At move ``t`` of a game, ``u[., t, 0] < explore`` makes it a uniformly random legal
    move (chosen by ``u[., t, 1]``); otherwise the legal square with the highest
    ``weight + flip_weight * flips`` is played, ties broken by ``u[., t, 1]``. Passes are
    implicit, as in the data. Returns an ``int16`` array ``(rows, max_moves)`` of square
    indices, each game's moves followed by -1.
    """
    if u.ndim != 3 or u.shape[2] != 2:
        raise ValueError("u must have shape (rows, max_moves, 2)")
    if not 0.0 <= explore <= 1.0:
        raise WorldModelError(f"explore must be in [0, 1], got {explore!r}")
    rows, max_moves, _ = u.shape
    squares = n * n
    full = np.uint64((1 << squares) - 1)
    dirs = [(d, np.uint64(m)) for d, m in _directions(n)]
    weights = positional_weights(n)
    b0, w0 = Geometry(n).start()
    own = np.full(rows, b0, dtype=np.uint64)
    opp = np.full(rows, w0, dtype=np.uint64)
    live = np.ones(rows, dtype=bool)
    moves_all = _np_legal(n, own, opp, dirs, full)
    record = np.full((rows, max_moves), -1, dtype=np.int16)
    shifts = np.arange(squares, dtype=np.uint64)
    for t in range(max_moves):
        idx = np.flatnonzero(live)
        if len(idx) == 0:
            break
        o, p, moves = own[idx], opp[idx], moves_all[idx]
        legal = ((moves[:, None] >> shifts[None, :]) & np.uint64(1)).astype(bool)     # (live, squares)
        # flips of every square (0 where illegal), one square at a time over the batch
        n_flips = np.zeros(legal.shape)
        for sq in range(squares):
            has = np.flatnonzero(legal[:, sq])
            if len(has):
                f = _np_flips(n, o[has], p[has], np.full(len(has), np.uint64(1) << np.uint64(sq)), dirs, full)
                n_flips[has, sq] = np.bitwise_count(f)
        score = weights[None, :] + flip_weight * n_flips
        score = np.where(legal, score, -np.inf)
        best = legal & (score == score.max(axis=1, keepdims=True))
        explore_rows = u[idx, t, 0] < explore
        choose = np.where(explore_rows[:, None], legal, best)                          # candidates
        count = choose.sum(axis=1)
        pick = np.minimum((u[idx, t, 1] * count).astype(np.int64), count - 1)
        square = np.argmax(np.cumsum(choose, axis=1) > pick[:, None], axis=1)
        record[idx, t] = square
        move = np.uint64(1) << square.astype(np.uint64)
        own[idx], opp[idx], moves_all[idx], _, live[idx] = _np_play(n, o, p, move, dirs, full)
    return record
