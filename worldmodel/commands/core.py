"""The core subcommands: ``data``, ``train``, ``evaluate``, ``fetch``, ``extract``, ``import``, ``detours``.

Each ``cmd_*`` parses nothing itself (argparse did), calls the library, and prints. The
``evaluate`` and ``train`` flags that set ``[evaluate]`` / ``[train]`` settings are derived
from :class:`~worldmodel.settings.Settings` and :class:`~worldmodel.training.TrainConfig`
(:func:`worldmodel.config.add_arguments`), the ``--metrics`` and ``--format`` names from
:mod:`worldmodel.registry`.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from .. import registry
from ..errors import WorldModelError
from .common import add_missing_tokens_argument, at_least, one_model, print_missing


def _metrics_arg(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    known = registry.metric_names()
    bad = [m for m in names if m not in known]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown metric(s) {bad}; choose from {','.join(known)}")
    return names


def cmd_data(args) -> int:
    from ..sequences import SPLITS
    from ..tasks import load_task

    task = load_task(args.task)
    names = [args.dataset] if args.dataset else task.domain.datasets()
    for name in names:
        folder = task.domain.ensure_data(name, args.data_dir, force=args.force)
        counts = {s: sum(1 for _ in (folder / f"{s}.txt").open()) for s in SPLITS}
        print(f"{task.name}/{name}: {folder} " + " ".join(f"{s}={n}" for s, n in counts.items()))
    return 0


def cmd_train(args) -> int:
    from ..tasks import load_task
    from ..config import overrides_from
    from ..results import check_writable
    from ..training import TrainConfig, train

    task = load_task(args.task)
    out = Path(args.out)
    check_writable(out, "--out", folder=True)
    overrides = overrides_from(args, TrainConfig)
    steps, seed = overrides.pop("steps", None), overrides.pop("seed", None)
    summary = train(task, out, dataset=args.dataset, steps=steps, data_dir=args.data_dir,
                    seed=seed, progress=not args.no_progress, overrides=overrides)
    if int(os.environ.get("RANK", "0")) != 0:
        return 0                     # one line per run, from the main process of a distributed launch
    mfu = f", MFU {summary['mfu']:.1%}" if summary.get("mfu") is not None else ""
    stopped = f", stopped by the {summary['stopped']}" if summary.get("stopped") else ""
    print(f"saved {out} ({summary['n_params']:,} parameters, {summary['steps']} steps{stopped}, "
          f"final loss {summary['final_loss']:.4f}, val loss {summary['final_val_loss']}, "
          f"{summary['tokens_per_s']:.0f} tokens/s{mfu}, {summary['precision']})")
    return 0


def cmd_fetch(args) -> int:
    from .. import datasets

    if args.list or (not args.names and not args.all):
        for name, where, what in datasets.status():
            print(f"{name:16s} {where}\n{'':16s} {what}")
        return 0
    if args.all and args.names:
        raise WorldModelError("give data set names or --all, not both")
    names = list(datasets.data_sets()) if args.all else args.names
    for name in names:
        datasets.dataset(name)  # unknown names stop before anything is fetched
    for name in names:
        report = datasets.fetch(name, mirror=args.mirror, force=args.force, progress=not args.no_progress)
        print(report.line())
    return 0


def cmd_evaluate(args) -> int:
    from ..checkpoints import choose_dataset
    from ..evaluator import Shard, build_model, evaluate, local_device, settings_for
    from ..config import overrides_from
    from ..results import MetricResult, markdown_table
    from ..settings import Settings
    from ..tasks import load_task

    task = load_task(args.task)
    one_model(args)
    settings = settings_for(task, acceptance=args.acceptance, epsilon=args.epsilon, **overrides_from(args, Settings))
    shard = Shard.from_env()   # under `accelerate launch` / `torchrun`: this process's share of the trials
    model = build_model(task, args.checkpoint, args.model, seed=settings.seed, device=local_device(args.device),
                        missing=args.missing_tokens)
    model.source = str(args.checkpoint) if args.checkpoint else args.model
    print_missing(model, task.world)
    dataset = choose_dataset(task.domain.datasets(), args.dataset, args.checkpoint)
    metrics = args.metrics or registry.metric_names(default_only=True)
    out = Path(args.out) if args.out else None
    summary = evaluate(task, model, metrics, settings, out, dataset, args.data_dir, not args.no_progress,
                       shard=shard)
    if summary is None:
        return 0                  # not the main process of a sharded run: it prints and writes
    rows = {model.source: {k: MetricResult(k, **v) for k, v in summary["metrics"].items()}}
    print(markdown_table(rows))
    if out is not None:
        print(f"wrote {out}")
    return 0


def cmd_detours(args) -> int:
    from ..checkpoints import choose_dataset
    from ..detours import parse_kinds, parse_ps, report, run_kinds
    from ..evaluator import build_model
    from ..api.domain import Domain
    from ..tasks import load_task

    task = load_task(args.task)
    domain = task.domain
    kinds = parse_kinds(args.kind)
    ps = parse_ps(args.p)
    if args.trials < 1:
        raise WorldModelError(f"--trials must be at least 1, got {args.trials}")
    one_model(args, "true")
    dataset = choose_dataset(domain.datasets(), args.dataset, args.checkpoint)
    plan = domain.detour_plan(dataset, args.trials, seed=args.seed, data_dir=args.data_dir)
    if plan is None:
        worlds = ", ".join(n for n in registry.names()
                           if registry.domain_class(n).detour_plan is not Domain.detour_plan)
        raise WorldModelError(f"task {task.name} is a {task.config.get('domain')!r} task, which has no detour test; "
                              f"detours need a navigation task or another world with one ({worlds}); "
                              "Othello has `worldmodel othello-detours`")
    if plan.note:
        print(f"note: {plan.note}")
    model = build_model(task, args.checkpoint, seed=args.seed, device=args.device,
                        missing=args.missing_tokens) if args.checkpoint else plan.reference
    missing = print_missing(model, domain.world)
    results, trials = run_kinds(model, domain.world, plan.starts, kinds, ps, allowed=plan.allowed, goal=plan.goal,
                                max_len=plan.max_len, seed=args.seed, progress=not args.no_progress)
    meta = {"task": task.name, "dataset": dataset, "model": args.checkpoint or "true", "n_starts": len(plan.starts),
            "n_asked": args.trials, **({"note": plan.note} if plan.note else {}),
            "max_len": plan.max_len, "seed": args.seed, "starts": plan.starts_from, "success": plan.success,
            **({"missing_tokens": missing} if missing else {})}
    report(Path(args.out), results, trials, meta, f"{task.name}: {meta['model']} from {plan.starts_from}")
    return 0


def _extract_command(args, parser: argparse.ArgumentParser) -> str:
    """The command line that reproduces this run (the options given, where they differ from the parser's defaults)."""
    parts = ["worldmodel", "extract", args.task]
    for opt in ("checkpoint", "model", "epsilon", "acceptance", "max_states", "max_queries", "depth", "walks",
                "walk_len", "seed", "out"):
        value = getattr(args, opt)
        if value is not None and value != parser.get_default(opt):
            parts += ["--" + opt.replace("_", "-"), str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def cmd_extract(args) -> int:
    from ..evaluator import build_model, settings_for
    from ..extract.report import run_extraction
    from ..tasks import load_task

    one_model(args)
    at_least(args, 1, "max_states", "max_queries", "walks", "walk_len")
    if args.depth < 0:
        raise WorldModelError("--depth must be at least 0")
    task = load_task(args.task)
    acceptance = settings_for(task, acceptance=args.acceptance, epsilon=args.epsilon).acceptance
    seed = args.seed if args.seed is not None else task.seed
    model = build_model(task, args.checkpoint, args.model, seed=seed, device=args.device, missing=args.missing_tokens)
    print_missing(model, task.world)
    name = str(args.checkpoint) if args.checkpoint else args.model
    command = _extract_command(args, args.parser)
    s = run_extraction(task, model, name, acceptance, out=args.out, max_states=args.max_states,
                       max_queries=args.max_queries, depth=args.depth, walks=args.walks, walk_len=args.walk_len,
                       seed=seed, command=command, progress=not args.no_progress)
    learn, d = s["learning"], s["diff"]
    status = "complete" if learn["complete"] else f"stopped: {learn['stopped']}"
    print(f"learned {d['learned_states']} states ({status}); world {d['true_states']} states; "
          f"equivalent: {'yes' if d['equivalent'] else 'no'}")
    print(f"{learn['membership']:,} membership queries ({learn['cached']:,} cached), {learn['tests']:,} test words, "
          f"{learn['nodes']:,} prefixes read by the model, {learn['seconds']:.1f} s")
    print(f"merged true-state pairs {d['merged_pairs']}, split true states {d['split_true_states']}, "
          f"model-only transitions {d['model_allows_world_refuses']}, "
          f"world-only transitions {d['world_allows_model_refuses']}")
    if args.out:
        print(f"wrote {args.out}/automaton.json, report.md, automaton.dot, automaton.png")
    return 0


def cmd_import(args) -> int:
    from ..models.importers import import_checkpoint, write_imported
    from ..results import check_writable
    from ..tasks import load_task

    task = load_task(args.task)
    check_writable(args.out, "--out", folder=True)
    if args.floor is not None and not 0 <= args.floor < 1:
        raise WorldModelError(f"--floor must be in [0, 1), got {args.floor}")
    imp = import_checkpoint(args.source, task.world, args.format, args.tokenizer, args.n_head, args.bos,
                            template=args.template, missing=args.missing_tokens, floor=args.floor)
    for note in imp.notes:
        print(f"note: {note}")
    out = write_imported(imp, args.out)
    v = imp.vocab
    start = (f"template {imp.provenance['template']!r}" if imp.provenance.get("template")
             else f"BOS id {v.bos_id}" if v.has_bos else "no BOS")
    print(f"wrote {out} ({imp.provenance['format']}: {len(v.tokens)} world tokens of {v.size} model ids, "
          f"{start}; source sha256 {imp.provenance.get('sha256', 'n/a (folder)')[:16]}…)")
    if imp.missing:
        print(f"the model lacks {len(imp.missing)} of the {task.world.name} world's tokens (probability 0; recorded "
              "in provenance.json; evaluate it with --missing-tokens zero)")
    return 0


def register(sub) -> None:
    """Add the core subcommands to ``worldmodel``'s subparsers."""
    from ..config import add_arguments
    from ..settings import Settings
    from ..training.config import TrainConfig

    d = sub.add_parser("data", help="generate a task's sequence files")
    d.add_argument("task")
    d.add_argument("--dataset", help="one dataset (default: all of the task's datasets)")
    d.add_argument("--data-dir", help="folder for data (default: $WORLDMODEL_DATA/<task> or data/<task>)")
    d.add_argument("--force", action="store_true", help="regenerate even if the files exist")
    d.set_defaults(func=cmd_data)

    t = sub.add_parser("train", help="train a GPT-2 on a task's data")
    t.add_argument("task")
    t.add_argument("--out", required=True, help="checkpoint folder to write")
    t.add_argument("--dataset", help="the training distribution (default: the task's first dataset)")
    t.add_argument("--data-dir", help="folder for data (default: $WORLDMODEL_DATA/<task> or data/<task>)")
    add_arguments(t, TrainConfig)
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("evaluate", help="compression, distinction, next-token and probe metrics")
    e.add_argument("task")
    e.add_argument("--checkpoint", help="a folder written by `worldmodel train` or `worldmodel import`, or a foreign "
                                        "checkpoint (paper-nav, li-othello, nanogpt, hf; format detected)")
    e.add_argument("--model", choices=["true", "untrained"],
                   help="true: the true world model (uniform over valid tokens); untrained: a random network of "
                        "the task's [model] shape")
    e.add_argument("--metrics", type=_metrics_arg,
                   help="comma-separated subset of " + ",".join(registry.metric_names()) + " (default: "
                        + ",".join(registry.metric_names(default_only=True)) + "); "
                        + "; ".join(f"{m.name}: {m.help}" for m in registry.metrics() if m.help))
    e.add_argument("--epsilon", type=float, help="acceptance threshold (default 0.01)")
    e.add_argument("--acceptance", help="epsilon:E, top-k:K or top-p:P (overrides --epsilon)")
    add_arguments(e, Settings)
    e.add_argument("--dataset", help="held-out data for next-token and probe (default: the checkpoint's)")
    e.add_argument("--data-dir")
    e.add_argument("--device", default="cpu")
    e.add_argument("--out", help="summary JSON; trials are logged beside it and a rerun resumes")
    add_missing_tokens_argument(e)
    e.add_argument("--no-progress", action="store_true")
    e.set_defaults(func=cmd_evaluate)

    f = sub.add_parser("fetch", help="download a data set (or copy it from a local mirror) into the cache")
    f.add_argument("names", nargs="*", metavar="DATASET", help="manhattan-paper, wthor (none: list them)")
    f.add_argument("--all", action="store_true", help="every data set")
    f.add_argument("--from", dest="mirror", metavar="DIR",
                   help="copy from a local mirror laid out like shared/data (e.g. ../shared/data)")
    f.add_argument("--force", action="store_true", help="fetch again even if the cache holds an intact copy")
    f.add_argument("--list", action="store_true", help="list the data sets and where each resolves")
    f.add_argument("--no-progress", action="store_true")
    f.set_defaults(func=cmd_fetch)

    x = sub.add_parser("extract", help="learn the automaton a model implies (L*) and diff it against the world")
    x.add_argument("task")
    x.add_argument("--checkpoint", help="a folder written by `worldmodel train`")
    x.add_argument("--model", choices=["true", "untrained"],
                   help="true: the world's own automaton; untrained: a random network of the task's [model] shape")
    x.add_argument("--epsilon", type=float, help="acceptance threshold (default: the task's, else 0.01)")
    x.add_argument("--acceptance", help="epsilon:E, top-k:K or top-p:P (overrides --epsilon)")
    x.add_argument("--max-states", type=int, default=200, help="stop when a hypothesis would exceed N states (200)")
    x.add_argument("--max-queries", type=int, default=1_000_000,
                   help="budget of membership queries plus test words (1,000,000)")
    x.add_argument("--depth", type=int, default=1, help="W-method depth of the equivalence test (1)")
    x.add_argument("--walks", type=int, default=1000, help="random test walks per equivalence query (1000)")
    x.add_argument("--walk-len", type=int, help="longest test walk (default: the task's [data] max_len, else 20)")
    x.add_argument("--seed", type=int, help="test-walk seed (default: the task's)")
    x.add_argument("--device", default="cpu")
    x.add_argument("--out", help="folder for automaton.json, report.md, automaton.dot and automaton.png")
    add_missing_tokens_argument(x)
    x.add_argument("--no-progress", action="store_true")
    x.set_defaults(func=cmd_extract, parser=x)

    im = sub.add_parser("import", help="convert a checkpoint from elsewhere into a worldmodel checkpoint folder")
    im.add_argument("task", help="the task whose world the model plays (its tokens are matched by name)")
    im.add_argument("source", help="model.ckpt (paper-nav), a minGPT .ckpt (li-othello), ckpt.pt or its folder "
                                   "(nanogpt), a Hugging Face model folder (hf)")
    im.add_argument("--format", choices=registry.format_names(),
                    help="(default: detected) " + "; ".join(f"{f.name}: {f.help}" for f in registry.formats()))
    im.add_argument("--tokenizer", help="tokenizer.pt (paper-nav), meta.pkl (nanogpt) or a tokenizer folder (hf); "
                                        "default: beside the source")
    im.add_argument("--n-head", type=int, help="attention heads, where the checkpoint does not record them "
                                               "(li-othello: 8)")
    im.add_argument("--bos", help="a model token to feed before every sequence (nanogpt, hf; default: none for "
                                  "nanogpt, the tokenizer's BOS for hf)")
    im.add_argument("--template", help="nanogpt, character-level: the layout of the training text, 'pgn' "
                                      "(Karvonen's ';1.e4 e5 2.Nf3 …') or written out with {move} placeholders, "
                                      "e.g. ';1.{move} {move} 2.{move}' (default: the world's own, if any)")
    im.add_argument("--floor", type=float, help="prune the chain rule's piece trie below this probability (default: "
                                                "0, or 0.01 for worlds of more than 2,000 tokens; evaluate with "
                                                "epsilon >= it)")
    add_missing_tokens_argument(im)
    im.add_argument("--out", required=True, help="folder to write (safetensors + vocab.json + provenance.json)")
    im.set_defaults(func=cmd_import)

    dt = sub.add_parser("detours", help="share of greedy runs that still reach the goal under forced detours")
    dt.add_argument("task")
    dt.add_argument("--checkpoint")
    dt.add_argument("--model", choices=["true"], help="true: the world's own player (shortest route / shortest plan)")
    dt.add_argument("--kind", default="random",
                    help="which detours: random (default) or adversarial; give both as random,adversarial")
    dt.add_argument("--p", default="0,0.01,0.1,0.5,0.75", help="detour probabilities, comma-separated")
    dt.add_argument("--trials", type=int, default=100,
                    help="distinct start points drawn without replacement from the held-out data (default 100; "
                         "fewer, with a note, when the data hold fewer)")
    dt.add_argument("--dataset", help="whose held-out data the starts come from (default: the checkpoint's)")
    dt.add_argument("--data-dir")
    dt.add_argument("--seed", type=int, default=0, help="seed of the starts and the detours (default 0)")
    dt.add_argument("--device", default="cpu")
    dt.add_argument("--no-progress", action="store_true")
    dt.add_argument("--out", required=True, help="JSON file with per-p results and every trial")
    add_missing_tokens_argument(dt)
    dt.set_defaults(func=cmd_detours)
