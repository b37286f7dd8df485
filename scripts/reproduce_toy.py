"""The toy demo: train a tiny GPT-2 on a random DFA and score it beside the baselines.

    python scripts/reproduce_toy.py [--task toy-dfa] [--steps N] [--trials N] [--out results/toy-dfa]

Writes ``<out>/table.md`` and ``<out>/table.json`` with rows for the untrained
network, the trained one and the true world model, and prints the table. The
checkpoint and data go to ``runs/<task>/`` (ignored by git); rerunning reuses them
and resumes the trial logs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from worldmodel.checkpoints import reuse_or_train
from worldmodel.evaluator import build_model, evaluate, settings_for
from worldmodel.results import MetricResult, markdown_table
from worldmodel.tasks import load_task


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="toy-dfa")
    ap.add_argument("--steps", type=int, help="training steps (default: the task's)")
    ap.add_argument("--trials", type=int, help="metric trials (default: the task's)")
    ap.add_argument("--out", help="results folder (default results/<task>)")
    ap.add_argument("--runs", default="runs", help="folder for data and checkpoints")
    args = ap.parse_args(argv)

    task = load_task(args.task)
    runs = Path(args.runs) / task.name
    out = Path(args.out or f"results/{task.name}")
    ck, _ = reuse_or_train(task, task.domain.datasets()[0], runs / "checkpoint", args.steps, data_dir=runs / "data")
    settings = settings_for(task, trials=args.trials)
    rows, raw = {}, {}
    for label, kind in (("untrained", "untrained"), ("trained", "checkpoint"), ("true world model", "true")):
        model = build_model(task, ck) if kind == "checkpoint" else build_model(task, None, kind)
        model.source = label
        summary = evaluate(task, model, ["next-token", "probe", "compression", "distinction"], settings,
                           runs / "eval" / f"{kind}.json", data_dir=runs / "data")
        raw[label] = summary
        rows[label] = {k: MetricResult(k, **v) for k, v in summary["metrics"].items()}
    table = markdown_table(rows)
    out.mkdir(parents=True, exist_ok=True)
    cmd = "python scripts/reproduce_toy.py" + (f" --task {args.task}" if args.task != "toy-dfa" else "")
    (out / "table.md").write_text(
        f"# {task.name}: metrics per model\n\nMade by `{cmd}`. Mean (standard error over states); "
        f"ε = {settings.acceptance.spec()}, M = {settings.M}, k = {settings.k}, {settings.trials} trials.\n\n{table}\n")
    (out / "table.json").write_text(json.dumps(raw, indent=2))
    print(table)
    print(f"wrote {out / 'table.md'}")


if __name__ == "__main__":
    main()
