"""scripts/bench_train.py: the new loop and the copy of the previous one compute the same losses.

Runs the benchmark on the toy task for a few steps (fp32, CPU): the two loops train
the same model on the same batches, so their losses must be equal, and the step
profile must account for the whole step's kernel time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_train_loops_agree_and_profile_adds_up(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
           "WORLDMODEL_DATA": str(tmp_path / "data")}
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "scripts/bench_train.py", "--task", "toy-dfa", "--steps", "3",
                           "--rounds", "1", "--data-batch", "8", "--profile", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["max_loss_diff"] == 0.0
    assert report["new_tokens_per_s"] > 0 and report["old_tokens_per_s"] > 0
    shares = report["profile"]["shares"]
    assert set(shares) == {"matrix products", "attention", "activation (GELU)", "everything else"}
    assert abs(sum(shares.values()) - 1) < 1e-9
    assert all(v >= 0 for v in shares.values()) and shares["matrix products"] > 0
    assert report["profile"]["kernel_bound"] == 1 / (shares["matrix products"] + shares["attention"])
    assert "at most" in proc.stdout
