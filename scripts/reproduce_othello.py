#!/usr/bin/env python
"""Reproduce the paper's Othello tables (Vafa et al. 2024, Tables 3 and 4) at CPU scale.

    OMP_NUM_THREADS=1 python scripts/reproduce_othello.py

Trains one GPT-2 per training distribution, on uniformly random legal games
(``--synthetic-task``, dataset ``synthetic``) and on WTHOR championship games
(``--championship-task``, dataset ``championship``), then writes

* ``<results>/table3.md`` + ``table3.json``: rows untrained / synthetic / championship /
  true world model; columns next-token test, current-state probe, compression
  precision, distinction precision and recall (Table 3 analogue);
* ``<results>/table4.md`` + ``table4.json``: the share of games each model finishes
  with only legal moves when, with probability p per move, its move is replaced by a
  random legal move or by the legal move it ranks lowest (Table 4 analogue);
* ``<figures>/othello-metrics.png`` (grouped bars) and ``othello-detours.png``.

``<results>`` defaults to ``results/<synthetic task>``. Next-token and probe use each
model's own held-out games (synthetic for the synthetic model, championship for the
championship model; the untrained network uses the synthetic ones); compression and
distinction use the synthetic task's state sampler (boards reached by two or more of
its simulated random games), the same for every row. Every Markdown file states the
command that produced it.

Data and checkpoints go to ``<runs>/<task>/`` (``runs/`` is ignored by git); a rerun
reuses the checkpoints, resumes the metric trial logs and reuses finished detour runs,
so it is cheap.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from worldmodel.errors import WorldModelError  # noqa: E402
from worldmodel.results import conventions_sentence  # noqa: E402

PS = (0.0, 0.01, 0.1, 0.5, 0.75)
KINDS = ("random", "adversarial")
TABLE3_METRICS = ("next_token", "probe", "compression_precision", "distinction_precision", "distinction_recall")
METRIC_LABELS = {
    "next_token": "Next-token test",
    "probe": "Current-state probe",
    "compression_precision": "Compression precision",
    "distinction_precision": "Distinction precision",
    "distinction_recall": "Distinction recall",
}


@dataclass
class Row:
    """One model row: how to build it and which held-out games it is judged on."""

    label: str
    kind: str  # "untrained", "checkpoint" or "true"
    task: object  # worldmodel.tasks.Task: gives the held-out data (next-token, probe, detour openings)
    dataset: str
    checkpoint: Path | None = None


def runs_dir(runs: Path, task) -> Path:
    return Path(runs) / task.name


def data_dir(runs: Path, task) -> Path:
    return runs_dir(runs, task) / "data"


def ensure_checkpoint(task, dataset: str, runs: Path, steps: int | None = None,
                      progress: bool = True) -> tuple[Path, dict]:
    """``<runs>/<task>/checkpoint-<dataset>``: reused when it matches the task and steps, else trained."""
    from worldmodel.checkpoints import reuse_or_train

    return reuse_or_train(task, dataset, runs_dir(runs, task) / f"checkpoint-{dataset}", steps,
                          data_dir=data_dir(runs, task), progress=progress)


def build(row: Row, base_task, seed: int):
    from worldmodel.evaluator import build_model

    checkpoint = row.checkpoint if row.kind == "checkpoint" else None
    model = build_model(base_task, checkpoint, None if checkpoint else row.kind, seed=seed)
    model.source = row.label
    return model


def table3(rows: list[Row], base_task, settings, runs: Path, progress: bool = True) -> dict[str, dict]:
    """Metric summaries per row: ``{label: {metric: MetricResult dict}}`` plus where each came from."""
    from worldmodel.evaluator import evaluate
    from worldmodel.results import scored_under

    eval_dir = runs_dir(runs, base_task) / "eval"
    out = {}
    for row in rows:
        model = build(row, base_task, settings.seed)
        slug = row.label.replace(" ", "-")
        # compression / distinction: one sampler (the base task's) for every row
        cd = evaluate(base_task, model, ["compression", "distinction"], settings,
                      eval_dir / f"{slug}.sampler.json", data_dir=data_dir(runs, base_task), progress=progress)
        # next-token / probe: the row's own held-out games
        own = evaluate(row.task, model, ["next-token", "probe"], settings,
                       eval_dir / f"{slug}.{row.dataset}.json", dataset=row.dataset,
                       data_dir=data_dir(runs, row.task), progress=progress)
        # the conventions each row was scored under (read inside its trained lengths, keep-top, next-token)
        out[row.label] = {"metrics": {**own["metrics"], **cd["metrics"]}, "held_out": row.dataset,
                          **scored_under(cd)}
        print(f"{row.label}: " + ", ".join(f"{k} {v['mean']:.3f}" for k, v in out[row.label]["metrics"].items()
                                           if isinstance(v, dict) and "mean" in v))
    return out


def short_continuations(rows: list[Row], base_task, settings, runs: Path, length: int,
                        progress: bool = True) -> dict[str, dict]:
    """Compression and distinction with sampled continuations (model and true boundary) of at most ``length`` moves.

    Over whole-game continuations a model that makes an illegal-looking choice now and then
    fails compression almost surely; short continuations show how far its two prefixes
    agree *locally* (a side table, not the paper's setting).
    """
    from dataclasses import replace

    from worldmodel.evaluator import evaluate

    short = replace(settings, max_sample_len=length, boundary_len=length)
    eval_dir = runs_dir(runs, base_task) / "eval"
    out = {}
    for row in rows:
        model = build(row, base_task, settings.seed)
        res = evaluate(base_task, model, ["compression", "distinction"], short,
                       eval_dir / f"{row.label.replace(' ', '-')}.sampler-len{length}.json",
                       data_dir=data_dir(runs, base_task), progress=progress)
        out[row.label] = res["metrics"]
    return out


def cross_next_token(rows: list[Row], base_task, settings, runs: Path, datasets: dict, progress: bool = True) -> dict:
    """Next-token test of each row on every dataset's held-out games (a side table)."""
    from worldmodel.evaluator import evaluate

    eval_dir = runs_dir(runs, base_task) / "eval"
    out = {}
    for row in rows:
        model = build(row, base_task, settings.seed)
        slug = row.label.replace(" ", "-")
        out[row.label] = {}
        for ds, task in datasets.items():
            res = evaluate(task, model, ["next-token"], settings, eval_dir / f"{slug}.{ds}.next-token.json",
                           dataset=ds, data_dir=data_dir(runs, task), progress=progress)
            out[row.label][ds] = res["metrics"]["next_token"]
    return out


def table4(rows: list[Row], base_task, runs: Path, trials: int, opening_moves: int, seed: int,
           ps=PS, kinds=KINDS, progress: bool = True) -> dict[str, list[dict]]:
    """Detour results per row: ``{label: [DetourResult dict, ...]}`` (reused when already run)."""
    from worldmodel.detours import cached, openings
    from worldmodel.worlds.othello.play import move_stats, play_detours

    out = {}
    for row in rows:
        meta = {"model": row.label, "dataset": row.dataset, "n_trials": trials, "opening_moves": opening_moves,
                "seed": seed, "ps": list(ps), "kinds": list(kinds),
                "checkpoint": str(row.checkpoint) if row.checkpoint else row.kind,
                "success": "every move legal until neither side can move"}

        def run(row=row):
            starts = openings(row.task.domain.sequences("test", row.dataset, data_dir(runs, row.task)),
                              trials, opening_moves, seed)
            results, all_trials = play_detours(build(row, base_task, seed), base_task.world, starts, kinds, ps,
                                               seed=seed, progress=progress)
            return results, all_trials, {"n_starts": len(starts)}

        data = cached(runs_dir(runs, base_task) / "detours" / f"{row.label.replace(' ', '-')}.json", meta, run)
        out[row.label] = move_stats(data["results"], data["trials"])
    return out


def _cell(m: dict | None) -> str:
    if not m or not m.get("n") or m.get("mean") is None or (isinstance(m["mean"], float) and math.isnan(m["mean"])):
        return "—"
    return f"{m['mean']:.2f} ({m['stderr']:.2f})"


def write_table3(path: Path, results: dict, cross: dict, training: dict, settings, command: str,
                 base_task, datasets: dict, short: dict | None = None, short_len: int = 0) -> None:
    lines = [
        f"# Othello: Table 3 analogue ({base_task.world.size}x{base_task.world.size})",
        "",
        f"Made by `{command}`.",
        "",
        "Mean (standard error). Next-token test and probe on each model's own held-out games "
        "(column *held out*); compression and distinction on pairs from the state sampler of "
        f"task `{base_task.name}` (boards reached by two or more of its simulated random games), the same "
        f"for every row. Acceptance {settings.acceptance.spec()}, M = {settings.M}, {settings.trials} trials per "
        f"metric (standard errors over states), true distinction boundary sampled from M random valid "
        f"continuations; probe: linear, last layer, empty / mine / theirs per square, "
        f"{settings.probe_sequences} games (80/20 split by game). " + conventions_sentence(results),
        "",
        "| Model | held out | " + " | ".join(METRIC_LABELS[m] for m in TABLE3_METRICS) + " |",
        "|---|---|" + "---|" * len(TABLE3_METRICS),
    ]
    for label, r in results.items():
        cells = [_cell(r["metrics"].get(m)) for m in TABLE3_METRICS]
        lines.append(f"| {label} | {r['held_out']} | " + " | ".join(cells) + " |")
    lines += ["", "The true world model has no hidden layer, so it has no probe (—). A near-uniform untrained "
              "network gives most squares a probability above ε = 0.01 (1/64 > 0.01), so its two prefixes rarely "
              "disagree: its compression precision is high for a vacuous reason, and its distinction recall is "
              "near 0.", ""]
    if short:
        cols = TABLE3_METRICS[2:]
        lines += [f"## Compression and distinction with continuations of at most {short_len} moves", "",
                  f"The same pairs and settings, but the M sampled continuations (the model's, and the random valid "
                  f"ones behind the true boundary) stop after {short_len} moves instead of running to the end of the "
                  f"game. Not the paper's setting: it shows how far a model's two prefixes agree locally.", "",
                  "| Model | " + " | ".join(METRIC_LABELS[m] for m in cols) + " |", "|---|" + "---|" * len(cols)]
        for label, m in short.items():
            lines.append(f"| {label} | " + " | ".join(_cell(m.get(c)) for c in cols) + " |")
        lines.append("")
    if cross:
        names = list(datasets)
        lines += ["## Next-token test on both held-out sets", "",
                  "| Model | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        for label, per in cross.items():
            lines.append(f"| {label} | " + " | ".join(_cell(per.get(n)) for n in names) + " |")
        lines.append("")
    if training:
        lines += ["## Models", "",
                  "| Model | task | dataset | parameters | layers / dims / heads | steps × batch | train games | "
                  "minutes | final train loss | best val loss |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for label, info in training.items():
            m = info.get("model", {})
            best = info.get("best_val_loss") if info.get("best_val_loss") is not None else info.get("final_val_loss")
            lines.append(
                f"| {label} | {info['task']} | {info['dataset']} | {info['n_params']:,} | "
                f"{m.get('n_layer')} / {m.get('n_embd')} / {m.get('n_head')} | {info['steps']} × {info['batch_size']} | "
                f"{info['train_sequences']:,} | {info['seconds'] / 60:.1f} | {info['final_loss']:.3f} | "
                f"{best:.3f} |")
        lines.append("")
    path.write_text("\n".join(lines))


def write_table4(path: Path, detours: dict, trials: int, opening_moves: int, command: str, ps=PS) -> None:
    lines = [
        "# Othello: Table 4 analogue (detours)",
        "",
        f"Made by `{command}`.",
        "",
        f"Share of games (standard error) a model finishes with only legal moves, playing both sides "
        f"greedily from the first {opening_moves} moves of {trials} held-out games of its own dataset, when "
        f"with probability p per move its move is replaced by a uniformly random other legal move (*random*) "
        f"or by the legal move it ranks lowest (*adversarial*). A game is finished when neither side can move.",
        "",
        "| Model | detour | " + " | ".join(f"p = {p:g}" for p in ps) + " |",
        "|---|---|" + "---|" * len(ps),
    ]
    for label, res in detours.items():
        for kind in KINDS:
            by_p = {r["p"]: r for r in res if r["kind"] == kind}
            if not by_p:
                continue
            cells = [f"{by_p[p]['share']:.2f} ({by_p[p]['stderr']:.2f})" if p in by_p else "—" for p in ps]
            lines.append(f"| {label} | {kind} | " + " | ".join(cells) + " |")
    finer = (
        ("legal_moves", "Moves played legally", "Mean number of legal moves (detours included) played before the "
         "first illegal move or the end of the game (a whole game is about 55 moves after the opening).", "{:.1f}"),
        ("illegal_rate", "Illegal moves per model move", "Illegal moves per move the model chose itself (not a "
         "detour), pooled over games; a game ends at its first illegal move.", "{:.3f}"),
    )
    for key, title, text, fmt in finer:
        lines += ["", f"## {title}", "", text, "",
                  "| Model | detour | " + " | ".join(f"p = {p:g}" for p in ps) + " |", "|---|---|" + "---|" * len(ps)]
        for label, res in detours.items():
            for kind in KINDS:
                by_p = {r["p"]: r for r in res if r["kind"] == kind}
                if by_p:
                    cells = [fmt.format(by_p[p][key]) if p in by_p else "—" for p in ps]
                    lines.append(f"| {label} | {kind} | " + " | ".join(cells) + " |")
    lines.append("")
    path.write_text("\n".join(lines))


def plot_metrics(path: Path, results: dict) -> None:
    from worldmodel.plotting import metric_bars

    metric_bars(path, {label: r["metrics"] for label, r in results.items()}, TABLE3_METRICS, METRIC_LABELS,
                "Othello: existing diagnostics vs Myhill–Nerode metrics", figsize=(9, 4.4))


def plot_detours(path: Path, detours: dict, ps=PS) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(ps))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, res) in enumerate(detours.items()):
        for kind, style in zip(KINDS, ("-", "--")):
            by_p = {r["p"]: r for r in res if r["kind"] == kind}
            if not by_p:
                continue
            y = [by_p[p]["share"] if p in by_p else np.nan for p in ps]
            e = [by_p[p]["stderr"] if p in by_p else 0 for p in ps]
            axes[0].errorbar(x, y, yerr=e, fmt=style, marker="o", ms=4, capsize=2, color=colors[i % len(colors)],
                             label=f"{label} ({kind})")
            rate = [by_p[p].get("illegal_rate", np.nan) if p in by_p else np.nan for p in ps]
            axes[1].plot(x, rate, style, marker="o", ms=4, color=colors[i % len(colors)])
    for ax in axes:
        ax.set_xticks(x, [f"{p:g}" for p in ps])
        ax.set_xlabel("detour probability p per move")
    axes[0].set_ylabel("share of games finished legally")
    axes[0].set_ylim(-0.03, 1.03)
    axes[0].set_title("games finished with only legal moves")
    axes[1].set_ylabel("illegal moves per model move")
    axes[1].set_ylim(bottom=0)
    axes[1].set_title("model's own error rate")
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=7, loc="center right", frameon=False)
    fig.suptitle("Othello detours (solid: random, dashed: adversarial)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.8, 1))
    from worldmodel.plotting import save_figure

    save_figure(fig, path, dpi=120)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synthetic-task", default="othello-synthetic")
    ap.add_argument("--championship-task", default="othello-championship")
    ap.add_argument("--championship-dataset", default="championship",
                    help="dataset of the championship task to train on (6x6 tasks have only 'synthetic')")
    ap.add_argument("--steps", type=int, help="training steps for both models (default: each task's)")
    ap.add_argument("--trials", type=int, help="trials per metric (default: the synthetic task's [evaluate])")
    ap.add_argument("--M", type=int, help="model samples per prefix (default: the task's)")
    ap.add_argument("--probe-sequences", type=int)
    ap.add_argument("--probe-epochs", type=int)
    ap.add_argument("--detour-trials", type=int, default=100, help="held-out openings per model for detours")
    ap.add_argument("--opening-moves", type=int, default=5)
    ap.add_argument("--short-len", type=int, default=5,
                    help="also score compression/distinction with continuations of at most this many moves (0: skip)")
    ap.add_argument("--seed", type=int, help="metric and detour seed (default: the task's [evaluate] seed)")
    ap.add_argument("--runs", default="runs", help="folder for data, checkpoints and trial logs")
    ap.add_argument("--results", help="folder for table3/table4 (default results/<synthetic task>)")
    ap.add_argument("--figures", default="figures")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    from worldmodel.progress import silence

    silence(args.no_progress)    # data generation's own bars too

    from worldmodel.evaluator import settings_for
    from worldmodel.tasks import load_task

    t0 = time.time()
    syn_task = load_task(args.synthetic_task)
    ch_task = load_task(args.championship_task)
    if syn_task.config.get("domain") != "othello" or ch_task.config.get("domain") != "othello":
        raise WorldModelError("both tasks must be Othello tasks")
    if tuple(syn_task.world.tokens) != tuple(ch_task.world.tokens):
        raise WorldModelError(f"tasks {syn_task.name} and {ch_task.name} have different boards")
    runs = Path(args.runs)
    progress = not args.no_progress
    settings = settings_for(syn_task, trials=args.trials, M=args.M, seed=args.seed,
                            probe_sequences=args.probe_sequences, probe_epochs=args.probe_epochs)

    syn_ck, syn_info = ensure_checkpoint(syn_task, "synthetic", runs, args.steps, progress)
    ch_ck, ch_info = ensure_checkpoint(ch_task, args.championship_dataset, runs, args.steps, progress)
    rows = [
        Row("untrained", "untrained", syn_task, "synthetic"),
        Row("synthetic", "checkpoint", syn_task, "synthetic", syn_ck),
        Row("championship", "checkpoint", ch_task, args.championship_dataset, ch_ck),
        Row("true world model", "true", syn_task, "synthetic"),
    ]
    datasets = {"synthetic": syn_task, args.championship_dataset: ch_task}
    results = table3(rows, syn_task, settings, runs, progress)
    cross = cross_next_token(rows, syn_task, settings, runs, datasets, progress) if len(datasets) > 1 else {}
    short = short_continuations(rows, syn_task, settings, runs, args.short_len, progress) if args.short_len else {}
    detours = table4(rows, syn_task, runs, args.detour_trials, args.opening_moves, settings.seed,
                     progress=progress)

    command = "OMP_NUM_THREADS=1 python scripts/reproduce_othello.py" + "".join(f" {shlex.quote(a)}" for a in argv if a != "--no-progress")
    out = Path(args.results or f"results/{syn_task.name}")
    figs = Path(args.figures)
    out.mkdir(parents=True, exist_ok=True)
    figs.mkdir(parents=True, exist_ok=True)
    training = {"synthetic": syn_info, "championship": ch_info}
    write_table3(out / "table3.md", results, cross, training, settings, command, syn_task, datasets,
                 short, args.short_len)
    (out / "table3.json").write_text(json.dumps(
        {"command": command, "settings": settings.to_dict(), "rows": results, "next_token_both": cross,
         "short_continuations": {"max_len": args.short_len, "rows": short},
         "training": training}, indent=2, default=str))
    write_table4(out / "table4.md", detours, args.detour_trials, args.opening_moves, command)
    (out / "table4.json").write_text(json.dumps(
        {"command": command, "trials": args.detour_trials, "opening_moves": args.opening_moves, "ps": list(PS),
         "rows": detours}, indent=2))
    plot_metrics(figs / "othello-metrics.png", results)
    plot_detours(figs / "othello-detours.png", detours)
    print((out / "table3.md").read_text())
    print((out / "table4.md").read_text())
    print(f"wrote {out / 'table3.md'}, {out / 'table4.md'}, {figs / 'othello-metrics.png'}, "
          f"{figs / 'othello-detours.png'} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WorldModelError as exc:
        print(f"reproduce_othello: error: {exc}", file=sys.stderr)
        sys.exit(2)
