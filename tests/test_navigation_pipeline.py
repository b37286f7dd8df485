"""End to end through the CLI on nav-grid-tiny: data -> train -> evaluate (slow: trains a model)."""

from __future__ import annotations

import json

import pytest

from worldmodel.cli import main


@pytest.mark.slow
def test_tiny_pipeline(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLDMODEL_DATA", str(tmp_path / "data"))
    assert main(["data", "nav-grid-tiny", "--dataset", "random-walks"]) == 0
    ckpt = tmp_path / "rw"
    assert main(["train", "nav-grid-tiny", "--dataset", "random-walks", "--out", str(ckpt),
                 "--no-progress"]) == 0
    out = tmp_path / "eval.json"
    assert main(["evaluate", "nav-grid-tiny", "--checkpoint", str(ckpt), "--trials", "10",
                 "--metrics", "compression,distinction,next-token", "--out", str(out), "--no-progress"]) == 0
    summary = json.loads(out.read_text())
    metrics = summary["metrics"]
    for name in ("compression_precision", "distinction_precision", "distinction_recall", "next_token",
                 "legal_moves", "valid_traversal", "shortest_path"):
        assert 0.0 <= metrics[name]["mean"] <= 1.0, name
    assert summary["dataset"] == "random-walks"
    # even a briefly trained model beats chance on the next-token test
    assert metrics["next_token"]["mean"] > 0.8


@pytest.mark.slow
def test_region_task_data(tmp_path, monkeypatch):
    from worldmodel.worlds.navigation.sources import shared_data_dir

    if not (shared_data_dir() / "manhattan" / "world_model_edges.json").exists():
        pytest.skip(f"shared Manhattan data not found at {shared_data_dir()}")
    monkeypatch.setenv("WORLDMODEL_DATA", str(tmp_path / "data"))
    assert main(["data", "nav-manhattan-region"]) == 0
    for ds in ("shortest-paths", "noisy-shortest-paths", "random-walks"):
        assert (tmp_path / "data" / "nav-manhattan-region" / ds / "test.txt").stat().st_size > 0
