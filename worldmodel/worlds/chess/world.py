"""Chess as a DFA: a token is a move, a state is the position.

**What the world models.** The rules of movement (python-chess's legal moves: checks,
pins, castling through and out of check, en passant, promotion) and the two endings
that follow from them: checkmate and stalemate, after which no token is valid. The
draw rules are *not* modelled: threefold and fivefold repetition, the 50- and 75-move
rules and insufficient material end a game by a claim or an arbiter's ruling about
the result, not by which moves are legal, and they differ between sites. So a game
may go on after a repetition, and nothing in the state counts moves or remembers
earlier positions. (The data generators still stop games where python-chess's
``outcome()`` says a game is over; see :mod:`.players`.)

**States.** A :class:`ChessState` is the *position* in the sense of the repetition
rule: piece placement, side to move, castling rights (python-chess's cleaned rights:
a right whose king or rook has moved is gone), and the en passant square only when an
en passant capture is legal. It is the EPD string of the position
(``chess.Board.epd()``). Two unfinished states are equal exactly when their positions
are; this is Myhill–Nerode equivalence for these rules in the direction that matters
(equal positions have the same legal moves and successors, so the same futures, and
move counters or history play no part); different positions are taken as different
classes, which every position a game reaches here bears out, although no proof
excludes a contrived pair of positions with identical futures. All finished positions
(mate, stalemate) accept the same empty future, so they are one state: they compare
and hash equal (``state_key`` ``"end"``) while still carrying their board for the
probe.

**Tokens.** ``notation = "san"`` (default): SAN with ``+``/``#`` exactly as PGN writes
it, from the fixed 42,018-string alphabet of :mod:`.notation`; ``"uci"``: the 1,968
UCI moves. A token is valid when it is the exact spelling of a legal move in that
notation (a SAN move written without its check sign is invalid).
"""

from __future__ import annotations

from functools import lru_cache

import chess
import numpy as np

from ...dfa import REJECT, World
from ...errors import WorldModelError
from .notation import san_alphabet, san_bare, san_bare_alphabet, suffix, uci_alphabet

NOTATIONS = ("san", "uci")
END_KEY = "end"
#: probe labels: 0 empty, 1-6 white pawn knight bishop rook queen king, 7-12 the same for black
N_PIECE_LABELS = 13


class ChessState:
    """An immutable position: its EPD (``epd``) and whether the game is over (``over``).

    Equality and hash use :attr:`key`: the EPD, or ``"end"`` for every finished game.
    """

    __slots__ = ("epd", "over", "key")

    def __init__(self, epd: str, over: bool):
        self.epd = epd
        self.over = bool(over)
        self.key = END_KEY if over else epd

    def __eq__(self, other):
        return isinstance(other, ChessState) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"ChessState({self.epd!r}{', over' if self.over else ''})"

    def board(self) -> chess.Board:
        """A fresh python-chess board of this position (move counters 0 and 1)."""
        return chess.Board(self.epd + " 0 1")

    @classmethod
    def of(cls, board: chess.Board) -> "ChessState":
        return cls(board.epd(), not any(board.generate_legal_moves()))


class ChessWorld(World):
    """The chess DFA in SAN (default) or UCI notation."""

    def __init__(self, notation: str = "san", cache_size: int = 20000):
        if notation not in NOTATIONS:
            raise WorldModelError(f"chess notation must be one of {', '.join(NOTATIONS)}, not {notation!r}")
        self.notation = notation
        self.tokens = san_alphabet() if notation == "san" else uci_alphabet()
        self.name = f"chess-{notation}"
        #: Karvonen's strings ``;1.e4 e5 2.Nf3 …``: the layout a character-level import assumes
        self.text_layout = "pgn" if notation == "san" else None
        self._index = {t: i for i, t in enumerate(self.tokens)}
        # SAN: index of a bare form = index of its first (suffix-free) token
        self._bare_index = {b: 3 * i for i, b in enumerate(san_bare_alphabet())} if notation == "san" else None
        self._moves = lru_cache(maxsize=cache_size)(self._legal_tokens)
        self._next = lru_cache(maxsize=10 * cache_size)(self._successor)
        self._start = ChessState.of(chess.Board())

    # -- the DFA --------------------------------------------------------------------
    def initial_state(self) -> ChessState:
        return self._start

    def _legal_tokens(self, epd: str) -> dict[str, chess.Move]:
        """Token -> move for every legal move of a position, in token order (cached by EPD)."""
        board = chess.Board(epd + " 0 1")
        legal = list(board.generate_legal_moves())
        if self.notation == "uci":
            pairs = [(m.uci(), m) for m in legal]
        else:
            pairs = [(san_bare(board, m, legal) + suffix(board, m), m) for m in legal]
        pairs.sort(key=lambda p: self._index[p[0]])
        return dict(pairs)

    def _successor(self, epd: str, token: str):
        move = self._moves(epd).get(token)
        if move is None:
            return REJECT
        board = chess.Board(epd + " 0 1")
        board.push(move)
        return ChessState.of(board)

    def step(self, state, token):
        if state is REJECT or state.over:
            return REJECT
        return self._next(state.epd, token)  # cached: metrics replay the same prefixes many times

    def valid_tokens(self, state) -> list[str]:
        if state is REJECT or state.over:
            return []
        return list(self._moves(state.epd))

    def move_of(self, state: ChessState, token: str) -> chess.Move | None:
        """The python-chess move a valid token plays (None if it is not valid)."""
        if state is REJECT or state.over:
            return None
        return self._moves(state.epd).get(token)

    def token_of(self, board: chess.Board, move: chess.Move, legal=None) -> str:
        """The token of a legal ``move`` on ``board`` in this world's notation."""
        if self.notation == "uci":
            return move.uci()
        legal = list(board.generate_legal_moves()) if legal is None else legal
        return san_bare(board, move, legal) + suffix(board, move)

    # -- fast paths (same results as the generic versions) ---------------------------
    def _ordered(self, board: chess.Board) -> list[chess.Move]:
        """Legal moves in the order of their tokens, computing no check suffix."""
        legal = list(board.generate_legal_moves())
        if self.notation == "uci":
            index = self._index
            return sorted(legal, key=lambda m: index[m.uci()])
        bare = self._bare_index
        return sorted(legal, key=lambda m: bare[san_bare(board, m, legal)])

    def random_walk(self, state, max_len: int, rng: np.random.Generator) -> tuple[str, ...]:
        """The generic :meth:`~worldmodel.dfa.World.random_walk` on one python-chess board.

        Same tokens and the same ``rng.integers(len(options))`` draw per step: the legal
        moves are sorted by token index, which for SAN is the order of their bare forms
        (:mod:`.notation`), so only the move played needs its check suffix.
        """
        if state is REJECT or state.over:
            return ()
        board = state.board()
        out: list[str] = []
        while len(out) < max_len:
            moves = self._ordered(board)
            if not moves:
                break
            move = moves[int(rng.integers(len(moves)))]
            out.append(self.token_of(board, move, moves))
            board.push(move)
        return tuple(out)

    def first_rejection(self, state, suffix_tokens) -> int | None:
        """The generic :meth:`~worldmodel.dfa.World.first_rejection` on one board: the same answers."""
        if state is REJECT:
            return 0 if len(suffix_tokens) else None
        board = state.board()
        if state.over:
            return 0 if len(suffix_tokens) else None
        for i, tok in enumerate(suffix_tokens):
            legal = list(board.generate_legal_moves())
            move = self._parse(board, tok, legal) if legal else None
            if move is None:
                return i
            board.push(move)
        return None

    def _parse(self, board: chess.Board, token: str, legal: list[chess.Move]) -> chess.Move | None:
        """The legal move whose exact spelling is ``token``, else None (no cache filled)."""
        try:
            move = chess.Move.from_uci(token) if self.notation == "uci" else board.parse_san(token)
        except ValueError:
            return None
        if move not in legal:
            return None
        return move if self.token_of(board, move, legal) == token else None

    # -- reports and probes ----------------------------------------------------------
    def state_key(self, state) -> str:
        """The EPD of an unfinished position, ``"end"`` for a finished game."""
        if state is REJECT:
            return "REJECT"
        return state.key

    def probe_targets(self, state) -> np.ndarray:
        """One label per square (index ``a1 = 0 … h8 = 63``), as Karvonen's piece probe:
        0 empty, 1–6 a white pawn, knight, bishop, rook, queen, king, 7–12 the same in black."""
        board = chess.BaseBoard(state.epd.split(" ")[0])
        out = np.zeros(64, dtype=np.int64)
        for sq, piece in board.piece_map().items():
            out[sq] = piece.piece_type + (0 if piece.color == chess.WHITE else 6)
        return out
