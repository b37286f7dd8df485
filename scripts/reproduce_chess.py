#!/usr/bin/env python
"""Chess at CPU scale: a random-games model against an engine-games model (an Othello Table 3 analogue).

    OMP_NUM_THREADS=1 python scripts/reproduce_chess.py

Trains GPT-2s on the ``chess`` task's two datasets, ``random`` (uniformly random legal
games) and ``engine`` (games of the material-greedy player against itself), each with
``--seeds`` training seeds (the spread across runs is shown: one run would mislead), and
writes

* ``<results>/table.md`` + ``table.json``: rows untrained / each trained run / the mean and
  standard deviation per dataset / true world model; columns next-token test,
  board probe (piece per square), compression precision, distinction precision and
  recall;
* ``<results>/detours.md`` + ``detours.json``: the share of games each model plays legally
  for ``--plies`` moves from held-out openings when, with probability p per move, its move
  is replaced by a random legal move or by the legal move it ranks lowest;
* ``<figures>/chess-metrics.png``.

Next-token, probe and detour openings use each model's own held-out games; compression
and distinction use the task's state sampler (transpositions and prefixes of random
games), the same for every row. Data, checkpoints and trial logs go to ``<runs>/chess/``
(ignored by git); a rerun reuses finished checkpoints and resumes the trial logs.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from worldmodel.errors import WorldModelError  # noqa: E402
from worldmodel.results import conventions_sentence  # noqa: E402

METRICS = ("next_token", "probe", "compression_precision", "distinction_precision", "distinction_recall")
LABELS = {"next_token": "Next-token", "probe": "Probe", "compression_precision": "Compr. P",
          "distinction_precision": "Dist. P", "distinction_recall": "Dist. R"}
PS = (0.0, 0.1, 0.5, 0.75)
KINDS = ("random", "adversarial")


def ensure_checkpoint(task, dataset: str, seed: int, runs: Path, steps: int | None, progress: bool):
    """``<runs>/<task>/<dataset>-seed<seed>``: reused when it matches the task, steps and seed, else trained."""
    from worldmodel.checkpoints import mismatch, training_record
    from worldmodel.training import train

    folder = runs / task.name / f"{dataset}-seed{seed}"
    want = int(steps if steps is not None else task.section("train").get("steps", 1000))
    record = training_record(folder)
    if mismatch(folder, task, dataset, want) is None and record and record.get("seed") == seed:
        print(f"reusing {folder} ({record['steps']} steps, trained in {record['seconds']:.0f} s)")
        return folder, record, False
    print(f"training {task.name}/{dataset} seed {seed} into {folder}")
    info = train(task, folder, dataset=dataset, steps=want, data_dir=runs / task.name / "data", seed=seed,
                 progress=progress)
    print(f"  {info['n_params']:,} parameters, {info['steps']} steps in {info['seconds']:.0f} s, "
          f"val loss {info['final_val_loss']}")
    return folder, info, True


def evaluate_row(task, model, label: str, dataset: str, settings, runs: Path, progress: bool) -> dict:
    from worldmodel.evaluator import evaluate
    from worldmodel.results import scored_under

    data = runs / task.name / "data"
    slug = label.replace(" ", "-")
    cd = evaluate(task, model, ["compression", "distinction"], settings, runs / task.name / "eval" / f"{slug}.sampler.json",
                  data_dir=data, progress=progress)
    own = evaluate(task, model, ["next-token", "probe"], settings, runs / task.name / "eval" / f"{slug}.{dataset}.json",
                   dataset=dataset, data_dir=data, progress=progress)
    metrics = {**own["metrics"], **cd["metrics"]}
    print(f"{label}: " + ", ".join(f"{k} {metrics[k]['mean']:.3f}" for k in METRICS if metrics.get(k, {}).get("n")))
    # the conventions the row was scored under (read inside its trained lengths, keep-top, next-token)
    return {"metrics": metrics, "held_out": dataset, **scored_under(cd)}


def detour_row(task, model, label: str, dataset: str, runs: Path, trials: int, opening: int, plies: int, seed: int,
               progress: bool) -> list[dict]:
    from worldmodel.detours import cached, openings
    from worldmodel.worlds.chess.play import play_detours

    meta = {"model": label, "dataset": dataset, "trials": trials, "opening_moves": opening, "plies": plies,
            "seed": seed, "ps": list(PS), "kinds": list(KINDS)}

    def run():
        starts = openings(task.domain.sequences("test", dataset, runs / task.name / "data"), trials, opening, seed)
        results, all_trials = play_detours(model, task.world, starts, KINDS, PS, plies, seed=seed, progress=progress)
        return results, all_trials, {"n_starts": len(starts)}

    return cached(runs / task.name / "detours" / f"{label.replace(' ', '-')}.json", meta, run)["results"]


def cell(m) -> str:
    if not m or not m.get("n") or m.get("mean") is None or np.isnan(m["mean"]):
        return "—"
    return f"{m['mean']:.2f} ({m['stderr']:.2f})"


def spread(values: list[float]) -> str:
    v = np.array(values, dtype=float)
    return f"{v.mean():.2f} ± {v.std(ddof=1):.2f}" if len(v) > 1 else f"{v.mean():.2f}"


def write_tables(out: Path, rows: dict, groups: dict, training: dict, detours: dict, settings, command: str,
                 args, minutes: float, trained: int) -> None:
    trained_here = (f"trained {trained} of the {len(training)} models" if trained
                    else "reused every model and resumed the trial logs")
    head = "| Model | held out | " + " | ".join(LABELS[m] for m in METRICS) + " |"
    rule = "|---|---|" + "---|" * len(METRICS)
    lines = ["# Chess: random-games vs engine-games models (an Othello Table 3 analogue)", "",
             f"Made by `{command}` ({minutes:.1f} minutes wall on 2 shared cores for the invocation that wrote "
             f"this table, which {trained_here}; each model's training minutes are below).", "",
             "Mean (standard error over states / positions) per run; then per dataset the mean ± standard "
             f"deviation over its {args.seeds} training seeds. Acceptance {settings.acceptance.spec()}, M = {settings.M}, "
             f"{settings.trials} trials per metric, continuations of at most {settings.max_sample_len} moves, true "
             "distinction boundary sampled from M random legal continuations. Compression pairs are "
             "transpositions (two orders of one random game's moves reaching the same position); distinction "
             "pairs are equal-length prefixes of two random games. Probe: linear, last layer, one of 13 labels "
             f"(empty or a piece of either colour) per square, {settings.probe_sequences} games split 80/20. "
             + conventions_sentence(rows), "",
             head, rule]
    for label, r in rows.items():
        lines.append(f"| {label} | {r['held_out']} | " + " | ".join(cell(r["metrics"].get(m)) for m in METRICS) + " |")
    lines += ["", "| Dataset (runs) | " + " | ".join(LABELS[m] for m in METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for name, labels in groups.items():
        vals = [spread([rows[l]["metrics"][m]["mean"] for l in labels]) for m in METRICS]
        lines.append(f"| {name} ({len(labels)}) | " + " | ".join(vals) + " |")
    lines += ["", "## Models", "", "| Run | dataset | seed | parameters | layers / dims / heads | steps × batch | "
              "train games | minutes | best val loss |", "|---|---|---|---|---|---|---|---|---|"]
    for label, info in training.items():
        m = info.get("model", {})
        best = info.get("best_val_loss") if info.get("best_val_loss") is not None else info.get("final_val_loss")
        lines.append(f"| {label} | {info['dataset']} | {info['seed']} | {info['n_params']:,} | {m.get('n_layer')} / "
                     f"{m.get('n_embd')} / {m.get('n_head')} | {info['steps']} × {info['batch_size']} | "
                     f"{info['train_sequences']:,} | {info['seconds'] / 60:.1f} | {best:.3f} |")
    lines.append("")
    (out / "table.md").write_text("\n".join(lines))
    d = ["# Chess detours", "", f"Made by `{command}`.", "",
         f"Share of games (standard error) a model plays legally for {args.plies} moves (or to mate or stalemate), "
         f"playing both sides greedily from the first {args.opening_moves} moves of {args.detour_trials} held-out "
         "games of its own dataset, when with probability p per move its move is replaced by a uniformly random "
         "other legal move (*random*) or by the legal move it ranks lowest (*adversarial*).", "",
         "| Model | detour | " + " | ".join(f"p = {p:g}" for p in PS) + " |", "|---|---|" + "---|" * len(PS)]
    for label, res in detours.items():
        for kind in KINDS:
            by_p = {r["p"]: r for r in res if r["kind"] == kind}
            d.append(f"| {label} | {kind} | " + " | ".join(
                f"{by_p[p]['share']:.2f} ({by_p[p]['stderr']:.2f})" if p in by_p else "—" for p in PS) + " |")
    d.append("")
    (out / "detours.md").write_text("\n".join(d))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="chess")
    ap.add_argument("--seeds", type=int, default=2, help="training seeds per dataset")
    ap.add_argument("--steps", type=int, help="training steps (default: the task's)")
    ap.add_argument("--trials", type=int, help="trials per metric (default: the task's [evaluate])")
    ap.add_argument("--detour-trials", type=int, default=100)
    ap.add_argument("--opening-moves", type=int, default=4)
    ap.add_argument("--plies", type=int, default=30, help="moves each detour game must play legally")
    ap.add_argument("--runs", default="runs")
    ap.add_argument("--results", help="folder for the tables (default results/<task>)")
    ap.add_argument("--figures", default="figures")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    from worldmodel.progress import silence

    silence(args.no_progress)    # data generation's own bars too

    from worldmodel.evaluator import build_model, settings_for
    from worldmodel.tasks import load_task

    t0 = time.time()
    task = load_task(args.task)
    if task.config.get("domain") != "chess":
        raise WorldModelError(f"task {task.name} is not a chess task")
    runs, progress = Path(args.runs), not args.no_progress
    settings = settings_for(task, trials=args.trials)
    rows, groups, training, detours = {}, {}, {}, {}
    trained = 0

    def add(label, model, dataset, detour=True):
        model.source = label
        rows[label] = evaluate_row(task, model, label, dataset, settings, runs, progress)
        if detour:
            detours[label] = detour_row(task, model, label, dataset, runs, args.detour_trials, args.opening_moves,
                                        args.plies, settings.seed, progress)

    add("untrained", build_model(task, model="untrained", seed=settings.seed), "random", detour=False)
    for dataset in ("random", "engine"):
        groups[dataset] = []
        for seed in range(args.seeds):
            folder, info, fresh = ensure_checkpoint(task, dataset, seed, runs, args.steps, progress)
            trained += fresh
            label = f"{dataset} (seed {seed})"
            training[label] = info
            groups[dataset].append(label)
            add(label, build_model(task, checkpoint=folder), dataset)
    add("true world model", build_model(task, model="true"), "random")

    command = "OMP_NUM_THREADS=1 python scripts/reproduce_chess.py" + "".join(
        f" {shlex.quote(a)}" for a in argv if a != "--no-progress")
    out = Path(args.results or f"results/{task.name}")
    out.mkdir(parents=True, exist_ok=True)
    write_tables(out, rows, groups, training, detours, settings, command, args, (time.time() - t0) / 60, trained)
    (out / "table.json").write_text(json.dumps({"command": command, "settings": settings.to_dict(), "rows": rows,
                                                "training": training}, indent=2, default=str))
    (out / "detours.json").write_text(json.dumps({"command": command, "rows": detours}, indent=2))
    from worldmodel.plotting import metric_bars

    figs = Path(args.figures)
    figs.mkdir(parents=True, exist_ok=True)
    metric_bars(figs / "chess-metrics.png", {k: r["metrics"] for k, r in rows.items()}, METRICS, LABELS,
                "Chess: existing diagnostics vs Myhill–Nerode metrics", figsize=(10, 4.4))
    print((out / "table.md").read_text())
    print((out / "detours.md").read_text())
    print(f"wrote {out}/table.md, detours.md, {figs}/chess-metrics.png in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WorldModelError as exc:
        print(f"reproduce_chess: error: {exc}", file=sys.stderr)
        sys.exit(2)
