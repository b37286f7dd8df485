"""ByteSized32 commands: ``worldmodel bytesized32-validity GAME.py...`` (the corpus's technical validity crawl).

``worldmodel compare REFERENCE CANDIDATE`` (any two simulators) is a core command; the corpus-wide
reproduction is ``scripts/reproduce_bytesized32.py``.
"""

from __future__ import annotations

import argparse
import json


def cmd_validity(args) -> int:
    from worldmodel.sandbox import Limits
    from worldmodel.worlds.bytesized32.validity import check_validity

    limits = Limits(call_s=args.call_timeout)
    for path in args.games:
        v = check_validity(path, seed=args.seed, max_steps=args.max_steps, max_num_actions=args.max_num_actions,
                           limits=limits, unsafe=args.unsafe_no_sandbox, budget_s=args.budget_s)
        print(json.dumps({"file": path, **v.to_dict()}))
    return 0


def register(subparsers) -> None:
    v = subparsers.add_parser("bytesized32-validity", help="ByteSized32's technical validity check of text games",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("games", nargs="+", help="Python files with a TextGame class")
    v.add_argument("--seed", type=int, default=0, help="the game's randomSeed and the action sampling seed (0)")
    v.add_argument("--max-steps", type=int, default=3, help="crawl depth (3)")
    v.add_argument("--max-num-actions", type=int, default=100,
                   help="actions per verb at the first step; a tenth at later steps (100)")
    v.add_argument("--budget-s", type=float, default=900.0, help="wall clock of the whole crawl (900 s, as the corpus)")
    v.add_argument("--call-timeout", type=float, default=300.0, help="seconds one request may take (300)")
    v.add_argument("--unsafe-no-sandbox", action="store_true", help="run without the OS sandbox (trusted code only)")
    v.set_defaults(func=cmd_validity)
