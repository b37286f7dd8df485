"""The fast Othello paths give exactly the results of the plain ones.

* :func:`~worldmodel.worlds.othello.engine.flips` (ray tables) and ``legal_moves`` (a
  frontier per direction) against the whole-board shift engine they replaced, kept
  here as the reference, and against a square-by-square scan, on random boards;
* :meth:`OthelloWorld.random_walk <worldmodel.worlds.othello.world.OthelloWorld.random_walk>`
  (bitboards in a padded layout) against the generic :meth:`worldmodel.dfa.World.random_walk`
  over ``valid_tokens``/``step``: same tokens and the same draws from the generator;
* ``sampled_boundary`` on Othello: the same boundaries through either walk, and the
  same as before the fast paths existed (a digest recorded with the previous engine).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldmodel.dfa import REJECT, World, first_rejection, random_walk, sampled_boundary
from worldmodel.worlds.othello import engine
from worldmodel.worlds.othello.engine import (
    GAME_OVER, Position, first_illegal, flips, legal_moves, random_continuation, random_games, replay,
)
from worldmodel.worlds.othello.sampler import OthelloSampler
from worldmodel.worlds.othello.world import OthelloWorld

STEPS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


# ---------------------------------------------------------------------------
# References: the previous whole-board shift engine, and a square-by-square scan
# ---------------------------------------------------------------------------


def _shift(x: int, d: int, mask: int, full: int) -> int:
    x &= mask
    return (x << d) & full if d > 0 else x >> -d


def shift_legal(n: int, own: int, opp: int) -> int:
    full = (1 << (n * n)) - 1
    empty = full & ~(own | opp)
    moves = 0
    for d, mask in engine._directions(n):
        run = _shift(own, d, mask, full) & opp
        for _ in range(n - 3):
            run |= _shift(run, d, mask, full) & opp
        moves |= _shift(run, d, mask, full) & empty
    return moves


def shift_flips(n: int, own: int, opp: int, square: int) -> int:
    full = (1 << (n * n)) - 1
    move = 1 << square
    if (own | opp) & move:
        return 0
    out = 0
    for d, mask in engine._directions(n):
        run = _shift(move, d, mask, full) & opp
        if not run:
            continue
        for _ in range(n - 3):
            run |= _shift(run, d, mask, full) & opp
        if _shift(run, d, mask, full) & own:
            out |= run
    return out


def scan_flips(n: int, own: int, opp: int, square: int) -> int:
    """Walk (row, col) away from the square in each direction, with explicit bounds."""
    if ((own | opp) >> square) & 1:
        return 0
    r, c = divmod(square, n)
    out = 0
    for dr, dc in STEPS:
        run, rr, cc = 0, r + dr, c + dc
        while 0 <= rr < n and 0 <= cc < n and (opp >> (rr * n + cc)) & 1:
            run |= 1 << (rr * n + cc)
            rr, cc = rr + dr, cc + dc
        if 0 <= rr < n and 0 <= cc < n and (own >> (rr * n + cc)) & 1:
            out |= run
    return out


def check_board(n: int, own: int, opp: int) -> None:
    legal = legal_moves(n, own, opp)
    assert legal == shift_legal(n, own, opp) == engine._legal(n, own, opp)
    t = engine._padded(n)
    assert engine._legal_padded(engine._pad(n, own), engine._pad(n, opp), t.shifts, t.valid) == engine._pad(n, legal)
    for sq in range(n * n):
        f = flips(n, own, opp, sq)
        assert f == shift_flips(n, own, opp, sq) == scan_flips(n, own, opp, sq), sq
        assert bool(f) == bool((legal >> sq) & 1)


@st.composite
def boards(draw, sizes=(4, 6, 8, 10)):
    n = draw(st.sampled_from(sizes))
    cells = draw(st.lists(st.sampled_from("..xo"), min_size=n * n, max_size=n * n))
    own = sum(1 << i for i, ch in enumerate(cells) if ch == "x")
    opp = sum(1 << i for i, ch in enumerate(cells) if ch == "o")
    return n, own, opp


@settings(max_examples=150, deadline=None)
@given(boards())
def test_flips_and_legal_moves_equal_the_shift_engine_and_a_scan(board):
    check_board(*board)


@pytest.mark.parametrize("n", [6, 8])
def test_flips_and_legal_moves_on_game_positions(n):
    for game in random_games(25, n, seed=21):
        for pos in replay(game, n)[::3]:
            own, opp = pos.own_opp()
            check_board(n, own, opp)
            check_board(n, opp, own)


def test_padded_layout_tables():
    for n in (4, 6, 8):
        t = engine._padded(n)
        assert t.stride == n + 1 and t.valid.bit_count() == n * n
        assert sorted(s for s in t.square if s >= 0) == list(range(n * n))
        assert [s for s in t.square if s >= 0] == list(range(n * n))     # bit order is square order
        assert all(t.square[(r + 1) * t.stride - 1] == -1 for r in range(n))  # the padding column
        assert all(t.square[t.index[sq]] == sq for sq in range(n * n))
        for i, sq in enumerate(t.square):
            if sq >= 0:
                assert engine._pad(n, 1 << sq) == 1 << i
                assert set(t.up[i]) == {engine._pad(n, r) for r in engine._rays(n)[0][sq]}


# ---------------------------------------------------------------------------
# The fast walk equals the generic walk, draw for draw
# ---------------------------------------------------------------------------


def walk_states(n: int, games: int = 12, seed: int = 4) -> list:
    """Start, mid-game, pass and finished positions from random games."""
    out = []
    for game in random_games(games, n, seed=seed):
        positions = replay(game, n)
        out.extend(positions[:: max(1, len(positions) // 6)])
        out.append(positions[-1])              # finished: nothing to play
        out.append(positions[-2])              # one move from the end
        out.extend(b for a, b in zip(positions, positions[1:]) if a.side == b.side and not b.over)  # after a pass
    return out


def same_walk(world: OthelloWorld, state, max_len: int, seed: int) -> tuple:
    fast_rng, slow_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    fast = world.random_walk(state, max_len, fast_rng)
    slow = World.random_walk(world, state, max_len, slow_rng)
    assert fast == slow, (world.name, world.state_key(state) if state is not REJECT else state, max_len, seed)
    assert fast_rng.bit_generator.state == slow_rng.bit_generator.state
    assert random_walk(world, state, max_len, np.random.default_rng(seed)) == fast   # the module function delegates
    return fast


@pytest.mark.parametrize("n", [4, 6, 8, 10])
def test_fast_walk_equals_the_generic_walk(n):
    world = OthelloWorld(n)
    states = walk_states(n) if n <= 8 else [world.initial_state()]   # the batched games stop at 8x8
    lengths = 0
    for k, state in enumerate(states):
        for seed in range(3):
            for max_len in (0, 1, 3, n * n):
                lengths += len(same_walk(world, state, max_len, 1000 * k + seed))
    assert lengths > 0
    # full random games from the start: every pass and the end come up
    for seed in range(20 if n <= 8 else 3):
        walk = same_walk(world, world.initial_state(), n * n, seed)
        assert replay([world.square_index(t) for t in walk], n)[-1].over


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([4, 6, 8]), st.integers(0, 2**32 - 1), st.integers(0, 60), st.integers(0, 40))
def test_fast_walk_equals_the_generic_walk_from_random_openings(n, seed, opening, max_len):
    world = OthelloWorld(n)
    rng = np.random.default_rng(seed)
    state = world.initial_state()
    for tok in world.random_walk(state, opening, rng):
        state = world.step(state, tok)
    same_walk(world, state, max_len, seed + 1)


def test_fast_walk_edge_cases():
    world = OthelloWorld(6)
    assert world.random_walk(REJECT, 5, np.random.default_rng(0)) == () == World.random_walk(
        world, REJECT, 5, np.random.default_rng(0))
    over = [p for p in walk_states(6, games=3) if p.over][0]
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    assert world.random_walk(over, 10, rng) == () and rng.bit_generator.state == before
    assert random_continuation(over, 10, rng) == []
    # a position with a single legal move still draws once (as the generic walk does)
    single = [p for p in walk_states(6, games=30) if not p.over and p.legal().bit_count() == 1]
    assert single
    same_walk(world, single[0], 1, 7)
    # the walk's moves are square indices of legal moves, played with implicit passes
    pos = Position.start(8)
    squares = random_continuation(pos, 60, np.random.default_rng(3))
    assert replay(squares, 8)[-1].side == GAME_OVER


# ---------------------------------------------------------------------------
# The fast first_rejection equals the generic one
# ---------------------------------------------------------------------------


def same_rejection(world: OthelloWorld, state, suffix) -> int | None:
    fast = world.first_rejection(state, suffix)
    assert fast == World.first_rejection(world, state, suffix), (suffix, fast)
    assert first_rejection(world, state, suffix) == fast            # the module function delegates
    return fast


@pytest.mark.parametrize("n", [4, 6, 8])
def test_fast_first_rejection_equals_the_generic_one(n):
    world = OthelloWorld(n)
    states = walk_states(n, games=8)
    rng = np.random.default_rng(n)
    answers = set()
    for k, q1 in enumerate(states):
        q2 = states[int(rng.integers(len(states)))]
        for seed in range(3):
            walk = world.random_walk(q1, n * n, np.random.default_rng(100 * k + seed))
            assert same_rejection(world, q1, walk) is None               # valid from where it was drawn
            answers.add(same_rejection(world, q2, walk))
            # play past the game's end, and tokens that are no legal move anywhere
            answers.add(same_rejection(world, q1, walk + (walk[-1] if walk else world.tokens[0],)))
        noise = [world.tokens[int(i)] for i in rng.integers(len(world.tokens), size=6)]
        answers.add(same_rejection(world, q1, noise))
        answers.add(same_rejection(world, q1, noise[:1] + ["zz"] + noise[1:]))
    assert None in answers and 0 in answers and len(answers) > 5
    # the reject state, an empty suffix, a centre square (never in the alphabet)
    assert same_rejection(world, REJECT, ["a1"]) == 0 and same_rejection(world, REJECT, []) is None
    assert same_rejection(world, world.initial_state(), []) is None
    assert same_rejection(world, world.initial_state(), [world.geometry.name(n * n // 2 + n // 2)]) == 0


def test_first_illegal_at_the_end_of_a_game():
    game = random_games(1, 6, seed=2)[0]
    positions = replay(game, 6)
    assert first_illegal(positions[0], game) is None
    assert first_illegal(positions[0], game + [game[-1]]) == len(game)        # nothing is legal after the end
    assert first_illegal(positions[-1], []) is None and first_illegal(positions[-1], [0]) == 0
    assert first_illegal(positions[0], [-1]) == 0 and first_illegal(positions[0], [36]) == 0


# ---------------------------------------------------------------------------
# sampled_boundary: unchanged
# ---------------------------------------------------------------------------


class GenericOthello(OthelloWorld):
    """Othello with the generic walk and check (valid_tokens and step per move)."""

    random_walk = World.random_walk
    first_rejection = World.first_rejection


# sha256 of repr([(boundary, next draw), ...]) for the 12 trials below, recorded with
# the engine before the fast paths (whole-board shifts, generic walk; commit ede3340)
RECORDED = {
    6: (86, "b867f73542d8b5fda99e7b5b8286f8d7b88e54df9f4151eceb1c8601094089ba"),
    8: (131, "a0b86cef9277c027cb34ffdd9fbcbe02ae7dc1184fd7fa03eb5f655952b9ea31"),
}


@pytest.mark.parametrize("n,max_len", [(6, 32), (8, 60)])
def test_sampled_boundaries_are_unchanged(n, max_len):
    fast_world, slow_world = OthelloWorld(n), GenericOthello(n)
    sampler = OthelloSampler(fast_world, games=100, pool_seed=3)
    out = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        pair = sampler.distinction_pair(rng)
        slow_rng = np.random.default_rng()
        slow_rng.bit_generator.state = rng.bit_generator.state
        fast = sampled_boundary(fast_world, pair.state1, pair.state2, 30, max_len, rng)
        slow = sampled_boundary(slow_world, pair.state1, pair.state2, 30, max_len, slow_rng)
        assert fast == slow
        nxt = int(rng.integers(1 << 30))
        assert nxt == int(slow_rng.integers(1 << 30))
        out.append((fast, nxt))
    assert sum(len(b) for b, _ in out) > 0
    assert (sum(len(b) for b, _ in out), hashlib.sha256(repr(out).encode()).hexdigest()) == RECORDED[n]


def test_bench_script_finds_identical_boundaries(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "bench_othello.py"
    spec = importlib.util.spec_from_file_location("bench_othello", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--part", "walks", "--tasks", "othello-6x6-tiny", "--trials", "3", "--M", "4",
                       "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "identical boundaries" in out and "ratio" in out and "trials/s CPU" in out
