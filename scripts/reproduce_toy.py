"""The toy demo: train a tiny GPT-2 on a random DFA and score it beside the baselines.

    python scripts/reproduce_toy.py [--task toy-dfa] [--seeds 3] [--steps N] [--trials N] [--out results/toy-dfa]

Trains ``--seeds`` models (training seeds 0, 1, …: weight initialisation and batch
order; the data and the metric trials stay the same) and scores each beside an untrained
network of the same seed and the true world model. Writes ``<out>/table.md`` and
``<out>/table.json`` and prints the table: per model and metric, the mean over training
runs, the standard deviation across runs, and the mean within-run standard error (over
states). Checkpoints, data and trial logs go to ``runs/<task>/`` (ignored by git); a rerun
reuses them and resumes the trial logs.

Numbers do not depend on the thread count: training pins its CPU threads (``[train]
cpu_threads``) and this script evaluates with one thread. The table files are rewritten
only when their content changes, so a reproduction that gets the committed numbers leaves
the checkout clean.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from worldmodel.checkpoints import mismatch
from worldmodel.evaluator import build_model, evaluate, settings_for
from worldmodel.results import runs_cell, summarise_runs, write_if_changed
from worldmodel.tasks import load_task
from worldmodel.training import train

METRICS = [("next_token", "Next-token"), ("probe", "Probe"), ("compression_precision", "Compr. P"),
           ("distinction_precision", "Dist. P"), ("distinction_recall", "Dist. R")]


def checkpoint(task, folder: Path, seed: int, steps: int | None, data_dir: Path) -> Path:
    """The trained model of ``seed`` in ``folder``: reused when it matches, else trained."""
    dataset = task.domain.datasets()[0]
    want = int(steps if steps is not None else task.section("train").get("steps", 1000))
    why = mismatch(folder, task, dataset, want)
    if why is None and json.loads((folder / "training.json").read_text()).get("seed") != seed:
        why = "another seed"
    if why is not None:
        print(f"training {task.name} seed {seed} into {folder} ({why})")
        info = train(task, folder, dataset=dataset, steps=want, seed=seed, data_dir=data_dir)
        print(f"  {info['n_params']:,} parameters, {info['steps']} steps in {info['seconds']:.0f} s")
    return folder


def summarise(runs: list[dict]) -> dict:
    """Mean over runs, sd across runs and mean within-run standard error of each metric."""
    return summarise_runs(runs, [k for k, _ in METRICS])


def _cell(s: dict | None) -> str:
    return runs_cell(s, missing="n/a")


def table(rows: dict[str, dict]) -> str:
    lines = ["| Model | " + " | ".join(h for _, h in METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    for label, summary in rows.items():
        lines.append(f"| {label} | " + " | ".join(_cell(summary.get(k)) for k, _ in METRICS) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="toy-dfa")
    ap.add_argument("--seeds", type=int, default=3, help="training runs per trained row (seeds 0..N-1; default 3)")
    ap.add_argument("--steps", type=int, help="training steps (default: the task's)")
    ap.add_argument("--trials", type=int, help="metric trials (default: the task's)")
    ap.add_argument("--out", help="results folder (default results/<task>)")
    ap.add_argument("--runs", default="runs", help="folder for data, checkpoints and trial logs")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error(f"--seeds must be at least 1, got {args.seeds}")
    torch.set_num_threads(1)  # evaluation too: the same numbers whatever OMP_NUM_THREADS says

    task = load_task(args.task)
    runs = Path(args.runs) / task.name
    out = Path(args.out or f"results/{task.name}")
    settings = settings_for(task, trials=args.trials)
    metrics = ["next-token", "probe", "compression", "distinction"]
    raw: dict[str, list[dict]] = {"untrained": [], "trained": [], "true world model": []}
    for seed in range(args.seeds):
        ck = checkpoint(task, runs / f"seed-{seed}" / "checkpoint", seed, args.steps, runs / "data")
        for label, kind in (("untrained", "untrained"), ("trained", "checkpoint")):
            model = build_model(task, ck) if kind == "checkpoint" else build_model(task, None, kind, seed=seed)
            model.source = f"{label} (seed {seed})"
            summary = evaluate(task, model, metrics, settings, runs / f"seed-{seed}" / "eval" / f"{kind}.json",
                               data_dir=runs / "data")
            raw[label].append({"seed": seed, **summary})
    model = build_model(task, None, "true")
    model.source = "true world model"
    raw["true world model"].append(evaluate(task, model, metrics, settings, runs / "eval" / "true.json",
                                            data_dir=runs / "data"))
    rows = {label: summarise([r["metrics"] for r in results]) for label, results in raw.items()}
    text = table(rows)
    cmd = "python scripts/reproduce_toy.py" + (f" --task {args.task}" if args.task != "toy-dfa" else "") \
        + (f" --seeds {args.seeds}" if args.seeds != 3 else "")
    md = (f"# {task.name}: metrics per model\n\nMade by `{cmd}`. Each cell: mean over {args.seeds} training runs "
          f"(seeds 0–{args.seeds - 1}; the untrained rows use the same seeds for their initialisation) ± the standard "
          f"deviation across runs (the spread from training luck), then in brackets the mean within-run standard "
          f"error over states (the spread from the metric's sampling). The true world model is not trained: one "
          f"run. ε = {settings.acceptance.spec()}, M = {settings.M}, k = {settings.k}, {settings.trials} trials.\n\n"
          f"{text}\n")
    changed = [p for p, content in ((out / "table.md", md),
                                    (out / "table.json", json.dumps({"summary": rows, "runs": raw}, indent=2) + "\n"))
               if write_if_changed(p, content)]
    print(text)
    print(f"wrote {', '.join(map(str, changed))}" if changed else f"{out}/table.* unchanged")


if __name__ == "__main__":
    main()
