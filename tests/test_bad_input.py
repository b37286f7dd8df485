"""Bad-input corpus: every case goes through the real command line (``worldmodel.cli.main``)
and must stop with exit code 2, exactly one stderr line ``worldmodel: error: …`` that names
the bad input, no traceback, and no file created or modified anywhere under the working
folder (where data, checkpoints and outputs would go)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from worldmodel.cli import main

REPO = Path(__file__).resolve().parents[1]
TOY = (REPO / "tasks" / "toy-dfa.toml").read_text()
NAV = (REPO / "tasks" / "nav-grid-tiny.toml").read_text()
FIXTURES = REPO / "tests" / "fixtures" / "data"


def tree(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root``: (size, mtime, sha256), so any write shows."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        elif p.is_dir():
            out[str(p.relative_to(root)) + "/"] = (0, 0, "")
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A working folder holding everything the cases point at (built once)."""
    root = tmp_path_factory.mktemp("bad")
    old = os.getcwd()
    os.chdir(root)
    try:
        # a real checkpoint of another task (nav-grid-tiny), one training step
        assert main(["train", "nav-grid-tiny", "--out", "nav-ckpt", "--steps", "1", "--no-progress"]) == 0
        # a truncated checkpoint: weights missing
        trunc = root / "trunc-ckpt"
        trunc.mkdir()
        for name in ("config.json", "vocab.json", "training.json"):
            (trunc / name).write_bytes((root / "nav-ckpt" / name).read_bytes())
        # toy data, and a copy whose test split is binary junk
        assert main(["data", "toy-dfa", "--data-dir", "toy-data"]) == 0
        junk = root / "junk-data" / "default"
        junk.mkdir(parents=True)
        for split in ("train", "val"):
            (junk / f"{split}.txt").write_bytes((root / "toy-data" / "default" / f"{split}.txt").read_bytes())
        (junk / "test.txt").write_bytes(b"\x00\xff\xfe garbage \x89PNG\r\n\x1a\n" + bytes(range(256)))
        # WTHOR: a truncated game file beside intact name lists
        wthor = root / "wthor-trunc"
        wthor.mkdir()
        for name in ("WTH.JOU", "WTH.TRN"):
            (wthor / name).write_bytes((FIXTURES / "othello" / name).read_bytes())
        (wthor / "WTH_1990.wtb").write_bytes((FIXTURES / "othello" / "WTH_1990.wtb").read_bytes()[:5000])
        # an empty street graph (node and edge CSVs with headers only)
        (root / "empty-nodes.csv").write_text("osm_id,lat,lon\n")
        (root / "empty-edges.csv").write_text("u,v,length_m\n")
        (root / "empty-graph.toml").write_text(
            NAV.replace('source = "grid"', 'source = "csv"\nnodes = "empty-nodes.csv"\nedges = "empty-edges.csv"'))
        # task files with one typo each
        typos = {
            "top": TOY.replace("seed = 0", "sed = 0"),
            "world": TOY.replace("n_states = 8", "n_state = 8"),
            "data": TOY.replace("n_train = 3000", "n_trian = 3000"),
            "model": TOY.replace("n_layer = 2", "n_layers = 8"),
            "train": TOY.replace("batch_size = 32", "batchsize = 32"),
            "evaluate": TOY.replace("M = 30", "m = 30"),
            "sampler": NAV.replace("[sampler]\n", "[sampler]\nmax_tries = 5\n"),
            "capabilities": NAV.replace("[capabilities]", "[capabilities]\npair = 3"),
        }
        for section, text in typos.items():
            assert text not in (NAV, TOY), f"the {section} typo did not apply"
            (root / f"typo-{section}.toml").write_text(text)
        (root / "broken.toml").write_text(TOY + "\n[model\nn_layer = 2\n")
        (root / "results").mkdir()
        (root / "a-file.txt").write_text("not a folder\n")
    finally:
        os.chdir(old)
    return root


def _readonly_folder(work: Path) -> str:
    """A folder this process cannot write: chmod 555, or (as root, who ignores modes) /sys/kernel."""
    if os.geteuid() == 0:
        return "/sys/kernel"
    ro = work / "ro-results"
    ro.mkdir(exist_ok=True)
    ro.chmod(0o555)
    return str(ro)


EVAL = ["evaluate", "toy-dfa", "--model", "true", "--no-progress", "--data-dir", "toy-data"]

#: (id, argv, text the error line must contain)
CASES = [
    ("trials-negative", EVAL + ["--trials", "-5"], "trials"),
    ("trials-zero", EVAL + ["--trials", "0"], "trials"),
    ("M-zero", EVAL + ["--M", "0"], "M"),
    ("k-negative", EVAL + ["--k", "-1"], "k"),
    ("probe-sequences-zero", EVAL + ["--probe-sequences", "0"], "probe_sequences"),
    ("epsilon-above-one", EVAL + ["--epsilon", "1.5"], "epsilon"),
    ("epsilon-negative", EVAL + ["--epsilon", "-0.1"], "epsilon"),
    ("epsilon-nan", EVAL + ["--epsilon", "nan"], "epsilon"),
    ("epsilon-not-a-number", EVAL + ["--epsilon", "abc"], "--epsilon"),
    ("top-k-zero", EVAL + ["--acceptance", "top-k:0"], "top-k"),
    ("top-p-above-one", EVAL + ["--acceptance", "top-p:1.5"], "top-p"),
    ("acceptance-garbage", EVAL + ["--acceptance", "maybe:3"], "maybe:3"),
    ("unknown-metric", EVAL + ["--metrics", "compression,bogus"], "bogus"),
    ("unknown-task", ["evaluate", "no-such-task", "--model", "true"], "no-such-task"),
    ("unknown-model-kind", ["evaluate", "toy-dfa", "--model", "perfect"], "perfect"),
    ("model-and-checkpoint", EVAL + ["--checkpoint", "nav-ckpt"], "--checkpoint"),
    ("out-under-a-file", EVAL + ["--trials", "2", "--metrics", "compression", "--out", "a-file.txt/out.json"],
     "a-file.txt/out.json"),
    ("out-is-a-folder", EVAL + ["--trials", "2", "--metrics", "compression", "--out", "results"], "results"),
    ("out-read-only-folder", None, "wm-out.json"),
    ("checkpoint-missing", ["evaluate", "toy-dfa", "--checkpoint", "no-such-ckpt", "--no-progress"], "no-such-ckpt"),
    ("checkpoint-other-task", ["evaluate", "toy-dfa", "--checkpoint", "nav-ckpt", "--no-progress",
                               "--data-dir", "toy-data"], "nav-ckpt"),
    ("checkpoint-truncated", ["evaluate", "nav-grid-tiny", "--checkpoint", "trunc-ckpt", "--no-progress"],
     "trunc-ckpt"),
    ("sequences-binary-junk", ["evaluate", "toy-dfa", "--model", "true", "--metrics", "next-token", "--no-progress",
                               "--data-dir", "junk-data"], "test.txt"),
    ("train-steps-negative", ["train", "toy-dfa", "--out", "ck", "--steps", "-3", "--data-dir", "toy-data"], "steps"),
    ("train-steps-zero", ["train", "toy-dfa", "--out", "ck", "--steps", "0", "--data-dir", "toy-data"], "steps"),
    ("train-out-under-a-file", ["train", "toy-dfa", "--out", "a-file.txt/ck", "--steps", "1", "--data-dir",
                                "toy-data", "--no-progress"], "a-file.txt/ck"),
    ("data-unknown-dataset", ["data", "toy-dfa", "--dataset", "nope", "--data-dir", "toy-data"], "nope"),
    ("wthor-truncated", ["data", "othello-championship", "--dataset", "championship", "--data-dir", "oth"],
     "WTH_1990.wtb"),
    ("empty-graph", ["data", "empty-graph.toml", "--data-dir", "nav"], "empty-"),
    ("toml-broken", ["data", "broken.toml", "--data-dir", "x"], "broken.toml"),
    ("toml-typo-top", ["data", "typo-top.toml", "--data-dir", "x"], "sed"),
    ("toml-typo-world", ["data", "typo-world.toml", "--data-dir", "x"], "n_state"),
    ("toml-typo-data", ["data", "typo-data.toml", "--data-dir", "x"], "n_trian"),
    ("toml-typo-model", ["train", "typo-model.toml", "--out", "ck", "--steps", "1", "--data-dir", "toy-data"],
     "n_layers"),
    ("toml-typo-train", ["train", "typo-train.toml", "--out", "ck", "--steps", "1", "--data-dir", "toy-data"],
     "batchsize"),
    ("toml-typo-evaluate", ["evaluate", "typo-evaluate.toml", "--model", "true", "--data-dir", "toy-data"], "m"),
    ("toml-typo-sampler", ["evaluate", "typo-sampler.toml", "--model", "true", "--data-dir", "x"], "max_tries"),
    ("toml-typo-capabilities", ["evaluate", "typo-capabilities.toml", "--model", "true", "--data-dir", "x"], "pair"),
    ("nav-detour-p-above-one", ["detours", "nav-grid-tiny", "--model", "true", "--p", "0,1.5", "--out", "d.json",
                                "--data-dir", "x"], "1.5"),
    ("nav-detour-trials-zero", ["detours", "nav-grid-tiny", "--model", "true", "--trials", "0", "--out", "d.json",
                                "--data-dir", "x"], "trials"),
    ("othello-detour-p-negative", ["othello-detours", "othello-6x6-tiny", "--model", "true", "--p", "-0.1", "--out", "d.json",
                                   "--data-dir", "x"], "-0.1"),
    ("reconstruct-degree-zero", ["reconstruct", "nav-grid-tiny", "--model", "true", "--max-degree", "0", "--out", "r",
                                 "--data-dir", "x"], "max-degree"),
    ("reconstruct-distance-negative", ["reconstruct", "nav-grid-tiny", "--model", "true", "--max-distance-miles", "-1",
                                       "--out", "r", "--data-dir", "x"], "max-distance"),
    ("fetch-unknown", ["fetch", "nope"], "nope"),
    ("fetch-missing-mirror", ["fetch", "wthor", "--from", "no-mirror"], "no-mirror"),
]


_PROGRESS = re.compile(r"\d+%\|.*\|")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_writes_nothing(case, work, monkeypatch, capsys):
    name, argv, needle = case
    monkeypatch.chdir(work)
    monkeypatch.setenv("WORLDMODEL_OTHELLO_DATA", str(work / "wthor-trunc"))
    monkeypatch.setenv("WORLDMODEL_CACHE", str(work / "cache"))
    if argv is None:  # the read-only results folder
        argv = EVAL + ["--trials", "2", "--metrics", "compression", "--out", f"{_readonly_folder(work)}/wm-out.json"]
    before = tree(work)
    code = main(argv)
    out, err = capsys.readouterr()
    # progress bars (tqdm: carriage-return redraws) are transient; every other line counts
    lines = [seg for line in err.split("\n") if (seg := line.split("\r")[-1].strip()) and not _PROGRESS.search(seg)]
    assert code == 2, f"exit {code}; stderr: {err!r}"
    assert len(lines) == 1 and lines[0].startswith("worldmodel: error: "), err
    assert needle in lines[0], f"{lines[0]!r} does not name {needle!r}"
    assert "Traceback" not in err + out
    assert tree(work) == before, "a bad input created or modified files"


def test_corpus_size():
    assert len(CASES) >= 25


@pytest.mark.parametrize("argv", [["evaluate", "toy-dfa", "--model", "true", "--trials", "-5"],
                                  ["evaluate", "toy-dfa", "--model", "true", "--trials", "2", "--metrics",
                                   "compression", "--out", "/proc/self/no/such/out.json"]],
                         ids=["trials-negative", "out-unwritable"])
def test_console_script_path(argv, tmp_path):
    """The same through a separate process (the console entry point): exit 2, one line, nothing written."""
    proc = subprocess.run([sys.executable, "-m", "worldmodel.cli", *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("worldmodel: error: "), proc.stderr
    assert list(tmp_path.iterdir()) == []
