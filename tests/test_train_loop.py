"""The training loop: same batches as before, resuming to identical weights, budget, accumulation, errors."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
import torch

from worldmodel import training as T
from worldmodel.datastream import PackedSequences, token_lut
from worldmodel.errors import WorldModelError
from worldmodel.models import Vocabulary
from worldmodel.sequences import read_sequences
from worldmodel.tasks import load_task


def weights(folder):
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(folder).state_dict()


def same_weights(a, b) -> bool:
    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def log_steps(folder):
    return [json.loads(line)["step"] for line in (folder / "train_log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("trainloop")
    load_task("toy-dfa").domain.ensure_data(None, root / "toy")
    load_task("othello-6x6-tiny").domain.ensure_data(None, root / "oth")
    return root


def test_file_batches_draw_the_previous_loops_batches(data):
    """Packed numpy batches equal the old row-by-row ones (same generator, same ids, same padding)."""
    task = load_task("toy-dfa")
    world = task.world
    vocab = Vocabulary(world.tokens, world.name)
    seqs = read_sequences(data / "toy" / "default" / "train.txt", world, check=False)
    old = [vocab.encode(s) for s in seqs]
    fb = T.FileBatches(PackedSequences.read(data / "toy" / "default" / "train.txt", world.tokens), 16, 5, 0,
                       token_lut(world.tokens, vocab), vocab.bos_id, vocab.pad_id)
    rng = np.random.default_rng([5, 0])
    for _ in range(3):
        rows = [old[i] for i in rng.integers(0, len(old), size=16)]
        want = np.full((16, max(map(len, rows))), vocab.pad_id)
        for r, x in enumerate(rows):
            want[r, :len(x)] = x
        assert np.array_equal(fb.next(), want)


def test_loss_matches_transformers(data):
    from transformers import GPT2LMHeadModel

    from worldmodel.models import gpt2_config

    vocab = Vocabulary(("a", "b", "c"))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(gpt2_config(vocab, n_layer=1, n_embd=16, n_head=2, n_positions=16))
    ids = torch.tensor([[1, 2, 3, 4, 0, 0], [1, 4, 4, 2, 3, 2]])
    mask = (ids != 0).long()
    ref = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
    mine = T.lm_loss(model(input_ids=ids).logits, ids, 0)     # no mask: padding is only on the right
    assert torch.equal(ref, mine)


def run(task_name, out, data_dir, **over):
    steps = over.pop("steps", 24)
    return T.train(load_task(task_name), out, steps=steps, data_dir=data_dir, progress=False,
                   overrides={"eval_every": 8, "log_every": 4, **over})


def test_resume_after_a_kill_ends_with_the_same_weights(data, tmp_path, monkeypatch):
    full = tmp_path / "full"
    run("toy-dfa", full, data / "toy")
    killed = tmp_path / "killed"
    real = T.FileBatches.next
    calls = {"n": 0}

    def dying(self):
        calls["n"] += 1
        if calls["n"] == 19:                       # after the save at step 16, before step 19
            raise RuntimeError("simulated kill")
        return real(self)

    monkeypatch.setattr(T.FileBatches, "next", dying)
    with pytest.raises(RuntimeError, match="simulated kill"):
        run("toy-dfa", killed, data / "toy")
    partial = tmp_path / "killed.partial"
    assert (partial / T.RESUME_FILE).exists() and not killed.exists()
    assert torch.load(partial / T.RESUME_FILE, weights_only=True)["step"] == 16
    drawn = {"n": 0}

    def counting(self):
        drawn["n"] += 1
        return real(self)

    monkeypatch.setattr(T.FileBatches, "next", counting)
    info = run("toy-dfa", killed, data / "toy")            # the same command again
    assert info["steps"] == 24 and drawn["n"] == 8         # resumed at step 16, not from scratch
    assert same_weights(full, killed)
    assert log_steps(killed) == log_steps(full)            # every logged step exactly once
    assert not partial.exists() and not (killed / T.RESUME_FILE).exists()


def test_stream_resume_mid_chunk_and_interrupt_signal(data, tmp_path, monkeypatch):
    """Streamed data resumes at the exact batch; Ctrl-C saves at the step boundary and says how to resume."""
    over = {"data": "stream", "batch_size": 8}
    full = tmp_path / "full"
    run("othello-6x6-tiny", full, data / "oth", **over)
    real = T.StreamBatches.next
    calls = {"n": 0}

    def interrupted(self):
        calls["n"] += 1
        if calls["n"] == 11:
            os.kill(os.getpid(), signal.SIGINT)   # handled: finish this step, save, stop
        return real(self)

    monkeypatch.setattr(T.StreamBatches, "next", interrupted)
    cut = tmp_path / "cut"
    with pytest.raises(WorldModelError, match="interrupted at step 11; rerun the same command"):
        run("othello-6x6-tiny", cut, data / "oth", **over)
    assert torch.load(tmp_path / "cut.partial" / T.RESUME_FILE, weights_only=True)["step"] == 11
    drawn = {"n": 0}

    def counting(self):
        drawn["n"] += 1
        return real(self)

    monkeypatch.setattr(T.StreamBatches, "next", counting)
    run("othello-6x6-tiny", cut, data / "oth", **over)
    assert drawn["n"] == 13
    assert same_weights(full, cut)


def test_a_different_command_starts_afresh(data, tmp_path, monkeypatch):
    out = tmp_path / "ck"
    real = T.FileBatches.next
    calls = {"n": 0}

    def dying(self):
        calls["n"] += 1
        if calls["n"] == 10:
            raise RuntimeError("simulated kill")
        return real(self)

    monkeypatch.setattr(T.FileBatches, "next", dying)
    with pytest.raises(RuntimeError):
        run("toy-dfa", out, data / "toy")
    monkeypatch.setattr(T.FileBatches, "next", real)
    run("toy-dfa", out, data / "toy", lr=1e-3)                # other settings: no resume
    fresh = tmp_path / "fresh"
    run("toy-dfa", fresh, data / "toy", lr=1e-3)
    assert same_weights(out, fresh)


def test_gradient_accumulation_gives_the_same_update(data, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run("toy-dfa", a, data / "toy", steps=6)
    info = run("toy-dfa", b, data / "toy", steps=6, grad_accum=4)
    assert info["grad_accum"] == 4
    wa, wb = weights(a), weights(b)
    assert all(torch.allclose(wa[k], wb[k], atol=1e-5, rtol=1e-4) for k in wa)


def test_time_budget_stops_and_saves_a_complete_checkpoint(data, tmp_path):
    out = tmp_path / "ck"
    info = run("toy-dfa", out, data / "toy", steps=100000, time_budget=1e-3)
    assert info["stopped"] == "time budget" and 1 <= info["steps"] < 100000
    saved = json.loads((out / "training.json").read_text())
    assert saved["stopped"] == "time budget" and saved["final_val_loss"] is not None
    assert (out / "config.json").exists() and not (tmp_path / "ck.partial").exists()


def test_budget_without_steps_fits_the_schedule(data, tmp_path):
    task = load_task("toy-dfa")
    info = T.train(task, tmp_path / "ck", data_dir=data / "toy", progress=False,
                   overrides={"time_budget": 8.0, "log_every": 5})
    assert info["planned_steps"] is not None and info["steps"] <= info["planned_steps"]
    assert info["steps"] >= 15 and info["seconds"] < 30


def test_summary_records_speed_and_precision(data, tmp_path):
    info = run("toy-dfa", tmp_path / "ck", data / "toy", steps=8, peak_flops=1e12)
    assert info["precision"] == "fp32" and info["attention"] == "sdpa"
    assert info["peak_flops"] == 1e12 and info["peak_flops_source"] == "given"
    assert 0 < info["mfu"] < 1 and info["train_tokens_per_s"] > 0 and 0 <= info["data_wait"] < 1
    log = [json.loads(x) for x in (tmp_path / "ck" / "train_log.jsonl").read_text().splitlines()]
    assert all({"mfu", "tokens_per_s", "data_wait", "seconds"} <= set(r) for r in log)


def test_a_dataset_without_a_stream_is_one_clear_error(tmp_path):
    with pytest.raises(WorldModelError, match="exists only as files"):
        run("seating-tiny", tmp_path / "ck", tmp_path / "seat", data="stream")
    assert not (tmp_path / "ck").exists()


@pytest.mark.parametrize("over, message", [
    ({"precision": "fp8"}, "precision must be one of"),
    ({"grad_accum": 5}, "not a multiple of grad_accum"),
    ({"warmpu": 3}, "unknown setting"),
    ({"time_budget": -1}, "must be a positive number"),
])
def test_bad_settings_are_one_clear_error(data, tmp_path, over, message):
    with pytest.raises(WorldModelError, match=message):
        run("toy-dfa", tmp_path / "ck", data / "toy", **over)
    assert not (tmp_path / "ck").exists()


def test_cli_train_options(data, tmp_path, capsys):
    from worldmodel.cli import main

    rc = main(["train", "othello-6x6-tiny", "--out", str(tmp_path / "ck"), "--steps", "6", "--data-dir",
               str(data / "oth"), "--data", "stream", "--batch-size", "8", "--grad-accum", "2",
               "--precision", "fp32", "--peak-flops", "1e11", "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "6 steps" in text and "MFU" in text and "fp32" in text
    info = json.loads((tmp_path / "ck" / "training.json").read_text())
    assert info["data"] == "stream" and info["batch_size"] == 8 and info["grad_accum"] == 2
    assert info["sequences_seen"] == 48
