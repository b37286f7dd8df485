#!/usr/bin/env python
"""TextWorld Simple: small GPT-2s on three kinds of play, scored by every metric, and detours.

    OMP_NUM_THREADS=1 python scripts/reproduce_textworld.py

For the task ``textworld-simple`` (the seed-1 game: dense rewards, detailed goal,
train split; its automaton has 2,309 minimal states), trains one GPT-2 on each
dataset — random admissible-command walks, goal-directed play (a shortest plan with
random detours), and their mixture — and writes
``results/textworld-simple/table.md`` (and ``.json``) with

* the metrics: next-token test, probe (room, quest objects carried, door states),
  compression precision, distinction precision and recall (exact boundary) for the
  three models, an untrained network and the true world model;
* detours: from the first command of held-out goal-directed episodes, each model
  plays greedily; with probability p a command is replaced by another valid one
  (random, or the one it ranks lowest) after which the win is still within reach
  (so never eating the food); success = the game won (the food on the stove)
  within 40 commands. A shortest-plan player is the reference row.

and ``figures/textworld-metrics.png``, ``figures/textworld-detours.png``. Work is kept
under ``runs/textworld-simple/`` (data, checkpoints, trial logs): a rerun reuses it.

With ``--llm`` it also writes ``results/textworld-simple/llm.md`` (and ``.json``): the
world-model probe in words (compression precision, distinction recall from the exact
one-command boundary; :mod:`worldmodel.worlds.textworld.llm`) beside capability (the
agent loop's normalised score, steps and win rate per configuration), for the true
responder (answers from the automaton), a seeded random responder, the tiny local
chat model (:mod:`worldmodel.worlds.textworld.tiny_chat`: a word-level GPT-2 taught
only the answer format in ``--tiny-steps`` steps, run through the local
``transformers`` backend) and any OpenAI-compatible endpoint given with
``--openai BASE_URL MODEL``. The probe asks about the seed-1 game; the agent loop
plays the game of the task, or with ``--suite`` the 9 configurations × 2 splits of
``textworld-simple-suite`` (generated with tw-make and enumerated on first use, under
``data/textworld-games``; the table lists each game's automaton size and how long
preparing it took), and then writes ``llm-suite.md`` (and ``.json``) instead.
Responses are cached in ``runs/textworld-simple/llm-cache.jsonl``, the tiny model in
``runs/textworld-simple/tiny-chat-*``.

    OMP_NUM_THREADS=1 python scripts/reproduce_textworld.py --llm-only --suite
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tqdm.auto import tqdm  # noqa: E402

from worldmodel.errors import WorldModelError  # noqa: E402
from worldmodel.worlds.textworld.games import game_path  # noqa: E402
from worldmodel.worlds.textworld.house import automaton_path  # noqa: E402

METRICS = ["next_token", "probe", "compression_precision", "distinction_precision", "distinction_recall"]
LABELS = {"next_token": "Next-token", "probe": "Probe", "compression_precision": "Compr. P",
          "distinction_precision": "Dist. P", "distinction_recall": "Dist. R"}
PS = (0.0, 0.1, 0.25, 0.5)
KINDS = ("random", "adversarial")
DATASET_LABELS = {"random-walks": "Random walks", "goal-directed": "Goal-directed", "mixture": "Mixture"}


def probe_majority(world, sequences) -> float:
    """The probe's floor: accuracy of always answering each target's most common label (same positions)."""
    import numpy as np

    from worldmodel.dfa import REJECT

    labels = []
    for seq in sequences:
        state = world.initial_state()
        for tok in seq:
            state = world.step(state, tok)
            if state is REJECT:
                break
            labels.append(world.probe_targets(state))
    y = np.stack(labels)
    return float(np.mean([np.bincount(col).max() / len(col) for col in y.T]))


def data_coverage(world, sequences) -> dict:
    """How much of the house a training set shows: live states visited, share of games won / leaving the start room."""
    live = {q for q in range(world.n_states) if not world.is_terminal(q)}
    seen, won, left = set(), 0, 0
    start_room = world.probe_targets(world.initial_state())[0]
    for seq in sequences:
        q = world.initial_state()
        seen.add(q)
        moved = False
        for tok in seq:
            q = world.step(q, tok)
            seen.add(q)
            moved = moved or (not world.is_terminal(q) and world.probe_targets(q)[0] != start_room)
        won += bool(seq) and seq[-1] in world.win_tokens
        left += moved
    n = max(1, len(sequences))
    return {"live_states_visited": len(seen & live), "live_states": len(live), "won": won / n, "left_start_room": left / n}


def _command() -> str:
    """This run's command line as recorded in the results (``--no-progress`` changes no number)."""
    extra = [shlex.quote(a) for a in sys.argv[1:] if a != "--no-progress"]
    return " ".join(["OMP_NUM_THREADS=1 python scripts/reproduce_textworld.py"] + extra)


def _cell(m: dict | None) -> str:
    if not m or not m.get("n"):
        return "—"
    return f"{m['mean']:.2f} ({m['stderr']:.2f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="textworld-simple")
    ap.add_argument("--steps", type=int, help="training steps per model (default: the task's)")
    ap.add_argument("--trials", type=int, help="metric trials (default: the task's)")
    ap.add_argument("--detour-trials", type=int, default=100)
    ap.add_argument("--runs", default=str(REPO / "runs"))
    ap.add_argument("--results", default=str(REPO / "results"))
    ap.add_argument("--figures", default=str(REPO / "figures"))
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--llm", action="store_true", help="also the LLM rows (probe in words, agent loop)")
    ap.add_argument("--llm-only", action="store_true", help="only the LLM rows")
    ap.add_argument("--suite", action="store_true", help="agent loop over textworld-simple-suite's 18 games")
    ap.add_argument("--probe-states", type=int, default=100, help="trials per probe metric (default 100)")
    ap.add_argument("--tiny-steps", type=int, default=400, help="format-teaching steps of the tiny chat model")
    ap.add_argument("--openai", nargs=2, action="append", metavar=("BASE_URL", "MODEL"))
    ap.add_argument("--api-key-env", default="OPENAI_API_KEY")
    args = ap.parse_args(argv)
    from worldmodel.progress import silence

    silence(args.no_progress)    # data generation's own bars too
    try:
        if not args.llm_only:
            run(args)
        if args.llm or args.llm_only:
            llm(args)
        return 0
    except WorldModelError as exc:
        print(f"worldmodel: error: {exc}", file=sys.stderr)
        return 2


def run(args) -> int:
    from worldmodel.checkpoints import reuse_or_train
    from worldmodel.detours import run_kinds
    from worldmodel.evaluator import build_model, evaluate
    from worldmodel.metrics import Settings
    from worldmodel.tasks import load_task

    t_start = time.time()
    progress = not args.no_progress
    task = load_task(args.task)
    domain, world = task.domain, task.world
    work = Path(args.runs) / task.name
    data_dir = work / "data"
    cfg = dict(task.section("evaluate"))
    if args.trials:
        cfg["trials"] = args.trials
    settings = Settings.from_dict(cfg)
    datasets = domain.datasets()
    for ds in datasets:
        domain.ensure_data(ds, data_dir)

    training, timings = {}, {}
    ckpts = {}
    for ds in datasets:
        t0 = time.time()
        ck, training[ds] = reuse_or_train(task, ds, work / f"gpt2-{ds}", steps=args.steps, data_dir=data_dir,
                                          progress=progress)
        timings[f"train {ds}"] = time.time() - t0
        ckpts[ds] = ck

    rows = [("Untrained", None, "untrained", "mixture")]
    rows += [(DATASET_LABELS[ds], str(ckpts[ds]), None, ds) for ds in datasets]
    rows += [("True world model", None, "true", "mixture")]
    results = {}
    for label, ck, kind, ds in rows:
        model = build_model(task, ck, kind, seed=settings.seed)
        model.source = label
        slug = label.lower().replace(" ", "-")
        t0 = time.time()
        metrics = ["compression", "distinction", "next-token"] + (["probe"] if kind != "true" else [])
        summary = evaluate(task, model, metrics, settings, work / f"eval-{slug}.json", ds, data_dir, progress)
        timings[f"evaluate {label}"] = time.time() - t0
        results[label] = {"dataset": ds, "metrics": summary["metrics"], "length_bound": summary.get("length_bound")}
        print(f"{label}: " + ", ".join(f"{k} {v['mean']:.3f}" for k, v in summary["metrics"].items()
                                       if isinstance(v, dict) and v.get("mean") is not None))

    baselines = {ds: probe_majority(world, domain.sequences("train", ds, data_dir)[:settings.probe_sequences])
                 for ds in datasets}
    coverage = {ds: data_coverage(world, domain.sequences("train", ds, data_dir)) for ds in datasets}

    plan = domain.detour_plan("goal-directed", args.detour_trials, seed=settings.seed, data_dir=data_dir)
    detours = {}
    players = [(DATASET_LABELS[ds], build_model(task, str(ckpts[ds]), None)) for ds in datasets]
    players.append(("Shortest-plan player", plan.reference))
    for label, model in players:
        t0 = time.time()
        res, _ = run_kinds(model, world, plan.starts, list(KINDS), list(PS), goal=plan.goal, allowed=plan.allowed,
                           max_len=plan.max_len, seed=settings.seed, progress=progress)
        timings[f"detours {label}"] = time.time() - t0
        detours[label] = [r.as_dict() for r in res]

    out = Path(args.results) / task.name
    out.mkdir(parents=True, exist_ok=True)
    command = _command()
    elapsed = time.time() - t_start
    data = {"task": task.name, "command": command, "settings": settings.to_dict(),
            "world": {"raw_states": world.house.n_states, "minimal_states": world.n_states,
                      "tokens": len(world.tokens), "won_states": len(world.house.won),
                      "lost_states": len(world.house.lost), "probe_targets": world.probe_names},
            "training": {ds: {k: t.get(k) for k in ("steps", "n_params", "final_loss", "final_val_loss",
                                                    "train_sequences", "seconds")} for ds, t in training.items()},
            "results": results, "probe_majority": baselines, "coverage": coverage,
            "detours": detours, "seconds": timings, "seconds_total_this_run": elapsed}
    (out / "table.json").write_text(json.dumps(data, indent=1, default=float))
    write_table(out / "table.md", data, settings)
    figs = Path(args.figures)
    figs.mkdir(parents=True, exist_ok=True)
    from worldmodel.plotting import metric_bars

    metric_bars(figs / "textworld-metrics.png", {k: v["metrics"] for k, v in results.items()}, METRICS, LABELS,
                f"{task.name}: metrics (acceptance {settings.acceptance.spec()}, k = {settings.k}, "
                f"{settings.trials} trials)")
    plot_detours(figs / "textworld-detours.png", detours, task.name)
    print((out / "table.md").read_text())
    print(f"wrote {out}/table.md, table.json, {figs}/textworld-metrics.png, textworld-detours.png "
          f"({elapsed / 60:.1f} min this run)")


def llm(args) -> None:
    from worldmodel.chat import CachedBackend, HFChatBackend, OpenAIChatBackend, ResponseCache
    from worldmodel.tasks import load_task
    from worldmodel.worlds.textworld.llm import (ProbeSettings, RandomAgent, TrueAgent, agent_table, play_games,
                                                 probe_in_words, probe_table, summarize_play)
    from worldmodel.worlds.textworld.tiny_chat import make_tiny_chat_model
    from worldmodel.worlds.textworld.world import TextWorldWorld

    t_start = time.time()
    progress = not args.no_progress
    task = load_task(args.task)
    world = task.world
    work = Path(args.runs) / task.name
    cache = ResponseCache(work / "llm-cache.jsonl")
    suite_task = load_task("textworld-simple-suite") if args.suite else task
    specs = suite_task.domain.games()
    seconds = {}

    # The tiny chat model's vocabulary: the probe's game and, for the suite, its first test-split game (the
    # suite's train games share one house and the test games another; only the goal text differs).
    t0 = time.time()
    vocab_worlds = [world]
    if args.suite:
        test = next(s for s in specs if s.split == "test")
        vocab_worlds.append(TextWorldWorld.from_game(suite_task.domain.game_file(test), name=test.name,
                                                     progress=progress))
    tiny_label = f"tiny local HF chat model ({args.tiny_steps} format steps)"
    tiny_dir = work / f"tiny-chat-{args.tiny_steps}-{'suite' if args.suite else 'one-game'}"
    if not (tiny_dir / "config.json").exists():
        make_tiny_chat_model(tiny_dir, vocab_worlds, seed=0, train_steps=args.tiny_steps, n_positions=2048)
    tiny = HFChatBackend(tiny_dir, max_new_tokens=12, batch_size=16)
    seconds["tiny chat model (build or load)"] = time.time() - t0

    def backends(game_world):  # label -> backend; the true responder answers from one game's automaton
        rows = {"true world model": TrueAgent(game_world), "random": RandomAgent(0), tiny_label: tiny}
        for base_url, model in args.openai or []:
            rows[model] = OpenAIChatBackend(base_url, model, args.api_key_env)
        return rows

    settings = ProbeSettings(states=args.probe_states, seed=0)
    probes = {}
    for label, backend in backends(world).items():
        t0 = time.time()
        probes[label] = probe_in_words(CachedBackend(backend, cache, progress=progress), world, settings).summary()
        seconds[f"probe {label}"] = time.time() - t0
    t0 = time.time()
    games, worlds, prep = {}, {}, {}
    for spec in tqdm(specs, desc="games (tw-make, enumerate)", unit="game", disable=not progress or len(specs) < 2):
        t1, c0 = time.time(), time.process_time()
        fresh = not automaton_path(game_path(spec, suite_task.domain.games_dir)).exists()
        games[spec.name] = suite_task.domain.game_file(spec)
        worlds[spec.name] = TextWorldWorld.from_game(games[spec.name], name=spec.name, progress=False)
        prep[spec.name] = {"cached": not fresh, "seconds": time.time() - t1, "cpu_seconds": time.process_time() - c0}
    seconds["games (tw-make, enumerate)"] = time.time() - t0
    config_of = {spec.name: f"{spec.config} ({spec.split})" for spec in specs}
    plays = {}
    shared = {lb: CachedBackend(b, cache, progress=False) for lb, b in backends(world).items()}
    per_game = {g: backends(w) for g, w in worlds.items()}
    for label in shared:
        t0 = time.time()
        if label == "true world model":
            chosen = {g: CachedBackend(per_game[g][label], cache, progress=False) for g in games}
        else:
            chosen = {g: shared[label] for g in games}
        plays[label] = play_games(chosen, games, max_steps=40, progress=progress)
        seconds[f"agent loop {label}"] = time.time() - t0
    cache.close()
    summary = {label: summarize_play(recs, lambda g: config_of[g]) for label, recs in plays.items()}
    overall = {label: summarize_play(recs, lambda g: "all")["all"] for label, recs in plays.items()}
    sizes = {g: {"raw_states": w.house.n_states, "won_states": len(w.house.won), "lost_states": len(w.house.lost),
                 "minimal_states": w.n_states, "commands": len(w.tokens), "out_of_scope_commands": len(w.house.excluded),
                 "walkthrough": len(w.house.walkthrough), "max_score": w.house.max_score,
                 "win": sorted(w.win_tokens)[0], **prep[g]} for g, w in worlds.items()}
    out = Path(args.results) / task.name
    out.mkdir(parents=True, exist_ok=True)
    command = _command()
    data = {"command": command, "probe_game": world.name,
            "probe_settings": {"states": settings.states, "samples": settings.samples,
                               "max_prefix": settings.max_prefix, "seed": settings.seed},
            "probe": probes, "play": plays, "play_by_configuration": summary, "play_overall": overall,
            "games": sizes, "seconds": seconds, "seconds_this_run": time.time() - t_start}
    stem = "llm-suite" if args.suite else "llm"     # the suite run never overwrites the one-game run, nor it
    (out / f"{stem}.json").write_text(json.dumps(data, indent=1, default=float))
    write_llm_table(out / f"{stem}.md", task.name, data, settings, len(games), probe_table(probes, overall),
                    agent_table(summary, overall))
    print((out / f"{stem}.md").read_text())


def write_llm_table(path: Path, name: str, data: dict, settings, n_games: int, probe_md: str, agent_md: str) -> None:
    lines = [f"# {name}: LLM agents", "", f"Command: `{data['command']}`", "",
             f"World-model probe in words on the seed-1 game ({settings.states} trials per metric, "
             f"{settings.samples} proposed commands each, histories of 1–{settings.max_prefix} commands; "
             "mean (standard error), n = scored trials; unparseable = answers that did not parse / answers) beside "
             f"capability: the agent loop over {n_games} game(s), at most 40 commands each.", "", probe_md, "",
             "## Agent loop by configuration", "", agent_md, ""]
    sizes = data["games"]
    lines += ["## The games", "",
              "Each game's automaton (within the scope described in docs/worlds/textworld.md: no object moved but the quest's): "
              "reachable fact sets (won, lost), minimal states, commands; the engine's out-of-scope commands; "
              "walkthrough length and max score; how long generating (tw-make) and enumerating took in this run "
              "(wall / CPU seconds; \"cached\" when an earlier run had already made it).", "",
              "| Game | Fact sets (won, lost) | Minimal states | Commands | Out of scope | Walkthrough | Max score | "
              "Win command | Preparation |", "|---|---|---|---|---|---|---|---|---|"]
    for g, z in sizes.items():
        prep = "cached" if z["cached"] else f"{z['seconds']:.0f} s / {z['cpu_seconds']:.0f} s"
        lines.append(f"| {g} | {z['raw_states']:,} ({z['won_states']}, {z['lost_states']:,}) | "
                     f"{z['minimal_states']:,} | {z['commands']} | {z['out_of_scope_commands']} | {z['walkthrough']} | "
                     f"{z['max_score']} | `{z['win']}` | {prep} |")
    lines += ["", f"Run time this run: {data['seconds_this_run'] / 60:.1f} min (" + ", ".join(
        f"{k} {v:.0f} s" for k, v in data["seconds"].items()) + ").", ""]
    path.write_text("\n".join(lines))


def write_table(path: Path, data: dict, settings) -> None:
    w = data["world"]
    lines = [f"# {data['task']}: metrics and detours", "",
             f"Command: `{data['command']}`", "",
             f"World: the seed-1 tw-simple game (dense, detailed, train); {w['raw_states']:,} reachable fact "
             f"sets ({w['won_states']} won, {w['lost_states']} lost), {w['minimal_states']:,} minimal states, "
             f"{w['tokens']} commands.", "",
             f"Metrics: mean (standard error); acceptance {settings.acceptance.spec()}, M = {settings.M}, "
             f"exact boundary to k = {settings.k} (at most {settings.max_boundary} suffixes scored per pair), "
             f"{settings.trials} trials; prefixes of 1–24 commands drawn uniformly to uniformly drawn live "
             "states. Next-token on 300 held-out sequences of the model's own dataset (the mixture for the "
             "untrained and true rows); probe = linear probe of the last layer for the room, the quest objects "
             "carried and each door's state (accuracy averaged over those targets); always answering each target's "
             "most common label scores " + ", ".join(f"{v:.2f} ({DATASET_LABELS[ds].lower()})"
                                                      for ds, v in data["probe_majority"].items()) + ".", "",
             "| Model | " + " | ".join(LABELS[m] for m in METRICS) + " |",
             "|---|" + "---|" * len(METRICS)]
    for label, r in data["results"].items():
        lines.append(f"| {label} | " + " | ".join(_cell(r["metrics"].get(m)) for m in METRICS) + " |")
    lines += ["", "Training data (train split): " + "; ".join(
        f"{DATASET_LABELS[ds]} visits {c['live_states_visited']:,} of the {c['live_states']:,} live states, "
        f"{c['left_start_room']:.0%} of its sequences leave the start room, {c['won']:.0%} win"
        for ds, c in data["coverage"].items()) + ". The metrics draw states uniformly among all live states."]
    lines += ["", "Training: " + "; ".join(
        f"{DATASET_LABELS[ds]} {t['n_params']:,} parameters, {t['steps']} steps, val loss {t['final_val_loss']:.3f}"
        for ds, t in data["training"].items()), ""]
    lines += ["## Detours", "",
              "Share of games won (the food on the stove within 40 commands) from the first command of "
              f"{next(iter(data['detours'].values()))[0]['n']} held-out goal-directed episodes, when each "
              "command is replaced with probability p by another valid one after which the win stays within reach "
              "(random / adversarial = such a command the model ranks lowest).", "",
              "| Model | " + " | ".join(f"p = {p:g}" for p in PS) + " |", "|---|" + "---|" * len(PS)]
    for label, res in data["detours"].items():
        by = {(r["kind"], r["p"]): r for r in res}
        lines.append(f"| {label} | " + " | ".join(
            f"{by[('random', p)]['share']:.2f} / {by[('adversarial', p)]['share']:.2f}" for p in PS) + " |")
    fails = {label: {k: v for r in res for k, v in r["failures"].items()} for label, res in data["detours"].items()}
    lines += ["", "Why games were not won (all p and kinds): " + "; ".join(
        f"{label}: " + (", ".join(f"{k} ×{v}" for k, v in f.items()) or "none") for label, f in fails.items()), ""]
    lines += [f"Run time this run: {data['seconds_total_this_run'] / 60:.1f} min (" + ", ".join(
        f"{k} {v:.0f} s" for k, v in data["seconds"].items()) + ").", ""]
    path.write_text("\n".join(lines))


def plot_detours(path: Path, detours: dict, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, kind in zip(axes, KINDS):
        for label, res in detours.items():
            pts = sorted((r["p"], r["share"], r["stderr"]) for r in res if r["kind"] == kind)
            ax.errorbar([p for p, _, _ in pts], [s for _, s, _ in pts], yerr=[e for _, _, e in pts],
                        marker="o", capsize=2, label=label)
        ax.set_title(f"{kind} detours")
        ax.set_xlabel("p (replacement probability per command)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of games won")
    axes[0].set_ylim(-0.02, 1.05)
    axes[1].legend(fontsize=8)
    fig.suptitle(f"{name}: detours")
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    save_figure(fig, path, dpi=130)


if __name__ == "__main__":
    sys.exit(main())
