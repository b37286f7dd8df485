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
``--debug`` for the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import registry
from .commands import core, simulators
from .errors import WorldModelError


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
