"""The shared pieces every command and script goes through: greedy_decode, checkpoints, the evaluator."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from worldmodel import checkpoints, evaluator
from worldmodel.decoding import greedy_decode
from worldmodel.dfa import REJECT, ExplicitDFA
from worldmodel.errors import WorldModelError
from worldmodel.tasks import load_task


class Table:
    """A model whose next-token distribution is a fixed function of the prefix length."""

    def __init__(self, tokens, rows):
        self.tokens = tuple(tokens)
        self.rows = rows
        self.calls = []

    def next_token_probs(self, prefixes):
        self.calls.append(len(prefixes))
        return np.array([self.rows[min(len(p), len(self.rows) - 1)] for p in prefixes], dtype=float)


def _line_dfa():
    # a b a b ... ; "x" is rejected everywhere; "$" ends (state 2, where nothing is valid)
    delta = np.array([[1, -1, 2], [-1, 0, 2], [-1, -1, -1]])
    return ExplicitDFA(delta, ["a", "b", "$"], 0, name="line")


def test_greedy_decode_stops_on_stop_token_reject_or_length():
    tokens = ["a", "b", "$", "x"]
    # length 0/1: "a"; 2: "b"; 3: "$"; later: "x"
    model = Table(tokens, [[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    got = greedy_decode(model, [["a"], ["b"], ["a", "b"]], stop={"$"}, max_len=10)
    assert got.sequences == [["a", "a", "b", "$"], ["b", "a", "b", "$"], ["a", "b", "b", "$"]]
    assert got.states == [None, None, None]
    # the length cap counts the prefix
    assert greedy_decode(model, [["a"]], stop={"$"}, max_len=2).sequences == [["a", "a"]]
    # with a world, the first rejected token is kept and ends the sequence; rejected prefixes are not extended
    world = _line_dfa()
    model = Table(tokens, [[0, 0, 0, 1]])
    got = greedy_decode(model, [["a"], ["b"]], stop={"$"}, max_len=10, world=world)
    assert got.sequences == [["a", "x"], ["b"]]
    assert got.states == [REJECT, REJECT]
    # without a world the same model carries on to the cap
    assert greedy_decode(model, [["a"]], max_len=4).sequences == [["a", "x", "x", "x"]]


def test_greedy_decode_batches_and_choose():
    tokens = ["a", "b", "$"]
    model = Table(tokens, [[0.2, 0.7, 0.1]] * 3 + [[0, 0, 1]])
    prefixes = [["a"]] * 5
    one = greedy_decode(model, prefixes, stop={"$"}, max_len=10, batch=2)
    assert model.calls[:2] == [2, 2] and model.calls[2] == 1  # 5 live rows in chunks of 2
    assert one.sequences == greedy_decode(Table(tokens, model.rows), prefixes, stop={"$"}, max_len=10).sequences
    seen = []

    def choose(i, row, state, seq):
        seen.append((i, len(seq)))
        return int(np.argmin(row))

    got = greedy_decode(Table(tokens, model.rows), [["a"]], stop={"$"}, max_len=4, choose=choose)
    assert got.sequences == [["a", "$"]]
    assert seen == [(0, 1)]


def test_choose_dataset_rule(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    names = ["first", "second"]
    assert checkpoints.choose_dataset(names) == "first"
    assert checkpoints.choose_dataset(names, checkpoint=ck) == "first"  # no training.json
    (ck / "training.json").write_text(json.dumps({"dataset": "second"}))
    assert checkpoints.trained_dataset(ck) == "second"
    assert checkpoints.choose_dataset(names, checkpoint=ck) == "second"
    assert checkpoints.choose_dataset(names, "first", ck) == "first"  # the flag wins
    (ck / "training.json").write_text("{not json")
    assert checkpoints.trained_dataset(ck) is None


def test_reuse_or_train_reuses_a_match_and_retrains_otherwise(tmp_path, capsys):
    task = load_task("toy-dfa")
    data = tmp_path / "data"
    folder, info = checkpoints.reuse_or_train(task, "default", tmp_path / "ck", steps=3, data_dir=data,
                                              progress=False)
    assert info["steps"] == 3 and "training toy-dfa/default" in capsys.readouterr().out
    stamp = (folder / "training.json").stat().st_mtime_ns
    assert checkpoints.mismatch(folder, task, "default", 3) is None
    _, again = checkpoints.reuse_or_train(task, "default", folder, steps=3, data_dir=data, progress=False)
    assert "reusing" in capsys.readouterr().out and (folder / "training.json").stat().st_mtime_ns == stamp
    assert again == info
    assert checkpoints.mismatch(folder, task, "default", 4) == "trained for 3 steps, want 4"
    assert checkpoints.mismatch(folder, task, "other", 3) == "trained for toy-dfa/default"
    saved = folder / "task.toml"
    saved.write_text(saved.read_text().replace("lr = 3e-3", "lr = 1e-3"))
    assert checkpoints.mismatch(folder, task, "default", 3) == "task settings changed since it was trained"
    with pytest.raises(WorldModelError, match="cannot be reused .*settings changed.* training is off"):
        checkpoints.reuse_or_train(task, "default", folder, steps=3, data_dir=data, train=False)
    assert checkpoints.mismatch(tmp_path / "none", task, "default", 3) == "no finished checkpoint"
    # the loaded model is the saved one
    model = checkpoints.load(folder, task.world)
    assert model.tokens == tuple(task.world.tokens)
    shutil.rmtree(folder)


def test_evaluator_settings_and_summary(tmp_path):
    task = load_task("toy-dfa")
    s = evaluator.settings_for(task, trials=7, M=None, acceptance="top-k:2")
    assert s.trials == 7 and s.M == task.section("evaluate")["M"] and s.acceptance.spec() == "top-k:2"
    assert evaluator.settings_for(task, epsilon=0.2).acceptance.spec() == "epsilon:0.2"
    with pytest.raises(TypeError):
        evaluator.settings_for(task, trails=3)
    model = evaluator.build_model(task, model="true")
    out = tmp_path / "true.json"
    summary = evaluator.evaluate(task, model, ["compression", "next-token"], evaluator.settings_for(task, trials=5),
                                 out, data_dir=tmp_path / "data", progress=False)
    assert summary["dataset"] == "default" and set(summary["metrics"]) == {"compression_precision", "next_token"}
    assert summary["metrics"]["compression_precision"]["mean"] == 1.0
    assert json.loads(out.read_text()) == summary
    assert (tmp_path / "true.compression.trials.jsonl").exists()
    with pytest.raises(WorldModelError, match="give --checkpoint"):
        evaluator.build_model(task)
