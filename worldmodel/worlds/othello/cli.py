"""``worldmodel othello-detours``: does a model finish games with legal moves when pushed off its path?

From the opening of each held-out game (its first ``--opening-moves`` moves), the model
plays both sides greedily (its top-1 square each move). With probability ``p`` per move
its square is replaced by a detour (:mod:`worldmodel.detours`): a uniformly random other
legal move (``random``) or the legal move it ranks lowest (``adversarial``). A game
succeeds when every move is legal until the game is over (neither side can move).

Othello transcripts have no end token, and the generic detour runner ends a trial at a
stop token; so here the world and the model are wrapped in :class:`GameOverWorld` and
:class:`GameOverModel`, which add a token :data:`END` that the *world* plays once the
game is over. The model is never asked to predict the end: at a finished position the
wrapper puts all mass on ``END``; everywhere else it returns the model's own
distribution unchanged (``END`` has probability 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...dfa import REJECT, World
from ...errors import WorldModelError
from .world import OthelloWorld

END = "<game-over>"


class GameOverWorld(World):
    """An Othello world with one extra token, :data:`END`, valid exactly at finished positions."""

    def __init__(self, base: OthelloWorld):
        self.base = base
        self.tokens = tuple(base.tokens) + (END,)
        self.stop_tokens = frozenset({END})
        self.name = base.name

    def initial_state(self):
        return self.base.initial_state()

    def step(self, state, token):
        if state is REJECT:
            return REJECT
        if token == END:
            return state if state.over else REJECT
        return self.base.step(state, token)

    def valid_tokens(self, state):
        if state is REJECT:
            return []
        return [END] if state.over else self.base.valid_tokens(state)

    def state_key(self, state):
        return self.base.state_key(state)


class GameOverModel:
    """A model's next-move distributions with an :data:`END` column the world fills in.

    Offers the two things :func:`worldmodel.detours.run_detours` uses: ``tokens`` and
    ``next_token_probs``. Positions of prefixes are cached, so each call costs one
    engine step per prefix, not one per move of it.
    """

    def __init__(self, model, world: OthelloWorld):
        if tuple(model.tokens) != tuple(world.tokens):
            raise WorldModelError(f"the model's tokens do not match the {world.name} world's squares")
        self.model = model
        self.world = world
        self.tokens = tuple(model.tokens) + (END,)
        self.name = getattr(model, "name", "model")
        self._states: dict[tuple[str, ...], object] = {(): world.initial_state()}

    def _state(self, prefix: tuple[str, ...]):
        s = self._states.get(prefix)
        if s is None:
            parent = self._state(prefix[:-1])
            s = REJECT if parent is REJECT else self.world.step(parent, prefix[-1])
            self._states[prefix] = s
        return s

    def next_token_probs(self, prefixes):
        prefixes = [tuple(p) for p in prefixes]
        over = np.array([(s := self._state(p)) is not REJECT and s.over for p in prefixes], dtype=bool)
        out = np.zeros((len(prefixes), len(self.tokens)))
        live = np.flatnonzero(~over)
        if len(live):
            out[live, :-1] = self.model.next_token_probs([prefixes[i] for i in live])
        out[over, -1] = 1.0
        return out


def openings(sequences, n: int, moves: int, seed: int) -> list[list[str]]:
    """The first ``moves`` moves of ``n`` distinct games drawn (seeded) from ``sequences``."""
    long_enough = [s for s in sequences if len(s) > moves]
    if not long_enough:
        raise WorldModelError(f"no held-out game has more than {moves} moves")
    order = np.random.default_rng(seed).permutation(len(long_enough))
    return [list(long_enough[i][:moves]) for i in order[:n]]


def cmd_othello_detours(args) -> int:
    from ...cli import build_model
    from ...detours import parse_kinds, parse_ps, report, run_kinds
    from ...tasks import load_task

    task = load_task(args.task)
    if task.config.get("domain") != "othello":
        raise WorldModelError(f"task {task.name} is not an Othello task (domain {task.config.get('domain')!r})")
    if bool(args.checkpoint) == bool(args.model):
        raise WorldModelError("give exactly one of --checkpoint DIR or --model true|untrained")
    kinds = parse_kinds(args.kind)
    ps = parse_ps(args.p)
    if args.trials < 1:
        raise WorldModelError(f"--trials must be at least 1, got {args.trials}")
    if args.opening_moves < 0:
        raise WorldModelError(f"--opening-moves must be >= 0, got {args.opening_moves}")
    domain = task.domain
    world = domain.world
    dataset = args.dataset
    if dataset is None and args.checkpoint:
        from ...train import checkpoint_dataset

        dataset = checkpoint_dataset(args.checkpoint)
    dataset = dataset or domain.datasets()[0]
    model = build_model(task, args.checkpoint, args.model, seed=args.seed, device=args.device)
    starts = openings(domain.sequences("test", dataset, args.data_dir), args.trials, args.opening_moves, args.seed)
    wrapped_world, wrapped_model = GameOverWorld(world), GameOverModel(model, world)
    max_len = world.geometry.squares - 4 + 1  # every move of a game, then END
    results, trials = run_kinds(wrapped_model, wrapped_world, starts, kinds, ps, max_len=max_len,
                                seed=args.seed, progress=not args.no_progress)
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
    d.add_argument("--kind", default="random", help="random, adversarial, or both comma-separated")
    d.add_argument("--p", default="0,0.01,0.1,0.5,0.75", help="detour probabilities, comma-separated")
    d.add_argument("--trials", type=int, default=100, help="openings (distinct held-out games)")
    d.add_argument("--opening-moves", type=int, default=5, help="moves of each held-out game played before the model takes over")
    d.add_argument("--dataset", help="held-out games to take openings from (default: the checkpoint's, else the task's first)")
    d.add_argument("--data-dir")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--device", default="cpu")
    d.add_argument("--no-progress", action="store_true")
    d.add_argument("--out", required=True, help="JSON file with per-p results and every trial")
    d.set_defaults(func=cmd_othello_detours)
