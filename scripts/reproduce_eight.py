#!/usr/bin/env python
""""8", the loop memory game: its automaton, its benchmark, LLM rows in words, GPT-2s on abstract transcripts.

    OMP_NUM_THREADS=1 python scripts/reproduce_eight.py [--part sizes,suite,probe,metrics] [--seeds 3]
        [--steps 800] [--trials 60] [--random-episodes 40] [--tiny-steps 300]

Parts (all by default), each writing ``results/eight/<part>.md`` (and ``.json``):

* ``sizes`` — the automaton of every arc at easy, normal and hard: reachable structural
  states with the hold hypotheses as drawn, with them in canonical form, and the minimal
  DFA (``ExplicitDFA.minimise``); insane is an implicit world;
* ``suite`` — ``worldmodel eight-agent eight-suite`` for the judge, always-go-on, the
  random agent (``--random-episodes`` per cell, and the win rate the rules imply under the
  round cap), the last-loop agent, and the tiny local chat model (Hallway 8 only: its
  replies take a model call each); ``figures/eight-suite.png``;
* ``probe`` — ``worldmodel eight-probe`` on ``eight-hallway-normal`` and
  ``eight-hallway-hard`` for the same responders, beside each one's win rate there;
* ``metrics`` — GPT-2s trained on ``eight-hallway-normal``'s two data sets (uniform play of
  the automaton; the judge's play of the game), ``--seeds`` training runs each, scored by
  next-token, probe (level, changed so far), compression, distinction, beside an untrained
  network and the true world model, and detours (an observation replaced by another valid
  one, success = the door with no reset); ``figures/eight-metrics.png``.

Work (data, checkpoints, caches, trial logs) goes to ``runs/eight/``; a rerun reuses it.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from worldmodel.errors import WorldModelError  # noqa: E402

METRICS = [("next_token", "Next-token"), ("probe", "Probe"), ("compression_precision", "Compr. P"),
           ("distinction_precision", "Dist. P"), ("distinction_recall", "Dist. R")]
PS = (0.0, 0.1, 0.25, 0.5)
AGENTS = [("true", "judge (true world model)"), ("always-go-on", "always go on"), ("random", "random"),
          ("last-loop", "last-loop agent")]
TINY = "tiny local HF chat model"


def _command() -> str:
    extra = [shlex.quote(a) for a in sys.argv[1:] if a != "--no-progress"]
    return " ".join(["OMP_NUM_THREADS=1 python scripts/reproduce_eight.py"] + extra)


def _cli(*argv) -> None:
    from worldmodel.cli import main

    code = main([str(a) for a in argv])
    if code:
        raise WorldModelError(f"`worldmodel {' '.join(map(str, argv))}` failed (exit {code})")


def sizes(args, out: Path) -> dict:
    from worldmodel.tasks import load_task
    from worldmodel.worlds.eight.arcs import ARC_IDS
    from worldmodel.worlds.eight.world import sizes as count

    task = load_task("eight-suite")
    rows, t0 = {}, time.time()
    for a in ARC_IDS:
        arc = task.domain.arc(a)
        for d in ("easy", "normal", "hard"):
            rows[f"{a}|{d}"] = {**count(arc, d), "tokens": len(arc.observation_tokens) + 4,
                                "properties": len(arc.props), "late": len(arc.late)}
    lines = ["# The automaton of \"8\" per arc and difficulty", "", f"Made by `{_command()}` "
             f"({(time.time() - t0):.0f} s).", "",
             "| arc | properties (late) | tokens | difficulty | reachable (holds as drawn) | reachable (canonical) "
             "| minimal |", "|---|---|---|---|---|---|---|"]
    for key, r in rows.items():
        a, d = key.split("|")
        lines.append(f"| {a} | {r['properties']} ({r['late']}) | {r['tokens']} | {d} | {r['raw']:,} | "
                     f"{r['canonical']:,} | {r['minimal']:,} |")
    lines += ["", "Reachable: structural states (level, hold hypotheses still consistent, late properties seen, "
              "position in the loop, details and changes so far, late details shown) enumerated over abstract "
              "observations, dead ends removed as they arise (none is left: every reachable state can still "
              "reach the door). Canonical: hold hypotheses with what no longer matters dropped (held properties "
              "already seen, reveal levels already passed). Minimal: Hopcroft's minimisation of the automaton "
              "over the `prop=value` alphabet; both forms minimise to the same DFA. Easy and normal have the "
              "same minimal automaton (equivalent DFAs: normal's rare hold only removes transcripts); hard adds "
              "the holds (one or two late details kept out of loops 1-2 at least, each revealed at level 2-6 "
              "and unchangeable until seen) and the second change from level 4. Insane is an implicit world "
              "(its state also holds the climb's baseline): for Hallway 8 its structure alone, without the "
              "baselines, has 72,109 minimal states (1.1 M reachable), measured once, not part of this run."]
    (out / "sizes.md").write_text("\n".join(lines) + "\n")
    (out / "sizes.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))
    return rows


def _tiny(args, work: Path):
    from worldmodel.tasks import load_task
    from worldmodel.worlds.eight.arcs import ARC_IDS
    from worldmodel.worlds.eight.tiny_chat import make_tiny_chat_model

    folder = work / f"tiny-chat-{args.tiny_steps}"
    if not (folder / "config.json").exists():
        task = load_task("eight-suite")
        make_tiny_chat_model(folder, [task.domain.arc(a) for a in ARC_IDS], seed=0, train_steps=args.tiny_steps)
    return folder


def suite(args, work: Path, out: Path) -> dict:
    from worldmodel.worlds.eight.agents import win_probability

    t0 = time.time()
    runs = {}
    for agent, label in AGENTS:
        folder = work / f"suite-{agent}"
        extra = ["--episodes", args.random_episodes] if agent == "random" else []
        t = time.time()
        _cli("eight-agent", "eight-suite", "--agent", agent, "--out", folder, "--no-progress", *extra)
        runs[label] = {**json.loads((folder / "results.json").read_text()), "seconds": time.time() - t}
    tiny = _tiny(args, work)
    t = time.time()
    _cli("eight-agent", "eight-suite", "--agent", "hf", "--model-path", tiny, "--max-tokens", 24, "--arcs",
         "hallway-eight", "--episodes", 5, "--max-rounds", 30, "--out", work / "suite-tiny", "--no-progress")
    runs[TINY] = {**json.loads((work / "suite-tiny" / "results.json").read_text()), "seconds": time.time() - t}
    rnd = runs["random"]
    wins = sum(c["wins"] for c in rnd["cells"])
    n = sum(c["episodes"] for c in rnd["cells"])
    p = win_probability(rnd["max_rounds"])
    lines = ["# \"8\": the benchmark's sweep (eight-suite)", "", f"Made by `{_command()}`; each row of a table is "
             "one `worldmodel eight-agent` run on the project's simulator:", ""]
    for label, r in runs.items():
        cmd = f"worldmodel eight-agent eight-suite --agent {r['agent']}" + (
            f" --episodes {r['episodes']}" if label == "random" else "") + (
            " --model-path TINY --max-tokens 24 --arcs hallway-eight --episodes 5 --max-rounds 30" if label == TINY
            else "")
        lines.append(f"* {label}: `{cmd}` ({r['seconds'] / 60:.1f} min)")
    lines.append("")
    for label, r in runs.items():
        lines += [f"## {label}", "", "| arc | difficulty | reading | episodes | win% | rounds | resets | call acc. | "
                  "unparseable |", "|---|---|---|---|---|---|---|---|---|"]
        for c in r["cells"]:
            def f(x, fmt):
                return "–" if x is None else format(x, fmt)
            lines.append(f"| {c['arc']} | {c['difficulty']} | {c['reading']} | {c['episodes']} | "
                         f"{100 * c['win_rate']:.0f}% | {f(c['rounds'], '.1f')} | {f(c['resets'], '.1f')} | "
                         f"{f(c['call_accuracy'], '.3f')} | {c['unparseable']} |")
        calls = sum(c["calls"] for c in r["cells"])
        dis = sum(c["automaton_disagrees"] for c in r["cells"])
        lines += ["", f"{sum(c['wins'] for c in r['cells'])} of {sum(c['episodes'] for c in r['cells'])} episodes "
                  f"won; the automaton judged {calls - dis} of {calls} calls as the game did.", ""]
    se = math.sqrt(p * (1 - p) / n)
    lines += ["## The random agent against the rules", "",
              f"A random call is right with probability 1/2 whatever the loop (the game never shows the answer), "
              f"so a climb is a run of fair coin flips and the episode is won when 8 heads come in a row within "
              f"the cap of {rnd['max_rounds']} rounds: {p:.4f} (the chance of a run of 8 in {rnd['max_rounds']} "
              f"flips; the expected number of rounds to the first run of 8 is 2^9 - 2 = 510). Observed: {wins} of "
              f"{n} episodes, {wins / n:.3f} (binomial standard error {se:.3f} at the implied rate, so "
              f"z = {(wins / n - p) / se:.1f}).",
              "", "rounds and resets: means over the won episodes, as the upstream benchmark reports them."]
    (out / "suite.md").write_text("\n".join(lines) + "\n")
    (out / "suite.json").write_text(json.dumps({"command": _command(), "runs": runs, "random_implied": p,
                                                "random_observed": wins / n, "random_episodes": n}, indent=1))
    plot_suite(Path(args.figures) / "eight-suite.png", runs)
    print(f"suite: {(time.time() - t0) / 60:.1f} min")
    return runs


def plot_suite(path: Path, runs: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    full = {k: v for k, v in runs.items() if k != TINY}
    cells = [(c["arc"], c["difficulty"]) for c in next(iter(full.values()))["cells"] if c["reading"] == "normal"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    x = np.arange(len(cells))
    w = 0.8 / len(full)
    for i, (label, r) in enumerate(full.items()):
        by = {(c["arc"], c["difficulty"]): [] for c in r["cells"]}
        acc = {(c["arc"], c["difficulty"]): [] for c in r["cells"]}
        for c in r["cells"]:
            by[(c["arc"], c["difficulty"])].append(c["win_rate"])
            acc[(c["arc"], c["difficulty"])].append(c["call_accuracy"] or 0)
        axes[0].bar(x + (i - (len(full) - 1) / 2) * w, [np.mean(by[k]) for k in cells], w, label=label)
        axes[1].bar(x + (i - (len(full) - 1) / 2) * w, [np.mean(acc[k]) for k in cells], w, label=label)
    for ax, title in zip(axes, ("win rate (both reading registers)", "call accuracy")):
        ax.set_xticks(x, [f"{a}\n{d}" for a, d in cells], fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("\"8\" (eight-suite, the project's simulator): the benchmark's baselines")
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    save_figure(fig, path, dpi=120)


def probe_part(args, work: Path, out: Path) -> dict:
    from worldmodel.worlds.eight.probe import probe_table

    t0 = time.time()
    suite_runs = json.loads((out / "suite.json").read_text())["runs"] if (out / "suite.json").exists() else {}
    tiny = _tiny(args, work)
    tables, data = [], {}
    for task, diff in (("eight-hallway-normal", "normal"), ("eight-hallway-hard", "hard")):
        summaries, capability = {}, {}
        for agent, label in AGENTS + [("hf", TINY)]:
            folder = work / f"probe-{task}-{agent}"
            extra = ["--model-path", tiny, "--max-tokens", 24] if agent == "hf" else []
            _cli("eight-probe", task, "--agent", agent, "--states", args.probe_states, "--out", folder,
                 "--no-progress", *extra)
            summaries[label] = json.loads((folder / "results.json").read_text())
            cells = [c for c in suite_runs.get(label, {}).get("cells", [])
                     if c["arc"] == "hallway-eight" and c["difficulty"] == diff]
            if cells:
                capability[label] = sum(c["wins"] for c in cells) / sum(c["episodes"] for c in cells)
        data[task] = {"summaries": summaries, "win_rate": capability}
        tables += [f"## {task}", "", probe_table(summaries, capability), ""]
    lines = ["# \"8\": the call in words (eight-probe)", "", f"Made by `{_command()}` "
             f"({(time.time() - t0) / 60:.1f} min): `worldmodel eight-probe TASK --agent A --states "
             f"{args.probe_states}` per row (5 continuations per trial). Win rate: the same responder's share of "
             "won episodes in the Hallway 8 cells of that difficulty in suite.md (both reading registers).", ""]
    lines += tables
    (out / "probe.md").write_text("\n".join(lines) + "\n")
    (out / "probe.json").write_text(json.dumps(data, indent=1))
    print("\n".join(lines))
    return data


def _checkpoint(task, folder: Path, dataset: str, seed: int, steps: int, data_dir: Path) -> tuple[Path, dict]:
    from worldmodel.checkpoints import mismatch
    from worldmodel.training import train

    why = mismatch(folder, task, dataset, steps)
    if why is None and json.loads((folder / "training.json").read_text()).get("seed") != seed:
        why = "another seed"
    if why is not None:
        print(f"training {task.name}/{dataset} seed {seed} into {folder} ({why})")
        train(task, folder, dataset=dataset, steps=steps, seed=seed, data_dir=data_dir, progress=False)
    return folder, json.loads((folder / "training.json").read_text())


def metrics_part(args, work: Path, out: Path) -> dict:
    from worldmodel.detours import run_kinds
    from worldmodel.evaluator import build_model, evaluate
    from worldmodel.metrics import Settings
    from worldmodel.tasks import load_task

    t0 = time.time()
    task = load_task("eight-hallway-normal")
    domain, world = task.domain, task.world
    data_dir = work / "data"
    for ds in domain.datasets():
        domain.ensure_data(ds, data_dir)
    cfg = dict(task.section("evaluate"))
    cfg["trials"] = args.trials
    settings = Settings.from_dict(cfg)
    names = ["compression", "distinction", "next-token", "probe"]
    plan = domain.detour_plan("judge", args.detour_trials, seed=0, data_dir=data_dir)
    rows, train_info, detours, seconds, bounds = {}, {}, {}, {}, {}
    labels = {"uniform": "uniform play", "judge": "judge's play"}
    for ds in domain.datasets():
        for seed in range(args.seeds):
            t = time.time()
            ck, info = _checkpoint(task, work / f"gpt2-{ds}-seed{seed}", ds, seed, args.steps, data_dir)
            seconds[f"train {ds} seed {seed} (training.json)"] = float(info.get("seconds") or 0.0)
            train_info[f"{ds}/{seed}"] = {k: info.get(k) for k in ("n_params", "steps", "final_val_loss", "seconds")}
            model = build_model(task, str(ck))
            t = time.time()
            s = evaluate(task, model, names, settings, work / f"eval-{ds}-seed{seed}.json", ds, data_dir, False)
            seconds[f"evaluate {ds} seed {seed}"] = time.time() - t
            rows.setdefault(labels[ds], []).append(s["metrics"])
            bounds.setdefault(labels[ds], []).append(s.get("length_bound"))   # read only inside the trained lengths
            t = time.time()
            res, _ = run_kinds(model, world, plan.starts, ["random"], list(PS), goal=plan.goal, allowed=plan.allowed,
                               max_len=plan.max_len, seed=0)
            seconds[f"detours {ds} seed {seed}"] = time.time() - t
            detours.setdefault(labels[ds], []).append([r.as_dict() for r in res])
    for label, kind in (("untrained", "untrained"), ("true world model", "true")):
        model = build_model(task, None, kind, seed=0)
        t = time.time()
        s = evaluate(task, model, names if kind != "true" else names[:3], settings, work / f"eval-{kind}.json",
                     "uniform", data_dir, False)
        seconds[f"evaluate {label}"] = time.time() - t
        rows[label] = [s["metrics"]]
        bounds[label] = [s.get("length_bound")]
    res, _ = run_kinds(plan.reference, world, plan.starts, ["random"], list(PS), goal=plan.goal, allowed=plan.allowed,
                       max_len=plan.max_len, seed=0)
    detours["judge (reference)"] = [[r.as_dict() for r in res]]

    def cell(runs, key):
        vals = [r[key]["mean"] for r in runs if r.get(key) and r[key].get("n")]
        if not vals:
            return "—"
        se = sum(r[key]["stderr"] for r in runs if r.get(key) and r[key].get("n")) / len(vals)
        if len(vals) == 1:
            return f"{vals[0]:.2f} ({se:.2f})"
        sd = math.sqrt(sum((v - sum(vals) / len(vals)) ** 2 for v in vals) / (len(vals) - 1))
        return f"{sum(vals) / len(vals):.2f} ± {sd:.2f} ({se:.2f})"
    n_params = next(iter(train_info.values()))["n_params"]
    lines = ["# \"8\", Hallway 8 at normal: GPT-2s on abstract transcripts", "",
             f"Made by `{_command()}` ({(time.time() - t0) / 60:.1f} min for this part). {n_params:,}-parameter "
             f"GPT-2s (2 layers, 64 dims), {args.steps} steps of 32 transcripts, {args.seeds} training seeds per "
             f"data set; ε = {settings.acceptance.spec()}, M = {settings.M}, exact boundary to k = {settings.k} "
             f"(at most {settings.max_boundary} suffixes per pair), {settings.trials} trials; probe: level and "
             "changed-so-far. Cells: mean over training seeds ± sd across them (mean within-run standard error); "
             "one run: mean (standard error).", "",
             "| Model | " + " | ".join(lab for _, lab in METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for label, runs in rows.items():
        lines.append(f"| {label} | " + " | ".join(cell(runs, k) for k, _ in METRICS) + " |")
    lines += ["", f"Detours (`worldmodel detours eight-hallway-normal`: from the first token of {len(plan.starts)} "
              "held-out judge transcripts the model plays greedily, its own loops and calls; with probability p a "
              "token it emits is replaced by another valid observation; success = the door with no reset), random "
              "kind, mean over seeds:", "", "| Model | " + " | ".join(f"p = {p}" for p in PS) + " |",
              "|---|" + "---|" * len(PS)]
    for label, runs in detours.items():
        shares = [sum(run[i]["share"] for run in runs) / len(runs) for i in range(len(PS))]
        lines.append(f"| {label} | " + " | ".join(f"{s:.2f}" for s in shares) + " |")
    lines += ["", "Times (wall, shared 2-core machine at load 15-20; training as its training.json records it, "
              "evaluations and detours of this run, which reuses finished checkpoints and trial logs): " + ", ".join(f"{k} {v / 60:.1f} min"
                                                                       for k, v in seconds.items()) + "."]
    (out / "metrics.md").write_text("\n".join(lines) + "\n")
    from worldmodel.results import CONVENTION_KEYS

    conventions = {k: settings.to_dict().get(k) for k in CONVENTION_KEYS}
    (out / "metrics.json").write_text(json.dumps({"command": _command(), "rows": rows, "length_bound": bounds,
                                                  "conventions": conventions, "training": train_info,
                                                  "detours": detours, "seconds": seconds}, indent=1, default=float))
    from worldmodel.plotting import metric_bars

    mean_rows = {}
    for label, runs in rows.items():
        mean_rows[label] = {}
        for k, _ in METRICS:
            vals = [r[k] for r in runs if r.get(k) and r[k].get("n")]
            if vals:
                mean_rows[label][k] = {"mean": sum(v["mean"] for v in vals) / len(vals),
                                       "stderr": sum(v["stderr"] for v in vals) / len(vals), "n": vals[0]["n"]}
    metric_bars(Path(args.figures) / "eight-metrics.png", mean_rows, [k for k, _ in METRICS], dict(METRICS),
                f"eight-hallway-normal: metrics (mean over {args.seeds} training seeds)")
    print("\n".join(lines))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="sizes,suite,probe,metrics")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--detour-trials", type=int, default=50)
    ap.add_argument("--random-episodes", type=int, default=40)
    ap.add_argument("--probe-states", type=int, default=60)
    ap.add_argument("--tiny-steps", type=int, default=300)
    ap.add_argument("--runs", default=str(REPO / "runs" / "eight"))
    ap.add_argument("--results", default=str(REPO / "results" / "eight"))
    ap.add_argument("--figures", default=str(REPO / "figures"))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    from worldmodel.progress import silence

    silence(args.no_progress)    # data generation's own bars too
    work, out = Path(args.runs), Path(args.results)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    Path(args.figures).mkdir(parents=True, exist_ok=True)
    parts = [p.strip() for p in args.part.split(",") if p.strip()]
    try:
        for p in parts:
            {"sizes": lambda: sizes(args, out), "suite": lambda: suite(args, work, out),
             "probe": lambda: probe_part(args, work, out), "metrics": lambda: metrics_part(args, work, out)}[p]()
    except KeyError as exc:
        print(f"worldmodel: error: unknown part {exc} (sizes, suite, probe, metrics)", file=sys.stderr)
        return 2
    except WorldModelError as exc:
        print(f"worldmodel: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
