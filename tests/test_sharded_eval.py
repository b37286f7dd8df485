"""Sharded evaluation: trials split across processes, merged into the single-process summary."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from worldmodel import evaluator
from worldmodel.cli import main
from worldmodel.errors import WorldModelError
from worldmodel.results import ShardedTrialLog, merge_trial_logs, read_trial_log, shard_part, shard_parts
from worldmodel.tasks import load_task
from worldmodel.training import train

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--trials", "40", "--M", "8", "--metrics", "compression,distinction,next-token"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("shard")
    train(load_task("toy-dfa"), root / "ck", steps=80, data_dir=root / "data", progress=False)
    rc = main(["evaluate", "toy-dfa", "--checkpoint", str(root / "ck"), *ARGS, "--data-dir", str(root / "data"),
               "--out", str(root / "single" / "r.json"), "--no-progress"])
    assert rc == 0
    return root


def trials(path: Path) -> tuple[dict, dict]:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    return lines[0], {t["trial"]: t for t in lines[1:]}


def test_part_logs_merge_in_trial_order(tmp_path):
    main_log = tmp_path / "r.compression.trials.jsonl"
    header = {"metric": "compression", "M": 3}
    a = ShardedTrialLog(main_log, header, 0, 2)
    b = ShardedTrialLog(main_log, header, 1, 2)
    for i in (2, 0):
        a.append({"trial": i, "status": "ok", "score": 1.0})
    b.append({"trial": 1, "status": "ok", "score": 0.0})
    a.close()
    b.close()
    assert shard_parts(main_log) == [shard_part(main_log, 0), shard_part(main_log, 1)]
    again = ShardedTrialLog(main_log, header, 1, 3)          # a rerun sees every part's trials as done
    assert set(again.done) == {0, 1, 2}
    again.close()
    assert merge_trial_logs(main_log, header) == 3
    done, lines, total = read_trial_log(main_log, header)
    assert list(done) == [0, 1, 2] and total == 4 and not shard_parts(main_log)
    with pytest.raises(WorldModelError, match="other settings"):
        ShardedTrialLog(main_log, {"metric": "compression", "M": 4}, 0, 2)


def test_in_process_shards_give_the_single_process_trials(trained, tmp_path):
    """Three ranks' logs opened together (as after the barrier), run one after the other in this process."""
    from worldmodel import metrics as M
    from worldmodel.results import TrialLog

    task = load_task("toy-dfa")
    model = evaluator.build_model(task, checkpoint=trained / "ck")
    model.source = str(trained / "ck")
    settings = evaluator.settings_for(task, trials=40, M=8)
    single = trained / "single" / "r.compression.trials.jsonl"
    header, want = trials(single)
    header = header["settings"]
    path = tmp_path / "r.compression.trials.jsonl"
    logs = [ShardedTrialLog(path, header, r, 3) for r in range(3)]
    ran = []
    for lg in logs:
        M.compression(task.world, model, task.domain.sampler(), settings, lg, False)
        lg.close()
        ran.append(sorted(read_trial_log(lg.path, header)[0]))
    # whole batches of batch_trials (16) dealt round-robin: rank 0 has trials 0-15, rank 1 16-31, rank 2 32-39
    assert ran == [list(range(16)), list(range(16, 32)), list(range(32, 40))]
    merge_trial_logs(path, header)
    assert trials(path)[1] == want
    full = M.compression(task.world, model, task.domain.sampler(), settings, TrialLog(path, header), False)
    assert full.to_dict() == json.loads((trained / "single" / "r.json").read_text())["metrics"]["compression_precision"]


def test_sharded_evaluation_needs_out(trained):
    task = load_task("toy-dfa")
    settings = evaluator.settings_for(task, trials=4)
    with pytest.raises(WorldModelError, match="needs --out"):
        evaluator.evaluate(task, evaluator.build_model(task, model="true"), ["compression"], settings, None,
                           data_dir=trained / "data", shard=evaluator.Shard(0, 2, lambda: None))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_write_the_same_json_as_one(trained):
    """`torchrun --nproc_per_node 2 -m worldmodel.cli evaluate …` (what `accelerate launch` does on CPUs)."""
    out = trained / "multi" / "r.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
         "--master_port", str(_free_port()), "-m", "worldmodel.cli", "evaluate", "toy-dfa", "--checkpoint",
         str(trained / "ck"), *ARGS, "--data-dir", str(trained / "data"), "--out", str(out), "--no-progress"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out.read_bytes() == (trained / "single" / "r.json").read_bytes()
    for name in ("compression", "distinction", "next-token"):
        h1, t1 = trials(trained / "single" / f"r.{name}.trials.jsonl")
        h2, t2 = trials(trained / "multi" / f"r.{name}.trials.jsonl")
        assert h1 == h2 and t1 == t2
    assert not list((trained / "multi").glob("*.part*"))
    assert proc.stdout.count("| Model |") == 1          # one table, from the main process


@pytest.mark.slow
def test_two_processes_train_with_a_fitted_time_budget(tmp_path):
    """`torchrun --nproc_per_node 2 -m worldmodel.cli train … --time-budget S` on CPUs: both processes fit the
    same number of steps (a mismatch would hang the gradient all-reduce), one summary line, one checkpoint."""
    out = tmp_path / "ck"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
         "--master_port", str(_free_port()), "-m", "worldmodel.cli", "train", "toy-dfa", "--out", str(out),
         "--time-budget", "30", "--data-dir", str(tmp_path / "data"), "--no-progress"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads((out / "training.json").read_text())
    assert info["processes"] == 2
    # the step rate is measured at log steps; on a busy machine the budget can run out before two were
    # reached, and then the run stops by the budget without a fitted plan (both processes at the same step)
    assert info["stopped"] == "time budget" or (info["planned_steps"] is not None
                                               and info["steps"] == info["planned_steps"]), info
    assert info["sequences_seen"] == info["steps"] * info["batch_size"] * 2
    assert sum(line.startswith(f"saved {out} ") for line in proc.stdout.splitlines()) == 1
    assert (out / "model.safetensors").exists() and not (tmp_path / "ck.partial").exists()
