"""scripts/reproduce_othello.py end to end on othello-6x6-tiny with tiny settings, into tmp_path."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "reproduce_othello.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("reproduce_othello", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def _first_table(md: str) -> tuple[list[str], list[list[str]]]:
    block = []
    for ln in md.splitlines():
        if ln.startswith("|"):
            block.append(ln)
        elif block:
            break
    head = [c.strip() for c in block[0].strip("|").split("|")]
    body = [[c.strip() for c in ln.strip("|").split("|")] for ln in block[2:]]
    return head, body


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reproduce_othello")
    mod = _load_script()
    argv = ["--synthetic-task", "othello-6x6-tiny", "--championship-task", "othello-6x6-tiny",
            "--championship-dataset", "synthetic", "--steps", "5", "--trials", "4", "--M", "3",
            "--probe-sequences", "20", "--probe-epochs", "2", "--detour-trials", "3",
            "--runs", str(tmp / "runs"), "--results", str(tmp / "results"), "--figures", str(tmp / "figs"),
            "--no-progress"]
    assert mod.main(argv) == 0
    return mod, argv, tmp


def test_files_written(run):
    _, _, tmp = run
    for rel in ("results/table3.md", "results/table3.json", "results/table4.md", "results/table4.json"):
        assert (tmp / rel).stat().st_size > 0, rel
    for name in ("othello-metrics.png", "othello-detours.png"):
        assert (tmp / "figs" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table3_structure(run):
    _, _, tmp = run
    md = (tmp / "results" / "table3.md").read_text()
    assert "Made by `OMP_NUM_THREADS=1 python scripts/reproduce_othello.py --synthetic-task othello-6x6-tiny" in md
    head, body = _first_table(md)
    assert head == ["Model", "held out", "Next-token test", "Current-state probe", "Compression precision",
                    "Distinction precision", "Distinction recall"]
    assert [r[0] for r in body] == ["untrained", "synthetic", "championship", "true world model"]
    true = body[-1]
    assert true[3] == "—"  # no hidden layer, no probe
    assert all(c == "1.00 (0.00)" for c in true[2:3] + true[4:])
    data = json.loads((tmp / "results" / "table3.json").read_text())
    assert set(data["rows"]) == {"untrained", "synthetic", "championship", "true world model"}
    for label, row in data["rows"].items():
        m = row["metrics"]
        assert m["compression_precision"]["n"] + m["compression_precision"]["n_failed"] == 4, label
        assert 0 <= m["next_token"]["mean"] <= 1
    # the trained rows report their training
    assert data["training"]["synthetic"]["steps"] == 5
    assert "## Models" in md
    # side table: the same pairs with continuations of at most 5 moves
    assert "## Compression and distinction with continuations of at most 5 moves" in md
    short = data["short_continuations"]
    assert short["max_len"] == 5 and set(short["rows"]) == set(data["rows"])
    assert short["rows"]["true world model"]["compression_precision"]["mean"] == 1.0


def test_table4_structure(run):
    _, _, tmp = run
    md = (tmp / "results" / "table4.md").read_text()
    head, body = _first_table(md)
    assert head == ["Model", "detour", "p = 0", "p = 0.01", "p = 0.1", "p = 0.5", "p = 0.75"]
    assert [(r[0], r[1]) for r in body] == [(m, k) for m in ("untrained", "synthetic", "championship",
                                                             "true world model")
                                            for k in ("random", "adversarial")]
    # the true world model plays only legal moves, whatever the detours
    for r in body[-2:]:
        assert all(c == "1.00 (0.00)" for c in r[2:])
    data = json.loads((tmp / "results" / "table4.json").read_text())
    for label, res in data["rows"].items():
        assert sorted((r["kind"], r["p"]) for r in res) == sorted((k, p) for k in ("random", "adversarial")
                                                                  for p in (0, 0.01, 0.1, 0.5, 0.75))
        assert all(r["n"] == 3 for r in res), label
        for r in res:  # the finer measures agree with the all-or-nothing share
            assert 0 <= r["illegal_rate"] <= 1 and r["illegal_own_moves"] == r["n"] - r["successes"]
            assert r["legal_moves"] >= 0
    true = data["rows"]["true world model"]
    assert all(r["illegal_rate"] == 0 and r["legal_moves"] >= 20 for r in true)  # 6x6: 32 moves minus the opening
    assert "## Moves played legally" in md and "## Illegal moves per model move" in md


def test_rerun_reuses_checkpoints_and_detours(run):
    mod, argv, tmp = run
    ck = tmp / "runs" / "othello-6x6-tiny" / "checkpoint-synthetic" / "training.json"
    det = tmp / "runs" / "othello-6x6-tiny" / "detours" / "synthetic.json"
    before = (ck.stat().st_mtime_ns, det.stat().st_mtime_ns)
    table = (tmp / "results" / "table3.md").read_text()
    assert mod.main(argv) == 0
    assert (ck.stat().st_mtime_ns, det.stat().st_mtime_ns) == before
    assert (tmp / "results" / "table3.md").read_text() == table  # resumed trial logs give the same numbers
