"""``worldmodel`` command line.

    worldmodel fetch (DATASET... | --all) [--from DIR]
    worldmodel data TASK [--dataset NAME] [--force]
    worldmodel train TASK --out DIR [--dataset NAME] [--steps N]
    worldmodel evaluate TASK (--checkpoint DIR | --model true|untrained)
                        [--metrics compression,distinction,next-token,probe]
                        [--trials N] [--epsilon E | --acceptance SPEC] [--out FILE]
    worldmodel extract TASK (--checkpoint DIR | --model true|untrained) [--acceptance SPEC]
                       [--max-states N] [--max-queries N] [--out DIR]
    worldmodel import TASK SOURCE [--format FORMAT] [--tokenizer FILE] --out DIR
    worldmodel detours TASK (--checkpoint DIR | --model true) [--kind random,adversarial]
                       [--p 0,0.01,0.1,0.5,0.75] [--trials N] [--dataset NAME] [--seed S] --out FILE
    worldmodel compare REFERENCE.py CANDIDATE.py [--spec SPEC.toml] [--max-states N] [--out FILE]

``TASK`` is a name in ``tasks/`` or a path to a TOML file. ``detours`` runs on any
world whose domain gives a :class:`~worldmodel.detours.DetourPlan` (navigation:
origin–destination pairs, success = the destination reached; TextWorld: the first
command of held-out goal-directed episodes, success = the game won); ``--model true``
is the world's own player. Worlds add their own commands (``reconstruct``,
``othello-detours``, ``llm-eval``, ``textworld-agent``, ...) through the modules
:mod:`worldmodel.registry` lists, each with a ``register(subparsers)`` function.
This module only assembles the subcommands: the core ones from
:mod:`worldmodel.commands.core`, the worlds' from their ``cli.py``; what commands
share is in :mod:`worldmodel.commands.common`.

Bad input stops with one line ``worldmodel: error: ...`` and exit code 2; pass
``--debug`` for the traceback. So does what the machine can refuse: a full disk, a read-only
folder (any ``OSError``: the file and the cause) and an allocation that fails under a memory
limit. Ctrl-C exits 130 (SIGTERM 143) with one line. A command with ``--out`` claims it first
(:func:`worldmodel.safety.claim`): a second run on the same ``--out`` stops with one line naming
the first.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys

from . import registry
from .commands import core, simulators
from .errors import Interrupted, WorldModelError
from .progress import silenced


class _Parser(argparse.ArgumentParser):
    """Usage errors become :class:`WorldModelError`: one line ``worldmodel: error: …``, exit 2."""

    def error(self, message):
        command = self.prog.removeprefix("worldmodel").strip()
        raise WorldModelError(f"{command + ': ' if command else ''}{message} (see `{self.prog} -h`)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="worldmodel", description="Does a sequence model recover the world it was trained on?")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = p.add_subparsers(dest="command", required=True)

    core.register(sub)
    simulators.register(sub)
    for name in registry.command_modules():
        importlib.import_module(name).register(sub)
    for parser in sub.choices.values():
        for action in parser._actions:
            if action.help is None and action.dest in SHARED_HELP:
                action.help = SHARED_HELP[action.dest]
    return p


#: The help of options every command shares, filled in where a command gives none of its own.
SHARED_HELP = {
    "task": "a task name in tasks/ (e.g. toy-dfa) or the path to a task TOML file",
    "data_dir": "folder of the task's sequence files (default: $WORLDMODEL_DATA/<task> or data/<task>)",
    "device": "where the model runs: cpu (default), cuda, cuda:1, mps",
    "no_progress": "no progress bars",
    "checkpoint": "a folder written by `worldmodel train` or `worldmodel import` (or a foreign checkpoint file)",
    "seed": "seed of every random draw of the command (default 0); the same seed gives the same numbers",
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        with _claim_out(args), silenced(bool(getattr(args, "no_progress", False))):
            return int(args.func(args) or 0)
    except Interrupted as exc:
        if debug:
            raise
        print(f"worldmodel: {exc}", file=sys.stderr)
        return exc.exit_code
    except WorldModelError as exc:
        if debug:
            raise
        print(f"worldmodel: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("worldmodel: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:           # a full disk, a read-only folder: the machine's refusal, not a bug
        if debug:
            raise
        from .safety import os_failure

        doing = "read" if exc.errno in (errno.ENOENT, errno.EISDIR) else "write"
        print(f"worldmodel: error: {os_failure(exc, doing=doing)}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as exc:
        from .safety import is_allocation_failure, memory_failure

        if debug or not is_allocation_failure(exc):
            raise
        print(f"worldmodel: error: {memory_failure(exc)}", file=sys.stderr)
        return 2


def _claim_out(args):
    """Claim the command's ``--out`` for this run (the main process of a distributed launch only)."""
    import contextlib

    out = getattr(args, "out", None)
    if not out or int(os.environ.get("RANK", "0")) != 0:
        return contextlib.nullcontext()
    from .safety import claim

    return claim(out, "--out")


if __name__ == "__main__":
    sys.exit(main())
