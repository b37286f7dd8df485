"""scripts/reproduce_navigation.py end to end on nav-grid-tiny with tiny settings, into tmp_path."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "reproduce_navigation.py"
TASK = "nav-grid-tiny"
ROWS = ["Untrained", "Shortest paths", "Noisy shortest paths", "Random walks", "True world model"]


def _load_script():
    spec = importlib.util.spec_from_file_location("reproduce_navigation", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def _tables(md: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table in ``md`` as (header cells, body rows)."""
    out, block = [], []
    for ln in md.splitlines() + [""]:
        if ln.startswith("|"):
            block.append(ln)
        elif block:
            head = [c.strip() for c in block[0].strip("|").split("|")]
            body = [[c.strip() for c in row.strip("|").split("|")] for row in block[2:]]
            out.append((head, body))
            block = []
    return out


def _argv(tmp: Path, *extra: str) -> list[str]:
    return [TASK, "--runs", str(tmp / "runs"), "--results", str(tmp / "results"), "--figures", str(tmp / "figs"),
            "--steps", "5", "--trials", "3", "--M", "3", "--probe-sequences", "20", "--probe-epochs", "2",
            "--detour-trials", "3", "--recon-sequences", "8", "--no-progress", *extra]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reproduce_navigation")
    mod = _load_script()
    argv = _argv(tmp)
    assert mod.main(argv) == 0
    return mod, argv, tmp


def test_files_written(run):
    _, _, tmp = run
    res = tmp / "results" / TASK
    for name in ("table1.md", "table1.json", "table2.md", "table2.json", "reconstruction.md", "reconstruction.json"):
        assert (res / name).stat().st_size > 0, name
    figs = ["metrics", "detours", "map-true", "map-corrupted", "map-shortest-paths", "map-noisy-shortest-paths",
            "map-random-walks", "map-shortest-paths-strict"]
    for f in figs:
        assert (tmp / "figs" / f"{TASK}-{f}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f
    # trial logs under runs/ (resumable), checkpoints per dataset
    assert list((tmp / "runs" / TASK / "eval").glob("*.trials.jsonl"))
    for ds in ("shortest-paths", "noisy-shortest-paths", "random-walks"):
        assert (tmp / "runs" / TASK / ds / "training.json").exists()


def test_every_markdown_names_its_command(run):
    _, argv, tmp = run
    cmd = "OMP_NUM_THREADS=1 python scripts/reproduce_navigation.py " + " ".join(argv)
    for name in ("table1.md", "table2.md", "reconstruction.md"):
        assert f"Made by `{cmd}`" in (tmp / "results" / TASK / name).read_text(), name


def test_table1_structure(run):
    _, _, tmp = run
    head, body = _tables((tmp / "results" / TASK / "table1.md").read_text())[0]
    assert head[:6] == ["Model", "Next-token", "Probe", "Compr. P", "Dist. P", "Dist. R"]
    assert "Valid traversal" in head and "Shortest path" in head
    assert [r[0] for r in body] == ROWS
    true = dict(zip(head, body[-1]))
    # the true world model is perfect on the four metrics it has; it has no probe
    for col in ("Next-token", "Compr. P", "Dist. P", "Dist. R"):
        assert true[col].startswith("1.00"), (col, true[col])
    assert true["Probe"] == "—"
    data = json.loads((tmp / "results" / TASK / "table1.json").read_text())
    assert list(data["rows"]) == ROWS
    for label in ROWS[1:4]:
        m = data["rows"][label]["metrics"]
        for key in ("next_token", "probe", "compression_precision", "distinction_precision", "distinction_recall",
                    "valid_traversal", "shortest_path"):
            assert 0.0 <= m[key]["mean"] <= 1.0, (label, key)
    assert set(data["training"]) == {"shortest-paths", "noisy-shortest-paths", "random-walks"}
    assert all(t["steps"] == 5 for t in data["training"].values())


def test_table2_structure(run):
    _, _, tmp = run
    head, body = _tables((tmp / "results" / TASK / "table2.md").read_text())[0]
    assert head == ["Model", "detour", "p = 0", "p = 0.01", "p = 0.1", "p = 0.5", "p = 0.75"]
    models = ["Shortest paths", "Noisy shortest paths", "Random walks", "Shortest-route navigator"]
    assert [(r[0], r[1]) for r in body] == [(m, k) for m in models for k in ("random", "adversarial")]
    data = json.loads((tmp / "results" / TASK / "table2.json").read_text())
    nav = data["rows"]["Shortest-route navigator"]
    assert len(nav) == 10 and all(r["share"] == 1.0 and r["n"] == 3 for r in nav)


def test_reconstruction_structure(run):
    _, _, tmp = run
    head, body = _tables((tmp / "results" / TASK / "reconstruction.md").read_text())[0]
    assert head[:7] == ["Sequences", "input", "malformed", "valid on true map", "used", "failed", "true edges used"]
    assert [r[0] for r in body] == ["True sequences", "Corrupted true sequences", "Shortest paths model",
                                    "Noisy shortest paths model", "Random walks model"]
    full = json.loads((tmp / "results" / TASK / "reconstruction.json").read_text())
    data = full["sources"]
    assert full["algorithm"] == "paper" and all(s["algorithm"] == "paper" for s in data.values())
    # the shortest-paths model's traversals again under the strict algorithm, same sequences
    assert full["comparison"]["algorithm"] == "strict"
    assert full["comparison"]["sequences"] == data["shortest-paths"]["sequences"]
    assert full["comparison"]["valid_on_true_map"] == data["shortest-paths"]["valid_on_true_map"]
    true = data["true"]
    # valid sequences: all used, none failed, no new edge
    assert true["sequences"] == 8 and true["used"] == 8 and true["failed"] == 0 and true["new_edges"] == 0
    corrupted = data["corrupted"]
    assert corrupted["valid_on_true_map"] == corrupted["sequences"] - corrupted["corrupted"]
    for s in data.values():
        assert s["used"] + s["failed"] + s["malformed"] == s["sequences"]


def test_rerun_reuses_checkpoints_and_skip_train_refuses_mismatch(run, capsys):
    mod, argv, tmp = run
    stamp = {ds: (tmp / "runs" / TASK / ds / "training.json").stat().st_mtime_ns
             for ds in ("shortest-paths", "noisy-shortest-paths", "random-walks")}
    assert mod.main(argv + ["--skip-train"]) == 0
    assert "reusing" in capsys.readouterr().out
    for ds, t in stamp.items():
        assert (tmp / "runs" / TASK / ds / "training.json").stat().st_mtime_ns == t
    # another step count does not match the saved checkpoints: --skip-train stops with one line
    bad = _argv(tmp, "--skip-train")
    bad[bad.index("--steps") + 1] = "7"
    assert mod.main(bad) == 2
    err = capsys.readouterr().err
    assert "--skip-train" in err and "5 steps, want 7" in err and len(err.strip().splitlines()) == 1


def test_bad_input_is_one_line(tmp_path, capsys):
    mod = _load_script()
    assert mod.main(["toy-dfa", "--runs", str(tmp_path)]) == 2
    assert "not a navigation task" in capsys.readouterr().err
    assert mod.main([TASK, "--runs", str(tmp_path), "--corrupt-rate", "1.5"]) == 2
    assert "--corrupt-rate" in capsys.readouterr().err
