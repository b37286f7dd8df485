"""Othello as a DFA: the state is the board plus the side to move, a token is a square.

A token (``"a1"`` … ``"h8"``) is valid when it is a legal move for the side to move;
passes are implicit (the engine resolves them after every move), so a move transcript
without pass tokens is exactly a word of this DFA, and a finished game accepts no
further token. The alphabet leaves out the four centre squares, which are never
playable (60 tokens on 8×8, 32 on 6×6).

States are :class:`~.engine.Position` objects, hashable and equal exactly when the
board and the side to move are equal; every finished game has side
:data:`~.engine.GAME_OVER`. This is the paper's notion of Othello state (Vafa et al.,
App. D, following Li et al.): it is the Myhill–Nerode class except for two corner
cases the metrics avoid or tolerate: all finished boards accept the same (empty)
future, and in principle two different boards could allow the same move trees. The
:class:`~.sampler.OthelloSampler` draws only unfinished positions.
"""

from __future__ import annotations

import numpy as np

from ...dfa import REJECT, World
from .engine import BLACK, GAME_OVER, Geometry, Position, bits, first_illegal, random_continuation

EMPTY_LABEL, MINE_LABEL, THEIRS_LABEL = 0, 1, 2


class OthelloWorld(World):
    """The ``n × n`` Othello DFA (``n`` even; 8 is the real game)."""

    def __init__(self, size: int = 8):
        self.geometry = Geometry(int(size))
        self.size = self.geometry.n
        centre = self.geometry.centre()
        self.tokens = tuple(self.geometry.name(i) for i in range(self.geometry.squares) if not (centre >> i) & 1)
        self.name = f"othello-{self.size}x{self.size}"
        self._index = {t: self.geometry.index(t) for t in self.tokens}
        self._names = [self.geometry.name(i) for i in range(self.geometry.squares)]

    def initial_state(self) -> Position:
        return Position.start(self.size)

    def step(self, state, token):
        if state is REJECT:
            return REJECT
        sq = self._index.get(token)
        if sq is None:
            return REJECT
        nxt = state.play(sq)
        return REJECT if nxt is None else nxt

    def valid_tokens(self, state) -> list[str]:
        if state is REJECT:
            return []
        return [self._names[i] for i in bits(state.legal())]

    def random_walk(self, state, max_len: int, rng: np.random.Generator) -> tuple[str, ...]:
        """The generic :meth:`~worldmodel.dfa.World.random_walk`, on bitboards.

        Same tokens and same draws from ``rng`` as the generic walk over
        :meth:`valid_tokens` (Othello has no stop token), several times faster:
        :func:`~.engine.random_continuation` plays on two ints, with no position
        object or token list per step.
        """
        if state is REJECT:
            return ()
        names = self._names
        return tuple(names[sq] for sq in random_continuation(state, max_len, rng))

    def first_rejection(self, state, suffix) -> int | None:
        """The generic :meth:`~worldmodel.dfa.World.first_rejection`, on bitboards
        (:func:`~.engine.first_illegal`): the same answers, no position object per move."""
        if state is REJECT:
            return 0 if len(suffix) else None
        index = self._index
        return first_illegal(state, (index.get(t, -1) for t in suffix))

    def state_key(self, state) -> str:
        """``<black hex>/<white hex>/<side>``, side ``b``, ``w`` or ``end``."""
        if state is REJECT:
            return "REJECT"
        side = {BLACK: "b", GAME_OVER: "end"}.get(state.side, "w")
        return f"{state.black:x}/{state.white:x}/{side}"

    def probe_targets(self, state) -> np.ndarray:
        """Per square (index ``row * n + col``): 0 empty, 1 the side to move's, 2 the other's.

        After the game ends nobody is to move; the labels are then from black's side.
        """
        own, opp = state.own_opp()
        n2 = self.geometry.squares
        out = np.zeros(n2, dtype=np.int64)
        for i in bits(own):
            out[i] = MINE_LABEL
        for i in bits(opp):
            out[i] = THEIRS_LABEL
        return out

    def square_index(self, token: str) -> int:
        return self._index[token]
