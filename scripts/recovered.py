"""A model that has recovered its world, beside one trained on narrow data (results/recovered/).

    python scripts/recovered.py FAMILY [--model gpt2|lstm|gru] [--seeds 3] [--steps N] [--trials N]
        [--rows broad,narrow] [--tag TAG] [--runs runs]
    python scripts/recovered.py --table            # results/recovered/table.md from the families' JSON

FAMILY is ``toy``, ``nav-grid`` or ``othello-6x6``. Each has a recipe task
(``tasks/<...>-recovered.toml``) and two training sets of the same world:

* **broad** data, on which the recipe's models are meant to be *certified*: next-token
  >= 0.99, compression precision >= 0.95, distinction precision and recall >= 0.95 at
  ε = 0.01 (the task's ``[evaluate]``: M = 30, at least 300 trials);
* **narrow** data (skewed walks, shortest paths, a greedy player's games), the paper's
  contrast: next-token about as high, the Myhill–Nerode metrics far lower.

For every row and training seed (0, 1, … ``--seeds - 1``: weights and batch order; data
and metric trials stay the same) the script trains a model (reused when its checkpoint
matches), times the training (wall and CPU minutes of this process), and scores
next-token (on the model's own held-out data), the probe, compression and distinction.
Seed 0 of the broad row also keeps snapshots (``[train] snapshots``) for
``scripts/emergence.py``. The true world model is scored once as the ceiling.

Writes ``results/recovered/<family>.md`` and ``.json``: per row the mean ± standard
deviation across seeds (and in brackets the mean within-run standard error), each seed's
numbers, whether it is certified, and the training minutes. Checkpoints and trial logs go
to ``runs/recovered/<task>/`` (ignored by git); a rerun reuses them and resumes.
Evaluation runs on one thread, so the numbers do not depend on the machine's thread count.

``--model lstm`` (or ``gru``) trains the same recipe -- the same data, streamed the same way,
batch size, learning rate, schedule and steps -- with a recurrent network (:data:`MODELS`) in
place of the recipe's GPT-2, from a task derived from the recipe's (``[model]`` replaced, the
name suffixed; written to ``runs/recovered/tasks/``) that reads the recipe task's data folder.
Its files are ``results/recovered/<family>-<model>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import sys
import time
from pathlib import Path

import torch

from worldmodel.checkpoints import mismatch
from worldmodel.evaluator import build_model, evaluate, settings_for
from worldmodel.results import runs_cell, scored_under, summarise_runs, write_if_changed
from worldmodel.tasks import dump_toml, load_task
from worldmodel.training import train

#: family -> (recipe task, [(row label, dataset, role, [train] overrides)]); role "broad" is meant to certify
FAMILIES = {
    "toy": ("toy-dfa-recovered", [("uniform walks", "default", "broad", {}),
                                  ("skewed walks", "skewed", "narrow", {})]),
    "nav-grid": ("nav-grid-recovered", [("random walks", "random-walks", "broad", {}),
                                        # one file of shortest paths, one per OD pair, as the paper trains
                                        ("shortest paths", "shortest-paths", "narrow", {"data": "file"})]),
    "othello-6x6": ("othello-6x6-recovered", [("synthetic games", "synthetic", "broad", {}),
                                              ("greedy player's games", "greedy", "narrow", {})]),
}
#: --model: the recipe's own [model] (a GPT-2), or a recurrent network in its place
MODELS = {
    "gpt2": None,
    "lstm": {"family": "lstm", "n_layer": 1, "n_embd": 64, "n_hidden": 256},
    "gru": {"family": "gru", "n_layer": 1, "n_embd": 64, "n_hidden": 256},
}
METRICS = [("next_token", "Next-token"), ("probe", "Probe"), ("compression_precision", "Compr. P"),
           ("distinction_precision", "Dist. P"), ("distinction_recall", "Dist. R")]
#: the certificate: every metric at least this (probe excluded: it is not one of the criteria)
CERTIFY = {"next_token": 0.99, "compression_precision": 0.95, "distinction_precision": 0.95,
           "distinction_recall": 0.95}
RESULTS = Path("results/recovered")


def certified(metrics: dict) -> bool:
    return all(metrics.get(k, {}).get("mean") is not None and metrics[k]["mean"] >= v for k, v in CERTIFY.items())


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def checkpoint(task, dataset: str, folder: Path, seed: int, snapshots: bool, overrides: dict,
               steps: int | None = None, data_dir: Path | None = None) -> tuple[Path, dict]:
    """The model of ``seed`` on ``dataset``: reused when it matches, else trained (and timed).

    ``steps`` (default: the task's ``[train] steps``) sets the budget; a snapshot run keeps
    ten snapshots across it (``save_every = steps // 10``: saving changes no weight)."""
    want = int(steps or task.section("train").get("steps", 1000))
    why = mismatch(folder, task, dataset, want)
    info = json.loads((folder / "training.json").read_text()) if why is None else None
    if info is not None and info.get("seed") != seed:
        why = "another seed"
    if info is not None and "data" in overrides and info.get("data") != overrides["data"]:
        why = f"trained on data = {info.get('data')!r}"
    if info is not None and snapshots and not (folder / "snapshots").is_dir():
        why = "no snapshots"
    if why is None:
        print(f"reusing {folder}")
        return folder, info
    print(f"training {task.name}/{dataset} seed {seed} into {folder} ({why})", flush=True)
    t0, c0 = time.time(), time.process_time() + _children_cpu()
    overrides = {**overrides, **({"snapshots": True, "save_every": max(1, want // 10)} if snapshots else {})}
    info = train(task, folder, dataset=dataset, steps=want, seed=seed, overrides=overrides, data_dir=data_dir,
                 progress=sys.stderr.isatty())
    timing = {"wall_minutes": (time.time() - t0) / 60, "cpu_minutes": (time.process_time() + _children_cpu() - c0) / 60}
    info["timing"] = timing
    (folder / "training.json").write_text(json.dumps(info, indent=2))
    print(f"  {info['n_params']:,} parameters, {info['steps']} steps: {timing['wall_minutes']:.1f} min wall, "
          f"{timing['cpu_minutes']:.1f} min CPU, val loss {info['final_val_loss']:.4f}", flush=True)
    return folder, info


def summarise(runs: list[dict]) -> dict:
    """Mean over runs, sd across runs and mean within-run standard error of each metric."""
    return summarise_runs(runs, [k for k, _ in METRICS])


def _cell(s: dict | None) -> str:
    return runs_cell(s, missing="—")


def family_table(rows: list[dict]) -> str:
    head = "| Training data | " + " | ".join(h for _, h in METRICS) + " | certified (seeds) | train minutes, wall / CPU |"
    lines = [head, "|---" * (len(METRICS) + 3) + "|"]
    for row in rows:
        runs = row["runs"]
        cert = f"{sum(r['certified'] for r in runs)}/{len(runs)}" if runs and "certified" in runs[0] else "—"
        times = [r.get("timing") for r in runs if r.get("timing")]
        t = (f"{sum(x['wall_minutes'] for x in times) / len(times):.1f} / "
             f"{sum(x['cpu_minutes'] for x in times) / len(times):.1f}") if times else "—"
        lines.append(f"| {row['label']} | " + " | ".join(_cell(row["summary"].get(k)) for k, _ in METRICS)
                     + f" | {cert} | {t} |")
    return "\n".join(lines)


def per_seed_table(rows: list[dict]) -> str:
    lines = ["| Training data | seed | " + " | ".join(h for _, h in METRICS) + " | certified | steps | "
             "val loss | wall / CPU min |", "|---" * (len(METRICS) + 6) + "|"]
    for row in rows:
        for r in row["runs"]:
            if "seed" not in r:
                continue
            cells = [f"{r['metrics'][k]['mean']:.3f}" if r["metrics"].get(k) and r["metrics"][k].get("mean")
                     is not None and not math.isnan(r["metrics"][k]["mean"]) else "—" for k, _ in METRICS]
            t = r.get("timing")
            lines.append(f"| {row['label']} | {r['seed']} | " + " | ".join(cells)
                         + f" | {'yes' if r['certified'] else 'no'} | {r.get('steps', '—')} | "
                         + (f"{r['val_loss']:.4f}" if r.get("val_loss") is not None else "—") + " | "
                         + (f"{t['wall_minutes']:.1f} / {t['cpu_minutes']:.1f}" if t else "—") + " |")
    return "\n".join(lines)


def model_task(task, model: str, runs_dir: Path):
    """``task`` itself for the recipe's model; else a task derived from it with ``MODELS[model]`` as ``[model]``."""
    if MODELS[model] is None:
        return task
    config = {**task.config, "name": f"{task.name}-{model}", "model": dict(MODELS[model])}
    path = runs_dir / "recovered" / "tasks" / f"{config['name']}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(path, f"# derived by scripts/recovered.py from tasks/{task.name}.toml: [model] replaced\n"
                     + dump_toml(config) + "\n")
    return load_task(str(path))


def score_one(task, label: str, dataset: str, role: str, overrides: dict, seed: int, steps: int | None,
              runs: Path, settings, data_dir: Path) -> dict:
    """Train (or reuse) one model of a row and score it; its record (metrics, certified, steps, minutes)."""
    folder = runs / dataset / (f"seed-{seed}" if steps is None else f"steps-{steps}-seed-{seed}")
    ck, info = checkpoint(task, dataset, folder / "checkpoint", seed, (role == "broad" and seed == 0), overrides,
                          steps, data_dir)
    model = build_model(task, ck)
    model.source = f"{label} (seed {seed})"
    t0 = time.time()
    summary = evaluate(task, model, ["next-token", "probe", "compression", "distinction"], settings,
                       folder / "eval" / "checkpoint.json", dataset=dataset, data_dir=data_dir, extras=False)
    # the minutes of the run that scored these weights, kept: a rerun that only resumes the logs takes seconds
    timing_file = folder / "eval" / "timing.json"
    known = json.loads(timing_file.read_text()) if timing_file.exists() else {}
    if known.get("weights") != model.fingerprint or known.get("eval_minutes") is None:
        known = {"weights": model.fingerprint, "eval_minutes": (time.time() - t0) / 60}
        timing_file.write_text(json.dumps(known) + "\n")
    result = {"seed": seed, "dataset": dataset, "metrics": summary["metrics"], **scored_under(summary),
              "certified": certified(summary["metrics"]),
              "steps": info.get("steps"), "val_loss": info.get("final_val_loss"),
              "n_params": info.get("n_params"), "trained_len": info.get("trained_len"),
              "timing": info.get("timing"), "eval_minutes": known["eval_minutes"]}
    print(f"  {label} seed {seed}: " + ", ".join(
        f"{h} {summary['metrics'][k]['mean']:.3f}" for k, h in METRICS if k in summary["metrics"])
        + (" CERTIFIED" if result["certified"] else ""), flush=True)
    return result


def run_scaling(name: str, budgets: list[int], trials: int | None, runs_dir: Path, model_name: str = "gpt2") -> None:
    """The broad row's seed 0 at each training budget: how far the recipe gets as its steps double.

    Writes ``results/recovered/<family>[-<model>]-scaling.md`` and ``.json``."""
    task_name, rows_spec = FAMILIES[name]
    recipe = load_task(task_name)
    task = model_task(recipe, model_name, runs_dir)
    data_dir = recipe.data_dir()
    label, dataset, role, overrides = next(r for r in rows_spec if r[2] == "broad")
    settings = settings_for(task, trials=trials)
    runs = runs_dir / "recovered" / task.name
    batch = int(task.section("train").get("batch_size", 32))
    results = [score_one(task, label, dataset, role, overrides, 0, steps, runs, settings, data_dir) for steps in budgets]
    out = name if model_name == "gpt2" else f"{name}-{model_name}"
    cmd = (f"python scripts/recovered.py {name}" + (f" --model {model_name}" if model_name != "gpt2" else "")
           + f" --scaling {','.join(map(str, budgets))}"
           + (f" --trials {settings.trials}" if settings.trials != task.section("evaluate").get("trials") else ""))
    lines = ["| training steps (sequences seen) | " + " | ".join(h for _, h in METRICS)
             + " | certified | val loss | train minutes, wall / CPU |", "|---" * (len(METRICS) + 4) + "|"]
    for r in results:
        cells = [f"{r['metrics'][k]['mean']:.2f} ({r['metrics'][k]['stderr']:.2f})" if r["metrics"].get(k)
                 and r["metrics"][k].get("mean") is not None and not math.isnan(r["metrics"][k]["mean"]) else "—"
                 for k, _ in METRICS]
        t = r.get("timing")
        lines.append(f"| {r['steps']:,} ({r['steps'] * batch:,}) | " + " | ".join(cells)
                     + f" | {'yes' if r['certified'] else 'no'} | "
                     + (f"{r['val_loss']:.4f}" if r.get("val_loss") is not None else "—") + " | "
                     + (f"{t['wall_minutes']:.1f} / {t['cpu_minutes']:.1f}" if t else "—") + " |")
    table = "\n".join(lines)
    n_params = results[0].get("n_params") or 0
    md = (f"# {out}: how far the recipe gets as its training budget doubles\n\n"
          f"Made by `OMP_NUM_THREADS=1 {cmd}`: the broad row ({label}) of `tasks/{recipe.name}.toml`"
          + ("" if model_name == "gpt2" else f" with {'an' if model_name == 'lstm' else 'a'} {model_name.upper()} "
             "in place of its GPT-2 (" + ", ".join(f"{k} = {v}" for k, v in MODELS[model_name].items() if k != "family")
             + ")") + f", {n_params:,} parameters, training seed 0, trained for each budget from scratch (the "
          f"learning-rate schedule spans the budget). Acceptance {settings.acceptance.spec()}, M = {settings.M}, "
          f"k = {settings.k}, {settings.trials} trials per metric; each cell the mean (standard error over "
          f"states); read only inside the trained lengths. *Certified*: next-token ≥ 0.99, compression precision "
          f"≥ 0.95, distinction precision and recall ≥ 0.95. Minutes: this process on a shared 2-core machine, "
          f"one thread.\n\n{table}\n")
    changed = [p for p, content in ((RESULTS / f"{out}-scaling.md", md),
                                    (RESULTS / f"{out}-scaling.json",
                                     json.dumps({"family": name, "model": model_name, "task": task.name,
                                                 "settings": settings.to_dict(), "runs": results}, indent=2) + "\n"))
               if write_if_changed(p, content)]
    print(table)
    print(f"wrote {', '.join(map(str, changed))}" if changed else "unchanged")


def run_family(name: str, seeds: int, trials: int | None, which: list[str], runs_dir: Path,
               steps: int | None = None, model_name: str = "gpt2", tag: str | None = None) -> None:
    task_name, rows_spec = FAMILIES[name]
    recipe = load_task(task_name)
    task = model_task(recipe, model_name, runs_dir)
    data_dir = recipe.data_dir()            # the recipe's data, whichever network trains on it
    family = name
    name = out_name(name, model_name, tag)
    runs = runs_dir / "recovered" / task.name
    settings = settings_for(task, trials=trials)
    rows = []
    for label, dataset, role, overrides in rows_spec:
        if role not in which:
            continue
        results = []
        for seed in range(seeds):
            results.append(score_one(task, label, dataset, role, overrides, seed, steps, runs, settings, data_dir))
        rows.append({"label": label, "dataset": dataset, "role": role, "runs": results,
                     "summary": summarise([r["metrics"] for r in results]),
                     "command": command_line(family, model_name, seeds, steps, settings, task, which, tag)})
    old = RESULTS / f"{name}.json"
    if old.exists():            # rows not rerun this time stay as they were
        kept = {r["role"]: r for r in json.loads(old.read_text())["rows"]}
        mine = {r["role"]: r for r in rows}
        rows = [r for r in (mine.get(role) or kept.get(role) for _, _, role, _ in rows_spec) if r is not None]
    true = build_model(task, None, "true")
    true.source = "true world model"
    summary = evaluate(task, true, ["next-token", "compression", "distinction"], settings,
                       runs / "eval" / "true.json", dataset=rows_spec[0][1], data_dir=data_dir, extras=False)
    rows.append({"label": "true world model", "dataset": None, "role": "ceiling",
                 "runs": [{"metrics": summary["metrics"]}], "summary": summarise([summary["metrics"]])})
    write(name, task, settings, seeds, rows, which, steps, model_name, recipe, family=family, tag=tag)


def command_line(family: str, model_name: str, seeds: int, steps: int | None, settings, task, which: list[str],
                 tag: str | None) -> str:
    """The ``scripts/recovered.py`` command that makes a family's rows (defaults left out)."""
    return (f"python scripts/recovered.py {family}" + (f" --model {model_name}" if model_name != "gpt2" else "")
            + (f" --seeds {seeds}" if seeds != 3 else "")
            + (f" --steps {steps}" if steps is not None else "")
            + (f" --trials {settings.trials}" if settings.trials != task.section("evaluate").get("trials") else "")
            + (f" --rows {','.join(which)}" if set(which) != {"broad", "narrow"} else "")
            + (f" --tag {tag}" if tag else ""))


def out_name(family: str, model_name: str = "gpt2", tag: str | None = None) -> str:
    """``<family>[-<model>][-<tag>]``: the stem of a family's results files."""
    return family + ("" if model_name == "gpt2" else f"-{model_name}") + (f"-{tag}" if tag else "")


def write(name: str, task, settings, seeds: int, rows: list[dict], which: list[str], steps: int | None,
          model_name: str, recipe, family: str, tag: str | None = None) -> None:
    cmd = command_line(family, model_name, seeds, steps, settings, task, which, tag)
    made = {r.get("command", cmd): None for r in rows if r["role"] != "ceiling"}   # kept rows keep their command
    if len(made) > 1:
        by = {c: [r["label"] for r in rows if r["role"] != "ceiling" and r.get("command", cmd) == c] for c in made}
        cmd_text = "; ".join(f"`OMP_NUM_THREADS=1 {c}` ({', '.join(labels)})" for c, labels in by.items())
    else:
        cmd_text = f"`OMP_NUM_THREADS=1 {cmd}`"
    counts = {len(r["runs"]) for r in rows if r["role"] != "ceiling"}
    if len(counts) > 1:
        over = ("each row's training seeds (how many: its certified column; rows run with other --seeds "
                "are kept from earlier runs) ± the standard deviation across them")
    elif seeds > 1:
        over = f"{seeds} training seeds (0–{seeds - 1}) ± the standard deviation across them"
    else:
        over = "one training seed (0; no spread across seeds yet, shown as –)"
    md = (f"# {name}: a model that has recovered its world, and one that has not\n\n"
          f"Made by {cmd_text} (task `tasks/{recipe.name}.toml`"
          + ("" if model_name == "gpt2" else
             f", its [model] replaced by {'an' if model_name == 'lstm' else 'a'} {model_name.upper()}: "
             + ", ".join(f"{k} = {v}" for k, v in MODELS[model_name].items() if k != "family")
             + "; the same data, batch, learning rate, schedule and steps")
          + f"; {rows[0]['runs'][0].get('n_params') or 0:,} parameters). Each cell: mean over " + over
          + f", then in brackets the mean within-run standard error over states. Acceptance "
          f"{settings.acceptance.spec()}, M = {settings.M}, "
          f"k = {settings.k}, {settings.trials} trials per metric; next-token on each model's own held-out data; "
          f"every model is read only inside the lengths it was trained on (prefix + continuation ≤ its "
          f"`trained_len`). *Certified*: next-token ≥ 0.99, compression precision ≥ 0.95, distinction precision "
          f"and recall ≥ 0.95. Training minutes are this process's wall clock and CPU time on a shared 2-core "
          f"machine, one thread.\n\n{family_table(rows)}\n\nPer seed:\n\n{per_seed_table(rows)}\n")
    changed = [p for p, content in ((RESULTS / f"{name}.md", md),
                                    (RESULTS / f"{name}.json", json.dumps({"family": family, "model": model_name,
                                                                           "task": task.name,
                                                                           "settings": settings.to_dict(),
                                                                           "rows": rows}, indent=2) + "\n"))
               if write_if_changed(p, content)]
    print(family_table(rows))
    print(f"wrote {', '.join(map(str, changed))}" if changed else f"{RESULTS}/{name}.* unchanged")


def combined_table() -> None:
    """results/recovered/table.md: every family's broad and narrow rows, from their JSON files."""
    lines = ["| World | Model | Training data | " + " | ".join(h for _, h in METRICS) + " | certified (seeds) |",
             "|---" * (len(METRICS) + 4) + "|"]
    for name, model in ((n, m) for n in FAMILIES for m in MODELS):
        base = out_name(name, model)              # then its tagged files (another step budget, say)
        for path in [RESULTS / f"{base}.json"] + sorted(RESULTS.glob(f"{base}-*.json")):
            combined_rows(lines, name, model, path)
    text = "\n".join(lines)
    md = ("# A model that has recovered its world, and one that has not\n\nMade by `python scripts/recovered.py "
          "--table` from the families' files beside it (each made by `OMP_NUM_THREADS=1 python scripts/recovered.py "
          "FAMILY`; the exact command, steps and minutes are in each family's file). Mean ± sd over the "
          "training seeds a row counts in its last column (certified / seeds; – where one seed) (mean within-run "
          "standard error); ε = 0.01, M = 30, 300 trials per metric.\n\n" + text + "\n")
    write_if_changed(RESULTS / "table.md", md)
    print(text)


def combined_rows(lines: list[str], name: str, model: str, path: Path) -> None:
    """The broad and narrow rows of one family's results file, appended to ``lines``.

    Nothing for a missing file or one that is not this family's and network's rows (a scaling
    curve, emergence data, another network's file: ``toy-lstm.json`` beside ``toy.json``)."""
    data = json.loads(path.read_text()) if path.exists() else {}
    if data.get("family") == name and (data.get("model") or "gpt2") == model and "rows" in data:
        rows = [r for r in data["rows"] if r["role"] != "ceiling"]
        n_params = next((r["runs"][0].get("n_params") for r in rows if r["runs"]), None)
        steps = next((r["runs"][0].get("steps") for r in rows if r["runs"]), None)
        label = (f"{model.upper() if model != 'gpt2' else 'GPT-2'}" + (f" ({n_params / 1e6:.2f}M)" if n_params else "")
                 + (f", {steps:,} steps" if steps else ""))
        for row in data["rows"]:
            if row["role"] == "ceiling":
                continue
            runs = row["runs"]
            cert = f"{sum(r['certified'] for r in runs)}/{len(runs)}"
            lines.append(f"| {name} | {label} | {row['label']} | " + " | ".join(_cell(row["summary"].get(k)) for k, _ in METRICS)
                         + f" | {cert} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", nargs="?", choices=sorted(FAMILIES))
    ap.add_argument("--model", default="gpt2", choices=sorted(MODELS),
                    help="the network: the recipe's GPT-2, or an LSTM / GRU trained the same way")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, help="training steps of every model (default: the recipe task's)")
    ap.add_argument("--trials", type=int, help="trials per metric (default: the recipe task's)")
    ap.add_argument("--scaling", metavar="STEPS,STEPS,...",
                    help="instead of the rows: the broad row's seed 0 trained for each of these budgets "
                         "(results/recovered/<family>[-<model>]-scaling.md)")
    ap.add_argument("--rows", default="broad,narrow", help="which rows to run: broad, narrow or both")
    ap.add_argument("--runs", default="runs", help="folder for checkpoints and trial logs")
    ap.add_argument("--table", action="store_true", help="only write results/recovered/table.md")
    ap.add_argument("--tag", help="suffix of the results files (<family>[-<model>]-<tag>.md), e.g. a step budget "
                                  "beside the family's main file")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.table:
        combined_table()
        return
    if args.family is None:
        ap.error("give a FAMILY or --table")
    if args.seeds < 1:
        ap.error(f"--seeds must be at least 1, got {args.seeds}")
    which = [w.strip() for w in args.rows.split(",") if w.strip()]
    if not which or set(which) - {"broad", "narrow"}:
        ap.error(f"--rows takes broad, narrow or both, not {args.rows!r}")
    if args.steps is not None and args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    if args.scaling:
        try:
            budgets = [int(x) for x in args.scaling.split(",") if x.strip()]
        except ValueError:
            ap.error(f"--scaling takes comma-separated step counts, not {args.scaling!r}")
        if not budgets or min(budgets) < 1:
            ap.error(f"--scaling takes positive step counts, not {args.scaling!r}")
        run_scaling(args.family, budgets, args.trials, Path(args.runs), args.model)
        return
    if args.tag is not None and not re.fullmatch(r"[a-z0-9][a-z0-9.]*", args.tag):
        ap.error(f"--tag takes lower-case letters, digits and dots, not {args.tag!r}")
    run_family(args.family, args.seeds, args.trials, which, Path(args.runs), args.steps, args.model, args.tag)


if __name__ == "__main__":
    main()
