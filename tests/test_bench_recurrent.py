"""scripts/bench_recurrent.py: the engine and naive per-token decoding agree trial by trial on recurrent models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # the naive decoder scores every true-boundary suffix one token at a time (~30 s)
@pytest.mark.parametrize("cfg", [dict(family="lstm", n_layer=2, n_embd=16),
                                 dict(family="mamba", n_layer=1, n_embd=16, d_state=4)], ids=["lstm", "mamba"])
def test_engine_and_naive_decoding_agree(tmp_path, capsys, cfg):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench_recurrent
    finally:
        sys.path.pop(0)
    from worldmodel.models import HFModel, Vocabulary
    from worldmodel.tasks import load_task

    task = load_task("toy-dfa")
    ck = tmp_path / "ck"
    HFModel.untrained(Vocabulary(task.world.tokens, task.world.name), cfg, seed=2).save_pretrained(ck)
    bench_recurrent.main(["--checkpoint", str(ck), "--task", "toy-dfa", "--trials", "4", "--M", "4", "--rounds", "1",
                          "--max-sample-len", "8"])
    out = capsys.readouterr().out
    rows = [line.split("|") for line in out.splitlines() if line.startswith(("| compression", "| distinction"))]
    assert len(rows) == 2 and all(r[-2].strip() == "0" for r in rows)   # no trial differs
