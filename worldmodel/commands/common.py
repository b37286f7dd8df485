"""What every command shares: task and model choice checks, the LLM options, output folders.

The commands layer (this package, :mod:`worldmodel.cli`, and every world's ``cli.py``) stands on
top of the library: it parses arguments, calls the library and prints. World command modules
import their helpers from here, never from :mod:`worldmodel.cli`, which only assembles the
subcommands; nothing below the commands layer imports it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import WorldModelError


def load_domain_task(spec: str, domain: str, commands: tuple[str, ...]):
    """The task ``spec``, which must be a ``domain`` task, for a world's own ``commands``."""
    from ..tasks import load_task

    task = load_task(spec)
    if task.config.get("domain") != domain:
        need = "needs" if len(commands) == 1 else "need"
        raise WorldModelError(f"task {task.name} is a {task.config.get('domain')!r} task; "
                              f"{' and '.join(commands)} {need} a {domain} task")
    return task


def one_model(args, choices: str = "true|untrained", sources: str = "--checkpoint DIR") -> None:
    """Exactly one of ``--checkpoint`` and ``--model`` given; else one line naming both."""
    if bool(getattr(args, "checkpoint", None)) == bool(getattr(args, "model", None)):
        raise WorldModelError(f"give exactly one of {sources} or --model {choices}")


def at_least(args, minimum: int, *names: str) -> None:
    """Each option in ``names`` that is given is at least ``minimum``; else one line naming it."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < minimum:
            raise WorldModelError(f"--{name.replace('_', '-')} must be at least {minimum}")



CHAT_BACKENDS = ("openai", "hf", "true", "random")


def add_chat_arguments(p: argparse.ArgumentParser, true_help: str = "answers from the world (the ceiling)",
                       option: str = "--backend", extra: dict[str, str] | None = None) -> None:
    """The options every LLM command shares: which backend, its endpoint or folder, retries, cache.

    ``option`` names the backend flag (its value lands in ``args.backend`` either way);
    ``extra`` adds a world's own responders (choice -> help).
    """
    extra = extra or {}
    p.add_argument(option, dest="backend", required=True, choices=CHAT_BACKENDS + tuple(extra),
                   help=f"openai: an OpenAI-compatible endpoint; hf: a local transformers chat model; true: {true_help}; "
                        "random: answers at random, seeded per prompt (the floor)"
                        + "".join(f"; {k}: {v}" for k, v in extra.items()))
    p.add_argument("--base-url", help="OpenAI-compatible API root, e.g. https://api.openai.com/v1")
    p.add_argument("--model", help="model name at the endpoint (openai backend)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the API key (default OPENAI_API_KEY; unset = no key)")
    p.add_argument("--model-path", help="folder of a local transformers chat model (hf backend)")
    p.add_argument("--cache", help="response cache file (default OUT/cache.jsonl)")
    p.add_argument("--max-tokens", type=int, default=1000,
                   help="response length limit (default 1000; 0 = send no limit, for endpoints that reject max_tokens)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds one HTTP request may take in all, connecting and every byte of the answer "
                        "included (default 120)")
    p.add_argument("--max-response-bytes", type=int, default=4 << 20,
                   help="the most bytes one answer may take; a larger one stops the run (default 4194304 = 4 MiB)")
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
    from ..chat import HFChatBackend, OpenAIChatBackend

    if args.backend == "openai":
        if not args.base_url or not args.model:
            raise WorldModelError("--backend openai needs --base-url URL and --model NAME")
        return OpenAIChatBackend(args.base_url, args.model, args.api_key_env, max_tokens=args.max_tokens,
                                 timeout=args.timeout, max_retries=args.retries, backoff=args.backoff,
                                 concurrency=args.concurrency, max_response_bytes=args.max_response_bytes)
    if args.backend == "hf":
        if not args.model_path:
            raise WorldModelError("--backend hf needs --model-path DIR")
        return HFChatBackend(args.model_path, max_new_tokens=args.max_tokens, batch_size=args.batch_size,
                             device=args.device)
    if args.backend == "true":
        return true()
    return random(args.seed)


def add_missing_tokens_argument(p: argparse.ArgumentParser) -> None:
    """``--missing-tokens error|zero``: what a checkpoint lacking some world tokens gets."""
    p.add_argument("--missing-tokens", choices=["error", "zero"], default="error",
                   help="a checkpoint whose vocabulary lacks world tokens: refuse it (error, default) or score "
                        "those tokens at probability 0 (zero; named in every result)")


def print_missing(model, world) -> list[str]:
    """Say which world tokens the model lacks (scored at probability 0); return them."""
    from ..evaluator import missing_tokens

    missing = missing_tokens(model, world)
    if missing:
        print(f"note: the model lacks {len(missing)} of the {world.name} world's tokens, scored at probability 0: "
              f"{missing[:20]}{' …' if len(missing) > 20 else ''}")
    return missing
