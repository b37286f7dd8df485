"""``worldmodel chess-detours``: does a model keep playing legal chess when pushed off its path?

From the opening of each held-out game (its first ``--opening-moves`` moves) the model
plays both sides greedily (its top move) for ``--plies`` more moves, or until mate or
stalemate. With probability ``p`` per move its move is replaced by a detour
(:mod:`worldmodel.detours`): a uniformly random other legal move (``random``) or the legal
move it ranks lowest (``adversarial``). A trial succeeds when every move is legal. The
wrapping that lets the generic runner stop there is in :mod:`.play`; this module only
parses and prints.
"""

from __future__ import annotations

from pathlib import Path

from worldmodel import checkpoints
from worldmodel.detours import openings
from worldmodel.errors import WorldModelError

from .play import play_detours


def cmd_chess_detours(args) -> int:
    from worldmodel.detours import parse_kinds, parse_ps, report
    from worldmodel.evaluator import build_model
    from worldmodel.tasks import load_task

    task = load_task(args.task)
    if task.config.get("domain") != "chess":
        raise WorldModelError(f"task {task.name} is not a chess task (domain {task.config.get('domain')!r})")
    if bool(args.checkpoint) == bool(args.model):
        raise WorldModelError("give exactly one of --checkpoint DIR or --model true|untrained")
    kinds, ps = parse_kinds(args.kind), parse_ps(args.p)
    for name in ("trials", "plies"):
        if getattr(args, name) < 1:
            raise WorldModelError(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.opening_moves < 0:
        raise WorldModelError(f"--opening-moves must be >= 0, got {args.opening_moves}")
    domain = task.domain
    dataset = checkpoints.choose_dataset(domain.datasets(), args.dataset, args.checkpoint)
    from worldmodel.evaluator import missing_tokens

    model = build_model(task, args.checkpoint, args.model, seed=args.seed, device=args.device,
                        missing=args.missing_tokens)
    missing = missing_tokens(model, domain.world)
    if missing:
        print(f"note: the model lacks {len(missing)} of the world's tokens, scored at probability 0: {missing[:20]}")
    starts = openings(domain.sequences("test", dataset, args.data_dir), args.trials, args.opening_moves, args.seed)
    results, trials = play_detours(model, domain.world, starts, kinds, ps, args.plies, seed=args.seed,
                                   progress=not args.no_progress)
    source = args.checkpoint or args.model
    meta = {"task": task.name, "dataset": dataset, "model": source, "trials": len(starts),
            "opening_moves": args.opening_moves, "plies": args.plies, "seed": args.seed,
            "success": f"every move legal for {args.plies} moves or until mate or stalemate",
            **({"missing_tokens": missing} if missing else {})}
    report(Path(args.out), results, trials, meta,
           f"{task.name}: {source} from {len(starts)} {dataset} test openings of {args.opening_moves} moves, "
           f"{args.plies} moves to play")
    return 0


def register(subparsers) -> None:
    d = subparsers.add_parser("chess-detours", help="share of chess games a model plays legally under forced detours")
    d.add_argument("task")
    d.add_argument("--checkpoint")
    d.add_argument("--model", choices=["true", "untrained"], help="true: uniform over legal moves (always legal)")
    d.add_argument("--kind", default="random", help="random, adversarial, or both comma-separated")
    d.add_argument("--p", default="0,0.01,0.1,0.5,0.75", help="detour probabilities, comma-separated")
    d.add_argument("--trials", type=int, default=100, help="openings (distinct held-out games)")
    d.add_argument("--opening-moves", type=int, default=4, help="moves of each held-out game played first")
    d.add_argument("--plies", type=int, default=40, help="moves the model then plays (fewer if the game ends)")
    d.add_argument("--dataset", help="held-out games to take openings from (default: the checkpoint's, else the task's first)")
    d.add_argument("--data-dir")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--device", default="cpu")
    d.add_argument("--no-progress", action="store_true")
    d.add_argument("--out", required=True, help="JSON file with per-p results and every trial")
    d.add_argument("--missing-tokens", choices=["error", "zero"], default="error",
                   help="a checkpoint lacking world tokens: refuse it (default) or score them at probability 0")
    d.set_defaults(func=cmd_chess_detours)
