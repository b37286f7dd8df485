"""scripts/gpu_check.py at its tiny CPU size, importing only what the GPU machine has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import blocked_imports

ROOT = Path(__file__).resolve().parent.parent

#: Not installed on the machine the lead runs the check on (and nothing may download).
BLOCKED = ("osmnx", "folium", "scipy", "matplotlib", "platformdirs", "sklearn")


def test_gpu_check_tiny_runs_without_optional_packages(tmp_path):
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        blocked_imports.command("scripts/gpu_check.py", BLOCKED, "--out", str(out), "--train-seconds", "4",
                                "--trials", "4", "--work", str(tmp_path / "work")),
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "gpu-check.json").read_text())
    assert report["status"] == "complete" and report["size"] == "tiny"
    assert report["device"]["type"] == "cpu" and report["versions"]["torch"]
    t = report["training"]
    assert t["data"] == "stream" and t["steps"] >= 1 and t["time_budget"] <= 4
    assert t["tokens_per_s"] > 0 and t["final_val_loss"] is not None
    names = {"next_token", "compression_precision", "distinction_precision", "distinction_recall", "probe"}
    assert names <= set(report["metrics"])
    assert all(0.0 <= report["metrics"][n]["mean"] <= 1.0 for n in names)
    md = (out / "gpu-check.md").read_text()
    assert "| probe |" in md and "MFU" in md and "Status: complete" in md
    assert "[" in proc.stdout and "wrote" in proc.stdout        # progress lines, then the files


@pytest.mark.slow
def test_gpu_check_deadline_skips_phases_and_keeps_partial_results(tmp_path):
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, "scripts/gpu_check.py", "--out", str(out), "--train-seconds", "2", "--max-seconds", "1",
         "--metrics", "next-token,probe"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "gpu-check.json").read_text())
    assert report["training"]["steps"] >= 1
    assert all("skipped" in m for m in report["metrics"].values())
    assert "skipped" in (out / "gpu-check.md").read_text()
