"""Othello rules on bitboards.

Squares are numbered ``index = row * n + col`` with ``row`` and ``col`` counted from 0;
the square's name is the column letter then the row number from 1, so on 8×8 index 0 is
``a1``, index 7 is ``h1`` and index 63 is ``h8`` (the usual notation: the standard
opening moves of black are ``d3 c4 f5 e6``). A board is two Python ints, one bit per
square, for the discs of each colour.

Rules implemented here (and nowhere else in the package):

* a move is legal for the side to move when it is on an empty square and brackets at
  least one straight run of opposing discs in one of the 8 directions with a disc of
  its own; every bracketed run flips;
* passes are implicit: after a move, if the opponent has a legal move the opponent
  moves next, otherwise if the mover has one the mover moves again, otherwise the game
  is over. There is no pass token.

Two engines share these rules:

* scalar functions on Python ints (:func:`legal_moves`, :func:`flips`, :func:`play`,
  :class:`Position`) for any even board size; the :class:`~.world.OthelloWorld` uses them,
  and :func:`random_continuation` and :func:`first_illegal` play random continuations
  and check sequences on bare ints (a padded board layout, no :class:`Position` per
  move) for the sampled true boundary;
* :func:`random_games`, a batched generator of uniformly random legal games on numpy
  ``uint64`` arrays (board sizes up to 8×8), for data sets of 10^5–10^6 games.

Random games are defined by uniforms, so any implementation can reproduce them: game
``g`` of a run with seed ``s`` reads the row ``g`` of :func:`game_uniforms`; at its
``t``-th move (passes consume nothing) it plays the ``floor(u[t] * L)``-th legal move in
increasing square order, where ``L`` is the number of legal moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator, Sequence

import numpy as np

from ...errors import WorldModelError

BLACK, WHITE = 0, 1
#: ``side`` of a finished game (nobody is to move).
GAME_OVER = -1
#: Rows of uniforms drawn per random-number stream (see :func:`game_uniforms`).
CHUNK = 4096


# ---------------------------------------------------------------------------
# Board geometry
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """Masks and shifts for an ``n × n`` board (``n`` even, 4 ≤ n ≤ 26)."""

    n: int

    def __post_init__(self):
        if not isinstance(self.n, int) or self.n < 4 or self.n % 2 or self.n > 26:
            raise WorldModelError(f"Othello board size must be an even number from 4 to 26, got {self.n!r}")

    @property
    def squares(self) -> int:
        return self.n * self.n

    @property
    def full(self) -> int:
        return (1 << self.squares) - 1

    def column_mask(self, col: int) -> int:
        return sum(1 << (r * self.n + col) for r in range(self.n))

    @property
    def directions(self) -> tuple[tuple[int, int], ...]:
        """``(shift, source mask)`` for the 8 directions; a positive shift moves bits up.

        The source mask drops the discs that would wrap around the board's edge.
        """
        return _directions(self.n)

    def start(self) -> tuple[int, int]:
        """``(black, white)`` bitboards of the standard start (d5 e4 black, d4 e5 white on 8×8)."""
        m, n = self.n // 2, self.n
        white = (1 << ((m - 1) * n + m - 1)) | (1 << (m * n + m))
        black = (1 << (m * n + m - 1)) | (1 << ((m - 1) * n + m))
        return black, white

    def centre(self) -> int:
        b, w = self.start()
        return b | w

    # names --------------------------------------------------------------------
    def name(self, index: int) -> str:
        if not 0 <= index < self.squares:
            raise WorldModelError(f"square index {index} is off the {self.n}x{self.n} board")
        return "abcdefghijklmnopqrstuvwxyz"[index % self.n] + str(index // self.n + 1)

    def index(self, name: str) -> int:
        """Square index of a name like ``"f5"``; WorldModelError if it is not on the board."""
        idx = _name_index(self.n).get(name)
        if idx is None:
            raise WorldModelError(f"{name!r} is not a square of the {self.n}x{self.n} Othello board")
        return idx


@lru_cache(maxsize=None)
def _directions(n: int) -> tuple[tuple[int, int], ...]:
    g = Geometry(n)
    full = g.full
    not_first = full & ~g.column_mask(0)
    not_last = full & ~g.column_mask(n - 1)
    return (
        (1, not_last),          # east
        (-1, not_first),        # west
        (n, full),              # north (row + 1)
        (-n, full),             # south
        (n + 1, not_last),      # north-east
        (n - 1, not_first),     # north-west
        (-n + 1, not_last),     # south-east
        (-n - 1, not_first),    # south-west
    )


@lru_cache(maxsize=None)
def _name_index(n: int) -> dict[str, int]:
    g = Geometry(n)
    return {g.name(i): i for i in range(g.squares)}


def bits(x: int) -> Iterator[int]:
    """Indices of the set bits of ``x``, increasing."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


# ---------------------------------------------------------------------------
# Scalar rules on Python ints
# ---------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _rays(n: int) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """Per square, the rays that could flip something, as bit masks: ``(up, down)``.

    A ray is the set of squares from a square to the board's edge in one of the 8
    directions, the square itself left out; rays shorter than two squares cannot
    bracket anything and are dropped. ``up[sq]`` holds the rays whose squares have
    higher indices than ``sq`` (the nearest square is the ray's lowest bit),
    ``down[sq]`` the others (the nearest square is the highest bit).
    """
    up: list[tuple[int, ...]] = []
    down: list[tuple[int, ...]] = []
    for sq in range(n * n):
        r, c = divmod(sq, n)
        u, d = [], []
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                if dr == dc == 0:
                    continue
                ray, rr, cc = 0, r + dr, c + dc
                while 0 <= rr < n and 0 <= cc < n:
                    ray |= 1 << (rr * n + cc)
                    rr, cc = rr + dr, cc + dc
                if ray.bit_count() >= 2:
                    (u if dr * n + dc > 0 else d).append(ray)
        up.append(tuple(u))
        down.append(tuple(d))
    return tuple(up), tuple(down)


def _legal(n: int, own: int, opp: int) -> int:
    """:func:`legal_moves` without the cache.

    For each direction, a frontier starts at the opposing discs next to ``own`` and
    moves one step at a time through opposing discs; every square it steps onto is a
    candidate, and the empty candidates are the legal moves. It stops when the
    frontier leaves the opposing discs (usually after a step or two), not after a
    fixed ``n - 2`` steps.
    """
    moves = 0
    for d, mask in _directions(n):
        if d > 0:
            front = ((own & mask) << d) & opp
            while front:
                step = (front & mask) << d
                moves |= step
                front = step & opp
        else:
            d = -d
            front = ((own & mask) >> d) & opp
            while front:
                step = (front & mask) >> d
                moves |= step
                front = step & opp
    return moves & ~(own | opp) & ((1 << (n * n)) - 1)


@lru_cache(maxsize=1 << 16)
def legal_moves(n: int, own: int, opp: int) -> int:
    """Bitboard of the legal moves of the side owning ``own`` against ``opp``."""
    return _legal(n, own, opp)


def flips(n: int, own: int, opp: int, square: int) -> int:
    """Bitboard of the discs that playing ``square`` (an index) for ``own`` flips (0: illegal)."""
    if ((own | opp) >> square) & 1:
        return 0
    up, down = _rays(n)
    return _ray_flips(own, opp, up[square], down[square])


def _ray_flips(own: int, opp: int, up: tuple[int, ...], down: tuple[int, ...]) -> int:
    """The discs flipped by a move on an empty square, from its rays (see :func:`_rays`).

    Along each ray the first square that is not an opposing disc decides: if it is one
    of ``own``'s discs, the opposing discs before it flip. On an up-ray that square is
    the lowest bit of ``ray & ~opp``, on a down-ray the highest, so no ray is walked
    square by square. Works in any layout whose rays are given in it.
    """
    not_opp = ~opp
    out = 0
    for ray in up:
        x = ray & not_opp
        first = x & -x
        if first & own:
            out |= ray & (first - 1)
    for ray in down:
        x = ray & not_opp
        if x:
            first = 1 << (x.bit_length() - 1)
            if first & own:
                out |= ray & -(first << 1)
    return out


@dataclass(frozen=True, slots=True)
class Position:
    """A board and the side to move, after implicit passes are resolved.

    ``side`` is :data:`BLACK`, :data:`WHITE` or :data:`GAME_OVER` (neither side can
    move). Positions are hashable and equal exactly when board and side are equal.
    """

    n: int
    black: int
    white: int
    side: int

    @classmethod
    def start(cls, n: int = 8) -> "Position":
        black, white = Geometry(n).start()
        return cls(n, black, white, BLACK)

    @property
    def over(self) -> bool:
        return self.side == GAME_OVER

    def own_opp(self) -> tuple[int, int]:
        """``(discs of the side to move, discs of the other side)``; black's view when over."""
        return (self.white, self.black) if self.side == WHITE else (self.black, self.white)

    def legal(self) -> int:
        """Bitboard of legal moves (0 when the game is over)."""
        if self.side == GAME_OVER:
            return 0
        own, opp = self.own_opp()
        return legal_moves(self.n, own, opp)

    def legal_list(self) -> list[int]:
        return list(bits(self.legal()))

    def play(self, square: int) -> "Position | None":
        """The position after the side to move plays ``square``; None if illegal."""
        if self.side == GAME_OVER or not 0 <= square < self.n * self.n:
            return None
        own, opp = self.own_opp()
        f = flips(self.n, own, opp, square)
        if not f:  # occupied, or brackets nothing: illegal
            return None
        own, opp = own | f | (1 << square), opp & ~f
        mover = self.side
        if legal_moves(self.n, opp, own):
            side = 1 - mover
        elif legal_moves(self.n, own, opp):
            side = mover  # the opponent passes
        else:
            side = GAME_OVER
        black, white = (own, opp) if mover == BLACK else (opp, own)
        return Position(self.n, black, white, side)

    def counts(self) -> tuple[int, int]:
        return self.black.bit_count(), self.white.bit_count()

    def render(self) -> str:
        """The board as text, row n at the top, ``X`` black, ``O`` white, ``.`` empty."""
        g = Geometry(self.n)
        lines = []
        for r in range(self.n - 1, -1, -1):
            row = []
            for c in range(self.n):
                i = r * self.n + c
                row.append("X" if (self.black >> i) & 1 else "O" if (self.white >> i) & 1 else ".")
            lines.append(f"{r + 1:>2} " + " ".join(row))
        lines.append("   " + " ".join(g.name(c)[0] for c in range(self.n)))
        side = {BLACK: "black", WHITE: "white", GAME_OVER: "nobody (game over)"}[self.side]
        return "\n".join(lines) + f"\n{side} to move"

    @classmethod
    def from_text(cls, rows: Sequence[str], side: int) -> "Position":
        """Build a position from rows of ``X``/``O``/``.``, top row first (row n first).

        Meant for tests and examples; the side is taken as given (no pass resolution).
        """
        n = len(rows)
        black = white = 0
        for k, line in enumerate(rows):
            cells = line.split() if " " in line.strip() else list(line.strip())
            if len(cells) != n:
                raise WorldModelError(f"board row {k + 1} has {len(cells)} cells, expected {n}")
            r = n - 1 - k
            for c, ch in enumerate(cells):
                if ch in ("X", "x", "B", "b"):
                    black |= 1 << (r * n + c)
                elif ch in ("O", "o", "W", "w"):
                    white |= 1 << (r * n + c)
                elif ch != ".":
                    raise WorldModelError(f"board row {k + 1}: unknown cell {ch!r}")
        Geometry(n)
        return cls(n, black, white, side)


def replay(moves: Iterable[int], n: int = 8) -> list[Position]:
    """Positions after each move (``out[0]`` is the start); raises on an illegal move."""
    pos = Position.start(n)
    out = [pos]
    for t, sq in enumerate(moves):
        nxt = pos.play(sq)
        if nxt is None:
            raise WorldModelError(f"move {t + 1} ({Geometry(n).name(sq) if 0 <= sq < n * n else sq}) is illegal")
        pos = nxt
        out.append(pos)
    return out


def perft(pos: Position, depth: int) -> int:
    """Number of legal move sequences of exactly ``depth`` moves from ``pos`` (passes implicit)."""
    if depth == 0:
        return 1
    return sum(perft(pos.play(sq), depth - 1) for sq in pos.legal_list())


# ---------------------------------------------------------------------------
# Random continuations on a padded board
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Padded:
    """The ``n × n`` board with an always-empty square after each row (row stride ``n + 1``).

    Square ``(row, col)`` is bit ``row * (n + 1) + col``. A disc shifted off a row's end
    lands on the padding square, which is never a disc, so runs stop there without the
    edge masks the plain layout needs. Bit order is still row by row, column by column,
    so increasing bit order is increasing square order.
    """

    n: int
    stride: int
    valid: int                            # the real squares
    shifts: tuple[int, ...]               # east, north-west, north, north-east (and their negatives)
    up: tuple[tuple[int, ...], ...]       # per padded index: rays going up (see _rays)
    down: tuple[tuple[int, ...], ...]
    square: tuple[int, ...]               # padded index -> square index (-1 for padding)
    index: tuple[int, ...]                # square index -> padded index


@lru_cache(maxsize=None)
def _padded(n: int) -> _Padded:
    stride = n + 1
    up_c, down_c = _rays(n)
    square = [-1] * (n * stride)
    up: list[tuple[int, ...]] = [()] * (n * stride)
    down: list[tuple[int, ...]] = [()] * (n * stride)
    for sq in range(n * n):
        i = _pad(n, 1 << sq).bit_length() - 1
        square[i] = sq
        up[i] = tuple(_pad(n, ray) for ray in up_c[sq])
        down[i] = tuple(_pad(n, ray) for ray in down_c[sq])
    return _Padded(n, stride, _pad(n, (1 << (n * n)) - 1), (1, n, stride, stride + 1),
                   tuple(up), tuple(down), tuple(square), tuple(square.index(sq) for sq in range(n * n)))


@lru_cache(maxsize=4096)
def _pad(n: int, x: int) -> int:
    """Bitboard ``x`` in the padded layout (cached: a walk's start repeats across walks)."""
    row, stride = (1 << n) - 1, n + 1
    out = 0
    for r in range(n):
        out |= ((x >> (r * n)) & row) << (r * stride)
    return out


def _legal_padded(own: int, opp: int, shifts: tuple[int, ...], valid: int) -> int:
    """:func:`_legal` on the padded layout, where no direction needs an edge mask."""
    moves = 0
    for d in shifts:
        front = (own << d) & opp
        while front:
            front <<= d
            moves |= front
            front &= opp
        front = (own >> d) & opp
        while front:
            front >>= d
            moves |= front
            front &= opp
    return moves & valid & ~(own | opp)


def clear_caches() -> None:
    """Empty the engine's memo caches (legal moves, padded boards); benchmarks call it between passes."""
    legal_moves.cache_clear()
    _pad.cache_clear()


def random_continuation(pos: Position, max_len: int, rng: np.random.Generator) -> list[int]:
    """Up to ``max_len`` random moves from ``pos`` (square indices), each uniform among the legal moves.

    Before each move it calls ``rng.integers(L)`` once, ``L`` the number of legal
    moves, and plays the drawn one counting in increasing square order; it stops after
    ``max_len`` moves or when the game ends. That is the generic
    :meth:`worldmodel.dfa.World.random_walk` on :class:`~.world.OthelloWorld`'s valid
    tokens, draw for draw, so both give the same moves and leave ``rng`` in the same
    state. This one plays on two ints in the padded layout (:class:`_Padded`) and
    builds no :class:`Position` or list of moves per step.
    """
    if pos.side == GAME_OVER:
        return []
    n = pos.n
    t = _padded(n)
    shifts, valid, up, down = t.shifts, t.valid, t.up, t.down
    own, opp = pos.own_opp()
    moves = _pad(n, legal_moves(n, own, opp))    # both cached: many walks start from one position
    own, opp = _pad(n, own), _pad(n, opp)
    integers = rng.integers
    out: list[int] = []
    while moves and len(out) < max_len:
        pick = moves
        for _ in range(int(integers(moves.bit_count()))):
            pick &= pick - 1                     # drop the lowest legal moves
        move = pick & -pick
        i = move.bit_length() - 1
        out.append(i)
        f = _ray_flips(own, opp, up[i], down[i])
        own, opp = opp ^ f, own | f | move       # the opponent is to move ...
        moves = _legal_padded(own, opp, shifts, valid)
        if not moves:                            # ... unless it must pass
            own, opp = opp, own
            moves = _legal_padded(own, opp, shifts, valid)
    square = t.square
    return [square[i] for i in out]


def first_illegal(pos: Position, squares: Iterable[int]) -> int | None:
    """Index of the first move of ``squares`` that is illegal when played from ``pos``; None if all are legal.

    A square index off the board (e.g. -1) stands for a token that is no square and
    is always illegal; once the game is over every further move is illegal.
    ``squares`` is read only up to the answer. This is
    :func:`worldmodel.dfa.first_rejection` on :class:`~.world.OthelloWorld`, played on
    two ints in the padded layout with no :class:`Position` per move.
    """
    n = pos.n
    t = _padded(n)
    shifts, valid, up, down, index = t.shifts, t.valid, t.up, t.down, t.index
    over = pos.side == GAME_OVER
    own, opp = pos.own_opp()
    own, opp = _pad(n, own), _pad(n, opp)
    for k, sq in enumerate(squares):
        if over or not 0 <= sq < n * n:
            return k
        i = index[sq]
        move = 1 << i
        if (own | opp) & move:
            return k
        f = _ray_flips(own, opp, up[i], down[i])
        if not f:
            return k
        own, opp = opp ^ f, own | f | move       # the opponent is to move ...
        if not _legal_padded(own, opp, shifts, valid):
            own, opp = opp, own                  # ... unless it must pass
            over = not _legal_padded(own, opp, shifts, valid)
    return None


# ---------------------------------------------------------------------------
# Batched random games on numpy uint64
# ---------------------------------------------------------------------------


def game_uniforms(seed: int, chunk: int, rows: int, max_moves: int) -> np.ndarray:
    """Uniforms of chunk ``chunk`` (games ``chunk*CHUNK`` ...) of a run with ``seed``."""
    return np.random.default_rng([int(seed), int(chunk)]).random((rows, max_moves))


def _np_shift(x: np.ndarray, d: int, mask: np.uint64, full: np.uint64) -> np.ndarray:
    x = x & mask
    return (x << np.uint64(d)) & full if d > 0 else x >> np.uint64(-d)


def _np_legal(n: int, own: np.ndarray, opp: np.ndarray, dirs, full: np.uint64) -> np.ndarray:
    empty = ~(own | opp) & full
    moves = np.zeros_like(own)
    for d, mask in dirs:
        run = _np_shift(own, d, mask, full) & opp
        for _ in range(n - 3):
            run |= _np_shift(run, d, mask, full) & opp
        moves |= _np_shift(run, d, mask, full) & empty
    return moves


def _np_flips(n: int, own: np.ndarray, opp: np.ndarray, move: np.ndarray, dirs, full: np.uint64) -> np.ndarray:
    out = np.zeros_like(own)
    for d, mask in dirs:
        run = _np_shift(move, d, mask, full) & opp
        for _ in range(n - 3):
            run |= _np_shift(run, d, mask, full) & opp
        closed = (_np_shift(run, d, mask, full) & own) != 0
        out |= np.where(closed, run, np.uint64(0))
    return out


def _np_play(n: int, own: np.ndarray, opp: np.ndarray, move: np.ndarray, dirs, full: np.uint64):
    """Play ``move`` for the side to move, then hand over with implicit passes.

    Returns ``(own, opp, moves, opp_can, live)`` for the position that follows: the
    discs of the side now to move and of the other side, the legal moves of the side
    now to move, whether the opponent could move (else the mover moves again), and
    whether the game goes on (else neither side can move).
    """
    f = _np_flips(n, own, opp, move, dirs, full)
    o = own | f | move
    p = opp & ~f
    opp_moves = _np_legal(n, p, o, dirs, full)
    opp_can = opp_moves != 0
    own_moves = np.zeros_like(opp_moves)
    stuck = np.flatnonzero(~opp_can)
    if len(stuck):
        own_moves[stuck] = _np_legal(n, o[stuck], p[stuck], dirs, full)
    return (np.where(opp_can, p, o), np.where(opp_can, o, p), np.where(opp_can, opp_moves, own_moves),
            opp_can, opp_can | (own_moves != 0))


def random_games_array(n: int, u: np.ndarray) -> np.ndarray:
    """Play one block of games, one per row of uniforms ``u``, on an ``n × n`` board (n <= 8).

    Returns an ``int16`` array ``(rows, max_moves)`` of square indices, each game's moves
    followed by -1.
    """
    rows, max_moves = u.shape
    full = np.uint64((1 << (n * n)) - 1)
    dirs = [(d, np.uint64(m)) for d, m in _directions(n)]
    b0, w0 = Geometry(n).start()
    own = np.full(rows, b0, dtype=np.uint64)   # side to move
    opp = np.full(rows, w0, dtype=np.uint64)
    live = np.ones(rows, dtype=bool)
    moves_all = _np_legal(n, own, opp, dirs, full)  # legal moves of the side to move
    record = np.full((rows, max_moves), -1, dtype=np.int16)
    shifts = np.arange(n * n, dtype=np.uint64)
    for t in range(max_moves):
        idx = np.flatnonzero(live)
        if len(idx) == 0:
            break
        o, p, moves = own[idx], opp[idx], moves_all[idx]
        count = np.bitwise_count(moves).astype(np.int64)
        pick = np.minimum((u[idx, t] * count).astype(np.int64), count - 1)
        onehot = ((moves[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.int8)
        square = np.argmax(np.cumsum(onehot, axis=1, dtype=np.int8) > pick[:, None], axis=1)
        record[idx, t] = square
        move = np.uint64(1) << square.astype(np.uint64)
        # implicit passes: the opponent moves if it can, else the mover again, else the end
        own[idx], opp[idx], moves_all[idx], _, live[idx] = _np_play(n, o, p, move, dirs, full)
    return record


def _random_games_block(n: int, u: np.ndarray) -> list[list[int]]:
    """Play one block of games, one per row of uniforms ``u``; returns square indices."""
    return [[int(s) for s in row[row >= 0]] for row in random_games_array(n, u)]


def random_games(n_games: int, size: int = 8, seed: int = 0, progress: bool = False) -> list[list[int]]:
    """``n_games`` uniformly random legal games (square indices), reproducible from ``seed``.

    Batched on numpy ``uint64`` bitboards, so ``size`` must be at most 8. Games are
    played in blocks of :data:`CHUNK`; block ``c`` reads ``game_uniforms(seed, c, ...)``,
    so the first ``k`` games do not depend on ``n_games``.
    """
    Geometry(size)
    if size > 8:
        raise WorldModelError(f"the batched random-game generator handles boards up to 8x8, not {size}x{size}")
    if n_games < 0:
        raise WorldModelError(f"number of games must be >= 0, got {n_games}")
    max_moves = size * size - 4
    out: list[list[int]] = []
    chunks = range((n_games + CHUNK - 1) // CHUNK)
    if progress:
        from tqdm import tqdm

        chunks = tqdm(chunks, desc=f"random {size}x{size} games", unit="block")
    for c in chunks:
        rows = min(CHUNK, n_games - c * CHUNK)
        out.extend(_random_games_block(size, game_uniforms(seed, c, rows, max_moves)))
    return out


def random_game_scalar(u: np.ndarray, size: int = 8) -> list[int]:
    """One random game from one row of uniforms with the scalar engine (same rule as the batch)."""
    pos = Position.start(size)
    out = []
    for t in range(len(u)):
        if pos.over:
            break
        legal = pos.legal_list()
        sq = legal[min(int(u[t] * len(legal)), len(legal) - 1)]
        out.append(sq)
        pos = pos.play(sq)
    return out


def replay_batch(squares: np.ndarray, size: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replay many games at once on numpy bitboards.

    ``squares`` is an int array ``(games, max_moves)`` of square indices, padded with -1
    after each game's last move. Returns ``(first_illegal, over, black, white)``:
    the index of each game's first illegal move (-1 if every move is legal; moves after
    the end of the game count as illegal), whether the game is over after its last
    move, and the final bitboards (of the position before the illegal move, if any).
    """
    if size > 8:
        raise WorldModelError(f"the batched engine handles boards up to 8x8, not {size}x{size}")
    squares = np.asarray(squares, dtype=np.int64)
    rows, max_moves = squares.shape
    n = size
    full = np.uint64((1 << (n * n)) - 1)
    dirs = [(d, np.uint64(m)) for d, m in _directions(n)]
    b0, w0 = Geometry(n).start()
    own = np.full(rows, b0, dtype=np.uint64)
    opp = np.full(rows, w0, dtype=np.uint64)
    side = np.zeros(rows, dtype=np.int8)   # 0 black to move, 1 white
    over = np.zeros(rows, dtype=bool)
    bad = np.full(rows, -1, dtype=np.int64)
    moves_all = _np_legal(n, own, opp, dirs, full)
    for t in range(max_moves):
        idx = np.flatnonzero((squares[:, t] >= 0) & (bad < 0))
        if len(idx) == 0:
            continue
        sq = squares[idx, t]
        move = np.uint64(1) << sq.astype(np.uint64)
        ok = ((moves_all[idx] & move) != 0) & ~over[idx] & (sq < n * n)
        bad[idx[~ok]] = t
        idx, move = idx[ok], move[ok]
        if len(idx) == 0:
            continue
        own[idx], opp[idx], moves_all[idx], opp_can, live = _np_play(n, own[idx], opp[idx], move, dirs, full)
        side[idx] = np.where(opp_can, 1 - side[idx], side[idx])
        over[idx] = ~live
    black = np.where(side == 0, own, opp)
    white = np.where(side == 0, opp, own)
    return bad, over, black, white
