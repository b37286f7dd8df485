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

from worldmodel.detours import FinishedModel, run_kinds
from worldmodel.dfa import REJECT, World

from .world import OthelloWorld

END = "<game-over>"


class GameOverWorld(World):
    """An Othello world with one extra token, :data:`END`, valid exactly at finished positions."""

    def __init__(self, base: OthelloWorld):
        self.base = base
        self.tokens = tuple(base.tokens) + (END,)
        self.stop_tokens = frozenset({END})
        self.name = base.name

    def finished(self, state) -> bool:
        return state.over

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


class GameOverModel(FinishedModel):
    """A model's next-move distributions with an :data:`END` column the world fills in
    (:class:`worldmodel.detours.FinishedModel` over :class:`GameOverWorld`)."""

    def __init__(self, model, world: OthelloWorld):
        super().__init__(model, GameOverWorld(world), "squares")


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
