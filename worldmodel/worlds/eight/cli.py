"""Commands of the "8" world: the benchmark harness, a local game server, the probe in words.

    worldmodel eight-agent TASK --agent random|always-go-on|true|last-loop|hf|openai
                           [--game-url URL] [--arcs A,B] [--difficulties D,E] [--registers R,S]
                           [--episodes N] [--max-rounds 120] [--touch] [--lenient] [--seed S] --out DIR
    worldmodel eight-serve TASK [--port 5000] [--seed S]
    worldmodel eight-probe TASK --agent ... [--states 100] [--samples 5] [--seed S] --out DIR

(plus the chat backend options shared by every LLM command: ``--base-url URL --model NAME
[--api-key-env VAR]`` for an OpenAI-compatible endpoint, ``--model-path DIR`` for a local
``transformers`` chat model, ``--cache FILE``, ``--retries``, ``--timeout``, ``--concurrency``.)

``eight-agent`` plays the task's sweep (``[agent]``: arcs × difficulties × reading
registers, episodes per cell, the round cap) the way the upstream benchmark does
(:mod:`.agents`) and prints ``arc | difficulty | reading | episodes | win% | rounds |
resets`` with call accuracy and unparseable replies. By default the game is the
project's simulator in process; ``--game-url`` plays a game server over its HTTP API
instead (the public game, a local copy of it, or ``worldmodel eight-serve``). (The
upstream harness calls that flag ``--base-url``; here ``--base-url`` names the
OpenAI-compatible endpoint, as in every LLM command of this project.) Every loop is
read back into tokens and judged by the automaton too; disagreements with the game's
verdicts are reported. Writes ``DIR/results.json``, ``DIR/results.md``, ``DIR/episodes.jsonl``.

``eight-serve`` serves the simulator on 127.0.0.1 (:mod:`.server`) until interrupted.

``eight-probe`` asks, in the harness's words, for the call after two histories
(:mod:`.probe`): compression precision and distinction recall. Writes
``DIR/results.json``, ``DIR/results.md`` and ``DIR/trials.jsonl``.
"""

from __future__ import annotations

import argparse
import json

from worldmodel.safety import atomic_write
from worldmodel.errors import WorldModelError

COMMANDS = ("eight-agent", "eight-serve", "eight-probe")
EXTRA = {"always-go-on": "always proceeds (a baseline of the benchmark)",
         "last-loop": "a scripted agent comparing each loop with the last one only"}


def _list(text: str | None, default: list[str]) -> list[str]:
    if text is None:
        return default
    return [x.strip() for x in text.split(",") if x.strip()]


def _inner(args):
    """The hf/openai backend (or None for the world's own responders)."""
    from worldmodel.commands.common import chat_backend

    if args.backend in ("hf", "openai"):
        return chat_backend(args, lambda: None, lambda seed: None)
    return None


def cmd_agent(args) -> int:
    from worldmodel.chat import CachedBackend, ResponseCache
    from worldmodel.commands.common import chat_label, load_domain_task, out_folder
    from worldmodel.results import write_json_atomic

    from .agents import cell_table, make_responder, play, summarize, win_probability
    from .rules import DIFFICULTIES
    from .server import slot_seed
    from .sessions import HTTPSession, LocalSession
    from .world import build_world

    task = load_domain_task(args.task, "eight", COMMANDS)
    sweep = task.domain.sweep()
    cells = {"arcs": _list(args.arcs, sweep["arcs"]), "difficulties": _list(args.difficulties, sweep["difficulties"]),
             "registers": _list(args.registers, sweep["registers"])}
    for d in cells["difficulties"]:
        if d not in DIFFICULTIES:
            raise WorldModelError(f"--difficulties: unknown difficulty {d!r} (known: {', '.join(DIFFICULTIES)})")
    episodes = args.episodes if args.episodes is not None else sweep["episodes"]
    max_rounds = args.max_rounds if args.max_rounds is not None else sweep["max_rounds"]
    if episodes < 1 or max_rounds < 1:
        raise WorldModelError("--episodes and --max-rounds must be at least 1")
    out = out_folder(args.out)
    arcs = {a: task.domain.arc(a) for a in cells["arcs"]}
    from .prompts import RULES

    for r in cells["registers"]:
        if r not in RULES:
            raise WorldModelError(f"--registers: unknown reading register {r!r} (known: {', '.join(RULES)})")
    progress = not args.no_progress
    inner = _inner(args)
    worlds = {(a, d): build_world(arcs[a], d) for a in arcs for d in cells["difficulties"]}
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    rows, records, label = {}, [], None
    try:
        for a in cells["arcs"]:
            for d in cells["difficulties"]:
                responder = make_responder(args.backend, arcs[a], d, args.seed, lambda: inner)
                backend = CachedBackend(responder, cache, progress=False)
                label = label or ("true world model (the judge)" if args.backend == "true" else
                                  chat_label(responder, args))
                for reg in cells["registers"]:
                    sids = [f"wm-{args.seed}-{a}-{d}-{reg}-{i}" for i in range(episodes)]
                    if args.game_url:
                        sessions = [HTTPSession(args.game_url, a, d, sid, timeout=args.timeout) for sid in sids]
                    else:
                        sessions = [LocalSession(arcs[a], d, slot_seed(args.seed, sid, 0)) for sid in sids]
                    eps = play(sessions, arcs, backend, f"{a}|{d}|{reg}", reg, max_rounds, args.touch, args.lenient,
                               worlds, progress)
                    rows[(a, d, reg)] = summarize(eps)
                    records += eps
    finally:
        if inner is not None:
            inner.close()
        cache.close()
    game = args.game_url or "the project's simulator"
    table = cell_table(rows)
    note = ""
    if args.backend == "random":
        note = (f"\n\nA random call is right half the time whatever the loop, so the rules imply a win rate of "
                f"{win_probability(max_rounds):.3f} within {max_rounds} rounds (eight in a row; the chance "
                f"that 0.5-coin flips give a run of 8 within {max_rounds} flips).")
    disagree = sum(s["automaton_disagrees"] for s in rows.values())
    invalid = sum(s["automaton_invalid"] for s in rows.values())
    n_calls = sum(s["calls"] for s in rows.values())
    check = (f"\n\nThe automaton judged all {n_calls} calls as the game did" if not disagree else
             f"\n\nThe automaton disagreed with the game on {disagree} of {n_calls} calls") + \
        (f"; {invalid} transcripts left the automaton." if invalid else "; every transcript is valid in it.")
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "results.json", {
        "task": task.name, "agent": args.backend, "label": label, "game": game, "episodes": episodes,
        "max_rounds": max_rounds, "touch": args.touch, "lenient": args.lenient, "seed": args.seed,
        "cells": [{"arc": a, "difficulty": d, "reading": r, **s} for (a, d, r), s in rows.items()],
        "random_win_rate_implied": win_probability(max_rounds) if args.backend == "random" else None})
    tmp = out / "episodes.jsonl.tmp"
    with tmp.open("w") as f:
        for e in records:
            f.write(json.dumps(e.to_dict(replies=args.backend in ("hf", "openai"))) + "\n")
    tmp.replace(out / "episodes.jsonl")
    head = f"# {task.name}: {label} plays {game}, {episodes} episodes per cell, at most {max_rounds} rounds"
    atomic_write(out / "results.md", f"{head}\n\n{table}{note}{check}\n")
    print(table + note + check)
    print(f"wrote {out}/results.json")
    return 0


def cmd_serve(args) -> int:
    from worldmodel.commands.common import load_domain_task

    from .arcs import ARC_IDS
    from .server import EightServer

    task = load_domain_task(args.task, "eight", COMMANDS)
    arcs = {}
    for a in ARC_IDS:
        try:
            arcs[a] = task.domain.arc(a)
        except WorldModelError:
            continue
    if not arcs:
        raise WorldModelError(f"no arc files in {task.domain.arcs_dir}")
    try:
        server = EightServer(arcs, port=args.port, seed=args.seed)
    except OSError as exc:
        raise WorldModelError(f"cannot listen on 127.0.0.1:{args.port} ({exc.strerror})") from None
    print(f"serving the 8 simulator ({', '.join(arcs)}) on {server.url}; Ctrl-C stops it", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def cmd_probe(args) -> int:
    from worldmodel.chat import CachedBackend, ResponseCache
    from worldmodel.commands.common import chat_label, load_domain_task, out_folder
    from worldmodel.results import write_json_atomic

    from .agents import make_responder
    from .probe import ProbeSettings, probe_in_words, probe_table

    task = load_domain_task(args.task, "eight", COMMANDS)
    settings = ProbeSettings(states=args.states, samples=args.samples, register=args.register, seed=args.seed)
    settings.check()
    out = out_folder(args.out)
    world = task.world
    arc = task.domain.arc()
    inner = _inner(args)
    responder = make_responder(args.backend, arc, task.domain.difficulty, args.seed, lambda: inner)
    label = "true world model (the judge)" if args.backend == "true" else chat_label(responder, args)
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    backend = CachedBackend(responder, cache, progress=not args.no_progress)
    try:
        report = probe_in_words(backend, world, task.domain.sampler_for_words(), settings)
    finally:
        backend.close()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "results.json", {"task": task.name, "label": label, **report.summary()})
    report.write_trials(out / "trials.jsonl")
    table = probe_table({label: report.summary()})
    atomic_write(out / "results.md", f"# {task.name}: the call in words, {label}\n\n{settings.states} trials per "
                                    f"metric, {settings.samples} continuations each, seed {settings.seed}.\n\n"
                                    f"{table}\n")
    print(table)
    print(f"asked {backend.asked} new prompts ({len(cache)} cached in {cache.path}); wrote {out}/results.json")
    return 0


def register(subparsers) -> None:
    from worldmodel.commands.common import add_chat_arguments, add_chat_run_arguments

    a = subparsers.add_parser("eight-agent", help="play the 8 benchmark (win rate, rounds, resets per cell)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("task", help="an eight task (eight-suite: every arc x difficulty x reading register)")
    add_chat_arguments(a, true_help="the judge (reads each loop back to its meaning)", option="--agent", extra=EXTRA)
    a.add_argument("--game-url", help="a game server's HTTP API (default: the simulator in process)")
    a.add_argument("--arcs", help="comma-separated arcs (default: the task's [agent] arcs)")
    a.add_argument("--difficulties", help="comma-separated difficulties (easy, normal, hard, insane)")
    a.add_argument("--registers", help="comma-separated reading registers (normal, simple)")
    a.add_argument("--episodes", type=int, help="episodes per cell (default: the task's)")
    a.add_argument("--max-rounds", type=int, help="round cap per episode (default: the task's, 120)")
    a.add_argument("--touch", action="store_true", help="offer the Act 2 touch:<detail> actions (upstream's default)")
    a.add_argument("--lenient", action="store_true", help="read replies the tolerant upstream way (never "
                                                          "unparseable: go_on when no call is found)")
    add_chat_run_arguments(a, "folder for results.json, results.md, episodes.jsonl", seed_help="seed of the games "
                           "(and of the random agent)")
    a.set_defaults(func=cmd_agent)

    s = subparsers.add_parser("eight-serve", help="serve the 8 simulator's HTTP API on 127.0.0.1",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("task", help="an eight task (its arcs_dir gives the arc files)")
    s.add_argument("--port", type=int, default=5000, help="port on 127.0.0.1 (default 5000)")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_serve)

    p = subparsers.add_parser("eight-probe", help="ask for the call after two histories (compression, distinction)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", help="an eight task (its arc and difficulty)")
    add_chat_arguments(p, true_help="the judge", option="--agent", extra=EXTRA)
    p.add_argument("--states", type=int, default=100, help="trials per metric (default 100)")
    p.add_argument("--samples", type=int, default=5, help="continuations per trial (default 5)")
    p.add_argument("--register", default="normal", help="reading register of the rule (normal, simple)")
    add_chat_run_arguments(p, "folder for results.json, results.md, trials.jsonl")
    p.set_defaults(func=cmd_probe)
