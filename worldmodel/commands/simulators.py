"""``worldmodel compare REFERENCE CANDIDATE``: two simulators (Python files) compared as worlds.

The library is :mod:`worldmodel.compare` (and :mod:`worldmodel.simulator`, :mod:`worldmodel.sandbox`);
this module only reads the options and prints.
"""

from __future__ import annotations


def cmd_compare(args) -> int:
    from ..compare import compare, comparison_markdown
    from ..datasets import cache_dir
    from ..results import check_writable, write_json_atomic
    from ..sandbox import Limits
    from ..simulator import SimulatorSpec

    if args.out:
        check_writable(args.out)
    spec = SimulatorSpec.load(args.spec) if args.spec else SimulatorSpec()
    cand_spec = SimulatorSpec.load(args.candidate_spec) if args.candidate_spec else spec
    limits = Limits(call_s=args.call_timeout, memory_mb=args.memory_mb)
    cache = None if args.no_cache else (args.cache or cache_dir() / "simulators")
    result = compare(args.reference, args.candidate, spec, cand_spec, max_states=args.max_states,
                     max_depth=args.max_depth, per_verb=args.per_verb, trials=args.trials, M=args.M,
                     prefix_len=args.prefix_len, limits=limits, unsafe=args.unsafe_no_sandbox, cache=cache,
                     progress=not args.no_progress)
    print(comparison_markdown(result))
    if args.out:
        write_json_atomic(args.out, result.to_json())
    return 0


def register(sub) -> None:
    c = sub.add_parser("compare", help="score a candidate simulator (a Python file) against a reference simulator")
    c.add_argument("reference", help="the reference simulator, a Python file (ByteSized32's TextGame convention "
                                     "unless --spec says otherwise)")
    c.add_argument("candidate", help="the candidate simulator, a Python file")
    c.add_argument("--spec", help="TOML/JSON naming the simulator's class, methods and fingerprint exclusions")
    c.add_argument("--candidate-spec", help="the candidate's own spec (default: --spec)")
    c.add_argument("--max-states", type=int, default=20000, help="crawl bound: states per simulator (20,000)")
    c.add_argument("--max-depth", type=int, help="crawl bound: actions from the start (default: none)")
    c.add_argument("--per-verb", type=int, help="try at most N actions of each verb per state (default: all)")
    c.add_argument("--trials", type=int, default=100, help="prefix pairs per metric, walks for next-token (100)")
    c.add_argument("--M", type=int, default=30, help="continuations sampled per prefix (30)")
    c.add_argument("--prefix-len", type=int, default=8, help="longest prefix drawn (8 actions)")
    c.add_argument("--call-timeout", type=float, default=60.0, help="seconds one request to a simulator may take")
    c.add_argument("--memory-mb", type=int, default=2048, help="address space of each simulator process (MiB)")
    c.add_argument("--cache", help="folder for crawl caches (default: the user cache's simulators/)")
    c.add_argument("--no-cache", action="store_true", help="crawl again, keep nothing")
    c.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run the simulators without the OS sandbox (only for code you trust)")
    c.add_argument("--out", help="JSON with every number, the disagreement and the witnesses")
    c.add_argument("--no-progress", action="store_true")
    c.set_defaults(func=cmd_compare)
