"""``worldmodel llm-eval seating``: the paper's Figure 4 protocol against a chat backend.

    worldmodel llm-eval seating --backend openai --base-url URL --model NAME --out DIR
    worldmodel llm-eval seating --backend hf --model-path DIR --out DIR
    worldmodel llm-eval seating --backend true|random --out DIR

Writes ``DIR/results.json`` (settings, backend, each metric's mean, standard error,
counts and unparseable answers), ``DIR/results.md`` (a one-row table) and
``DIR/trials.jsonl`` (every trial: prefixes, continuations, parsed answers, and the
tail of any unparseable response). Responses are cached in ``--cache`` (default
``DIR/cache.jsonl``), so an interrupted run resumes and a rerun sends no request.
The API key is read from the environment variable named by ``--api-key-env``
(default ``OPENAI_API_KEY``) and is never written anywhere.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ...errors import WorldModelError


def make_backend(args):
    """The backend named by the parsed arguments (not yet cached)."""
    from worldmodel.commands.common import chat_backend

    from .responders import RandomResponder, TrueResponder

    return chat_backend(args, TrueResponder, RandomResponder)


def write_outputs(report, out: Path, label: str) -> None:
    from ...results import write_json_atomic
    from .protocol import markdown_row_table

    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "results.json", report.summary())
    report.write_trials(out / "trials.jsonl")
    s = report.settings
    md = [f"# Seating puzzle, n = {s.n}: {label}", "",
          f"{s.states} trials per metric, {s.samples} continuations/suffixes each, k = {s.k}, seed {s.seed}.", "",
          markdown_row_table({label: report}), "",
          "Cells: mean (standard error), n = scored trials; unparseable = answers that did not parse / answers.",
          ""]
    failures = {k: m.failures for k, m in report.metrics.items() if m.failures}
    if failures:
        md.append("Trials not scored: " + "; ".join(
            f"{k}: " + ", ".join(f"{why} ×{c}" for why, c in f.items()) for k, f in failures.items()))
        md.append("")
    from worldmodel.safety import atomic_write

    atomic_write(out / "results.md", "\n".join(md), "results")


def cmd_llm_eval(args) -> int:
    from worldmodel.commands.common import chat_label, out_folder

    from ...chat import CachedBackend, ResponseCache
    from .protocol import ProtocolSettings, evaluate_in_words, markdown_row_table

    if args.puzzle != "seating":
        raise WorldModelError(f"unknown puzzle {args.puzzle!r} (known: seating)")
    settings = ProtocolSettings(n=args.n, states=args.states, samples=args.samples, k=args.k, seed=args.seed)
    settings.check()
    out = out_folder(args.out)
    inner = make_backend(args)
    cache = ResponseCache(args.cache or out / "cache.jsonl")
    backend = CachedBackend(inner, cache, progress=not args.no_progress)
    try:
        report = evaluate_in_words(backend, settings)
    finally:
        backend.close()
    label = chat_label(inner, args)
    write_outputs(report, out, label)
    print(markdown_row_table({label: report}))
    print(f"asked {backend.asked} new prompts ({len(cache)} cached in {cache.path}); wrote {out}/results.json")
    return 0


def register(subparsers) -> None:
    from worldmodel.commands.common import add_chat_arguments, add_chat_run_arguments

    p = subparsers.add_parser("llm-eval", help="ask a chat model the seating puzzle (the paper's Figure 4)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("puzzle", choices=["seating"], help="the puzzle (seating)")
    add_chat_arguments(p, true_help="answers from the DFA (the ceiling)")
    p.add_argument("--n", type=int, default=3, help="people and seats (default 3)")
    p.add_argument("--states", type=int, default=100, help="trials per metric (default 100)")
    p.add_argument("--samples", type=int, default=5, help="continuations / boundary suffixes per trial (default 5)")
    p.add_argument("--k", type=int, default=1, help="statements per continuation (default 1)")
    add_chat_run_arguments(p, "folder for results.json, results.md, trials.jsonl")
    p.set_defaults(func=cmd_llm_eval)
