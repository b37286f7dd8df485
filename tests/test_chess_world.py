"""The chess world: notation, states (Myhill–Nerode for the rules it models), fast paths, sampler, data."""

import json

import chess
import numpy as np
import pytest

from worldmodel import dfa
from worldmodel.cli import main
from worldmodel.dfa import REJECT
from worldmodel.errors import WorldModelError
from worldmodel.tasks import load_task
from worldmodel.worlds.chess.notation import movetext_moves, san_alphabet, san_bare, suffix, uci_alphabet
from worldmodel.worlds.chess.players import GreedyPlayer, RandomPlayer, play_games
from worldmodel.worlds.chess.sampler import ChessSampler
from worldmodel.worlds.chess.world import ChessState, ChessWorld


@pytest.fixture(scope="module")
def san():
    return ChessWorld("san")


@pytest.fixture(scope="module")
def uci():
    return ChessWorld("uci")


def run(world, moves):
    return dfa.run(world, moves)


def test_alphabets_are_fixed_and_cover_every_move_of_random_games(san, uci):
    assert len(san.tokens) == 42018 == len(set(san.tokens)) and len(uci.tokens) == 1968 == len(set(uci.tokens))
    assert san.tokens[:6] == ("O-O", "O-O+", "O-O#", "O-O-O", "O-O-O+", "O-O-O#")
    rng = np.random.default_rng(0)
    sans, ucis = set(san_alphabet()), set(uci_alphabet())
    for _ in range(8):
        board = chess.Board()
        for _ in range(200):
            legal = list(board.legal_moves)
            if not legal:
                break
            for m in legal:  # our SAN (bare + suffix) is python-chess's, and every move is in the alphabets
                s = san_bare(board, m, legal) + suffix(board, m)
                assert s == board.san(m) and s in sans and m.uci() in ucis
            board.push(legal[int(rng.integers(len(legal)))])


def test_disambiguation_promotion_check_and_mate_are_spelled_as_pgn(san):
    # three white queens reach d4 (a1, d1, a4): full-square disambiguation, as python-chess writes it
    s = ChessState.of(chess.Board("4k3/8/8/8/Q7/8/8/Q2QK3 w - - 0 1"))
    toks = san.valid_tokens(s)
    assert {"Qa1d4+", "Qdd4+", "Q4d4"} <= set(toks) and not {"Qd4", "Qd4+", "Qa1d4"} & set(toks)
    s = ChessState.of(chess.Board("8/P6k/8/8/8/8/8/K7 w - - 0 1"))
    assert {"a8=Q", "a8=R", "a8=B", "a8=N"} <= set(san.valid_tokens(s)) and "a8" not in san.valid_tokens(s)
    # Fool's mate: the mating move is spelled with '#', and the bare or '+' spelling is invalid
    s = run(san, ["f3", "e5", "g4"])
    assert "Qh4#" in san.valid_tokens(s) and san.step(s, "Qh4") is REJECT and san.step(s, "Qh4+") is REJECT
    mated = san.step(s, "Qh4#")
    assert mated.over and san.valid_tokens(mated) == [] and san.step(mated, "a3") is REJECT


def test_state_equality_is_the_position(san):
    # a transposition: same position, castling rights and side to move -> equal
    a = run(san, ["Nf3", "Nf6", "Nc3", "Nc6"])
    b = run(san, ["Nc3", "Nc6", "Nf3", "Nf6"])
    assert a == b and hash(a) == hash(b)
    # the same placement with different castling rights is a different state (the rook went and came back)
    c = run(san, ["Nf3", "Nf6", "Rg1", "Rg8", "Rh1", "Rh8"])
    d = run(san, ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6"])
    assert c.board().board_fen() == d.board().board_fen() and c != d
    assert "O-O" not in san.valid_tokens(run(san, ["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6", "Rg1", "Rg8", "Rh1",
                                                   "Rh8"]))
    # en passant counts only when a capture is legal: after 1.e4 (no black pawn can take) the
    # position equals the one reached by 1.e3 ... e4 in two steps; with a capturable pawn it does not
    e1 = run(san, ["e4", "Nf6", "Nf3", "Ng8", "Ng1"])
    e2 = run(san, ["Nf3", "Nf6", "Ng1", "Ng8", "e4"])
    assert e1 == e2
    p1 = run(san, ["e4", "a6", "e5", "d5"])          # exd6 is legal now
    p2 = run(san, ["e4", "d6", "e5", "a6", "Nf3", "d5", "Ng1"])  # same placement, no en passant
    assert p1.board().board_fen() == p2.board().board_fen() and p1 != p2 and "exd6" in san.valid_tokens(p1)
    # move counters play no part, and every finished position is one state
    assert run(san, ["f3", "e5", "g4", "Qh4#"]) == run(san, ["g4", "e5", "f3", "Qh4#"]) == ChessState("x", True)
    assert san.state_key(run(san, ["f3", "e5", "g4", "Qh4#"])) == "end"


def test_the_world_models_no_draw_rule(san):
    # knights out and back four times: a fivefold repetition, and the game goes on
    seq = ["Nf3", "Nf6", "Ng1", "Ng8"] * 5
    s = run(san, seq)
    assert s == san.initial_state() and "e4" in san.valid_tokens(s)


@pytest.mark.parametrize("notation", ["san", "uci"])
def test_fast_paths_equal_the_generic_ones(notation):
    world = ChessWorld(notation)
    games = play_games(world, RandomPlayer(), 6, 3, 60)
    for g in games:
        state = run(world, g[:len(g) // 2])
        r1, r2 = np.random.default_rng(len(g)), np.random.default_rng(len(g))
        walk = world.random_walk(state, 25, r1)
        assert walk == dfa.World.random_walk(world, state, 25, r2) and r1.random() == r2.random()
        for suffix_ in (walk, walk[:3] + ("Ke2", "e2e4") + walk[3:], tuple(g[len(g) // 2:]), ("zz",)):
            assert world.first_rejection(state, suffix_) == dfa.World.first_rejection(world, state, suffix_)


def test_players_are_seeded_and_the_greedy_one_takes_free_material(san):
    assert play_games(san, RandomPlayer(), 3, 7, 30) == play_games(san, RandomPlayer(), 3, 7, 30)
    assert play_games(san, RandomPlayer(), 2, 7, 30, first=1) == play_games(san, RandomPlayer(), 3, 7, 30)[1:]
    board = chess.Board("4k3/8/8/3q4/8/8/8/3QK3 w - - 0 1")  # the queen on d5 hangs
    moves = san._ordered(board)
    assert GreedyPlayer().choose(san, board, moves, np.random.default_rng(0)).uci() == "d1d5"
    for g in play_games(san, GreedyPlayer(), 3, 0, 40):
        assert dfa.is_valid(san, g)


def test_sampler_gives_transpositions_and_distinct_states(san, uci):
    for world in (san, uci):
        sampler = ChessSampler(world, games=60, pool_seed=2, max_plies=30)
        rng = np.random.default_rng(0)
        for _ in range(8):
            p = sampler.compression_pair(rng)
            assert p.prefix1 != p.prefix2 and len(p.prefix1) == len(p.prefix2)
            assert p.state1 == p.state2 == run(world, p.prefix1) == run(world, p.prefix2) and not p.state1.over
            q = sampler.distinction_pair(rng)
            assert q.state1 != q.state2 and len(q.prefix1) == len(q.prefix2)
    with pytest.raises(WorldModelError):
        ChessSampler(san, games=1)


def test_movetext_and_pgn_dataset(tmp_path):
    assert movetext_moves(";1.e4 e5 2.Nf3 Nc6 3.Bb5") == ["e4", "e5", "Nf3", "Nc6", "Bb5"]
    assert movetext_moves("1. e4 {best} e5 2. Nf3!? $1 Nc6 1-0") == ["e4", "e5", "Nf3", "Nc6"]
    games = tmp_path / "games.txt"
    # Morphy's Opera game (1858) and Fool's mate, once in Karvonen's layout, once as plain PGN movetext
    games.write_text(";1.e4 e5 2.Nf3 d6 3.d4 Bg4 4.dxe5 Bxf3 5.Qxf3 dxe5 6.Bc4 Nf6 7.Qb3 Qe7 8.Nc3 c6 9.Bg5 b5 "
                     "10.Nxb5 cxb5 11.Bxb5+ Nbd7 12.O-O-O Rd8 13.Rxd7 Rxd7 14.Rd1 Qe6 15.Bxd7+ Nxd7 16.Qb8+ Nxb8 "
                     "17.Rd8#\n1. f3 e5 2. g4 Qh4 0-1\n1. d4 d5\n")
    task_file = tmp_path / "t.toml"
    task_file.write_text(f'name = "t"\ndomain = "chess"\n[data]\nn_val = 1\nn_test = 1\n[data.pgn]\nfile = "{games}"\n')
    task = load_task(task_file)
    assert task.domain.datasets() == ["random", "engine", "pgn"]
    out = task.domain.generate("pgn")
    assert out["test"][0][-1] == "Rd8#" and out["val"][0][-1] == "Qh4#"   # the check sign is written as the rules say
    assert out["train"] == [["d4", "d5"]]
    games.write_text("1. e4 e5 2. Ke3\n")
    with pytest.raises(WorldModelError, match="is not legal"):
        task.domain.generate("pgn")


def test_chess_tiny_true_world_model_scores_one(tmp_path, capsys):
    out = tmp_path / "true.json"
    assert main(["evaluate", "chess-tiny", "--model", "true", "--data-dir", str(tmp_path / "d"), "--out", str(out),
                 "--trials", "6", "--M", "3", "--no-progress"]) == 0
    metrics = json.loads(out.read_text())["metrics"]
    for name in ("compression_precision", "distinction_precision", "distinction_recall", "next_token"):
        assert metrics[name]["mean"] == 1.0 and metrics[name]["n"] > 0, name
    assert main(["chess-detours", "chess-tiny", "--model", "true", "--trials", "4", "--plies", "6", "--kind",
                 "random,adversarial", "--data-dir", str(tmp_path / "d"), "--out", str(tmp_path / "det.json"),
                 "--no-progress"]) == 0
    det = json.loads((tmp_path / "det.json").read_text())
    assert all(r["share"] == 1.0 for r in det["results"]) and det["results"][-1]["replaced"] > 0
    assert main(["chess-detours", "toy-dfa", "--model", "true", "--out", str(tmp_path / "x.json")]) == 2
    assert "not a chess task" in capsys.readouterr().err
