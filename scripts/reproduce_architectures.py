"""The comparative study: GPT-2, LSTM, GRU and Mamba at matched parameter counts on the same data.

    OMP_NUM_THREADS=1 python scripts/reproduce_architectures.py [--worlds group-a4,group-a5,toy-dfa,othello-6x6-tiny]
        [--families gpt2,lstm,gru,mamba] [--out results/architectures] [--runs runs/architectures]
        [--trials 100] [--ib-tasks 6] [--steps-scale 1.0] [--steps-check group-a4:gpt2:6000]

For each world (a task file) and each family, one task file is derived from the
world's own by replacing ``[model]`` with that family's configuration (about 100k
parameters; :data:`MODELS`, counts printed in the table) and setting the world's
steps (:data:`WORLDS`): the same data, batch size, learning rate, schedule and steps
for every family; every world trains three seeds (weights and batch order; ``--seeds N``
for fewer or more). Each trained model is scored by next-token, compression, distinction
(the task's ``[evaluate]``, ``--trials`` trials) and the inductive-bias probe
(``--ib-tasks`` white-noise tasks, the whole network fine-tuned), and on the group
worlds by the answer's accuracy at every word length 1..48 (trained on 1..12: the
lengths past 12 are the length-generalisation question and are labelled so).

Writes ``<out>/table.md`` and ``<out>/table.json`` (every run's metrics and minutes),
``figures/architectures.png``. Checkpoints, data and trial logs go to ``--runs``
(ignored by git); a rerun reuses finished checkpoints and resumes the trial logs, and
the minutes recorded are those of the run that computed them. Everything runs on one
CPU thread.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from pathlib import Path

import torch

from worldmodel.checkpoints import mismatch
from worldmodel.evaluator import build_model, evaluate, settings_for
from worldmodel.models.families import parameter_count
from worldmodel.models.vocab import Vocabulary
from worldmodel.results import scored_under, write_if_changed
from worldmodel.tasks import load_task
from worldmodel.training import train

#: [model] of each family (about 100k parameters on every world; see the table for the counts)
MODELS = {
    "gpt2": {"n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 64},
    "lstm": {"family": "lstm", "n_layer": 1, "n_embd": 64, "n_hidden": 128},
    "gru": {"family": "gru", "n_layer": 1, "n_embd": 64, "n_hidden": 150},
    "mamba": {"family": "mamba", "n_layer": 3, "n_embd": 68, "d_state": 8, "d_conv": 4, "expand": 2},
}
#: per world: training steps and batch size (every family the same), training seeds
WORLDS = {
    "group-a4": {"steps": 1500, "batch_size": 32, "seeds": [0, 1, 2]},
    "group-a5": {"steps": 2000, "batch_size": 32, "seeds": [0, 1, 2]},
    "toy-dfa": {"steps": 1200, "batch_size": 32, "seeds": [0, 1, 2]},
    "othello-6x6-tiny": {"steps": 400, "batch_size": 32, "seeds": [0, 1, 2]},
}
LENGTHS = [1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 20, 24, 32, 40, 48]
COLUMNS = [("next_token", "Next-token"), ("compression_precision", "Compr. P"),
           ("distinction_precision", "Dist. P"), ("distinction_recall", "Dist. R"),
           ("inductive_bias_r", "R-IB"), ("inductive_bias_d", "D-IB"),
           ("inductive_bias_d_same_pseudo", "D-IB same ps."), ("inductive_bias_d_diff_pseudo", "D-IB other ps."),
           ("ib_fit", "IB fit")]


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def derived_task(world: str, family: str, spec: dict, folder: Path) -> Path:
    """``world``'s task file with ``[model]`` of ``family`` and the study's steps and batch size."""
    text = Path(f"tasks/{world}.toml").read_text()
    model = "[model]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in MODELS[family].items()) + "\n"
    text = re.sub(r"(?ms)^\[model\].*?(?=^\[)", model, text)
    text = re.sub(r"(?m)^name = .*$", f'name = "{world}-{family}"', text)
    text = re.sub(r"(?m)^steps = .*$", f"steps = {spec['steps']}", text)
    text = re.sub(r"(?m)^batch_size = .*$", f"batch_size = {spec['batch_size']}", text)
    path = folder / f"{world}-{family}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(path, f"# derived by scripts/reproduce_architectures.py from tasks/{world}.toml\n" + text)
    return path


def run_one(world: str, family: str, seed: int, spec: dict, args, data_dir: Path) -> dict:
    """Train (or reuse) one model and evaluate it (or resume); returns its record with the minutes each part took."""
    runs = Path(args.runs)
    task = load_task(str(derived_task(world, family, spec, runs / "tasks")))
    folder = runs / world / f"{family}-s{seed}"
    ck = folder / "checkpoint"
    steps = max(1, int(round(spec["steps"] * args.steps_scale)))
    why = mismatch(ck, task, task.domain.datasets()[0], steps)
    if why is None and json.loads((ck / "training.json").read_text()).get("seed") != seed:
        why = "another seed"
    record_path = folder / "record.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    if why is not None:
        print(f"training {task.name} seed {seed} ({why})", flush=True)
        for stale in folder.glob("eval*"):          # the old model's trial logs and summary
            stale.unlink()
        info = train(task, ck, steps=steps, seed=seed, data_dir=data_dir, progress=not args.no_progress)
        record = {}
    info = json.loads((ck / "training.json").read_text())
    log = [json.loads(line) for line in (ck / "train_log.jsonl").read_text().splitlines()]
    record.update({"world": world, "family": family, "seed": seed, "n_params": info["n_params"],
                   "steps": info["steps"], "train_minutes": info["seconds"] / 60,
                   "train_cpu_minutes": sum(r.get("cpu_seconds", 0.0) for r in log) / 60,
                   "final_val_loss": info["final_val_loss"]})
    model = build_model(task, checkpoint=ck)
    model.source = f"{family} (seed {seed})"
    s = settings_for(task, trials=args.trials, ib_tasks=args.ib_tasks)
    t0, c0 = time.time(), time.process_time()
    summary = evaluate(task, model, ["next-token", "compression", "distinction", "inductive-bias"], s,
                       folder / "eval.json", data_dir=data_dir, progress=not args.no_progress, extras=False)
    if "eval_minutes" not in record:
        record["eval_minutes"] = (time.time() - t0) / 60
        record["eval_cpu_minutes"] = (time.process_time() - c0) / 60
    record["metrics"] = summary["metrics"]
    # the conventions it was scored under: read only inside the trained lengths, keep-top, next-token positions
    record.update(scored_under(summary))
    if world.startswith("group-"):
        if "length_accuracy" not in record:
            from worldmodel.worlds.groups.domain import accuracy_by_length

            t1, c1 = time.time(), time.process_time()
            acc = accuracy_by_length(task.world, model, LENGTHS, n_per_length=args.per_length, seed=0)
            record["length_accuracy"] = {str(n): r.to_dict() for n, r in acc.items()}
            record["length_minutes"] = (time.time() - t1) / 60
            record["length_cpu_minutes"] = (time.process_time() - c1) / 60
    record_path.write_text(json.dumps(record, indent=1))
    return record


def steps_check(check: str, args) -> dict:
    """``WORLD:FAMILY:STEPS``: that family trained (seed 0, same data) for STEPS steps instead of the world's,
    and its answer accuracy by length: is a family that fails under the study's budget undertrained?"""
    world, family, steps = check.split(":")
    steps = int(steps)
    spec = {**WORLDS[world], "steps": steps}
    runs = Path(args.runs)
    base = derived_task(world, family, spec, runs / "tasks")
    text = base.read_text()
    text = re.sub(r"(?m)^name = .*$", f'name = "{world}-{family}-{steps}"', text)
    text = re.sub(r"(?m)^eval_every = .*$", f"eval_every = {max(1, steps // 12)}", text)
    path = runs / "tasks" / f"{world}-{family}-{steps}.toml"
    write_if_changed(path, text)
    task = load_task(str(path))
    ck = runs / world / f"{family}-s0-{steps}steps" / "checkpoint"
    data_dir = runs / world / "data"
    if mismatch(ck, task, task.domain.datasets()[0], steps) is not None:
        print(f"training {task.name} ({steps} steps)", flush=True)
        train(task, ck, steps=steps, seed=0, data_dir=data_dir, progress=not args.no_progress)
    info = json.loads((ck / "training.json").read_text())
    log = [json.loads(line) for line in (ck / "train_log.jsonl").read_text().splitlines()]
    from worldmodel.worlds.groups.domain import accuracy_by_length

    model = build_model(task, checkpoint=ck)
    acc = accuracy_by_length(task.world, model, LENGTHS, n_per_length=args.per_length, seed=0)
    return {"world": world, "family": family, "seed": 0, "steps": steps, "train_minutes": info["seconds"] / 60,
            "train_cpu_minutes": sum(r.get("cpu_seconds", 0.0) for r in log) / 60,
            "final_val_loss": info["final_val_loss"],
            "loss_by_step": [[r["step"], r["loss"]] for r in log if "loss" in r and "step" in r],
            "length_accuracy": {str(n): r.to_dict() for n, r in acc.items()}}


def true_row(world: str, args, data_dir: Path) -> dict:
    task = load_task(world)
    model = build_model(task, model="true")
    model.source = "true world model"
    s = settings_for(task, trials=args.trials, ib_tasks=args.ib_tasks)
    summary = evaluate(task, model, ["next-token", "compression", "distinction", "inductive-bias"], s,
                       Path(args.runs) / world / "true" / "eval.json", data_dir=data_dir, progress=False,
                       extras=False)
    return {"metrics": summary["metrics"]}


def combine(records: list[dict], key: str) -> dict | None:
    vals = [r["metrics"][key] for r in records if key in r.get("metrics", {}) and r["metrics"][key]["n"]]
    if not vals:
        return None
    means = [v["mean"] for v in vals]
    mean = sum(means) / len(means)
    sd = math.sqrt(sum((m - mean) ** 2 for m in means) / (len(means) - 1)) if len(means) > 1 else None
    return {"mean": mean, "sd": sd, "stderr": sum(v["stderr"] for v in vals) / len(vals), "per_run": means}


def cell(c: dict | None) -> str:
    if c is None or c["mean"] is None or math.isnan(c["mean"]):
        return "n/a"
    sd = "" if c.get("sd") is None else f" ± {c['sd']:.2f}"
    return f"{c['mean']:.2f}{sd} ({c['stderr']:.2f})"


def length_bins(records: list[dict]) -> dict:
    """Mean answer accuracy over lengths 1..12 (trained), 13..24 and 25..48 (length generalisation)."""
    out = {}
    for name, lo, hi in (("1-12", 1, 12), ("13-24", 13, 24), ("25-48", 25, 48)):
        per = []
        for r in records:
            acc = [v["mean"] for n, v in r.get("length_accuracy", {}).items() if lo <= int(n) <= hi]
            if acc:
                per.append(sum(acc) / len(acc))
        if per:
            m = sum(per) / len(per)
            out[name] = {"mean": m, "sd": (math.sqrt(sum((x - m) ** 2 for x in per) / (len(per) - 1))
                                           if len(per) > 1 else None), "per_run": per}
    return out


def write_figure(path: Path, table: dict, records: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worlds = list(table)
    keys = [("next_token", "next-token"), ("compression_precision", "compr. P"), ("distinction_precision", "dist. P"),
            ("distinction_recall", "dist. R"), ("inductive_bias_r", "R-IB"), ("inductive_bias_d", "D-IB")]
    groups = [w for w in worlds if w.startswith("group-")]
    fig, axes = plt.subplots(1, len(worlds) + len(groups), figsize=(4.2 * (len(worlds) + len(groups)), 3.6),
                             squeeze=False)
    axes = list(axes[0])
    colours = {"gpt2": "#4c72b0", "lstm": "#dd8452", "gru": "#55a868", "mamba": "#c44e52"}
    for ax, w in zip(axes, worlds):
        fams = [f for f in table[w] if f != "true world model"]
        width = 0.8 / max(1, len(fams))
        for i, f in enumerate(fams):
            ys = [(table[w][f].get(k) or {}).get("mean") or 0.0 for k, _ in keys]
            err = [(table[w][f].get(k) or {}).get("sd") or 0.0 for k, _ in keys]
            ax.bar([j + i * width for j in range(len(keys))], ys, width, yerr=err, label=f, color=colours.get(f))
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], [n for _, n in keys], rotation=45, ha="right",
                      fontsize=8)
        ax.set_ylim(0, 1.15)
        ax.set_title(w, fontsize=10)
    axes[0].legend(fontsize=7, loc="upper right")
    for ax, w in zip(axes[len(worlds):], groups):
        for f, recs in records[w].items():
            lengths = sorted(int(n) for n in recs[0].get("length_accuracy", {}))
            if not lengths:
                continue
            ys = [sum(r["length_accuracy"][str(n)]["mean"] for r in recs) / len(recs) for n in lengths]
            ax.plot(lengths, ys, marker="o", ms=3, label=f, color=colours.get(f))
        chance = 1.0 / load_task(w).world.group.order
        ax.axhline(chance, color="0.5", ls="--", lw=0.8)
        ax.text(47, chance + 0.02, "chance", ha="right", fontsize=7, color="0.4")
        ax.axvspan(12.5, 48.5, color="0.9", zorder=0)
        ax.text(30, 1.05, "length generalisation\n(never trained)", ha="center", fontsize=7)
        ax.set_ylim(0, 1.15)
        ax.set_xlabel("word length (trained on 1-12)")
        ax.set_ylabel("answer accuracy")
        ax.set_title(f"{w}: accuracy by length", fontsize=10)
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    save_figure(fig, path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", default=",".join(WORLDS))
    ap.add_argument("--families", default=",".join(MODELS))
    ap.add_argument("--out", default="results/architectures")
    ap.add_argument("--runs", default="runs/architectures")
    ap.add_argument("--figure", default="figures/architectures.png")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--ib-tasks", type=int, default=6)
    ap.add_argument("--per-length", type=int, default=100, help="words per length for accuracy by length")
    ap.add_argument("--steps-scale", type=float, default=1.0, help="multiply every world's steps (a quick look)")
    ap.add_argument("--steps-check", action="append", default=[], metavar="WORLD:FAMILY:STEPS",
                    help="also train FAMILY on WORLD (a group world, seed 0) for STEPS steps and report its answer "
                         "accuracy by length beside the study's (results/architectures/steps_check.json)")
    ap.add_argument("--seeds", type=int, help="training seeds 0..N-1 on every world (default: each world's, "
                                               "three)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    from worldmodel.progress import silence

    silence(args.no_progress)    # data generation's own bars too
    if args.seeds is not None and args.seeds < 1:
        ap.error(f"--seeds must be at least 1, got {args.seeds}")
    seeds_of = {w: (list(range(args.seeds)) if args.seeds is not None else spec["seeds"]) for w, spec in WORLDS.items()}
    if args.steps_check:
        checks = [steps_check(c, args) for c in args.steps_check]
        write_if_changed(Path(args.out) / "steps_check.json", json.dumps(checks, indent=1) + "\n")
        for c in checks:
            print(f"{c['world']} {c['family']} {c['steps']} steps: final val loss {c['final_val_loss']:.3f}; accuracy "
                  + " ".join(f"{n}:{v['mean']:.2f}" for n, v in c["length_accuracy"].items()))
    torch.set_num_threads(1)
    worlds = [w for w in args.worlds.split(",") if w]
    families = [f for f in args.families.split(",") if f]
    unknown = [w for w in worlds if w not in WORLDS] + [f for f in families if f not in MODELS]
    if unknown:
        ap.error(f"unknown world(s)/family(ies) {unknown}")
    table, records = {}, {}
    for w in worlds:
        spec = WORLDS[w]
        data_dir = Path(args.runs) / w / "data"
        records[w] = {f: [run_one(w, f, seed, spec, args, data_dir) for seed in seeds_of[w]] for f in families}
        table[w] = {f: {k: combine(recs, k) for k, _ in COLUMNS} for f, recs in records[w].items()}
        tr = true_row(w, args, data_dir)
        table[w]["true world model"] = {k: combine([tr], k) for k, _ in COLUMNS}
    lines = []
    for w in worlds:
        vocab = len(Vocabulary(load_task(w).world.tokens))
        lines += [f"### {w}", "",
                  "| Model | Params | Train min, wall (CPU) | Eval min, wall (CPU) | " + " | ".join(h for _, h in COLUMNS)
                  + " |",
                  "|---" * (len(COLUMNS) + 4) + "|"]
        for f, row in table[w].items():
            recs = records[w].get(f, [])
            if recs:
                params = f"{parameter_count(vocab, MODELS[f]):,}"
                tm = " / ".join(f"{r['train_minutes']:.1f} ({r['train_cpu_minutes']:.1f})" for r in recs)
                em = " / ".join(f"{r['eval_minutes'] + r.get('length_minutes', 0):.1f} "
                                f"({r['eval_cpu_minutes'] + r.get('length_cpu_minutes', 0):.1f})" for r in recs)
            else:
                params, tm, em = "—", "—", "—"
            lines.append(f"| {f} | {params} | {tm} | {em} | " + " | ".join(cell(row[k]) for k, _ in COLUMNS) + " |")
        lines.append("")
        if w.startswith("group-"):
            lines += ["Answer accuracy by word length (trained on 1–12; **13–48 is length generalisation**, lengths "
                      "never seen in training; chance is 1/|G|):", "",
                      "| Model | 1–12 (trained) | 13–24 (beyond training) | 25–48 (beyond training) |", "|---|---|---|---|"]
            for f, recs in records[w].items():
                b = length_bins(recs)
                lines.append(f"| {f} | " + " | ".join(
                    (f"{b[k]['mean']:.2f}" + (f" ± {b[k]['sd']:.2f}" if b[k]["sd"] is not None else "")) if k in b
                    else "n/a" for k in ("1-12", "13-24", "25-48")) + " |")
            lines.append("")
    total = sum(r["train_minutes"] + r["eval_minutes"] + r.get("length_minutes", 0)
                for w in records for recs in records[w].values() for r in recs)
    cpu = sum(r["train_cpu_minutes"] + r["eval_cpu_minutes"] + r.get("length_cpu_minutes", 0)
              for w in records for recs in records[w].values() for r in recs)
    import shlex
    import subprocess
    import sys

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    command = " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    head = (f"# Four architectures, one budget: GPT-2, LSTM, GRU and Mamba\n\n"
            f"Made by `OMP_NUM_THREADS=1 python scripts/reproduce_architectures.py {command}` at commit {commit} "
            f"(checkpoints and trial logs reused where they match; one CPU thread on two "
            f"shared cores: {total:.0f} minutes wall, {cpu:.0f} minutes of this process's CPU, listed per run "
            f"below; training CPU counts the steps only, not validation; an evaluation resumed from its trial logs "
            f"counts the minutes of the run that finished it). Each cell: mean "
            f"over training seeds ± the standard deviation across seeds ("
            + "; ".join(f"{w}: seed{'s' if len(seeds_of[w]) > 1 else ''} "
                        + ", ".join(str(x) for x in seeds_of[w]) for w in records)
            + f"), then in brackets the mean within-run standard error. Same data, batch size, learning rate, "
            f"schedule and steps for every family of a world. ε = 0.01, M = 30, {args.trials} trials; the "
            f"inductive-bias probe with {args.ib_tasks} white-noise tasks (binary labels, 100 training sequences "
            f"with one labelled position each, the whole network and a fresh head fine-tuned for 100 AdamW steps "
            f"at 6e-4; D-IB normalised by the labels' own disagreement). Next-token on the group worlds is the "
            f"answer's accuracy on held-out words of the training lengths.\n\n")
    md = head + "\n".join(lines)
    out = Path(args.out)
    write_if_changed(out / "table.md", md)
    write_if_changed(out / "table.json", json.dumps({"table": table, "runs": records, "models": MODELS,
                                                     "worlds": WORLDS}, indent=1) + "\n")
    write_figure(Path(args.figure), table, records)
    print(md)


if __name__ == "__main__":
    main()
