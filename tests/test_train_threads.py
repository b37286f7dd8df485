"""Training is deterministic for a seed whatever the CPU thread count ([train] cpu_threads)."""

from __future__ import annotations

import hashlib

import pytest
import torch

from worldmodel.errors import WorldModelError
from worldmodel.tasks import load_task
from worldmodel.train import train

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
