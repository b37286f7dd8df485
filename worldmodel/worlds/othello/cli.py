"""``worldmodel othello-detours``: does a model finish games with legal moves when pushed off its path?

From the opening of each held-out game (its first ``--opening-moves`` moves), the model
plays both sides greedily (its top-1 square each move). With probability ``p`` per move
its square is replaced by a detour (:mod:`worldmodel.detours`): a uniformly random other
legal move (``random``) or the legal move it ranks lowest (``adversarial``). A game
succeeds when every move is legal until the game is over (neither side can move).

The game-over wrapping that lets the generic detour runner stop at the end of a game is
in :mod:`worldmodel.worlds.othello.play`; this module only parses and prints.
"""

from __future__ import annotations

from pathlib import Path

from worldmodel import checkpoints
from worldmodel.detours import openings
from worldmodel.errors import WorldModelError

from .play import play_detours


def cmd_othello_detours(args) -> int:
    from worldmodel.commands.common import one_model
    from worldmodel.detours import parse_kinds, parse_ps, report
    from worldmodel.evaluator import build_model
    from worldmodel.tasks import load_task

    task = load_task(args.task)
    if task.config.get("domain") != "othello":
        raise WorldModelError(f"task {task.name} is not an Othello task (domain {task.config.get('domain')!r})")
    one_model(args)
    kinds = parse_kinds(args.kind)
    ps = parse_ps(args.p)
    if args.trials < 1:
        raise WorldModelError(f"--trials must be at least 1, got {args.trials}")
    if args.opening_moves < 0:
        raise WorldModelError(f"--opening-moves must be >= 0, got {args.opening_moves}")
    domain = task.domain
    world = domain.world
    dataset = checkpoints.choose_dataset(domain.datasets(), args.dataset, args.checkpoint)
    model = build_model(task, args.checkpoint, args.model, seed=args.seed, device=args.device)
    starts = openings(domain.sequences("test", dataset, args.data_dir), args.trials, args.opening_moves, args.seed)
    results, trials = play_detours(model, world, starts, kinds, ps, seed=args.seed, progress=not args.no_progress)
    source = args.checkpoint or args.model
    meta = {"task": task.name, "dataset": dataset, "model": source, "trials": len(starts),
            "opening_moves": args.opening_moves, "seed": args.seed,
            "success": "every move legal until neither side can move"}
    report(Path(args.out), results, trials, meta,
           f"{task.name}: {source} from {len(starts)} {dataset} test openings of {args.opening_moves} moves")
    return 0


def register(subparsers) -> None:
    d = subparsers.add_parser("othello-detours", help="share of Othello games a model finishes legally under forced detours")
    d.add_argument("task")
    d.add_argument("--checkpoint")
    d.add_argument("--model", choices=["true", "untrained"], help="true: uniform over legal moves (always finishes)")
    d.add_argument("--kind", default="random",
                   help="which detours: random (default) or adversarial; give both as random,adversarial")
    d.add_argument("--p", default="0,0.01,0.1,0.5,0.75", help="detour probabilities, comma-separated")
    d.add_argument("--trials", type=int, default=100, help="openings (distinct held-out games)")
    d.add_argument("--opening-moves", type=int, default=5, help="moves of each held-out game played before the model takes over")
    d.add_argument("--dataset", help="held-out games to take openings from (default: the checkpoint's, else the task's first)")
    d.add_argument("--data-dir")
    d.add_argument("--seed", type=int, default=0, help="seed of the openings and the detours (default 0)")
    d.add_argument("--device", default="cpu")
    d.add_argument("--no-progress", action="store_true")
    d.add_argument("--out", required=True, help="JSON file with per-p results and every trial")
    d.set_defaults(func=cmd_othello_detours)
