"""``worldmodel othello-detours``: the true model always finishes; wrappers add the world's game-over token."""

from __future__ import annotations

import json

import numpy as np
import pytest

from worldmodel.cli import main
from worldmodel.detours import openings, run_detours
from worldmodel.dfa import REJECT, run
from worldmodel.models import TrueWorldModel
from worldmodel.worlds.othello.engine import random_games
from worldmodel.worlds.othello.play import END, GameOverModel, GameOverWorld
from worldmodel.worlds.othello.world import OthelloWorld

W6 = OthelloWorld(6)


def test_wrappers_end_exactly_at_finished_games():
    game = [W6.geometry.name(s) for s in random_games(1, 6, seed=0)[0]]
    world, model = GameOverWorld(W6), GameOverModel(TrueWorldModel(W6), W6)
    probs = model.next_token_probs([game[:3], game])
    assert probs.shape == (2, len(W6.tokens) + 1)
    assert probs[0, -1] == 0 and probs[0, :-1].sum() == pytest.approx(1)
    assert probs[1, -1] == 1 and probs[1, :-1].sum() == 0
    end = run(world, game)
    assert world.valid_tokens(end) == [END] and world.step(end, END) == end
    assert world.step(run(world, game[:3]), END) is REJECT


class FirstEmptySquare(TrueWorldModel):
    """Plays the first empty square, legal or not."""

    def _dist(self, state):
        p = np.zeros(len(self.tokens))
        if state is REJECT or state.over:
            return p
        occupied = state.black | state.white
        for i, t in enumerate(self.tokens):
            if not (occupied >> self.world.square_index(t)) & 1:
                p[i] = 1.0
                return p
        return p


def test_true_model_finishes_every_game_and_a_rule_less_one_does_not():
    starts = [[W6.geometry.name(s) for s in g[:4]] for g in random_games(10, 6, seed=1)]
    def shares(model):
        results, _ = run_detours(GameOverModel(model, W6), GameOverWorld(W6), starts, "adversarial",
                                 [0, 0.5], max_len=33, seed=0)
        return [r.share for r in results]

    assert shares(TrueWorldModel(W6)) == [1.0, 1.0]
    rule_less = shares(FirstEmptySquare(W6))
    assert rule_less[0] == 0.0 and rule_less[1] < 1.0
    ok = [t for t in run_detours(GameOverModel(TrueWorldModel(W6), W6), GameOverWorld(W6), starts,
                                 "random", [0.5], max_len=33, seed=0)[1]]
    assert all(t.reason == "ok" and t.tokens[-1] == END and run(W6, t.tokens[:-1]).over for t in ok)


def test_openings_are_distinct_games_and_seeded():
    games = [[W6.geometry.name(s) for s in g] for g in random_games(20, 6, seed=2)]
    a = openings(games, 5, 3, seed=0)
    assert len(a) == 5 and all(len(x) == 3 for x in a)
    assert a == openings(games, 5, 3, seed=0) and a != openings(games, 5, 3, seed=1)


def test_cli_true_model(tmp_path, capsys):
    out = tmp_path / "d.json"
    code = main(["othello-detours", "othello-6x6-tiny", "--model", "true", "--trials", "8", "--p", "0,0.5",
                 "--kind", "random,adversarial", "--data-dir", str(tmp_path / "data"), "--out", str(out),
                 "--no-progress"])
    assert code == 0
    data = json.loads(out.read_text())
    assert [r["share"] for r in data["results"]] == [1.0] * 4
    assert "| random | 0.5 | 1.000" in capsys.readouterr().out


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    args = ["othello-detours", "othello-6x6-tiny", "--model", "true", "--out", str(tmp_path / "x.json"),
            "--data-dir", str(tmp_path / "data"), "--no-progress"]
    assert main(args + ["--kind", "sideways"]) == 2
    assert main(args + ["--p", "2"]) == 2
    assert main(["othello-detours", "toy-dfa", "--model", "true", "--out", str(tmp_path / "y.json")]) == 2
    err = capsys.readouterr().err
    assert "sideways" in err and "not in [0, 1]" in err and "not an Othello task" in err
    assert "Traceback" not in err
