"""TextWorld subcommands: an LLM plays the games, and the world-model probe in words.

    worldmodel textworld-agent TASK --backend openai|hf|true|random [--games NAME,...]
                               [--max-steps 40] [--seed S] --out DIR
    worldmodel textworld-probe TASK --backend openai|hf|true|random [--states 100]
                               [--samples 5] [--max-prefix 24] [--seed S] --out DIR

(plus the backend options: ``--base-url URL --model NAME [--api-key-env VAR]`` for an
OpenAI-compatible endpoint, ``--model-path DIR`` for a local ``transformers`` chat
model, ``--cache FILE``, ``--retries``, ``--timeout``, ``--concurrency`` …).

``textworld-agent`` plays the task's games through the real TextWorld engine with the
backend choosing each command (:func:`~.llm.play`): ``textworld-simple`` has one game,
``textworld-simple-suite`` the 9 configurations × 2 splits (generated with ``tw-make``
on first use). It writes ``DIR/results.json`` (per game, per configuration and overall:
normalised score, steps, win rate, unparseable answers), ``DIR/games.jsonl`` (every
game's commands) and ``DIR/results.md``. ``--backend true`` plays a shortest plan from
each game's automaton (enumerated and cached on first use); ``random`` picks a listed
command at random.

``textworld-probe`` asks, after a command history, whether a command would be accepted
now (:func:`~.llm.probe_in_words`) on the task's game: compression precision and distinction
recall from the exact one-command boundary. It writes ``DIR/results.json``,
``DIR/results.md`` and ``DIR/trials.jsonl``.

Responses are cached in ``--cache`` (default ``DIR/cache.jsonl``): an interrupted run
resumes, and a rerun sends no request. The API key is read from the environment
variable named by ``--api-key-env`` and is never written anywhere. ``worldmodel
detours`` and ``worldmodel evaluate`` work on TextWorld tasks as on any other.
"""

from __future__ import annotations

import argparse
import json

from worldmodel.errors import WorldModelError


#: the commands of this module (a task of another domain is refused naming them)
COMMANDS = ("textworld-agent", "textworld-probe")


def cmd_agent(args) -> int:
    from worldmodel.chat import CachedBackend, ResponseCache
    from worldmodel.commands.common import chat_backend, chat_label, load_domain_task, out_folder
    from worldmodel.results import write_json_atomic

    from .llm import RandomAgent, TrueAgent, agent_table, play_games, summarize_play
    from .world import TextWorldWorld

    task = load_domain_task(args.task, "textworld", COMMANDS)
    if args.max_steps < 1:
        raise WorldModelError(f"--max-steps must be at least 1, got {args.max_steps}")
    specs = task.domain.games()
    if args.games:
        wanted = [g.strip() for g in args.games.split(",") if g.strip()]
        known = {s.name for s in specs}
        bad = [g for g in wanted if g not in known]
        if bad or not wanted:
            raise WorldModelError(f"--games {args.games!r}: {task.name} has no game {bad[0] if bad else ''!r} "
                                  f"(its games: {', '.join(sorted(known))})")
        specs = [s for s in specs if s.name in wanted]
    out = out_folder(args.out)
    progress = not args.no_progress
    games = {s.name: task.domain.game_file(s) for s in specs}
    config_of = {s.name: f"{s.config} ({s.split})" for s in specs}
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    if args.backend == "true":  # answers from each game's own automaton
        inners = {g: TrueAgent(TextWorldWorld.from_game(path, name=g, progress=progress)) for g, path in games.items()}
        label = "true world model"
    else:
        inner = chat_backend(args, lambda: None, RandomAgent)
        inners = {g: inner for g in games}
        label = chat_label(inner, args)
    wrapped: dict[int, CachedBackend] = {}
    for inner in inners.values():
        if id(inner) not in wrapped:
            wrapped[id(inner)] = CachedBackend(inner, cache, progress=False)  # the game bar shows the turns
    try:
        records = play_games({g: wrapped[id(inners[g])] for g in games}, games, max_steps=args.max_steps,
                             progress=progress)
    finally:
        for b in wrapped.values():
            b.inner.close()
        cache.close()
    asked = sum(b.asked for b in wrapped.values())
    by_config = summarize_play(records, lambda g: config_of[g])
    overall = summarize_play(records, lambda g: "all")["all"]
    out.mkdir(parents=True, exist_ok=True)
    describe = next(iter(wrapped.values())).describe()
    write_json_atomic(out / "results.json", {
        "task": task.name, "backend": describe, "label": label, "max_steps": args.max_steps,
        "games": [{k: v for k, v in r.items() if k != "commands"} for r in records],
        "by_configuration": by_config, "overall": overall})
    from worldmodel.safety import atomic_write

    atomic_write(out / "games.jsonl", (json.dumps(r) + "\n" for r in records), "games")
    table = agent_table({label: by_config}, {label: overall})
    atomic_write(out / "results.md", f"# {task.name}: {label} plays {len(games)} game(s), at most "
                                    f"{args.max_steps} commands each\n\n{table}\n")
    print(table)
    print(f"asked {asked} new prompts ({len(cache)} cached in {cache.path}); wrote {out}/results.json")
    return 0


def cmd_probe(args) -> int:
    from worldmodel.chat import CachedBackend, ResponseCache
    from worldmodel.commands.common import chat_backend, chat_label, load_domain_task, out_folder
    from worldmodel.results import write_json_atomic

    from .llm import ProbeSettings, RandomAgent, TrueAgent, probe_in_words, probe_table

    task = load_domain_task(args.task, "textworld", COMMANDS)
    settings = ProbeSettings(states=args.states, samples=args.samples, max_prefix=args.max_prefix, seed=args.seed)
    settings.check()
    out = out_folder(args.out)
    world = task.world
    inner = chat_backend(args, lambda: TrueAgent(world), RandomAgent)
    label = "true world model" if args.backend == "true" else chat_label(inner, args)
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    backend = CachedBackend(inner, cache, progress=not args.no_progress)
    try:
        report = probe_in_words(backend, world, settings)
    finally:
        backend.close()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "results.json", {"task": task.name, "game": world.name, **report.summary()})
    report.write_trials(out / "trials.jsonl")
    table = probe_table({label: report.summary()})
    from worldmodel.safety import atomic_write

    atomic_write(
        out / "results.md",
        f"# {task.name}: world-model probe in words, {label}\n\n{settings.states} trials per metric, "
        f"{settings.samples} proposed commands each, histories of 1–{settings.max_prefix} commands, "
        f"seed {settings.seed}.\n\n{table}\n")
    print(table)
    print(f"asked {backend.asked} new prompts ({len(cache)} cached in {cache.path}); wrote {out}/results.json")
    return 0


def register(subparsers) -> None:
    from worldmodel.commands.common import add_chat_arguments, add_chat_run_arguments

    a = subparsers.add_parser("textworld-agent", help="a chat model plays TextWorld games (score, steps, win rate)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("task", help="textworld-simple (one game) or textworld-simple-suite (18 games)")
    add_chat_arguments(a, true_help="a shortest plan from each game's automaton")
    a.add_argument("--games", help="only these of the task's games, comma-separated (e.g. "
                                   "tw-simple-dense-detailed-train-seed1)")
    a.add_argument("--max-steps", type=int, default=40, help="commands per game (default 40)")
    add_chat_run_arguments(a, "folder for results.json, results.md, games.jsonl",
                           seed_help="seed of the random backend")
    a.set_defaults(func=cmd_agent)

    p = subparsers.add_parser("textworld-probe", help="ask a chat model which commands the house accepts (compression,"
                                                      " distinction)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", help="a textworld task (its game: the seed-1 dense/detailed/train house)")
    add_chat_arguments(p, true_help="the automaton's answers")
    p.add_argument("--states", type=int, default=100, help="trials per metric (default 100)")
    p.add_argument("--samples", type=int, default=5, help="proposed commands per trial (default 5)")
    p.add_argument("--max-prefix", type=int, default=24, help="longest command history (default 24)")
    add_chat_run_arguments(p, "folder for results.json, results.md, trials.jsonl")
    p.set_defaults(func=cmd_probe)
