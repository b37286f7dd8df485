"""Benchmark: the training loop against the previous one, side by side, same batches.

    OMP_NUM_THREADS=1 python scripts/bench_train.py                       # CPU: othello-synthetic (0.8M)
    python scripts/bench_train.py --task othello-synthetic-li --steps 60  # GPU: the 25M Li et al. shape

Three measurements, one run:

1. **Loops.** ``worldmodel.training.train`` (the loop) and a copy of the loop it
   replaced (batches built row by row from Python lists, a padding mask, transformers'
   own loss, non-fused AdamW, a host sync every step) train the same model from the
   same initial weights on the same file batches for ``--steps`` steps. They run in
   alternating rounds (old, new, old, new …) so that a busy machine slows both alike.
   Printed: tokens/s of each (training steps only: wall clock and, on the CPU, process
   CPU time, which a shared machine disturbs less), the ratio, MFU, and the largest
   difference between the two loops' losses over the steps (fp32: they compute the
   same function, so it should be at rounding level).
2. **Data pipeline at ``--data-batch`` (512).** Time to build one batch from a packed
   file (numpy indexing) and from Python lists (the old way), and to draw one batch of
   fresh games from the seeded stream, each as a share of one training step at that
   batch size (the stream's is the cost a worker process hides from the loop).
3. **Peak.** The matmul probe that MFU divides by (or ``--peak-flops``).
4. **Where a step's time goes** (``--profile``): one training step of the new loop's
   model at the task's batch size under ``torch.profiler``, its kernel time split into
   matrix products, attention, activation and the rest, the rate the matrix products
   run at, and the bound that follows: a loop that made everything but the matrix
   products and attention free would be at most ``step / (matmul + attention)`` times
   faster at the same precision and thread count.

``--cpu-threads N`` trains the new loop on N CPU threads (``worldmodel train
--cpu-threads``); the old loop uses the process's thread count (``OMP_NUM_THREADS``),
as it did.

Nothing here is a timed assertion; the script prints what it measured.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from worldmodel.datastream import PackedSequences, token_lut  # noqa: E402
from worldmodel.models import Vocabulary, gpt2_config, quiet_transformers  # noqa: E402
from worldmodel.sequences import read_sequences  # noqa: E402
from worldmodel.tasks import load_task  # noqa: E402
from worldmodel.training import FileBatches, lm_loss, matmul_peak_flops, model_ids, train  # noqa: E402
from worldmodel.training.batches import _StreamChunks  # noqa: E402


# ---------------------------------------------------------------------------
# The previous loop (worldmodel/train.py before the scale work), kept for comparison
# ---------------------------------------------------------------------------


def old_batches(data: list[list[int]], batch_size: int, pad: int, rng: np.random.Generator):
    """Endless random batches built row by row (the previous ``_batches``)."""
    while True:
        idx = rng.integers(0, len(data), size=batch_size)
        rows = [data[i] for i in idx]
        L = max(len(r) for r in rows)
        ids = torch.full((batch_size, L), pad, dtype=torch.long)
        mask = torch.zeros((batch_size, L), dtype=torch.long)
        for r, x in enumerate(rows):
            ids[r, :len(x)] = torch.tensor(x)
            mask[r, :len(x)] = 1
        labels = ids.masked_fill(mask == 0, -100)
        yield ids, mask, labels


def old_loop(task, train_ids: list[list[int]], vocab, steps: int, precision: str):
    """The previous training loop's steps, as a generator of (loss, seconds, cpu seconds, tokens)."""
    from accelerate import Accelerator
    from transformers import GPT2LMHeadModel

    tcfg, mcfg = task.section("train"), task.section("model")
    lr = float(tcfg.get("lr", 1e-3))
    warmup = int(tcfg.get("warmup", min(100, steps // 10)))
    batch_size = int(tcfg.get("batch_size", 32))
    torch.manual_seed(task.seed)
    mixed = {"fp32": "no", "bf16": "bf16", "fp16": "fp16"}[precision]
    accelerator = Accelerator(cpu=not torch.cuda.is_available(), mixed_precision=mixed)
    model = GPT2LMHeadModel(gpt2_config(vocab, **mcfg))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(tcfg.get("weight_decay", 0.01))},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))

    def schedule(step):
        if step < warmup:
            return (step + 1) / max(1, warmup)
        frac = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    model, opt, sched = accelerator.prepare(model, opt, sched)
    device = accelerator.device
    batches = old_batches(train_ids, batch_size, vocab.pad_id, np.random.default_rng([task.seed, 0]))
    model.train()
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        ids, mask, labels = next(batches)
        outp = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device))
        accelerator.backward(outp.loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        loss = float(outp.loss.detach())
        yield loss, time.perf_counter() - t0, time.process_time() - c0, int(mask.sum())


def run_old(task, steps, precision):
    world = task.world
    vocab = Vocabulary(world.tokens, world.name)
    folder = task.domain.ensure_data(None, None)
    train_ids = [vocab.encode(s) for s in read_sequences(folder / "train.txt", world, check=False)]
    rows = list(old_loop(task, train_ids, vocab, steps, precision))
    return {"losses": [r[0] for r in rows], "wall": sum(r[1] for r in rows), "cpu": sum(r[2] for r in rows),
            "tokens": sum(r[3] for r in rows)}


def run_new(task, steps, precision, compile_, peak, tmp: Path, log_every: int, cpu_threads: int | None = None):
    """``train()`` with a log line every ``log_every`` steps; times from the log (training steps only)."""
    out = tmp / f"new-{time.time_ns()}"
    info = train(task, out, steps=steps, progress=False,
                 overrides={"log_every": log_every, "eval_every": 10 ** 9, "precision": precision,
                            "compile": compile_ or None, "peak_flops": peak, "warmup": None,
                            "cpu_threads": cpu_threads})
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    steps_log = [r for r in log if "tokens_per_s" in r]
    wall = sum(r["seconds"] for r in steps_log)
    tokens = sum(r["tokens_per_s"] * r["seconds"] for r in steps_log)
    return {"losses": {r["step"]: r["loss"] for r in steps_log}, "wall": wall, "cpu": sum(r["cpu_seconds"] for r in steps_log),
            "tokens": tokens, "mfu": info["mfu"], "info": info}


# ---------------------------------------------------------------------------
# Data pipeline
# ---------------------------------------------------------------------------


def time_it(fn, repeat: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def data_pipeline(task, batch: int, precision: str, repeat: int = 3) -> dict:
    """Seconds per batch of each data path, and one training step's seconds, at ``batch`` sequences."""
    world, domain = task.world, task.domain
    vocab = Vocabulary(world.tokens, world.name)
    lut = token_lut(world.tokens, vocab)
    folder = domain.ensure_data(None, None)
    packed = PackedSequences.read(folder / "train.txt", world.tokens)
    lists = [vocab.encode(s) for s in read_sequences(folder / "train.txt", world, check=False)]
    fb = FileBatches(packed, batch, 0, 0, lut, vocab.bos_id, vocab.pad_id)
    ob = old_batches(lists, batch, vocab.pad_id, np.random.default_rng(0))
    out = {"batch": batch,
           "file_numpy_s": time_it(fb.next, 20),
           "file_python_s": time_it(lambda: next(ob), 5)}
    stream = domain.stream(domain.datasets()[0])
    if stream is not None:
        per_chunk = max(1, 4096 // batch)
        chunks = _StreamChunks(stream, batch, per_chunk, 0, 1, lut, vocab.bos_id, vocab.pad_id, None)
        out["stream_s"] = time_it(lambda: chunks[7], 1) / per_chunk
    # one training step at this batch size (same model, same precision)
    step, device = training_step(task, vocab, precision)
    ids = torch.from_numpy(fb.next()).to(device)
    out["step_s"] = time_it(lambda: step(ids), repeat)
    return out


def training_step(task, vocab, precision: str):
    """A fresh model of the task's shape (seed 0) and a function doing one plain training step on a batch."""
    from transformers import GPT2LMHeadModel

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(gpt2_config(vocab, **task.section("model"))).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True if device.type == "cuda" else None)
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]

    def step(ids):
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = lm_loss(model(input_ids=ids).logits, ids, vocab.pad_id)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        float(loss.detach())

    return step, device


KERNEL_GROUPS = (
    ("matrix products", ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear")),
    ("attention", ("aten::_scaled_dot_product", "aten::_flash_attention", "aten::_efficient_attention",
                   "aten::_softmax", "aten::_softmax_backward_data")),
    ("activation (GELU)", ("aten::gelu", "aten::gelu_backward", "aten::tanh", "aten::tanh_backward")),
)


def step_profile(task, precision: str, steps: int = 3, threads: int | None = None) -> dict:
    """Self time of one training step's kernels by group (CPU or CUDA), and the bound a loop change has."""
    from torch.profiler import ProfilerActivity, profile

    world = task.world
    vocab = Vocabulary(world.tokens, world.name)
    lut = token_lut(world.tokens, vocab)
    folder = task.domain.ensure_data(None, None)
    packed = PackedSequences.read(folder / "train.txt", world.tokens)
    batch = int(task.section("train").get("batch_size", 32))
    fb = FileBatches(packed, batch, 0, 0, lut, vocab.bos_id, vocab.pad_id)
    before = torch.get_num_threads()
    if threads and not torch.cuda.is_available():
        torch.set_num_threads(threads)
    try:
        step, device = training_step(task, vocab, precision)
        batches = [torch.from_numpy(fb.next()).to(device) for _ in range(steps + 1)]
        step(batches[0])                                   # warm-up, outside the profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        t0 = time.perf_counter()
        with profile(activities=acts) as prof:
            for ids in batches[1:]:
                step(ids)
        wall = (time.perf_counter() - t0) / steps
    finally:
        torch.set_num_threads(before)
    events = prof.key_averages()
    on_gpu = device.type == "cuda"

    def self_time(e):       # microseconds
        return e.self_device_time_total if on_gpu else e.self_cpu_time_total

    total = sum(self_time(e) for e in events)
    groups = {name: 0.0 for name, _ in KERNEL_GROUPS}
    for e in events:
        for name, prefixes in KERNEL_GROUPS:
            if e.key.startswith(prefixes):
                groups[name] += self_time(e)
                break
    shares = {k: v / total for k, v in groups.items()}
    shares["everything else"] = 1 - sum(shares.values())
    n_layer = int(task.section("model").get("n_layer", 2))
    d = int(task.section("model").get("n_embd", 64))
    tokens = sum(ids.numel() for ids in batches[1:]) / steps      # positions computed per step, padding included
    out = {"batch": batch, "threads": torch.get_num_threads() if not threads else threads, "step_s_profiled": wall,
           "shares": shares, "kernel_bound": 1 / max(1e-9, shares["matrix products"] + shares["attention"])}
    if groups["matrix products"] > 0:
        # forward + backward of the block matrices (12 d^2 per layer per position) over the time all products
        # took (the head's and any attention products included): a lower bound on their rate
        flops = 6 * 12 * d * d * n_layer * tokens
        out["matmul_gflops"] = flops / (groups["matrix products"] / steps * 1e-6) / 1e9
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cuda = torch.cuda.is_available()
    p.add_argument("--task", default="othello-synthetic-li" if cuda else "othello-synthetic")
    p.add_argument("--steps", type=int, default=50, help="training steps per loop and round")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds (old, new) x rounds")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="bf16" if cuda else "fp32")
    p.add_argument("--compile", action="store_true", help="also torch.compile the new loop")
    p.add_argument("--peak-flops", type=float, help="device peak FLOP/s (default: matmul probe)")
    p.add_argument("--data-batch", type=int, default=512, help="batch size of the data-pipeline measurement")
    p.add_argument("--skip-old", action="store_true", help="only the new loop (e.g. when the old one is too slow)")
    p.add_argument("--cpu-threads", type=int, help="CPU threads of the new loop (default: the task's, 1)")
    p.add_argument("--profile", action="store_true", help="also split a training step's kernel time by kind")
    p.add_argument("--out", help="write the figures as JSON here")
    args = p.parse_args(argv)
    quiet_transformers()

    task = load_task(args.task)
    device = torch.device("cuda" if cuda else "cpu")
    name = torch.cuda.get_device_name(0) if cuda else f"cpu, {torch.get_num_threads()} thread(s)"
    peak = args.peak_flops or matmul_peak_flops(device, args.precision)
    mcfg = task.section("model")
    print(f"device: {name}; task {task.name}: {mcfg}; batch {task.section('train').get('batch_size')}; "
          f"{args.precision}; peak {peak / 1e12:.3f} TFLOP/s ({'given' if args.peak_flops else 'matmul probe'})")
    task.domain.ensure_data(None, None)

    results = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            if not args.skip_old:
                results["old"].append(run_old(task, args.steps, args.precision))
                o = results["old"][-1]
                print(f"round {r + 1} old: {o['tokens'] / o['wall']:,.0f} tokens/s wall"
                      f" ({o['tokens'] / o['cpu']:,.0f} per CPU second)", flush=True)
            # a log line (one host sync) per step on the CPU, where it costs nothing; every 10 on a GPU
            results["new"].append(run_new(task, args.steps, args.precision, args.compile, peak, Path(tmp),
                                          1 if not cuda else 10, args.cpu_threads))
            n = results["new"][-1]
            print(f"round {r + 1} new: {n['tokens'] / n['wall']:,.0f} tokens/s wall"
                  f" ({n['tokens'] / n['cpu']:,.0f} per CPU second), MFU {n['mfu']:.1%}", flush=True)

    def total(rows, key):
        return sum(x[key] for x in rows)

    report = {"device": name, "task": task.name, "model": mcfg, "precision": args.precision, "steps": args.steps,
              "rounds": args.rounds, "peak_flops": peak}
    new_tps = total(results["new"], "tokens") / total(results["new"], "wall")
    new_cpu = total(results["new"], "tokens") / total(results["new"], "cpu")
    n_params = results["new"][0]["info"]["n_params"]
    report["new_tokens_per_s"] = new_tps
    report["new_mfu"] = float(np.median([x["mfu"] for x in results["new"]]))
    report["n_params"] = n_params
    report["new_tokens_per_cpu_s"] = new_cpu
    print(f"\nnew loop: {new_tps:,.0f} tokens/s ({new_cpu:,.0f} per CPU second), MFU {report['new_mfu']:.1%} "
          f"({n_params:,} parameters)")
    if results["old"]:
        old_tps = total(results["old"], "tokens") / total(results["old"], "wall")
        old_cpu = total(results["old"], "tokens") / total(results["old"], "cpu")
        report.update(old_tokens_per_s=old_tps, old_tokens_per_cpu_s=old_cpu, ratio=new_tps / old_tps,
                      ratio_cpu=new_cpu / old_cpu)
        print(f"old loop: {old_tps:,.0f} tokens/s ({old_cpu:,.0f} per CPU second)")
        print(f"ratio new/old: {new_tps / old_tps:.2f}x wall clock, {new_cpu / old_cpu:.2f}x per CPU second "
              "(training steps only; on a shared machine the CPU-time ratio is the steadier one)")
        diffs = [abs(x["losses"][step - 1] - loss) for x, y in zip(results["old"], results["new"])
                 for step, loss in y["losses"].items()]
        report["max_loss_diff"] = max(diffs)
        first = min(results["new"][0]["losses"])
        print(f"largest |loss difference| over {len(diffs)} logged steps ({args.rounds} rounds of {args.steps}): "
              f"{max(diffs):.3g} (step {first}: old {results['old'][0]['losses'][first - 1]!r}, "
              f"new {results['new'][0]['losses'][first]!r})")

    d = data_pipeline(task, args.data_batch, args.precision)
    report["data"] = d
    print(f"\ndata pipeline at batch {d['batch']} (one training step: {d['step_s'] * 1e3:.1f} ms):")
    for key, label in (("file_numpy_s", "packed file, numpy indexing"), ("file_python_s", "Python lists, row by row"),
                       ("stream_s", "fresh games from the stream (in a worker)")):
        if key in d:
            share = d[key] / (d[key] + d["step_s"])
            print(f"  {label:45s} {d[key] * 1e3:8.2f} ms/batch = {share:6.1%} of a step")
    if args.profile:
        prof = step_profile(task, args.precision, threads=args.cpu_threads)
        report["profile"] = prof
        print(f"\nwhere a training step's kernel time goes (batch {prof['batch']}, "
              f"{prof['step_s_profiled'] * 1e3:.0f} ms a step under the profiler):")
        for k, v in prof["shares"].items():
            print(f"  {k:20s} {v:6.1%}")
        if "matmul_gflops" in prof:
            print(f"  the matrix products ran at >= {prof['matmul_gflops']:.1f} GFLOP/s "
                  f"(matmul probe: {peak / 1e9:.1f} GFLOP/s)")
        print(f"  a loop that made everything but the matrix products and attention free would be at most "
              f"{prof['kernel_bound']:.2f}x faster at this precision and thread count")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
