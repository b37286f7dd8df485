"""Playing chess with a model under detours: a horizon and a game-over token.

Chess games need not end, so a detour trial asks a model to play both sides
greedily from a held-out opening for ``plies`` more moves (or until the game ends by
mate or stalemate), every move legal. The generic runner (:mod:`worldmodel.detours`)
ends a trial at a stop token, so the world and the model are wrapped:
:class:`HorizonWorld` adds :data:`END`, valid exactly when the game is over or the
sequence has reached the horizon (its states are ``(position, length)``), and
:class:`HorizonModel` puts all mass on :data:`END` there and returns the model's own
distribution everywhere else (``END`` has probability 0). The model is never asked to
predict the end.
"""

from __future__ import annotations

from typing import Sequence

from worldmodel.detours import FinishedModel, run_kinds
from worldmodel.dfa import REJECT, World
from worldmodel.errors import WorldModelError

from .world import ChessWorld

END = "<end>"


class HorizonWorld(World):
    """A chess world whose sequences end with :data:`END` at game over or after ``horizon`` moves."""

    def __init__(self, base: ChessWorld, horizon: int):
        self.base, self.horizon = base, int(horizon)
        self.tokens = tuple(base.tokens) + (END,)
        self.stop_tokens = frozenset({END})
        self.name = base.name

    def finished(self, state) -> bool:
        return state[0].over or state[1] >= self.horizon

    def initial_state(self):
        return (self.base.initial_state(), 0)

    def step(self, state, token):
        if state is REJECT:
            return REJECT
        if token == END:
            return state if self.finished(state) else REJECT
        if self.finished(state):
            return REJECT
        nxt = self.base.step(state[0], token)
        return REJECT if nxt is REJECT else (nxt, state[1] + 1)

    def valid_tokens(self, state):
        if state is REJECT:
            return []
        return [END] if self.finished(state) else self.base.valid_tokens(state[0])

    def state_key(self, state):
        return "REJECT" if state is REJECT else f"{self.base.state_key(state[0])}@{state[1]}"


class HorizonModel(FinishedModel):
    """A model's move distributions with an :data:`END` column the world fills in
    (:class:`worldmodel.detours.FinishedModel` over a :class:`HorizonWorld`)."""

    def __init__(self, model, world: HorizonWorld):
        super().__init__(model, world, "moves")


def play_detours(model, world: ChessWorld, starts, kinds: Sequence[str], ps: Sequence[float], plies: int,
                 seed: int = 0, progress: bool = False):
    """Detours from each opening in ``starts``: ``plies`` more moves (or to mate/stalemate), every one legal.

    Returns :func:`worldmodel.detours.run_kinds`'s ``(results, trials)``.
    """
    if len({len(s) for s in starts}) != 1:  # one horizon: every start gets the same number of moves to play
        raise WorldModelError("chess detour openings must all have the same length")
    horizon = len(starts[0]) + int(plies)
    wrapped = HorizonWorld(world, horizon)
    return run_kinds(HorizonModel(model, wrapped), wrapped, starts, kinds, list(ps), max_len=horizon + 1,
                     seed=seed, progress=progress)
