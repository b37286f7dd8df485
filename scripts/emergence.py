"""When does the world model appear? The metrics of one training run's snapshots, against steps.

    python scripts/emergence.py TASK --checkpoint DIR [--dataset NAME] [--trials 100] \
        [--out results/recovered/NAME-emergence.json] [--figure figures/NAME-emergence.png] [--title TEXT]

``DIR`` is a checkpoint trained with snapshots (``worldmodel train TASK --out DIR
--snapshots --save-every N``, or seed 0 of a ``scripts/recovered.py`` broad row): its
``snapshots/step-<N>/`` folders hold the weights at step 0, every ``N`` steps and at the
end. Each snapshot is scored like the final model (next-token on the held-out data of
the checkpoint's dataset, the probe, compression and distinction, with the task's
``[evaluate]`` settings and ``--trials``); trial logs go beside ``--out`` (a rerun
resumes). Writes the JSON (one record per snapshot: step, sequences seen, every metric)
and a figure of the five scores against training steps, the certificate's 0.95 line
drawn in.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from worldmodel.checkpoints import trained_dataset, training_record
from worldmodel.errors import WorldModelError
from worldmodel.evaluator import build_model, evaluate, settings_for
from worldmodel.results import write_if_changed
from worldmodel.tasks import load_task

SERIES = [("next_token", "next-token"), ("probe", "probe"), ("compression_precision", "compression precision"),
          ("distinction_precision", "distinction precision"), ("distinction_recall", "distinction recall")]


def snapshots(folder: Path) -> list[tuple[int, Path]]:
    """``(step, folder)`` of every snapshot of a checkpoint, in step order."""
    base = folder / "snapshots"
    if not base.is_dir():
        raise WorldModelError(f"{folder} has no snapshots/ (train it with --snapshots)")
    out = []
    for p in base.iterdir():
        if p.is_dir() and p.name.startswith("step-") and not p.name.endswith(".tmp"):
            out.append((int(p.name[5:]), p))
    if not out:
        raise WorldModelError(f"{base} holds no step-<N> folders")
    return sorted(out)


def figure(path: Path, records: list[dict], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    steps = [r["step"] for r in records]
    styles = {"next_token": ("o", "-"), "probe": ("s", ":"), "compression_precision": ("^", "-"),
              "distinction_precision": ("D", "--"), "distinction_recall": ("v", "-.")}
    for key, label in SERIES:
        ys = [r["metrics"].get(key, {}).get("mean") for r in records]
        if all(y is None for y in ys):
            continue
        marker, line = styles[key]
        ax.plot(steps, [float("nan") if y is None else y for y in ys], marker=marker, ls=line, ms=4, lw=1.4,
                label=label)
    ax.axhline(0.95, color="0.5", lw=0.8, ls="--")
    ax.text(steps[-1], 0.955, "0.95", ha="right", va="bottom", fontsize=7, color="0.4")
    ax.set_xlabel("training step")
    ax.set_ylabel("score")
    ax.set_ylim(-0.02, 1.03)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    save_figure(fig, path, dpi=130)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task")
    ap.add_argument("--checkpoint", required=True, help="a checkpoint folder with snapshots/")
    ap.add_argument("--dataset", help="held-out data for next-token and probe (default: the checkpoint's)")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--out", required=True, help="JSON to write; trial logs go beside it")
    ap.add_argument("--figure", required=True)
    ap.add_argument("--title")
    ap.add_argument("--command", help="the command line to record in the JSON (default: as run)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        task = load_task(args.task)
        folder = Path(args.checkpoint)
        dataset = args.dataset or trained_dataset(folder) or task.domain.datasets()[0]
        settings = settings_for(task, trials=args.trials)
        out = Path(args.out)
        logs = out.with_suffix("")
        records = []
        for step, snap in snapshots(folder):
            model = build_model(task, snap)
            model.source = f"{folder} step {step}"
            summary = evaluate(task, model, ["next-token", "probe", "compression", "distinction"], settings,
                               logs / f"step-{step:07d}.json", dataset=dataset, extras=False)
            rec = training_record(snap) or {}
            records.append({"step": step, "sequences_seen": rec.get("sequences_seen"),
                            "metrics": {k: summary["metrics"][k] for k, _ in SERIES if k in summary["metrics"]}})
            print(f"step {step}: " + ", ".join(f"{label} {records[-1]['metrics'][k]['mean']:.3f}"
                                               for k, label in SERIES if k in records[-1]["metrics"]), flush=True)
    except WorldModelError as exc:
        raise SystemExit(f"emergence: error: {exc}") from None
    import sys

    command = args.command or "python " + " ".join(["scripts/emergence.py", *(argv or sys.argv[1:])])
    write_if_changed(out, json.dumps({"task": task.name, "checkpoint": str(folder), "dataset": dataset,
                                      "command": command, "settings": settings.to_dict(), "snapshots": records},
                                     indent=2) + "\n")
    title = args.title or f"{task.name} ({dataset}): metrics while training, {settings.trials} trials each"
    figure(Path(args.figure), records, title)
    print(f"wrote {out} and {args.figure}")


if __name__ == "__main__":
    main()
