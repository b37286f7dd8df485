"""Othello rules: known positions, perft counts, passes, game end, batched vs scalar engines."""

from __future__ import annotations

import numpy as np
import pytest

from worldmodel.errors import WorldModelError
from worldmodel.worlds.othello.engine import (
    BLACK, GAME_OVER, WHITE, Geometry, Position, flips, game_uniforms, perft,
    random_game_scalar, random_games, replay, replay_batch,
)

G8 = Geometry(8)


def names(pos: Position) -> list[str]:
    g = Geometry(pos.n)
    return [g.name(i) for i in pos.legal_list()]


def sq(name: str, n: int = 8) -> int:
    return Geometry(n).index(name)


def test_square_names_and_start():
    assert G8.name(0) == "a1" and G8.name(7) == "h1" and G8.name(63) == "h8" and G8.index("f5") == 37
    start = Position.start(8)
    assert start.counts() == (2, 2) and start.side == BLACK
    assert (start.white >> sq("d4")) & 1 and (start.white >> sq("e5")) & 1
    assert (start.black >> sq("d5")) & 1 and (start.black >> sq("e4")) & 1
    assert names(start) == ["d3", "c4", "f5", "e6"]
    # the 6x6 start is the same pattern one square closer to a1
    assert [Geometry(6).name(i) for i in Position.start(6).legal_list()] == ["c2", "b3", "e4", "d5"]


def test_opening_moves_flip_and_alternate():
    pos = Position.start(8).play(sq("f5"))
    assert pos.side == WHITE and pos.counts() == (4, 1)          # e5 flipped
    assert (pos.black >> sq("e5")) & 1
    assert names(pos) == ["f4", "d6", "f6"]              # increasing square index
    pos = pos.play(sq("d6"))                                        # white flips d5
    assert pos.side == BLACK and pos.counts() == (3, 3)
    assert Position.start(8).play(sq("a1")) is None                 # not adjacent to anything
    assert Position.start(8).play(sq("d4")) is None                 # occupied


def test_perft_matches_published_counts():
    start = Position.start(8)
    assert [perft(start, d) for d in range(1, 5)] == [4, 12, 56, 244]
    assert perft(start, 5) == 1396


def test_flips_in_all_eight_directions():
    # black plays d4: one white disc next to it in each direction, bracketed by black
    pos = Position.from_text([
        "........",
        "........",
        ".X.X.X..",
        "..OOO...",
        ".XO.OX..",
        "..OOO...",
        ".X.X.X..",
        "........",
    ], BLACK)
    f = flips(8, pos.black, pos.white, sq("d4"))
    assert sorted(G8.name(i) for i in range(64) if (f >> i) & 1) == sorted(
        ["c3", "d3", "e3", "c4", "e4", "c5", "d5", "e5"])
    after = pos.play(sq("d4"))
    assert after.white == 0 and after.side == GAME_OVER


def test_long_runs_flip_and_unbracketed_runs_do_not():
    pos = Position.from_text([
        "........",
        "........",
        "........",
        "........",
        "........",
        "........",
        "........",
        ".OOOOOOX",
    ], BLACK)
    f = flips(8, pos.black, pos.white, sq("a1"))
    assert f == sum(1 << sq(c + "1") for c in "bcdefg")
    # the same run with nothing black beyond it is not a move
    open_run = Position.from_text(["........"] * 7 + [".OOOOOO."], BLACK)
    assert flips(8, open_run.black, open_run.white, sq("a1")) == 0
    assert open_run.play(sq("a1")) is None
    # runs never wrap around the board's edge: h1 ... a2 are not neighbours
    wrap = Position.from_text(["........"] * 6 + ["X.......", ".......O"], BLACK)
    assert wrap.legal() == 0


def test_forced_pass_keeps_the_mover():
    pos = Position.from_text([
        "....OXO.",
        "........",
        "........",
        "........",
        "........",
        "........",
        "........",
        ".OX.....",
    ], BLACK)
    after = pos.play(sq("a1"))
    own, opp = after.own_opp()
    assert after.side == BLACK          # white has no legal move: it passes
    assert names(after) == ["d8", "h8"]
    # white really has no move here
    from worldmodel.worlds.othello.engine import legal_moves
    assert legal_moves(8, after.white, after.black) == 0


def test_game_end_when_neither_side_can_move():
    pos = Position.from_text(["........"] * 7 + [".OX....."], BLACK)
    end = pos.play(sq("a1"))
    assert end.over and end.side == GAME_OVER and end.legal() == 0
    assert end.play(sq("d1")) is None
    assert end.counts() == (3, 0)


def test_board_size_must_be_even():
    for bad in (5, 2, 7, 28):
        with pytest.raises(WorldModelError, match="even"):
            Geometry(bad)
    with pytest.raises(WorldModelError, match="z9"):
        G8.index("z9")


@pytest.mark.parametrize("size", [6, 8])
def test_batched_random_games_equal_the_scalar_engine(size):
    games = random_games(60, size, seed=3)
    u = game_uniforms(3, 0, 60, size * size - 4)
    for i, g in enumerate(games):
        assert g == random_game_scalar(u[i], size)
        positions = replay(g, size)                # every move legal
        assert positions[-1].over                   # random games are played to the end
    assert random_games(60, size, seed=3) == games
    assert random_games(20, size, seed=4) != games[:20]
    assert random_games(10, size, seed=3) == games[:10]   # a prefix of a run does not depend on its size


def test_random_games_include_passes_and_short_games():
    games = random_games(500, 6, seed=0)
    lengths = [len(g) for g in games]
    assert max(lengths) == 32 and min(lengths) < 32
    # some game has a pass: two consecutive moves by the same side
    def has_pass(g):
        pos, prev = Position.start(6), None
        for s in g:
            if prev is not None and pos.side == prev:
                return True
            prev = pos.side
            pos = pos.play(s)
        return False
    assert any(has_pass(g) for g in games)


def test_replay_batch_flags_the_first_illegal_move():
    games = random_games(3, 8, seed=1)
    arr = np.full((3, 60), -1)
    for i, g in enumerate(games):
        arr[i, :len(g)] = g
    arr[1, 10] = arr[1, 3]                  # an occupied square
    arr[2, 30:] = -1                        # an unfinished game
    bad, over, black, white = replay_batch(arr, 8)
    assert bad.tolist() == [-1, 10, -1]
    assert over.tolist() == [True, False, False]
    final = replay(games[0], 8)[-1]
    assert (int(black[0]), int(white[0])) == (final.black, final.white)


# ---------------------------------------------------------------------------
# Errors, chunking and the small helpers, exactly
# ---------------------------------------------------------------------------

from worldmodel.worlds.othello import engine  # noqa: E402


def test_geometry_and_names_refuse_bad_input_in_one_line():
    for bad in ("8", 8.0, None, 30, 3):
        with pytest.raises(WorldModelError, match=r"^Othello board size must be an even number from 4 to 26, got "):
            Geometry(bad)
    Geometry(4), Geometry(26)
    with pytest.raises(WorldModelError, match=r"^square index 64 is off the 8x8 board$"):
        G8.name(64)
    with pytest.raises(WorldModelError, match=r"^square index -1 is off the 8x8 board$"):
        G8.name(-1)
    with pytest.raises(WorldModelError, match=r"^'i1' is not a square of the 8x8 Othello board$"):
        G8.index("i1")
    assert Geometry(26).name(26 * 26 - 1) == "z26" and Geometry(4).index("d4") == 15


def test_geometry_masks():
    g = Geometry(4)
    assert g.squares == 16 and g.full == 0xFFFF
    assert g.column_mask(0) == 0b0001_0001_0001_0001 and g.column_mask(3) == 0b1000_1000_1000_1000
    assert g.centre() == (1 << 5) | (1 << 6) | (1 << 9) | (1 << 10)
    assert g.start() == ((1 << 9) | (1 << 6), (1 << 5) | (1 << 10))
    assert [d for d, _ in G8.directions] == [1, -1, 8, -8, 9, 7, -7, -9]
    assert list(engine.bits(0b1010_0110)) == [1, 2, 5, 7] and list(engine.bits(0)) == []


def test_replay_names_the_illegal_move():
    with pytest.raises(WorldModelError, match=r"^move 2 \(a1\) is illegal$"):
        replay([sq("f5"), sq("a1")], 8)
    with pytest.raises(WorldModelError, match=r"^move 1 \(99\) is illegal$"):
        replay([99], 8)
    with pytest.raises(WorldModelError, match=r"^move 1 \(-3\) is illegal$"):
        replay([-3], 8)
    assert len(replay([], 6)) == 1 and Position.start(8).play(64) is None and Position.start(8).play(-1) is None


def test_random_games_arguments():
    with pytest.raises(WorldModelError, match=r"^the batched random-game generator handles boards up to 8x8, not 10x10$"):
        random_games(1, 10)
    with pytest.raises(WorldModelError, match=r"^number of games must be >= 0, got -1$"):
        random_games(-1, 6)
    with pytest.raises(WorldModelError, match="even"):
        random_games(1, 7)
    assert random_games(0, 6) == []
    assert random_games(5, 6, seed=2, progress=True) == random_games(5, 6, seed=2)
    with pytest.raises(WorldModelError, match=r"^the batched engine handles boards up to 8x8, not 10x10$"):
        replay_batch(np.full((1, 4), -1), 10)


def test_random_games_read_their_uniforms_chunk_by_chunk(monkeypatch):
    monkeypatch.setattr(engine, "CHUNK", 8)
    games = random_games(20, 6, seed=5)
    assert len(games) == 20
    for i, g in enumerate(games):
        c, r = divmod(i, 8)
        rows = min(8, 20 - c * 8)
        assert g == random_game_scalar(game_uniforms(5, c, rows, 32)[r], 6)
    assert game_uniforms(5, 1, 3, 32).shape == (3, 32)
    assert np.array_equal(game_uniforms(5, 1, 3, 32), np.random.default_rng([5, 1]).random((3, 32)))


def test_random_games_array_pads_with_minus_one():
    u = game_uniforms(1, 0, 4, 40)                  # more columns than a 6x6 game can use
    arr = engine.random_games_array(6, u)
    assert arr.dtype == np.int16 and arr.shape == (4, 40)
    for row, uu in zip(arr, u):
        g = random_game_scalar(uu, 6)
        assert row[:len(g)].tolist() == g and (row[len(g):] == -1).all()
    # a uniform of exactly 1 - tiny still picks the last legal move, never past it
    top = np.full((2, 32), np.nextafter(1.0, 0.0))
    assert [list(r[r >= 0]) for r in engine.random_games_array(6, top)] == [random_game_scalar(top[0], 6)] * 2


def test_replay_batch_counts_moves_after_the_end_and_off_board_squares_as_illegal():
    g = random_games(1, 6, seed=0)[0]
    arr = np.full((3, 40), -1)
    arr[0, :len(g)] = g
    arr[0, len(g)] = g[0]                              # a move after the game is over
    arr[1, :2] = [g[0], 36]                            # square 36 is off the 6x6 board
    arr[2, :3] = g[:3]
    bad, over, black, white = replay_batch(arr, 6)
    assert bad.tolist() == [len(g), 1, -1]
    assert over.tolist() == [True, False, False]
    after3 = replay(g[:3], 6)[-1]
    assert (int(black[2]), int(white[2])) == (after3.black, after3.white)
    after1 = replay(g[:1], 6)[-1]
    assert (int(black[1]), int(white[1])) == (after1.black, after1.white)   # the position before the bad move


def test_defaults_are_the_8x8_board():
    u = game_uniforms(0, 0, 1, 60)[0]
    assert random_game_scalar(u) == random_game_scalar(u, 8) == random_games(1, 8, seed=0)[0]
    g = random_games(2, 8, seed=1)
    arr = np.full((2, 60), -1)
    for i, x in enumerate(g):
        arr[i, :len(x)] = x
    for a, b in zip(replay_batch(arr), replay_batch(arr, 8)):
        assert np.array_equal(a, b)
    with pytest.raises(WorldModelError, match=r"^the batched engine handles boards up to 8x8, not 9x9$"):
        replay_batch(arr, 9)


def test_replay_batch_keeps_the_first_illegal_move_even_at_move_one():
    g = random_games(1, 6, seed=2)[0]
    arr = np.full((2, 32), -1)
    arr[0, :4] = [0, g[0], g[1], 0]             # a1 is never a first move; later moves do not overwrite it
    arr[1, :len(g)] = g
    bad, over, black, white = replay_batch(arr, 6)
    assert bad.tolist() == [0, -1] and over.tolist() == [False, True]
    start = Position.start(6)
    assert (int(black[0]), int(white[0])) == (start.black, start.white)


def test_from_text_refuses_cells_of_several_characters():
    for cell in ("XX", "XO", "OO", "Bb"):
        with pytest.raises(WorldModelError, match=rf"^board row 2: unknown cell '{cell}'$"):
            Position.from_text([". . . .", f". {cell} . .", ". . . .", ". . . ."], BLACK)


def test_more_defaults_messages_and_chunk_counts(monkeypatch, capsys):
    assert random_games(2) == random_games(2, 8, seed=0)
    g = random_games(1, 8, seed=0)[0][:5]
    assert replay(g) == replay(g, 8)
    assert capsys.readouterr().err == ""                               # no progress bar unless asked
    random_games(3, 6, seed=1, progress=True)
    err = capsys.readouterr().err
    assert "random 6x6 games" in err and ("block/s" in err or "s/block" in err)
    with pytest.raises(WorldModelError, match=r"^move 2 \(h8\) is illegal$"):
        replay([sq("f5"), sq("h8")], 8)
    with pytest.raises(WorldModelError, match=r"^move 1 \(64\) is illegal$"):
        replay([64], 8)
    monkeypatch.setattr(engine, "CHUNK", 8)
    for n in (7, 8, 9, 23, 24):
        assert len(random_games(n, 6, seed=3)) == n


def test_position_start_defaults_to_8x8():
    assert Position.start() == Position.start(8) and Position.start().n == 8
