"""A prepared GPU check: train Othello-GPT at Li et al.'s shape for a few minutes, then evaluate it.

    PYTHONPATH=. python scripts/gpu_check.py --out results/othello-synthetic          # on a GPU
    OMP_NUM_THREADS=1 python scripts/gpu_check.py --out /tmp/check                    # CPU: tiny, seconds

On a GPU (``--size paper``, the default there) it trains the ``othello-synthetic-li``
task (8 layers, 8 heads, 512 dims, 25.3M parameters) on fresh random games streamed
from a seeded generator for ``--train-seconds`` (bf16, steps fitted to the budget),
then evaluates the next-token test, compression, distinction and the probe on the GPU,
and writes ``gpu-check.md`` and ``gpu-check.json`` to ``--out``: device, versions,
tokens/s, MFU, data-pipeline wait, losses, metrics and the time of every phase. On a
CPU (``--size tiny``, the default there) the same steps run on the 6×6 toy task in
seconds; that is the script's test.

Wall time is bounded: ``--max-seconds`` (default 420 on a GPU) is a deadline for the
whole run from the script's start; a phase that would start too close to it is
skipped and recorded as skipped. The JSON and Markdown are rewritten after every
phase, so a run cut short still leaves its results so far. Imports stay within
torch, transformers, accelerate, numpy and tqdm (no osmnx, folium, scipy or
matplotlib), nothing is downloaded, and the package need not be installed
(``PYTHONPATH=.`` from the repository root suffices).
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

SIZES = {
    # task, train seconds, deadline, metric trials, M, probe sequences, probe epochs
    "paper": dict(task="othello-synthetic-li", train_seconds=240.0, max_seconds=420.0, trials=200, M=30,
                  probe_sequences=500, probe_epochs=30),
    "tiny": dict(task="othello-6x6-tiny", train_seconds=15.0, max_seconds=120.0, trials=6, M=5,
                 probe_sequences=60, probe_epochs=5),
}
METRICS = ("next-token", "compression", "distinction", "probe")
#: Rough seconds a phase needs at least; a phase starts only if this much time is left.
MIN_PHASE = {"next-token": 10.0, "compression": 20.0, "distinction": 20.0, "probe": 15.0}


def elapsed() -> float:
    return time.perf_counter() - T0


def say(text: str) -> None:
    print(f"[{elapsed():6.1f}s] {text}", flush=True)


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda}
    for name in ("transformers", "accelerate", "numpy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def device_info() -> dict:
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        return {"type": "cuda", "name": p.name, "memory_gib": round(p.total_memory / 2 ** 30, 1),
                "capability": f"{p.major}.{p.minor}", "count": torch.cuda.device_count()}
    return {"type": "cpu", "name": platform.processor() or platform.machine(), "threads": torch.get_num_threads()}


def fmt(x, spec=".3f"):
    """``x`` formatted by ``spec``, or n/a when missing."""
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "n/a"
    return format(x, spec)


def write(report: dict, out: Path) -> None:
    """Rewrite gpu-check.json and gpu-check.md from the report so far."""
    report["seconds_total"] = round(elapsed(), 1)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "gpu-check.json.tmp"
    tmp.write_text(json.dumps(report, indent=2, default=str))
    tmp.replace(out / "gpu-check.json")
    d, t = report["device"], report.get("training", {})
    lines = [
        f"# GPU check: {report['task']} ({report['size']})",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Device: {d['name']} ({d['type']}{', ' + str(d.get('memory_gib')) + ' GiB' if 'memory_gib' in d else ''}); "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v),
        "",
        f"Status: {report['status']}; {report['seconds_total']:.0f} s wall in all "
        f"(phases: " + ", ".join(f"{k} {v:.0f} s" for k, v in report["phases"].items()) + ").",
        "",
    ]
    if t:
        lines += [
            "## Training",
            "",
            "| parameters | precision | steps | games seen | tokens/s | MFU | peak (FLOP/s) | data wait | train loss | val loss |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {t['n_params']:,} | {t['precision']}{' + compile' if t.get('compile') else ''} | {t['steps']:,} | "
            f"{t['sequences_seen']:,} | {fmt(t['train_tokens_per_s'], ',.0f')} | {fmt(t['mfu'], '.1%')} | "
            f"{t['peak_flops']:.3g} ({'given' if t['peak_flops_source'] == 'given' else 'matmul probe'}) | "
            f"{fmt(t['data_wait'], '.1%')} | {fmt(t['final_loss'])} | {fmt(t['final_val_loss'])} |",
            "",
            f"tokens/s counts real tokens of training steps (validation excluded); MFU = 6 × parameters × "
            f"positions/s ÷ peak; data wait = share of step time spent waiting for the next batch "
            f"({t['data_workers']} worker processes drawing fresh games). Training stopped: "
            f"{t.get('stopped') or 'after the planned steps'}; {t['seconds']:.0f} s in the loop.",
            "",
        ]
    if report.get("metrics"):
        lines += ["## Metrics", "", "| metric | mean | stderr | n | failed | seconds |", "|---|---|---|---|---|---|"]
        for name, m in report["metrics"].items():
            if "skipped" in m:
                lines.append(f"| {name} | skipped: {m['skipped']} | | | | |")
            else:
                lines.append(f"| {name} | {fmt(m.get('mean'))} | {fmt(m.get('stderr'))} | {m.get('n')} | "
                             f"{m.get('n_failed')} | {m.get('seconds', 0):.1f} |")
        e = report.get("evaluate_settings", {})
        lines += ["", f"Settings: ε = {e.get('acceptance')}, M = {e.get('M')}, trials = {e.get('trials')}, "
                      f"probe {e.get('probe_sequences')} games × {e.get('probe_epochs')} epochs, on {report['eval_device']}.", ""]
    (out / "gpu-check.md").write_text("\n".join(lines))


def main(argv=None) -> int:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for gpu-check.md and gpu-check.json")
    p.add_argument("--size", choices=sorted(SIZES), default="paper" if cuda else "tiny")
    p.add_argument("--task", help="task to train (default: othello-synthetic-li, or othello-6x6-tiny when tiny)")
    p.add_argument("--train-seconds", type=float, help="training budget, setup and compilation included")
    p.add_argument("--max-seconds", type=float, help="deadline for the whole run (phases that do not fit are skipped)")
    p.add_argument("--trials", type=int, help="trials of compression, distinction and next-token")
    p.add_argument("--M", type=int, help="continuations sampled per prefix")
    p.add_argument("--probe-sequences", type=int)
    p.add_argument("--probe-epochs", type=int)
    p.add_argument("--metrics", default=",".join(METRICS), help="comma-separated subset of " + ",".join(METRICS))
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], help="default: bf16 on CUDA, fp32 on CPU")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (costs compile time)")
    p.add_argument("--batch-size", type=int, help="override the task's batch size")
    p.add_argument("--peak-flops", type=float, help="device peak FLOP/s for MFU (default: matmul probe)")
    p.add_argument("--data-workers", type=int, help="processes generating games (default: chosen from the CPU count)")
    p.add_argument("--work", help="folder for data and the checkpoint (default: a temporary folder)")
    args = p.parse_args(argv)
    size = SIZES[args.size]
    train_seconds = args.train_seconds or size["train_seconds"]
    deadline = args.max_seconds or size["max_seconds"]
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    bad = [m for m in metrics if m not in METRICS]
    if bad:
        p.error(f"unknown metric(s) {bad}")

    from worldmodel import evaluator
    from worldmodel.models import quiet_transformers
    from worldmodel.tasks import load_task
    from worldmodel.training import train

    quiet_transformers()
    out = Path(args.out)
    task = load_task(args.task or size["task"])
    report = {
        "task": task.name, "size": args.size, "status": "running",
        "command": "python scripts/gpu_check.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "device": device_info(), "versions": versions(), "phases": {"startup": round(elapsed(), 1)},
        "train_seconds": train_seconds, "max_seconds": deadline,
    }
    say(f"device {report['device']['name']}; torch {torch.__version__}; task {task.name}; "
        f"train {train_seconds:.0f} s; deadline {deadline:.0f} s")
    write(report, out)

    work_ctx = tempfile.TemporaryDirectory() if args.work is None else None
    work = Path(args.work or work_ctx.name)
    try:
        # -- data files (validation, test, probe positions); training itself streams ----------
        t = time.perf_counter()
        dataset = "synthetic"
        task.domain.ensure_data(dataset, work / "data")
        report["phases"]["data"] = round(time.perf_counter() - t, 1)
        say(f"data files ready ({report['phases']['data']:.1f} s)")

        # -- training ---------------------------------------------------------------------------
        t = time.perf_counter()
        budget = max(1.0, min(train_seconds, deadline - elapsed() - 30.0))
        last = {"t": 0.0}

        def echo(rec):
            if time.perf_counter() - last["t"] >= 10 or "val_loss" in rec:
                last["t"] = time.perf_counter()
                extra = f", val {rec['val_loss']:.3f}" if "val_loss" in rec else ""
                speed = (f", {rec['tokens_per_s']:,.0f} tok/s, MFU {rec['mfu']:.1%}, data wait {rec['data_wait']:.1%}"
                         if "mfu" in rec else "")
                say(f"step {rec['step']}: loss {rec['loss']:.3f}{extra}{speed}")

        overrides = {"data": "stream", "time_budget": budget, "precision": args.precision,
                     "compile": True if args.compile else None, "batch_size": args.batch_size,
                     "peak_flops": args.peak_flops, "data_workers": args.data_workers}
        if args.size == "tiny":
            overrides.update(log_every=5, eval_every=20)
        ck = work / "checkpoint"
        info = train(task, ck, dataset=dataset, data_dir=work / "data", progress=False, overrides=overrides, echo=echo)
        report["training"] = info
        report["phases"]["train"] = round(time.perf_counter() - t, 1)
        say(f"trained {info['steps']} steps in {info['seconds']:.0f} s: {fmt(info['train_tokens_per_s'], ',.0f')} "
            f"tokens/s, MFU {fmt(info['mfu'], '.1%')}, loss {info['final_loss']:.3f}, val {fmt(info['final_val_loss'])}")
        write(report, out)

        # -- evaluation on the same device --------------------------------------------------------
        device = "cuda" if cuda else "cpu"
        report["eval_device"] = device
        model = evaluator.build_model(task, checkpoint=ck, device=device)
        model.source = f"{task.name} ({info['steps']} steps, {info['sequences_seen']:,} games)"
        settings = evaluator.settings_for(task, trials=args.trials or size["trials"], M=args.M or size["M"],
                                          probe_sequences=args.probe_sequences or size["probe_sequences"],
                                          probe_epochs=args.probe_epochs or size["probe_epochs"])
        report["evaluate_settings"] = settings.to_dict()
        report["metrics"] = {}
        for metric in metrics:
            left = deadline - elapsed()
            if left < MIN_PHASE[metric] * (0.1 if args.size == "tiny" else 1.0):
                report["metrics"][metric] = {"skipped": f"{left:.0f} s left before the deadline"}
                say(f"{metric}: skipped ({left:.0f} s left)")
                continue
            t = time.perf_counter()
            summary = evaluator.evaluate(task, model, [metric], settings, None, dataset, work / "data",
                                         progress=False, extras=False)
            seconds = time.perf_counter() - t
            for name, m in summary["metrics"].items():
                m = dict(m)
                m.pop("trials", None)
                m["seconds"] = round(seconds, 1)
                report["metrics"][name] = m
                say(f"{name}: {fmt(m.get('mean'))} ± {fmt(m.get('stderr'))} (n {m.get('n')}, {seconds:.1f} s)")
            report["phases"][metric] = round(seconds, 1)
            write(report, out)
        report["status"] = "complete"
    except BaseException as exc:
        report["status"] = f"failed: {type(exc).__name__}: {exc}"[:500]
        write(report, out)
        raise
    finally:
        if work_ctx is not None:
            work_ctx.cleanup()
    write(report, out)
    say(f"wrote {out / 'gpu-check.md'} and {out / 'gpu-check.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
