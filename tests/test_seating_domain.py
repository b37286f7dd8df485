"""The seating puzzle in likelihood mode: tasks, data, sampler and the core metrics."""

import json

import numpy as np
import pytest

from worldmodel.dfa import is_valid, run
from worldmodel.errors import WorldModelError
from worldmodel.metrics import Settings, compression, distinction
from worldmodel.models import TrueWorldModel
from worldmodel.tasks import load_task
from worldmodel.worlds.seating.domain import SeatingDomain, SeatingSampler


@pytest.fixture(scope="module")
def tiny():
    return load_task("seating-tiny")


def test_tasks_load(tiny):
    for name in ("seating", "seating-tiny"):
        task = load_task(name)
        assert isinstance(task.domain, SeatingDomain)
        assert task.world.n == 3 and len(task.world.tokens) == 21
        Settings.from_dict(task.section("evaluate"))  # every evaluate key is one the engine knows
        cfg = task.section("model")
        d = task.section("data")
        s = task.section("sampler")
        # prefixes and sampled continuations fit in the model's context
        assert s["max_prefix"] + task.section("evaluate")["max_sample_len"] + 1 <= cfg["n_positions"]
        assert d["max_len"] + 1 <= cfg["n_positions"]


def test_generated_data_are_valid_and_seeded(tiny):
    a = tiny.domain.generate("default")
    b = SeatingDomain(tiny).generate("default")
    assert a == b
    d = tiny.section("data")
    assert len(a["train"]) == d["n_train"] and len(a["test"]) == d["n_test"]
    for seq in a["train"] + a["val"]:
        assert d["min_len"] <= len(seq) <= d["max_len"]
        assert is_valid(tiny.world, seq)
    with pytest.raises(WorldModelError):
        tiny.domain.generate("shortest")


def test_bad_world_settings_are_one_line_errors(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\ndomain = "seating"\n[world]\nn = "three"\n')
    with pytest.raises(WorldModelError, match="integer"):
        load_task(path).world
    path.write_text('name = "bad"\ndomain = "seating"\n[world]\nn = 12\n')
    with pytest.raises(WorldModelError, match="n must be"):
        load_task(path).world


def test_sampler_pairs(tiny):
    sampler = tiny.domain.sampler()
    assert isinstance(sampler, SeatingSampler)
    rng = np.random.default_rng(1)
    for _ in range(30):
        c = sampler.compression_pair(rng)
        assert c.state1 == c.state2 and c.prefix1 != c.prefix2
        assert len(c.prefix1) <= tiny.section("sampler")["max_prefix"]
        d = sampler.distinction_pair(rng)
        assert d.state1 != d.state2 and run(tiny.world, d.prefix1) == d.state1


def test_true_world_model_scores_one_on_the_core_metrics(tiny):
    settings = Settings.from_dict(tiny.section("evaluate"))
    model = TrueWorldModel(tiny.world)
    comp = compression(tiny.world, model, tiny.domain.sampler(), settings, progress=False)
    dist = distinction(tiny.world, model, tiny.domain.sampler(), settings, progress=False)
    assert comp.mean == 1.0 and comp.n == settings.trials
    assert dist["distinction_precision"].mean == 1.0 and dist["distinction_recall"].mean == 1.0


@pytest.mark.slow
def test_train_and_evaluate_tiny_transformer(tmp_path):
    from worldmodel.cli import main

    data = tmp_path / "data"
    ck = tmp_path / "ck"
    assert main(["train", "seating-tiny", "--out", str(ck), "--data-dir", str(data), "--no-progress"]) == 0
    out = tmp_path / "eval.json"
    assert main(["evaluate", "seating-tiny", "--checkpoint", str(ck), "--data-dir", str(data),
                 "--out", str(out), "--no-progress"]) == 0
    metrics = json.loads(out.read_text())["metrics"]
    for name in ("compression_precision", "distinction_precision", "distinction_recall", "next_token", "probe"):
        assert 0.0 <= metrics[name]["mean"] <= 1.0


@pytest.mark.slow
def test_reproduce_script_chat_rows(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, str(repo / "scripts" / "reproduce_seating.py"), "--states", "4", "--tiny-steps", "0",
           "--skip-likelihood", "--work", str(tmp_path / "work"), "--results", str(tmp_path / "res"),
           "--figure", str(tmp_path / "fig.png")]
    subprocess.run(cmd, check=True, capture_output=True, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    md = (tmp_path / "res" / "figure4.md").read_text()
    assert "| true world model | 1.00 (0.00), n=4 |" in md and "| random |" in md and "tiny local HF" in md
    assert (tmp_path / "fig.png").stat().st_size > 0
