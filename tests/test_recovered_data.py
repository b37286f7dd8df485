"""The narrow- and broad-data sources of results/recovered: toy walk streams (uniform, skewed), the
greedy Othello player, training snapshots and the recorded trained length."""

from __future__ import annotations

import json

import numpy as np
import pytest

from worldmodel import checkpoints
from worldmodel.dfa import is_valid
from worldmodel.errors import WorldModelError
from worldmodel.tasks import load_task
from worldmodel.worlds.othello.engine import Position
from worldmodel.worlds.othello.player import player_games_array, positional_weights


def _seqs(world, packed):
    return [[world.tokens[i] for i in packed[r]] for r in range(len(packed))]


def test_toy_streams_are_valid_seeded_walks_of_the_task_lengths():
    task = load_task("toy-dfa")
    domain, world = task.domain, task.world
    assert domain.datasets() == ["default", "skewed"]
    for name in domain.datasets():
        stream = domain.stream(name)
        a, b = stream.block(3, 400), stream.block(3, 400)
        assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.offsets, b.offsets)   # a pure function
        assert not np.array_equal(stream.block(4, 400).tokens[:50], a.tokens[:50])
        seqs = _seqs(world, a)
        assert all(is_valid(world, s) for s in seqs)
        assert a.lengths.min() == 8 and a.lengths.max() == 24 == stream.max_len


def test_skewed_walks_take_the_preferred_token_as_often_as_asked():
    task = load_task("toy-dfa")
    domain, world = task.domain, task.world
    preferred = domain.preferred_tokens()
    assert all(world.delta[s, preferred[s]] >= 0 for s in range(world.n_states))
    for name, want in (("skewed", 0.9), ("default", None)):
        packed = domain.stream(name).block(0, 3000)
        hits = steps = 0
        for r in range(len(packed)):
            q = world.start
            for tok in packed[r]:
                if (world.delta[q] >= 0).sum() > 1:          # a real choice
                    hits += int(tok == preferred[q])
                    steps += 1
                q = int(world.delta[q, tok])
        share = hits / steps
        if want is None:
            assert share < 0.6                                   # uniform: 1/2 to 1/4 per state
        else:
            assert abs(share - want) < 0.01


def test_skewed_files_are_reproducible_and_sized(tmp_path):
    task = load_task("toy-dfa")
    a = task.domain.generate("skewed")
    assert {k: len(v) for k, v in a.items()} == {"train": 3000, "val": 200, "test": 200}
    assert a == task.domain.generate("skewed")
    assert a["train"][:5] != a["test"][:5]


def _score(pos: Position, sq: int, weights) -> float:
    own, opp = pos.own_opp()
    from worldmodel.worlds.othello.engine import flips
    return weights[sq] + flips(pos.n, own, opp, sq).bit_count()


def test_greedy_player_plays_the_best_legal_move_unless_exploring():
    n = 6
    weights = positional_weights(n)
    assert weights[0] == weights[n - 1] == weights[n * n - 1] == 100 and weights[n + 1] == -50
    rng = np.random.default_rng(0)
    u = rng.random((40, n * n - 4, 2))
    games = player_games_array(n, u, explore=0.0)
    for row, ur in zip(games, u):
        pos = Position.start(n)
        for t, sq in enumerate(row[row >= 0]):
            legal = pos.legal_list()
            assert int(sq) in legal
            best = max(_score(pos, s, weights) for s in legal)
            assert _score(pos, int(sq), weights) == best
            pos = pos.play(int(sq))
        assert pos.over                                          # games are played to the end
    explored = player_games_array(n, u, explore=1.0)              # every move random: not all greedy
    assert not np.array_equal(explored, games)


def test_greedy_dataset_is_legal_narrow_and_streamed():
    task = load_task("othello-6x6-tiny")
    domain, world = task.domain, task.world
    assert domain.datasets() == ["synthetic", "greedy"]
    games = _seqs(world, domain.stream("greedy").block(0, 300))
    assert all(is_valid(world, g) for g in games)
    synthetic = _seqs(world, domain.stream("synthetic").block(0, 300))
    openings = lambda gs: len({tuple(g[:8]) for g in gs})   # noqa: E731
    assert openings(games) < 0.7 * openings(synthetic)        # far fewer distinct openings than random play
    from worldmodel.tasks import Task

    small = Task(task.name, task.path, dict(task.config, data={**task.config["data"], "greedy": {"n_train": 50}}))
    files = small.domain.generate("greedy")
    assert [len(files[s]) for s in ("train", "val", "test")] == [50, 100, 100] and files == small.domain.generate("greedy")
    bad = dict(task.config, data={**task.config["data"], "greedy": {"explore": 2.0}})
    with pytest.raises(WorldModelError, match=r"explore must be a number in \[0, 1\]"):
        Task(task.name, task.path, bad).domain.stream("greedy")


def test_training_records_trained_len_and_keeps_loadable_snapshots(tmp_path):
    from worldmodel.training import train

    task = load_task("toy-dfa")
    out = tmp_path / "ck"
    info = train(task, out, steps=6, data_dir=tmp_path / "data", progress=False,
                 overrides={"snapshots": True, "save_every": 3, "batch_size": 8, "eval_every": 6})
    assert info["trained_len"] == 24
    snaps = sorted(p.name for p in (out / "snapshots").iterdir())
    assert snaps == ["step-0000000", "step-0000003", "step-0000006"]
    model = checkpoints.load(out / "snapshots" / "step-0000003", task.world)
    assert model.trained_len == 24 and checkpoints.trained_len(out) == 24
    assert json.loads((out / "snapshots" / "step-0000003" / "training.json").read_text())["steps"] == 3
    # a checkpoint without the record (an import, or one trained before it existed): the context bounds it
    record = json.loads((out / "training.json").read_text())
    del record["trained_len"]
    (out / "training.json").write_text(json.dumps(record))
    assert checkpoints.trained_len(out) is None
    assert checkpoints.mismatch(out, task, "default", 6) == "trained before checkpoints recorded their trained length"
