"""scripts/recovered.py: the certificate, the summary over seeds, the flags, and a tiny toy run end to end."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "recovered.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("recovered_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_certificate_needs_every_criterion():
    rec = _load_script()
    good = {"next_token": {"mean": 0.99}, "compression_precision": {"mean": 0.95},
            "distinction_precision": {"mean": 0.97}, "distinction_recall": {"mean": 1.0}}
    assert rec.certified(good)
    for key in rec.CERTIFY:
        assert not rec.certified({**good, key: {"mean": rec.CERTIFY[key] - 0.001}}), key
        assert not rec.certified({k: v for k, v in good.items() if k != key}), key
    assert not rec.certified({**good, "next_token": {"mean": None}})


def test_summary_is_mean_sample_sd_and_mean_stderr():
    rec = _load_script()
    runs = [{"compression_precision": {"mean": m, "stderr": s}} for m, s in ((0.5, 0.02), (0.7, 0.04), (0.9, 0.06))]
    s = rec.summarise(runs)["compression_precision"]
    assert s["mean"] == pytest.approx(0.7)
    assert s["sd_across_runs"] == pytest.approx(0.2)          # sample sd (n - 1)
    assert s["mean_stderr"] == pytest.approx(0.04)
    assert s["runs"] == 3 and s["per_run"] == [0.5, 0.7, 0.9]
    one = rec.summarise(runs[:1])["compression_precision"]
    assert one["sd_across_runs"] is None and rec._cell(one).startswith("0.50 ± –")
    # a metric missing or NaN in a run is left out of that metric's summary
    nan = rec.summarise([{"compression_precision": {"mean": math.nan, "stderr": 0.1}}])
    assert "compression_precision" not in nan


@pytest.mark.parametrize("argv, message", [(["toy", "--steps", "0"], "--steps must be at least 1"),
                                           (["toy", "--seeds", "0"], "--seeds must be at least 1"),
                                           (["toy", "--rows", "wide"], "--rows takes broad, narrow"),
                                           ([], "give a FAMILY or --table"),
                                           (["toy", "--scaling", "1000,x"], "--scaling takes comma-separated"),
                                           (["toy", "--scaling", "0"], "--scaling takes positive"),
                                           (["toy", "--model", "rnn"], "invalid choice: 'rnn'"),
                                           (["toy", "--tag", "../x"], "--tag takes lower-case letters")])
def test_bad_flags_stop_with_one_line(argv, message, capsys):
    rec = _load_script()
    with pytest.raises(SystemExit) as exc:
        rec.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow           # about 25 s of CPU: two trainings and three evaluations
def test_tiny_toy_run_writes_both_rows_with_its_command(tmp_path, monkeypatch):
    rec = _load_script()
    monkeypatch.setattr(rec, "RESULTS", tmp_path / "results")
    rec.main(["toy", "--seeds", "1", "--steps", "4", "--trials", "12", "--runs", str(tmp_path / "runs")])
    md = (tmp_path / "results" / "toy.md").read_text()
    assert "`OMP_NUM_THREADS=1 python scripts/recovered.py toy --seeds 1 --steps 4 --trials 12`" in md
    data = json.loads((tmp_path / "results" / "toy.json").read_text())
    roles = [r["role"] for r in data["rows"]]
    assert roles == ["broad", "narrow", "ceiling"]
    for row in data["rows"][:2]:
        (run,) = row["runs"]
        assert run["steps"] == 4 and run["trained_len"] == 24
        assert run["length_bound"] == 24                     # read only inside the trained lengths
        assert run["timing"]["cpu_minutes"] > 0
        assert run["certified"] is False                     # four steps recover nothing
    ceiling = data["rows"][2]["summary"]
    assert ceiling["compression_precision"]["mean"] == 1.0 and ceiling["distinction_recall"]["mean"] == 1.0
    # seed 0 of the broad row kept snapshots across its budget, for scripts/emergence.py
    snaps = tmp_path / "runs" / "recovered" / "toy-dfa-recovered" / "default" / "steps-4-seed-0" / "checkpoint" / "snapshots"
    assert sorted(p.name for p in snaps.iterdir())[0] == "step-0000000"
    # a rerun reuses both checkpoints and writes the same files
    before = md
    rec.main(["toy", "--seeds", "1", "--steps", "4", "--trials", "12", "--runs", str(tmp_path / "runs")])
    assert (tmp_path / "results" / "toy.md").read_text() == before
    # another budget beside it under a tag, its own files; the combined table shows both with their steps
    rec.main(["toy", "--seeds", "1", "--steps", "6", "--trials", "12", "--rows", "broad", "--tag", "6",
              "--runs", str(tmp_path / "runs")])
    assert (tmp_path / "results" / "toy.md").read_text() == before
    tagged = (tmp_path / "results" / "toy-6.md").read_text()
    assert "--steps 6 --trials 12 --rows broad --tag 6`" in tagged
    rec.main(["--table"])
    table = (tmp_path / "results" / "table.md").read_text()
    assert "| toy | GPT-2 (0.80M), 4 steps | uniform walks |" in table
    assert "| toy | GPT-2 (0.80M), 6 steps | uniform walks |" in table
    assert "6 steps | skewed walks" not in table
    # the narrow row added by a second command: the file names both commands, each with its rows
    rec.main(["toy", "--seeds", "1", "--steps", "6", "--trials", "12", "--rows", "narrow", "--tag", "6",
              "--runs", str(tmp_path / "runs")])
    tagged = (tmp_path / "results" / "toy-6.md").read_text()
    assert ("`OMP_NUM_THREADS=1 python scripts/recovered.py toy --seeds 1 --steps 6 --trials 12 --rows broad --tag 6` "
            "(uniform walks); `OMP_NUM_THREADS=1 python scripts/recovered.py toy --seeds 1 --steps 6 --trials 12 "
            "--rows narrow --tag 6` (skewed walks)") in tagged


def test_a_recurrent_model_gets_a_derived_task_reading_the_recipes_data(tmp_path):
    rec = _load_script()
    from worldmodel.tasks import load_task

    recipe = load_task("toy-dfa-recovered")
    assert rec.model_task(recipe, "gpt2", tmp_path) is recipe
    lstm = rec.model_task(recipe, "lstm", tmp_path)
    assert lstm.name == "toy-dfa-recovered-lstm"
    assert lstm.section("model") == rec.MODELS["lstm"]
    for section in ("world", "data", "train", "evaluate"):        # everything but the network is the recipe's
        assert lstm.section(section) == recipe.section(section), section
    assert lstm.path.parent == tmp_path / "recovered" / "tasks"


@pytest.mark.slow           # about 20 s of CPU: three tiny LSTM trainings and their evaluations
def test_tiny_lstm_rows_and_scaling_curve(tmp_path, monkeypatch):
    rec = _load_script()
    monkeypatch.setattr(rec, "RESULTS", tmp_path / "results")
    runs = tmp_path / "runs"
    rec.main(["toy", "--model", "lstm", "--seeds", "1", "--steps", "4", "--trials", "12", "--rows", "broad",
              "--runs", str(runs)])
    md = (tmp_path / "results" / "toy-lstm.md").read_text()
    assert "`OMP_NUM_THREADS=1 python scripts/recovered.py toy --model lstm --seeds 1 --steps 4 --trials 12 " \
           "--rows broad`" in md
    assert "replaced by an LSTM: n_layer = 1, n_embd = 64, n_hidden = 256" in md
    data = json.loads((tmp_path / "results" / "toy-lstm.json").read_text())
    assert data["model"] == "lstm" and data["task"] == "toy-dfa-recovered-lstm"
    (run,) = data["rows"][0]["runs"]
    assert run["steps"] == 4 and run["length_bound"] == 24
    # the scaling curve: seed 0 of the broad row at each budget; the 4-step model above is reused
    rec.main(["toy", "--model", "lstm", "--scaling", "2,4", "--trials", "12", "--runs", str(runs)])
    scaling = json.loads((tmp_path / "results" / "toy-lstm-scaling.json").read_text())
    assert [r["steps"] for r in scaling["runs"]] == [2, 4]
    assert scaling["runs"][1]["metrics"] == run["metrics"]
    # the reused model's record keeps the minutes its first scoring took, not the seconds of the resume
    assert scaling["runs"][1]["eval_minutes"] == run["eval_minutes"]
    text = (tmp_path / "results" / "toy-lstm-scaling.md").read_text()
    assert "--model lstm --scaling 2,4 --trials 12`" in text and "| 2 (128) |" in text
