"""scripts/bench_metrics.py: the engine, the stand-in of the authors' method and the naive engine agree trial by trial.

The script asserts that every trial's scores are identical across the three
engines (the authors' own code, ``--authors-code``, is tested in test_authors_code.py); this runs it on a small untrained Othello model (samples that diverge at
once and run long, a sampled true boundary), importing only what the GPU machine has.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import blocked_imports

ROOT = Path(__file__).resolve().parent.parent

BLOCKED = ("osmnx", "folium", "matplotlib", "platformdirs", "sklearn")


def test_bench_engines_agree_on_a_small_model(tmp_path):
    from worldmodel.models import HFModel, Vocabulary
    from worldmodel.tasks import load_task

    task = load_task("othello-6x6-tiny")
    ck = tmp_path / "ck"
    HFModel.untrained(Vocabulary(task.world.tokens, task.world.name), task.section("model"), seed=3).save_pretrained(ck)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        blocked_imports.command("scripts/bench_metrics.py", BLOCKED, "--checkpoint", str(ck),
                                "--task", "othello-6x6-tiny", "--trials", "4", "--M", "4",
                                "--batch-trials", "2", "--forward-seconds", "0.2"),
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in lines if line.startswith(("compression ", "distinction "))}
    assert set(rows) == {"compression", "distinction"}
    for row in rows.values():
        assert row[2] == "-"                              # no --authors-code: their code did not run
        assert all(float(x) > 0 for x in (row[1], row[3], row[4]))   # engine, stand-in, naive trials/s
        assert all(x.endswith("x") for x in row[7:11])    # vs stand-in, vs naive (wall, CPU)
    assert "distinction_recall=" in rows["distinction"][-1]
    assert any("plain forward pass" in line for line in lines)
