"""The command line end to end on the toy task, and its handling of bad input."""

import json
import shutil
from pathlib import Path

import pytest

from worldmodel.cli import main

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`worldmodel train toy-dfa` with few steps (the real demo uses the task's 800)."""
    root = tmp_path_factory.mktemp("toy")
    rc = main(["train", "toy-dfa", "--out", str(root / "ck"), "--steps", "60", "--data-dir", str(root / "data"),
               "--no-progress"])
    assert rc == 0
    return root


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_train_writes_a_complete_checkpoint(trained):
    ck = trained / "ck"
    for name in ("config.json", "vocab.json", "training.json", "train_log.jsonl", "task.toml"):
        assert (ck / name).exists(), name
    assert any(ck.glob("*.safetensors"))
    assert not (trained / "ck.partial").exists()
    info = json.loads((ck / "training.json").read_text())
    assert info["steps"] == 60 and info["dataset"] == "default"


def test_evaluate_end_to_end(trained, capsys):
    out = trained / "res" / "ck.json"
    rc, text, _ = run_cli(capsys, "evaluate", "toy-dfa", "--checkpoint", str(trained / "ck"), "--trials", "12",
                          "--M", "8", "--probe-sequences", "200", "--probe-epochs", "20", "--data-dir", str(trained / "data"),
                          "--out", str(out), "--no-progress")
    assert rc == 0
    assert "| Model |" in text and "Compr. P" in text
    summary = json.loads(out.read_text())
    for key in ("compression_precision", "distinction_precision", "distinction_recall", "next_token", "probe"):
        m = summary["metrics"][key]
        assert set(m) >= {"mean", "stderr", "n", "n_failed"}
        assert 0.0 <= m["mean"] <= 1.0
    # trial logs sit beside the summary; a rerun resumes and reproduces the summary
    assert (out.parent / "ck.compression.trials.jsonl").exists()
    rc, _, _ = run_cli(capsys, "evaluate", "toy-dfa", "--checkpoint", str(trained / "ck"), "--trials", "12",
                       "--M", "8", "--probe-sequences", "200", "--probe-epochs", "20", "--data-dir", str(trained / "data"),
                          "--out", str(out), "--no-progress")
    assert json.loads(out.read_text())["metrics"] == summary["metrics"]


def test_true_model_scores_one(trained, capsys):
    out = trained / "true.json"
    rc, _, _ = run_cli(capsys, "evaluate", "toy-dfa", "--model", "true", "--trials", "20",
                       "--metrics", "compression,distinction,next-token", "--data-dir", str(trained / "data"),
                       "--out", str(out), "--no-progress")
    assert rc == 0
    metrics = json.loads(out.read_text())["metrics"]
    assert all(metrics[k]["mean"] == 1.0 for k in metrics)


def bad(capsys, *argv):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("worldmodel: error:"), err
    assert "Traceback" not in err
    return lines[0]


def test_unknown_task(capsys, tmp_path):
    msg = bad(capsys, "evaluate", "no-such-task", "--model", "true", "--out", str(tmp_path / "x.json"))
    assert "no-such-task" in msg and not (tmp_path / "x.json").exists()


def test_malformed_toml(capsys, tmp_path):
    task = tmp_path / "broken.toml"
    task.write_text("name = 'x'\ndomain = \n")
    msg = bad(capsys, "data", str(task))
    assert "broken.toml" in msg and "TOML" in msg


def test_unknown_token_in_sequence_file(capsys, tmp_path, trained):
    data = tmp_path / "data"
    shutil.copytree(trained / "data", data)
    test_file = data / "default" / "test.txt"
    test_file.write_text("t0 t1 zebra\n")
    out = tmp_path / "r.json"
    msg = bad(capsys, "evaluate", "toy-dfa", "--model", "true", "--metrics", "next-token", "--data-dir", str(data),
              "--out", str(out))
    assert "zebra" in msg and "test.txt:1" in msg
    assert not out.exists()


def test_checkpoint_mismatch_missing_and_truncated(capsys, tmp_path, trained):
    ck = tmp_path / "ck"
    shutil.copytree(trained / "ck", ck)
    vocab = json.loads((ck / "vocab.json").read_text())
    vocab["tokens"][0] = "q9"
    (ck / "vocab.json").write_text(json.dumps(vocab))
    assert "does not match" in bad(capsys, "evaluate", "toy-dfa", "--checkpoint", str(ck))
    assert "does not exist" in bad(capsys, "evaluate", "toy-dfa", "--checkpoint", str(tmp_path / "none"))
    shutil.rmtree(ck)
    shutil.copytree(trained / "ck", ck)
    w = next(ck.glob("*.safetensors"))
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    out = tmp_path / "r.json"
    assert "incomplete or corrupt" in bad(capsys, "evaluate", "toy-dfa", "--checkpoint", str(ck), "--out", str(out))
    assert not out.exists()


def test_bad_metric_name_and_missing_model(capsys):
    assert "bogus" in bad(capsys, "evaluate", "toy-dfa", "--model", "true", "--metrics", "compression,bogus")
    assert "give exactly one" in bad(capsys, "evaluate", "toy-dfa")


def test_no_progress_also_silences_the_bars_data_generation_decides_on(monkeypatch, capsys):
    """`--no-progress` reaches the bars a domain shows for a large data set (progress.wanted), and only for that command."""
    from worldmodel import evaluator, progress

    seen = []

    def fake_evaluate(*args, **kwargs):
        seen.append(progress.wanted(True))
        return {"metrics": {}}

    monkeypatch.setattr(evaluator, "evaluate", fake_evaluate)
    base = ["evaluate", "toy-dfa", "--model", "true", "--metrics", "next-token"]
    main(base + ["--no-progress"])
    main(base)
    assert seen == [False, True]
    assert progress.wanted(True) and not progress.wanted(False)
    monkeypatch.setenv("WORLDMODEL_NO_PROGRESS", "1")
    assert not progress.wanted(True)
    capsys.readouterr()
