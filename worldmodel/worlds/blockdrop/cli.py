"""Block-drop commands: the competition's protocol, a sequence model's own levels, the probe, the proxy.

    worldmodel blockdrop-generate --prompt v1 [--prompt FILE ...] --letters I,L,U --trials 10
                                  --backend openai|hf|true|random [--temperature 1.0]
                                  (--similarity-model DIR | --proxy DIR) --out DIR
    worldmodel blockdrop-levels TASK (--checkpoint DIR | --model untrained) --letters I,L,U --trials 10
                                (--similarity-model DIR | --proxy DIR) --out DIR
    worldmodel blockdrop-probe --backend openai|hf|true|random [--states 50] [--samples 5] --out DIR
    worldmodel blockdrop-proxy --out DIR [--steps 1500] [--seed 0]
    worldmodel blockdrop-physics [--programs 500] [--seed 0] [--out FILE]

``blockdrop-generate`` runs the ChatGPT4PCG protocol (:mod:`.generate`) on each
``--prompt`` (a built-in variant ``v1``..``v5`` of :mod:`.prompts` or a template
file holding ``<OBJECT>``): ``--trials`` answers per letter, each response's last code
block built into a level, 10 s of Box2D physics (stability), the evaluator's image and
the letter classifier (similarity), and the competition's scores across the prompts.
``--backend true`` is the scripted generator (known-stable programs of the letter
generator, each checked in Box2D), ``random`` writes random drops; chat models are
asked once per trial at ``--temperature`` (default 1.0, so that trials differ). It
writes ``DIR/results.json`` and ``results.md`` (the score table), ``trials.jsonl``,
``responses/``, ``levels/`` (each level's image and Science Birds XML) and the cache.

``blockdrop-levels`` does the same for a sequence model over the letters world's
tokens (a checkpoint of a ``blockdrop`` task with ``letters = true``): each trial is
sampled after the letter's token. ``blockdrop-probe`` asks a chat model, after a drop
history, whether a drop is possible and the structure still stands (:mod:`.probe`).
``blockdrop-proxy`` trains the proxy letter classifier (:mod:`.similarity`; a proxy,
not ``vit-base-letter``). ``blockdrop-physics`` measures how often the static
stability rule agrees with Box2D on random levels.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from worldmodel.safety import atomic_write
from worldmodel.errors import WorldModelError

COMMANDS = ("blockdrop-levels",)


def _letters(text: str) -> list[str]:
    return [c.strip().upper() for c in text.split(",") if c.strip()]


def _classifier(args):
    from .similarity import load_classifier

    return load_classifier(args.similarity_model, args.proxy, device=getattr(args, "device", "cpu"))


def cmd_generate(args) -> int:
    from worldmodel.chat import ResponseCache
    from worldmodel.commands.common import chat_backend, chat_label, out_folder

    from .generate import GenerateSettings, RandomGenerator, ScriptedGenerator, run, summary, write
    from .prompts import template

    settings = GenerateSettings(_letters(args.letters), args.trials, args.seed)
    settings.check()
    from .scoring import qualify

    prompts = dict(template(p) for p in args.prompt)
    if len(prompts) != len(args.prompt):
        raise WorldModelError("--prompt: two prompts have the same name")
    for name, text in prompts.items():
        problems = qualify(text)
        if problems:
            raise WorldModelError(f"prompt {name} is disqualified: {'; '.join(problems)}")
    out = out_folder(args.out)
    classifier = _classifier(args)
    inner = chat_backend(args, lambda: ScriptedGenerator(args.seed), lambda seed: RandomGenerator(seed))
    if hasattr(inner, "temperature") and args.backend in ("openai", "hf"):
        inner.temperature = float(args.temperature)
    label = {"true": "scripted generator", "random": "random drops"}.get(args.backend) or chat_label(inner, args)
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    try:
        runs, scores = run(inner, prompts, settings, classifier, cache, out, progress=not args.no_progress)
    finally:
        inner.close()
        cache.close()
    summ = summary(runs, scores, settings, inner, classifier)
    summ["label"] = label
    write(out, summ, runs, f"ChatGPT4PCG protocol: {label}, prompts {', '.join(prompts)}")
    print((out / "results.md").read_text())
    print(f"wrote {out}/results.json")
    return 0


def cmd_levels(args) -> int:
    from worldmodel.chat import ResponseCache
    from worldmodel.commands.common import load_domain_task, out_folder
    from worldmodel.evaluator import build_model

    from .generate import GenerateSettings, ModelGenerator, run, summary, write

    task = load_domain_task(args.task, "blockdrop", COMMANDS)
    if not task.world.letters:
        raise WorldModelError(f"task {task.name} has no letter tokens ([world] letters = true): its models "
                              "cannot be asked for a letter")
    if bool(args.checkpoint) == bool(args.model):
        raise WorldModelError("give exactly one of --checkpoint DIR or --model untrained")
    settings = GenerateSettings(_letters(args.letters), args.trials, args.seed)
    settings.check()
    out = out_folder(args.out)
    classifier = _classifier(args)
    model = build_model(task, args.checkpoint, args.model, seed=args.seed, device=args.device)
    name = str(args.checkpoint or args.model)
    gen = ModelGenerator(model, name, seed=args.seed, max_len=args.max_len)
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    try:
        runs, scores = run(gen, {"model": "The letter <OBJECT>, as a drop program."}, settings, classifier, cache,
                           out, progress=not args.no_progress)
    finally:
        cache.close()
    summ = summary(runs, scores, settings, gen, classifier)
    summ["label"] = name
    summ["task"] = task.name
    write(out, summ, runs, f"{task.name}: levels written by {name}")
    print((out / "results.md").read_text())
    print(f"wrote {out}/results.json")
    return 0


def cmd_probe(args) -> int:
    from worldmodel.chat import CachedBackend, ResponseCache
    from worldmodel.commands.common import chat_backend, chat_label, out_folder
    from worldmodel.results import write_json_atomic

    from .probe import ProbeSettings, RandomProbeResponder, TrueProbeResponder, probe, probe_table
    from .world import BlockDropWorld

    settings = ProbeSettings(states=args.states, samples=args.samples, seed=args.seed)
    settings.check()
    out = out_folder(args.out)
    world = BlockDropWorld("stable")
    inner = chat_backend(args, lambda: TrueProbeResponder(world), RandomProbeResponder)
    label = "true world model" if args.backend == "true" else chat_label(inner, args)
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    backend = CachedBackend(inner, cache, progress=not args.no_progress)
    try:
        report = probe(backend, world, settings)
    finally:
        backend.close()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "results.json", {"world": world.name, "label": label, **report.summary()})
    report.write_trials(out / "trials.jsonl")
    table = probe_table({label: report.summary()})
    atomic_write(out / "results.md", f"# Block-drop probe in words: {label}\n\n{settings.states} trials per metric, "
                                    f"{settings.samples} proposed drops each, seed {settings.seed}.\n\n{table}\n")
    print(table)
    return 0


def cmd_proxy(args) -> int:
    from worldmodel.results import check_writable

    from .similarity import train_proxy

    if args.steps < 1:
        raise WorldModelError(f"--steps must be at least 1, got {args.steps}")
    check_writable(args.out, "--out", folder=True)
    meta = train_proxy(args.out, seed=args.seed, steps=args.steps, progress=not args.no_progress)
    print(f"wrote {args.out} (proxy letter classifier, {meta['steps']} steps, held-out accuracy on pixelated font "
          f"letters {meta['accuracy']:.3f})")
    return 0


def cmd_physics(args) -> int:
    from worldmodel.results import write_json_atomic

    from .physics import agreement

    if args.programs < 1:
        raise WorldModelError(f"--programs must be at least 1, got {args.programs}")
    r = agreement(args.programs, args.seed, progress=not args.no_progress)
    print(json.dumps(r, indent=2))
    if args.out:
        write_json_atomic(Path(args.out), r)
    return 0


def _similarity_arguments(p) -> None:
    p.add_argument("--similarity-model", help="a local Hugging Face image-classification folder (e.g. vit-base-letter)")
    p.add_argument("--proxy", help="a proxy letter classifier folder (`worldmodel blockdrop-proxy --out DIR`)")


def register(subparsers) -> None:
    from worldmodel.commands.common import add_chat_arguments, add_chat_run_arguments

    fmt = argparse.RawDescriptionHelpFormatter
    g = subparsers.add_parser("blockdrop-generate", help="the ChatGPT4PCG protocol: a generator writes levels of "
                              "letters, scored for stability (Box2D) and similarity", description=__doc__,
                              formatter_class=fmt)
    g.add_argument("--prompt", action="append", required=True,
                   help="a built-in variant v1..v5 or a prompt file with <OBJECT> (repeat for several)")
    g.add_argument("--letters", default="I,L,U", help="target letters, comma-separated (default I,L,U)")
    g.add_argument("--trials", type=int, default=10, help="answers per prompt and letter (default 10)")
    g.add_argument("--temperature", type=float, default=1.0, help="sampling temperature of chat models (default 1)")
    add_chat_arguments(g, true_help="the scripted generator (known-stable letter programs)")
    _similarity_arguments(g)
    add_chat_run_arguments(g, "folder for results, responses, levels and images")
    g.set_defaults(func=cmd_generate)

    lv = subparsers.add_parser("blockdrop-levels", help="a sequence model trained on letter programs writes levels, "
                               "scored as the competition scores them", description=__doc__, formatter_class=fmt)
    lv.add_argument("task")
    lv.add_argument("--checkpoint")
    lv.add_argument("--model", choices=["untrained"], help="untrained: a random network of the task's [model] shape")
    lv.add_argument("--letters", default="I,L,U", help="target letters, comma-separated (default I,L,U)")
    lv.add_argument("--trials", type=int, default=10, help="levels sampled per letter (default 10)")
    lv.add_argument("--max-len", type=int, default=63, help="most tokens sampled after the letter (default 63)")
    lv.add_argument("--cache", help="response cache file (default OUT/cache.jsonl)")
    lv.add_argument("--device", default="cpu")
    _similarity_arguments(lv)
    add_chat_run_arguments(lv, "folder for results, levels and images")
    lv.set_defaults(func=cmd_levels)

    pr = subparsers.add_parser("blockdrop-probe", help="ask a chat model whether a drop is possible and the structure "
                               "stands (compression, distinction)", description=__doc__, formatter_class=fmt)
    add_chat_arguments(pr, true_help="answers from the stable world")
    pr.add_argument("--states", type=int, default=50, help="trials per metric (default 50)")
    pr.add_argument("--samples", type=int, default=5, help="continuations / boundary suffixes per trial (default 5)")
    add_chat_run_arguments(pr, "folder for results.json, results.md, trials.jsonl")
    pr.set_defaults(func=cmd_probe)

    px = subparsers.add_parser("blockdrop-proxy", help="train the proxy letter classifier (not vit-base-letter)")
    px.add_argument("--out", required=True, help="folder for the proxy classifier")
    px.add_argument("--steps", type=int, default=1500, help="training steps (default 1500)")
    px.add_argument("--seed", type=int, default=0)
    px.add_argument("--no-progress", action="store_true")
    px.set_defaults(func=cmd_proxy)

    ph = subparsers.add_parser("blockdrop-physics", help="agreement of the static stability rule with Box2D")
    ph.add_argument("--programs", type=int, default=500, help="random letter programs to compare (default 500)")
    ph.add_argument("--seed", type=int, default=0)
    ph.add_argument("--out", help="JSON file for the agreement (default: print only)")
    ph.add_argument("--no-progress", action="store_true")
    ph.set_defaults(func=cmd_physics)
