"""``worldmodel`` command line.

    worldmodel fetch (DATASET... | --all) [--from DIR]
    worldmodel data TASK [--dataset NAME] [--force]
    worldmodel train TASK --out DIR [--dataset NAME] [--steps N]
    worldmodel evaluate TASK (--checkpoint DIR | --model true|untrained)
                        [--metrics compression,distinction,next-token,probe]
                        [--trials N] [--epsilon E | --acceptance SPEC] [--out FILE]
    worldmodel extract TASK (--checkpoint DIR | --model true|untrained) [--acceptance SPEC]
                       [--max-states N] [--max-queries N] [--out DIR]
    worldmodel import TASK SOURCE [--format paper-nav|li-othello|nanogpt|hf] [--tokenizer FILE] --out DIR
    worldmodel detours TASK (--checkpoint DIR | --model true) [--kind random,adversarial]
                       [--p 0,0.01,0.1,0.5,0.75] [--trials N] [--dataset NAME] [--seed S] --out FILE

``TASK`` is a name in ``tasks/`` or a path to a TOML file. ``detours`` runs on any
world whose domain gives a :class:`~worldmodel.detours.DetourPlan` (navigation:
origin–destination pairs, success = the destination reached; TextWorld: the first
command of held-out goal-directed episodes, success = the game won); ``--model true``
is the world's own player. Worlds add their own commands (``reconstruct``,
``othello-detours``, ``llm-eval``, ``textworld-agent``, ...) through the modules
:mod:`worldmodel.registry` lists, each with a ``register(subparsers)`` function.
This module only parses arguments, calls the library and prints.

Bad input stops with one line ``worldmodel: error: ...`` and exit code 2; pass
``--debug`` for the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from pathlib import Path

from . import registry
from .errors import WorldModelError


def _metrics_arg(text: str) -> list[str]:
    from .metrics import ALL_METRICS

    names = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in names if m not in ALL_METRICS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown metric(s) {bad}; choose from {','.join(ALL_METRICS)}")
    return names


def load_domain_task(spec: str, domain: str, commands: tuple[str, ...]):
    """The task ``spec``, which must be a ``domain`` task, for a world's own ``commands``."""
    from .tasks import load_task

    task = load_task(spec)
    if task.config.get("domain") != domain:
        need = "needs" if len(commands) == 1 else "need"
        raise WorldModelError(f"task {task.name} is a {task.config.get('domain')!r} task; "
                              f"{' and '.join(commands)} {need} a {domain} task")
    return task


def cmd_data(args) -> int:
    from .tasks import SPLITS, load_task

    task = load_task(args.task)
    names = [args.dataset] if args.dataset else task.domain.datasets()
    for name in names:
        folder = task.domain.ensure_data(name, args.data_dir, force=args.force)
        counts = {s: sum(1 for _ in (folder / f"{s}.txt").open()) for s in SPLITS}
        print(f"{task.name}/{name}: {folder} " + " ".join(f"{s}={n}" for s, n in counts.items()))
    return 0


def cmd_train(args) -> int:
    from .tasks import load_task
    from .train import train

    from .results import check_writable

    task = load_task(args.task)
    out = Path(args.out)
    check_writable(out, "--out", folder=True)
    overrides = {"data": args.data, "precision": args.precision, "grad_accum": args.grad_accum,
                 "time_budget": args.time_budget, "peak_flops": args.peak_flops, "batch_size": args.batch_size,
                 "lr": args.lr, "save_every": args.save_every, "data_workers": args.data_workers,
                 "cpu_threads": args.cpu_threads, "compile": True if args.compile else None}
    summary = train(task, out, dataset=args.dataset, steps=args.steps, data_dir=args.data_dir,
                    seed=args.seed, progress=not args.no_progress, overrides=overrides)
    if int(os.environ.get("RANK", "0")) != 0:
        return 0                     # one line per run, from the main process of a distributed launch
    mfu = f", MFU {summary['mfu']:.1%}" if summary.get("mfu") is not None else ""
    stopped = f", stopped by the {summary['stopped']}" if summary.get("stopped") else ""
    print(f"saved {out} ({summary['n_params']:,} parameters, {summary['steps']} steps{stopped}, "
          f"final loss {summary['final_loss']:.4f}, val loss {summary['final_val_loss']}, "
          f"{summary['tokens_per_s']:.0f} tokens/s{mfu}, {summary['precision']})")
    return 0


def cmd_fetch(args) -> int:
    from . import datasets

    if args.list or (not args.names and not args.all):
        for name, where, what in datasets.status():
            print(f"{name:16s} {where}\n{'':16s} {what}")
        return 0
    if args.all and args.names:
        raise WorldModelError("give data set names or --all, not both")
    names = list(datasets.DATASETS) if args.all else args.names
    for name in names:
        datasets.dataset(name)  # unknown names stop before anything is fetched
    for name in names:
        report = datasets.fetch(name, mirror=args.mirror, force=args.force, progress=not args.no_progress)
        print(report.line())
    return 0


def cmd_evaluate(args) -> int:
    from .checkpoints import choose_dataset
    from .evaluator import Shard, build_model, evaluate, local_device, settings_for
    from .metrics import ALL_METRICS
    from .results import MetricResult, markdown_table
    from .tasks import load_task

    task = load_task(args.task)
    if bool(args.checkpoint) == bool(args.model):
        raise WorldModelError("give exactly one of --checkpoint DIR or --model true|untrained")
    settings = settings_for(task, acceptance=args.acceptance, epsilon=args.epsilon, trials=args.trials, M=args.M,
                            k=args.k, seed=args.seed, probe_sequences=args.probe_sequences,
                            probe_epochs=args.probe_epochs, keep_top=False if args.no_keep_top else None,
                            next_token_positions=args.next_token_positions,
                            next_token_pooling=args.next_token_pooling)
    shard = Shard.from_env()   # under `accelerate launch` / `torchrun`: this process's share of the trials
    model = build_model(task, args.checkpoint, args.model, seed=settings.seed, device=local_device(args.device))
    model.source = str(args.checkpoint) if args.checkpoint else args.model
    dataset = choose_dataset(task.domain.datasets(), args.dataset, args.checkpoint)
    metrics = args.metrics or list(ALL_METRICS)
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
    from .checkpoints import choose_dataset
    from .detours import parse_kinds, parse_ps, report, run_kinds
    from .evaluator import build_model
    from .tasks import Domain, load_task

    task = load_task(args.task)
    domain = task.domain
    kinds = parse_kinds(args.kind)
    ps = parse_ps(args.p)
    if args.trials < 1:
        raise WorldModelError(f"--trials must be at least 1, got {args.trials}")
    if bool(args.checkpoint) == bool(args.model):
        raise WorldModelError("give exactly one of --checkpoint DIR or --model true")
    dataset = choose_dataset(domain.datasets(), args.dataset, args.checkpoint)
    plan = domain.detour_plan(dataset, args.trials, seed=args.seed, data_dir=args.data_dir)
    if plan is None:
        worlds = ", ".join(w.name for w in registry.WORLDS
                           if registry.domain_class(w.name).detour_plan is not Domain.detour_plan)
        raise WorldModelError(f"task {task.name} is a {task.config.get('domain')!r} task, which has no detour test; "
                              f"detours need a navigation task or another world with one ({worlds}); "
                              "Othello has `worldmodel othello-detours`")
    model = build_model(task, args.checkpoint, seed=args.seed, device=args.device) if args.checkpoint \
        else plan.reference
    results, trials = run_kinds(model, domain.world, plan.starts, kinds, ps, allowed=plan.allowed, goal=plan.goal,
                                max_len=plan.max_len, seed=args.seed, progress=not args.no_progress)
    meta = {"task": task.name, "dataset": dataset, "model": args.checkpoint or "true", "n_starts": len(plan.starts),
            "max_len": plan.max_len, "seed": args.seed, "starts": plan.starts_from, "success": plan.success}
    report(Path(args.out), results, trials, meta, f"{task.name}: {meta['model']} from {plan.starts_from}")
    return 0


# ---------------------------------------------------------------------------
# Chat backends for the commands that ask a language model (seating, TextWorld)
# ---------------------------------------------------------------------------

CHAT_BACKENDS = ("openai", "hf", "true", "random")


def add_chat_arguments(p: argparse.ArgumentParser, true_help: str = "answers from the world (the ceiling)") -> None:
    """The options every LLM command shares: which backend, its endpoint or folder, retries, cache."""
    p.add_argument("--backend", required=True, choices=CHAT_BACKENDS,
                   help=f"openai: an OpenAI-compatible endpoint; hf: a local transformers chat model; true: {true_help}; "
                        "random: answers at random, seeded per prompt (the floor)")
    p.add_argument("--base-url", help="OpenAI-compatible API root, e.g. https://api.openai.com/v1")
    p.add_argument("--model", help="model name at the endpoint (openai backend)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the API key (default OPENAI_API_KEY; unset = no key)")
    p.add_argument("--model-path", help="folder of a local transformers chat model (hf backend)")
    p.add_argument("--cache", help="response cache file (default OUT/cache.jsonl)")
    p.add_argument("--max-tokens", type=int, default=1000,
                   help="response length limit (default 1000; 0 = send no limit, for endpoints that reject max_tokens)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per HTTP request (default 120)")
    p.add_argument("--retries", type=int, default=6, help="retries per request on 429/5xx/timeouts (default 6)")
    p.add_argument("--backoff", type=float, default=1.0, help="first retry delay in seconds, doubled each time")
    p.add_argument("--concurrency", type=int, default=4, help="HTTP requests in flight (default 4)")
    p.add_argument("--batch-size", type=int, default=8, help="prompts per generate call (hf backend)")
    p.add_argument("--device", default="cpu", help="device for the hf backend")


def add_chat_run_arguments(p: argparse.ArgumentParser, out_help: str, seed_help: str | None = None) -> None:
    """The options every LLM command ends with: ``--seed``, ``--out DIR`` and ``--no-progress``."""
    p.add_argument("--seed", type=int, default=0, help=seed_help)
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--no-progress", action="store_true")


def out_folder(text: str) -> Path:
    """The ``--out`` folder of an LLM command; an existing file there is an error (nothing is created yet)."""
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise WorldModelError(f"--out {out} exists and is not a folder")
    return out


def chat_label(inner, args) -> str:
    """How tables name a chat backend: ``backend:model`` (for ``hf``, the model folder's name)."""
    return f"{inner.backend}:{Path(inner.model).name if args.backend == 'hf' else inner.model}"


def chat_backend(args, true, random):
    """The backend the parsed :func:`add_chat_arguments` options name (not yet cached).

    ``true`` and ``random`` are callables making the world's own responders (``random``
    gets ``args.seed``); the openai and hf backends come from :mod:`worldmodel.chat`.
    """
    from .chat import HFChatBackend, OpenAIChatBackend

    if args.backend == "openai":
        if not args.base_url or not args.model:
            raise WorldModelError("--backend openai needs --base-url URL and --model NAME")
        return OpenAIChatBackend(args.base_url, args.model, args.api_key_env, max_tokens=args.max_tokens,
                                 timeout=args.timeout, max_retries=args.retries, backoff=args.backoff,
                                 concurrency=args.concurrency)
    if args.backend == "hf":
        if not args.model_path:
            raise WorldModelError("--backend hf needs --model-path DIR")
        return HFChatBackend(args.model_path, max_new_tokens=args.max_tokens, batch_size=args.batch_size,
                             device=args.device)
    if args.backend == "true":
        return true()
    return random(args.seed)


def _extract_command(args) -> str:
    """The command line that reproduces this run (given options only)."""
    parts = ["worldmodel", "extract", args.task]
    for opt in ("checkpoint", "model", "epsilon", "acceptance", "max_states", "max_queries", "depth", "walks",
                "walk_len", "seed", "out"):
        value = getattr(args, opt)
        default = {"max_states": 200, "max_queries": 1_000_000, "depth": 1, "walks": 1000}.get(opt)
        if value is not None and value != default:
            parts += ["--" + opt.replace("_", "-"), str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def cmd_extract(args) -> int:
    from .evaluator import build_model, settings_for
    from .extract_report import run_extraction
    from .tasks import load_task

    if bool(args.checkpoint) == bool(args.model):
        raise WorldModelError("give exactly one of --checkpoint DIR or --model true|untrained")
    for name in ("max_states", "max_queries", "walks", "walk_len"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise WorldModelError(f"--{name.replace('_', '-')} must be at least 1")
    if args.depth < 0:
        raise WorldModelError("--depth must be at least 0")
    task = load_task(args.task)
    acceptance = settings_for(task, acceptance=args.acceptance, epsilon=args.epsilon).acceptance
    seed = args.seed if args.seed is not None else task.seed
    model = build_model(task, args.checkpoint, args.model, seed=seed, device=args.device)
    name = str(args.checkpoint) if args.checkpoint else args.model
    command = _extract_command(args)
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
    from .models.importers import import_checkpoint, write_imported
    from .results import check_writable
    from .tasks import load_task

    task = load_task(args.task)
    check_writable(args.out, "--out", folder=True)
    imp = import_checkpoint(args.source, task.world, args.format, args.tokenizer, args.n_head, args.bos)
    for note in imp.notes:
        print(f"note: {note}")
    out = write_imported(imp, args.out)
    v = imp.vocab
    print(f"wrote {out} ({imp.provenance['format']}: {len(v.tokens)} world tokens of {v.size} model ids, "
          f"{f'BOS id {v.bos_id}' if v.has_bos else 'no BOS'}; source sha256 "
          f"{imp.provenance.get('sha256', 'n/a (folder)')[:16]}…)")
    return 0


class _Parser(argparse.ArgumentParser):
    """Usage errors become :class:`WorldModelError`: one line ``worldmodel: error: …``, exit 2."""

    def error(self, message):
        command = self.prog.removeprefix("worldmodel").strip()
        raise WorldModelError(f"{command + ': ' if command else ''}{message} (see `{self.prog} -h`)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="worldmodel", description="Does a sequence model recover the world it was trained on?")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("data", help="generate a task's sequence files")
    d.add_argument("task")
    d.add_argument("--dataset", help="one dataset (default: all of the task's datasets)")
    d.add_argument("--data-dir", help="folder for data (default: $WORLDMODEL_DATA/<task> or data/<task>)")
    d.add_argument("--force", action="store_true", help="regenerate even if the files exist")
    d.set_defaults(func=cmd_data)

    t = sub.add_parser("train", help="train a GPT-2 on a task's data")
    t.add_argument("task")
    t.add_argument("--out", required=True, help="checkpoint folder to write")
    t.add_argument("--dataset")
    t.add_argument("--steps", type=int)
    t.add_argument("--seed", type=int)
    t.add_argument("--data-dir")
    t.add_argument("--data", choices=["file", "stream"],
                   help="train on train.txt (file, default) or on fresh seeded sequences every step (stream)")
    t.add_argument("--batch-size", type=int, help="sequences per optimiser step and process")
    t.add_argument("--lr", type=float, help="peak learning rate")
    t.add_argument("--precision", choices=["fp32", "bf16", "fp16"],
                   help="autocast precision (default: bf16 on CUDA, fp32 on CPU)")
    t.add_argument("--grad-accum", type=int, help="split each batch into this many micro-batches (same update)")
    t.add_argument("--compile", action="store_true", help="torch.compile the model (falls back to eager on failure)")
    t.add_argument("--time-budget", type=float, metavar="SECONDS",
                   help="stop and save after this many seconds; without --steps the schedule is fitted to it")
    t.add_argument("--peak-flops", type=float, help="device peak FLOP/s for MFU (default: measured by a matmul probe)")
    t.add_argument("--save-every", type=int, help="steps between resume saves (default: every validation)")
    t.add_argument("--data-workers", type=int, help="processes generating streamed batches (default: 0 on CPU)")
    t.add_argument("--cpu-threads", type=int, metavar="N",
                   help="CPU intra-op threads while training (default: the task's [train] cpu_threads, 1; "
                        "0: PyTorch's own). A seed gives the same weights only at the same N")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("evaluate", help="compression, distinction, next-token and probe metrics")
    e.add_argument("task")
    e.add_argument("--checkpoint", help="a folder written by `worldmodel train` or `worldmodel import`, or a foreign "
                                        "checkpoint (paper-nav, li-othello, nanogpt, hf; format detected)")
    e.add_argument("--model", choices=["true", "untrained"])
    e.add_argument("--metrics", type=_metrics_arg, help="comma-separated subset of compression,distinction,next-token,probe")
    e.add_argument("--trials", type=int)
    e.add_argument("--epsilon", type=float, help="acceptance threshold (default 0.01)")
    e.add_argument("--acceptance", help="epsilon:E, top-k:K or top-p:P (overrides --epsilon)")
    e.add_argument("--M", type=int, help="model samples per prefix (default 30)")
    e.add_argument("--k", type=int, help="true-boundary suffix length (default 5)")
    e.add_argument("--seed", type=int)
    e.add_argument("--probe-sequences", type=int, help="sequences whose positions train/test the probe (default 1000)")
    e.add_argument("--probe-epochs", type=int, help="probe training epochs (default 100)")
    e.add_argument("--no-keep-top", action="store_true",
                   help="end a sample where the rule allows no token (default: draw the top token, as the paper's code)")
    e.add_argument("--next-token-positions", choices=["world", "all"],
                   help="positions the next-token test scores: the world's (default; navigation: moves) or all")
    e.add_argument("--next-token-pooling", choices=["tokens", "sequences"],
                   help="pool next-token over positions (default, as the paper's code) or average per sequence")
    e.add_argument("--dataset", help="held-out data for next-token and probe (default: the checkpoint's)")
    e.add_argument("--data-dir")
    e.add_argument("--device", default="cpu")
    e.add_argument("--out", help="summary JSON; trials are logged beside it and a rerun resumes")
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
    x.add_argument("--model", choices=["true", "untrained"])
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
    x.add_argument("--no-progress", action="store_true")
    x.set_defaults(func=cmd_extract)

    im = sub.add_parser("import", help="convert a checkpoint from elsewhere into a worldmodel checkpoint folder")
    im.add_argument("task", help="the task whose world the model plays (its tokens are matched by name)")
    im.add_argument("source", help="model.ckpt (paper-nav), a minGPT .ckpt (li-othello), ckpt.pt or its folder "
                                   "(nanogpt), a Hugging Face model folder (hf)")
    im.add_argument("--format", choices=["paper-nav", "li-othello", "nanogpt", "hf"], help="(default: detected)")
    im.add_argument("--tokenizer", help="tokenizer.pt (paper-nav), meta.pkl (nanogpt) or a tokenizer folder (hf); "
                                        "default: beside the source")
    im.add_argument("--n-head", type=int, help="attention heads, where the checkpoint does not record them "
                                               "(li-othello: 8)")
    im.add_argument("--bos", help="a model token to feed before every sequence (nanogpt, hf; default: none for "
                                  "nanogpt, the tokenizer's BOS for hf)")
    im.add_argument("--out", required=True, help="folder to write (safetensors + vocab.json + provenance.json)")
    im.set_defaults(func=cmd_import)

    dt = sub.add_parser("detours", help="share of greedy runs that still reach the goal under forced detours")
    dt.add_argument("task")
    dt.add_argument("--checkpoint")
    dt.add_argument("--model", choices=["true"], help="true: the world's own player (shortest route / shortest plan)")
    dt.add_argument("--kind", default="random", help="random, adversarial, or both comma-separated")
    dt.add_argument("--p", default="0,0.01,0.1,0.5,0.75", help="detour probabilities, comma-separated")
    dt.add_argument("--trials", type=int, default=100)
    dt.add_argument("--dataset", help="whose held-out data the starts come from (default: the checkpoint's)")
    dt.add_argument("--data-dir")
    dt.add_argument("--seed", type=int, default=0)
    dt.add_argument("--device", default="cpu")
    dt.add_argument("--no-progress", action="store_true")
    dt.add_argument("--out", required=True, help="JSON file with per-p results and every trial")
    dt.set_defaults(func=cmd_detours)

    for name in registry.command_modules():
        importlib.import_module(name).register(sub)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except WorldModelError as exc:
        if debug:
            raise
        print(f"worldmodel: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("worldmodel: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
