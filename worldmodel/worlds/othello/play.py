"""Playing whole Othello games with a model: the game-over token and held-out openings.

Othello transcripts have no end token, and the generic detour runner
(:mod:`worldmodel.detours`) ends a trial at a stop token; so the world and the model
are wrapped in :class:`GameOverWorld` and :class:`GameOverModel`, which add a token
:data:`END` that the *world* plays once the game is over. The model is never asked to
predict the end: at a finished position the wrapper puts all mass on ``END``;
everywhere else it returns the model's own distribution unchanged (``END`` has
probability 0).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from worldmodel.detours import run_kinds
from worldmodel.dfa import REJECT, World
from worldmodel.errors import WorldModelError

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
        self.name = model.name
        self.missing_tokens = frozenset(getattr(model, "missing_tokens", ()))  # duck-typed players may lack it
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


def play_detours(model, world: OthelloWorld, starts, kinds: Sequence[str], ps: Sequence[float], seed: int = 0,
                 progress: bool = False):
    """Detours on whole games: ``model`` plays on from each opening in ``starts`` until the game is over.

    Returns :func:`worldmodel.detours.run_kinds`'s ``(results, trials)``; a game
    succeeds when every move is legal until neither side can move.
    """
    max_len = world.geometry.squares - 4 + 1  # every move of a game, then END
    return run_kinds(GameOverModel(model, world), GameOverWorld(world), starts, kinds, list(ps), max_len=max_len,
                     seed=seed, progress=progress)


def move_stats(results: list[dict], trials: list[dict]) -> list[dict]:
    """Add to each (kind, p) result dict two finer measures than the all-or-nothing share.

    ``legal_moves``: mean number of legal moves played (detours included, the world's
    game-over token not counted) before the first illegal one or the end of the game.
    ``illegal_rate``: illegal moves per move the model chose itself (not replaced by a
    detour), pooled over trials: the model's error rate once detours have moved it off
    the games it knows.
    """
    out = []
    for r in results:
        group = [t for t in trials if t["kind"] == r["kind"] and t["p"] == r["p"]]
        legal = [t["steps"] - (t["reason"] == "invalid token") - bool(t["success"]) for t in group]
        own = sum(t["steps"] - t["replaced"] - bool(t["success"]) for t in group)
        illegal = sum(t["reason"] == "invalid token" for t in group)
        out.append({**r, "legal_moves": float(np.mean(legal)) if legal else float("nan"),
                    "own_moves": own, "illegal_own_moves": illegal,
                    "illegal_rate": illegal / own if own else float("nan")})
    return out
