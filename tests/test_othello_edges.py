"""Othello bitboards against an independent slow engine written here, with no shared data.

The bitboard engine shifts whole boards; a disc shifted east off column h must not come
back on column a of the next row (and so on for the other diagonal and horizontal
directions). The slow engine below walks (row, col) coordinates with explicit bounds,
so it cannot wrap. Hand-built edge positions probe every direction's wrap-around, and
random boards and random mid-game positions compare legal moves and flips square by square.
"""

from __future__ import annotations

import numpy as np
import pytest

from worldmodel.worlds.othello.engine import (
    BLACK, GAME_OVER, WHITE, Geometry, Position, flips, legal_moves, random_game_scalar, random_games, replay, replay_batch,
)

STEPS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


# ---------------------------------------------------------------------------
# The slow engine: a dict of (row, col) -> colour
# ---------------------------------------------------------------------------


def cells(n: int, own: int, opp: int) -> dict[tuple[int, int], str]:
    out = {}
    for r in range(n):
        for c in range(n):
            i = r * n + c
            if (own >> i) & 1:
                out[(r, c)] = "own"
            elif (opp >> i) & 1:
                out[(r, c)] = "opp"
    return out


def slow_flips(n: int, board: dict, r: int, c: int) -> set[tuple[int, int]]:
    if (r, c) in board:
        return set()
    flipped: set[tuple[int, int]] = set()
    for dr, dc in STEPS:
        run = []
        rr, cc = r + dr, c + dc
        while 0 <= rr < n and 0 <= cc < n and board.get((rr, cc)) == "opp":
            run.append((rr, cc))
            rr, cc = rr + dr, cc + dc
        if run and 0 <= rr < n and 0 <= cc < n and board.get((rr, cc)) == "own":
            flipped.update(run)
    return flipped


def slow_legal(n: int, own: int, opp: int) -> set[int]:
    board = cells(n, own, opp)
    return {r * n + c for r in range(n) for c in range(n) if slow_flips(n, board, r, c)}


def as_set(bitboard: int) -> set[int]:
    return {i for i in range(bitboard.bit_length()) if (bitboard >> i) & 1}


def agree(n: int, own: int, opp: int) -> None:
    """Legal moves and the flips of every square agree with the slow engine."""
    assert not own & opp
    want = slow_legal(n, own, opp)
    assert as_set(legal_moves(n, own, opp)) == want
    board = cells(n, own, opp)
    for sq in range(n * n):
        got = as_set(flips(n, own, opp, sq))
        assert got == {r * n + c for r, c in slow_flips(n, board, sq // n, sq % n)}, sq
        assert bool(got) == (sq in want)


# ---------------------------------------------------------------------------
# Wrap-around at the edges, every direction
# ---------------------------------------------------------------------------


def wrap_lines(n: int):
    """Index-space lines ``own, opp..., target`` that cross a board edge in one direction.

    For a direction with shift ``d`` (``row * n + col`` steps), each line starts at
    ``start`` and steps by ``d``; somewhere along it the column jumps from one side of the
    board to the other. A bitboard shift without the edge mask would bracket ``opp`` and
    report ``target`` as legal; on the real board the squares are not in a line.
    """
    for dr, dc in STEPS:
        if dc == 0:
            continue
        d = dr * n + dc
        for start in range(n * n):
            for length in (1, 2, 3):
                squares = [start + k * d for k in range(length + 2)]
                if not all(0 <= s < n * n for s in squares):
                    continue
                cols = [s % n for s in squares]
                if all(b - a == dc for a, b in zip(cols, cols[1:])):
                    continue  # a genuine line: no wrap
                yield (dr, dc), squares


@pytest.mark.parametrize("n", [4, 6, 8, 10])
def test_no_wrap_around_in_any_direction(n):
    false_lines = {}
    for direction, squares in wrap_lines(n):
        own, target = 1 << squares[0], squares[-1]
        opp = sum(1 << s for s in squares[1:-1])
        agree(n, own, opp)
        if target not in slow_legal(n, own, opp):
            # an unmasked shift would call this legal; the engine must not
            assert not (legal_moves(n, own, opp) >> target) & 1, (direction, squares)
            assert flips(n, own, opp, target) == 0
            false_lines[direction] = false_lines.get(direction, 0) + 1
    assert set(false_lines) == {s for s in STEPS if s[1] != 0}


@pytest.mark.parametrize("n", [4, 8])
def test_edges_in_every_direction_at_every_square(n):
    """For each square and direction: own there, one opp disc next, target after; exact agreement."""
    full = set(range(n * n))
    for sq in full:
        r, c = divmod(sq, n)
        for dr, dc in STEPS:
            # the genuine neighbours (possibly off the board) and their index-space twins
            for k_opp, k_tgt in ((1, 2), (2, 3)):
                opp_i = sq + k_opp * (dr * n + dc)
                tgt_i = sq + k_tgt * (dr * n + dc)
                if not (0 <= opp_i < n * n and 0 <= tgt_i < n * n):
                    continue
                own_b = 1 << sq
                opp_b = 1 << opp_i
                if k_opp == 2:
                    opp_b |= 1 << (sq + dr * n + dc)
                agree(n, own_b, opp_b)
                genuine = 0 <= r + k_tgt * dr < n and 0 <= c + k_tgt * dc < n
                assert bool((legal_moves(n, own_b, opp_b) >> tgt_i) & 1) == genuine, (sq, dr, dc, k_opp)


def test_hand_built_wraps_8x8():
    """Each of the eight directions at the board's edge, named squares (a1 = 0, h1 = 7, a2 = 8)."""
    n = 8
    cases = {
        # direction: (own, opp, target) one index step apart each, the step crossing an edge
        "E": ([7], [8], 9),       # h1 -> a2 -> b2   (+1)
        "W": ([8], [7], 6),       # a2 -> h1 -> g1   (-1)
        "NE": ([7], [16], 25),    # h1 -> a3 -> b4   (+9)
        "NW": ([0], [7], 14),     # a1 -> h1 -> g2   (+7)
        "SE": ([23], [16], 9),    # h3 -> a3 -> b2   (-7)
        "SW": ([24], [15], 6),    # a4 -> h2 -> g1   (-9)
        # north off the top row and south off the bottom row: the bits must fall off the board
        "N": ([56 + 3], [3], 11),
        "S": ([3], [59], 51),
    }
    for name, (own, opp, target) in cases.items():
        own_b = sum(1 << s for s in own)
        opp_b = sum(1 << s for s in opp)
        assert not (legal_moves(n, own_b, opp_b) >> target) & 1, name
        assert flips(n, own_b, opp_b, target) == 0, name
        agree(n, own_b, opp_b)
    # and the genuine lines along the edges are legal: h1 own, h2 opp -> h3; a8 own, b7 opp -> c6
    assert (legal_moves(8, 1 << 7, 1 << 15) >> 23) & 1
    assert (legal_moves(8, 1 << 56, 1 << 49) >> 42) & 1
    # the longest possible run: own a1, opp b1..g1, h1 empty -> h1 legal, flips six
    assert as_set(flips(8, 1, sum(1 << i for i in range(1, 7)), 7)) == set(range(1, 7))


# ---------------------------------------------------------------------------
# Random boards and random mid-game positions
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [4, 6, 8, 10])
def test_random_boards_agree_with_the_slow_engine(n):
    rng = np.random.default_rng(n)
    for _ in range(60 if n <= 8 else 25):
        fill = rng.random()
        cell = rng.random(n * n)
        own = sum(1 << i for i in range(n * n) if cell[i] < fill / 2)
        opp = sum(1 << i for i in range(n * n) if fill / 2 <= cell[i] < fill)
        agree(n, own, opp)


@pytest.mark.parametrize("n", [6, 8])
def test_random_midgame_positions_agree_with_the_slow_engine(n):
    games = random_games(40, n, seed=11)
    rng = np.random.default_rng(1)
    for game in games:
        positions = replay(game, n)
        for pos in (positions[int(rng.integers(1, len(positions)))], positions[len(positions) // 2]):
            own, opp = pos.own_opp()
            if pos.side != GAME_OVER:
                agree(n, own, opp)
            else:
                assert slow_legal(n, own, opp) == set() and slow_legal(n, opp, own) == set()
    # the scalar and batched engines accept the same games and end them the same way
    squares = np.full((len(games), n * n - 4), -1)
    for g, game in enumerate(games):
        squares[g, :len(game)] = game
    bad, over, black, white = replay_batch(squares, n)
    assert (bad == -1).all() and over.all()
    for g, game in enumerate(games):
        last = replay(game, n)[-1]
        assert (int(black[g]), int(white[g])) == (last.black, last.white)


def slow_play(n: int, black: set, white: set, side: int, sq: int):
    """The slow engine's move with implicit passes: new (black, white, side)."""
    own, opp = (black, white) if side == BLACK else (white, black)
    board = {**{divmod(s, n): "own" for s in own}, **{divmod(s, n): "opp" for s in opp}}
    flipped = {r * n + c for r, c in slow_flips(n, board, *divmod(sq, n))}
    assert flipped, "illegal move"
    own, opp = own | flipped | {sq}, opp - flipped

    def can(a, b):
        return bool(slow_legal(n, sum(1 << s for s in a), sum(1 << s for s in b)))

    nxt = (1 - side) if can(opp, own) else side if can(own, opp) else GAME_OVER
    black, white = (own, opp) if side == BLACK else (opp, own)
    return black, white, nxt


@pytest.mark.parametrize("n", [4, 6])
def test_whole_random_games_follow_the_slow_engine(n):
    rng = np.random.default_rng(5)
    for _ in range(15):
        game = random_game_scalar(rng.random(n * n), n)
        start = Position.start(n)
        black, white, side = as_set(start.black), as_set(start.white), BLACK
        pos = start
        for sq in game:
            black, white, side = slow_play(n, black, white, side, sq)
            pos = pos.play(sq)
            assert (as_set(pos.black), as_set(pos.white), pos.side) == (black, white, side)
        assert side == GAME_OVER and pos.over
        assert pos.side in (BLACK, WHITE, GAME_OVER)


def test_render_and_from_text_round_trip():
    start = Position.start(4)
    assert start.render() == "\n".join([
        " 4 . . . .",
        " 3 . X O .",
        " 2 . O X .",
        " 1 . . . .",
        "   a b c d",
        "black to move",
    ])
    rows = start.render().splitlines()[:4]
    assert Position.from_text([r[3:] for r in rows], BLACK) == start
    over = Position(4, start.black | start.white, 0, GAME_OVER)
    assert over.render().endswith(" 2 . X X .\n 1 . . . .\n   a b c d\nnobody (game over) to move")
    assert Position(4, 0, 1, WHITE).render().endswith(" 1 O . . .\n   a b c d\nwhite to move")
    big = Position.start(10).render().splitlines()
    assert big[0] == "10 " + " ".join("." * 10) and big[-2] == "   a b c d e f g h i j"


def test_from_text_spellings_and_errors():
    from worldmodel.errors import WorldModelError

    plain = Position.from_text(["....", ".XO.", ".OX.", "...."], WHITE)
    assert (plain.black, plain.white, plain.side, plain.n) == (
        (1 << 9) | (1 << 6), (1 << 10) | (1 << 5), WHITE, 4)
    for rows in (["....", ".xo.", ".ox.", "...."], [". . . .", ". B W .", ". W B .", ". . . ."],
                 ["....", ".bw.", ".wb.", "...."], ["  ....", ".XO. ", ".OX.", "...."]):
        assert Position.from_text(rows, WHITE) == plain, rows
    assert Position.from_text(["....", ".XO.", ".OX.", "...."], BLACK) == Position.start(4)
    with pytest.raises(WorldModelError, match=r"^board row 2 has 3 cells, expected 4$"):
        Position.from_text(["....", "...", "....", "...."], BLACK)
    with pytest.raises(WorldModelError, match=r"^board row 3: unknown cell 'Q'$"):
        Position.from_text(["....", "....", "..Q.", "...."], BLACK)
    with pytest.raises(WorldModelError, match="even number from 4 to 26, got 3"):
        Position.from_text(["...", "...", "..."], BLACK)
    start = Position.start(4)
    assert Geometry(4).centre() == start.black | start.white == (1 << 5) | (1 << 6) | (1 << 9) | (1 << 10)
