"""Training is deterministic for a seed whatever the CPU thread count ([train] cpu_threads)."""

from __future__ import annotations

import hashlib

import pytest
import torch

from worldmodel.errors import WorldModelError
from worldmodel.tasks import load_task
from worldmodel.training import train

TOY = """name = "toy-threads"
domain = "toy"
seed = 0
[world]
n_states = 6
n_tokens = 4
[data]
n_train = 300
n_val = 50
n_test = 50
[model]
n_layer = 2
n_embd = 64
n_head = 4
n_positions = 64
[train]
batch_size = 32
eval_every = 10
"""


def _weights(folder) -> str:
    from safetensors.torch import load_file

    sd = load_file(str(folder / "model.safetensors"))
    return hashlib.sha256(b"".join(sd[k].numpy().tobytes() for k in sorted(sd))).hexdigest()


def test_same_weights_under_any_thread_count(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY)
    task = load_task(path)
    before = torch.get_num_threads()
    got = []
    try:
        for threads in (1, 3):
            torch.set_num_threads(threads)  # what OMP_NUM_THREADS would set
            train(task, tmp_path / f"ck{threads}", steps=12, data_dir=tmp_path / "data", progress=False)
            assert torch.get_num_threads() == threads  # restored after training
            got.append(_weights(tmp_path / f"ck{threads}"))
    finally:
        torch.set_num_threads(before)
    assert got[0] == got[1]


def test_cpu_threads_is_checked(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY + "cpu_threads = -1\n")
    with pytest.raises(WorldModelError, match="cpu_threads"):
        train(load_task(path), tmp_path / "ck", steps=1, data_dir=tmp_path / "data", progress=False)


@pytest.mark.parametrize("given, expect", [(None, 1), (2, 2)])
def test_cpu_threads_from_the_command_line(tmp_path, given, expect):
    """`worldmodel train --cpu-threads N` trains on N threads; not given, the task's setting (1) holds."""
    import json

    from worldmodel.cli import main

    path = tmp_path / "toy.toml"
    path.write_text(TOY)
    argv = ["train", str(path), "--out", str(tmp_path / "ck"), "--steps", "2", "--data-dir", str(tmp_path / "data"),
            "--no-progress"] + ([] if given is None else ["--cpu-threads", str(given)])
    before = torch.get_num_threads()
    assert main(argv) == 0
    assert torch.get_num_threads() == before
    device = json.loads((tmp_path / "ck" / "training.json").read_text())["device"]
    assert device.endswith(f", {expect} threads)"), device


def test_cpu_matmul_probe_counts_cpu_time_not_time_lost_to_other_processes(monkeypatch):
    """A shared machine stretches the wall clock; the peak is taken from the process's CPU time then."""
    import itertools

    from worldmodel.training import speed as train_mod

    monkeypatch.setattr(train_mod, "_PEAK_CACHE", {})
    real = train_mod.time.perf_counter
    ticks = itertools.count()
    # each reading of the wall clock jumps 10 s further, as if other processes held the core
    monkeypatch.setattr(train_mod.time, "perf_counter", lambda: real() + 10.0 * next(ticks))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        stretched = train_mod.matmul_peak_flops("cpu", seconds=0.05)
    finally:
        torch.set_num_threads(before)
    wall_rate = 2.0 * 1024 ** 3 * 5 / 10.0       # what one 5-matmul round over a 10 s wall clock would give
    assert stretched > 5 * wall_rate             # the wall clock alone would give wall_rate
    assert train_mod._PEAK_CACHE[("cpu", "fp32")] == stretched
