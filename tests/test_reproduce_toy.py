"""scripts/reproduce_toy.py: several training seeds, mean ± spread across runs beside the
within-run standard error, and a rerun that leaves its table files untouched."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

TOY = """name = "toy-seeds"
domain = "toy"
seed = 0
[world]
n_states = 5
n_tokens = 3
[data]
n_train = 200
n_val = 40
n_test = 40
[model]
n_layer = 1
n_embd = 32
n_head = 2
n_positions = 64
[train]
batch_size = 16
[evaluate]
trials = 6
M = 5
k = 3
max_sample_len = 12
probe_sequences = 40
probe_epochs = 3
"""


def _script():
    spec = importlib.util.spec_from_file_location("reproduce_toy", REPO / "scripts" / "reproduce_toy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # about 100 s on a loaded 2-core machine
def test_seeds_spread_and_a_clean_rerun(tmp_path, capsys):
    task = tmp_path / "toy-seeds.toml"
    task.write_text(TOY)
    mod = _script()
    argv = ["--task", str(task), "--seeds", "2", "--steps", "3", "--runs", str(tmp_path / "runs"),
            "--out", str(tmp_path / "out")]
    mod.main(argv)
    first = capsys.readouterr().out
    md = (tmp_path / "out" / "table.md").read_text()
    data = json.loads((tmp_path / "out" / "table.json").read_text())
    trained = data["summary"]["trained"]["compression_precision"]
    assert trained["runs"] == 2 and len(trained["per_run"]) == 2
    assert abs(trained["mean"] - sum(trained["per_run"]) / 2) < 1e-12
    assert [r["seed"] for r in data["runs"]["trained"]] == [0, 1]
    assert data["summary"]["true world model"]["compression_precision"]["sd_across_runs"] is None
    assert "| true world model | 1.00 ± – (0.00) |" in md and "mean over 2 training runs" in md
    assert "wrote" in first
    stamp = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()}
    mod.main(argv)  # everything reused: same numbers, files untouched
    assert "table.* unchanged" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()} == stamp
