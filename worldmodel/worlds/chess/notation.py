"""Move notation for the chess world: the two alphabets and SAN as PGN writes it.

**SAN** (standard algebraic notation, the notation of PGN files and of Karvonen's
``;1.e4 e5 2.Nf3 …`` strings). A token is the whole move string *with* its check
suffix, exactly as python-chess (and every PGN writer) prints it: ``Nf3``, ``Nf3+`` and
``Nf3#`` are three tokens, and the legal one depends on the position. So a
character-level model's strings map one to one onto world tokens, and writing ``Qh5``
where the move gives check is an invalid token, as it is an invalid PGN.

The alphabet is fixed in advance: every string SAN can produce, enumerated from move
geometry on an empty board (:func:`san_alphabet`): for a knight, bishop, rook or queen
every destination, every origin the piece's geometry allows, each of the four
disambiguation forms (none, file, rank, full square; the rules pick one, but which one
depends on the other pieces, and promotions allow up to ten of a kind), with and
without ``x``; king moves without disambiguation; pawn pushes and captures (ranks 2–7),
promotions to Q, R, B, N on ranks 1 and 8; ``O-O`` and ``O-O-O``; each of them bare,
with ``+`` and with ``#``. That gives 42,018 strings, a superset of those that can
occur (``tests/test_chess_world.py`` checks that every move of many random games is in
it). Tokens are ordered by their bare form, each bare form followed by its ``+`` and
``#`` variants, so the legal moves of a position, sorted by token index, are sorted by
their bare SAN: :meth:`~.world.ChessWorld.random_walk` uses that to avoid working out
the suffix of moves it does not play.

**UCI** (``e2e4``, ``e7e8q``; castling as the king's move ``e1g1``): 1,968 tokens, every
queen-line and knight move between two squares plus the 176 promotions. No suffixes,
so a move costs no check test; the states and metrics are the same as with SAN.

:func:`san_bare` writes a legal move's SAN without its suffix, from the legal moves of
the position (disambiguation as the PGN standard and python-chess do it: only legal
moves of the same piece type to the same square count; file if it separates them,
else rank, else both); :func:`suffix` adds ``+`` or ``#``. Together they equal
``chess.Board.san`` (checked in the tests).
"""

from __future__ import annotations

import re
from functools import lru_cache

import chess

PIECES = {chess.KNIGHT: "N", chess.BISHOP: "B", chess.ROOK: "R", chess.QUEEN: "Q", chess.KING: "K"}
FILES = "abcdefgh"
PROMOTIONS = "QRBN"
SUFFIXES = ("", "+", "#")


def _geometry_origins(piece_type: int, to: int) -> list[int]:
    """Squares from which ``piece_type`` reaches ``to`` on an empty board (moves are symmetric)."""
    board = chess.BaseBoard.empty()
    board.set_piece_at(to, chess.Piece(piece_type, chess.WHITE))
    return list(board.attacks(to))


@lru_cache(maxsize=1)
def san_bare_alphabet() -> tuple[str, ...]:
    """Every SAN string without check suffix, in a fixed order (see the module docstring)."""
    out: list[str] = []
    seen: set[str] = set()

    def add(s: str) -> None:
        if s not in seen:
            seen.add(s)
            out.append(s)

    add("O-O")
    add("O-O-O")
    for pt, sym in PIECES.items():
        for to in chess.SQUARES:
            dest = chess.square_name(to)
            forms = [""]
            if pt != chess.KING:
                origins = _geometry_origins(pt, to)
                forms += sorted({FILES[chess.square_file(f)] for f in origins})
                forms += sorted({str(chess.square_rank(f) + 1) for f in origins})
                forms += sorted(chess.square_name(f) for f in origins)
            for form in forms:
                for cap in ("", "x"):
                    add(f"{sym}{form}{cap}{dest}")
    for f in range(8):
        for rank in range(1, 9):
            dest = f"{FILES[f]}{rank}"
            promos = PROMOTIONS if rank in (1, 8) else ("",)
            for p in promos:
                tail = f"={p}" if p else ""
                add(dest + tail)
                for df in (-1, 1):
                    if 0 <= f + df < 8:
                        add(f"{FILES[f + df]}x{dest}{tail}")
    return tuple(out)


@lru_cache(maxsize=1)
def san_alphabet() -> tuple[str, ...]:
    """Every SAN token: each bare string, then with ``+``, then with ``#`` (42,018 in all)."""
    return tuple(b + s for b in san_bare_alphabet() for s in SUFFIXES)


@lru_cache(maxsize=1)
def uci_alphabet() -> tuple[str, ...]:
    """Every UCI move: queen-line and knight moves between two squares, then promotions (1,968)."""
    out = []
    for frm in chess.SQUARES:
        for to in chess.SQUARES:
            if frm == to:
                continue
            df = abs(chess.square_file(frm) - chess.square_file(to))
            dr = abs(chess.square_rank(frm) - chess.square_rank(to))
            if df == 0 or dr == 0 or df == dr or {df, dr} == {1, 2}:
                out.append(chess.square_name(frm) + chess.square_name(to))
    for frm_rank, to_rank in ((6, 7), (1, 0)):
        for f in range(8):
            for df in (-1, 0, 1):
                if 0 <= f + df < 8:
                    base = chess.square_name(chess.square(f, frm_rank)) + chess.square_name(chess.square(f + df, to_rank))
                    out.extend(base + p.lower() for p in PROMOTIONS)
    return tuple(out)


def san_bare(board: chess.Board, move: chess.Move, legal: list[chess.Move]) -> str:
    """SAN of the legal ``move`` without check suffix; ``legal`` = the position's legal moves."""
    if board.is_castling(move):
        return "O-O" if chess.square_file(move.to_square) > chess.square_file(move.from_square) else "O-O-O"
    piece = board.piece_type_at(move.from_square)
    capture = board.is_capture(move)
    dest = chess.square_name(move.to_square)
    if piece == chess.PAWN:
        s = f"{FILES[chess.square_file(move.from_square)]}x{dest}" if capture else dest
        if move.promotion:
            s += "=" + chess.piece_symbol(move.promotion).upper()
        return s
    s = PIECES[piece]
    if piece != chess.KING:
        others = [m.from_square for m in legal
                  if m.to_square == move.to_square and m.from_square != move.from_square
                  and board.piece_type_at(m.from_square) == piece]
        if others:
            f, r = chess.square_file(move.from_square), chess.square_rank(move.from_square)
            if all(chess.square_file(o) != f for o in others):
                s += FILES[f]
            elif all(chess.square_rank(o) != r for o in others):
                s += str(r + 1)
            else:
                s += chess.square_name(move.from_square)
    return s + ("x" if capture else "") + dest


def suffix(board: chess.Board, move: chess.Move) -> str:
    """``#`` if ``move`` mates, ``+`` if it checks, else ``""``."""
    if not board.gives_check(move):
        return ""
    board.push(move)
    try:
        mate = not any(board.generate_legal_moves())
    finally:
        board.pop()
    return "#" if mate else "+"


_MOVE_NUMBER = re.compile(r"^\d+\.(\.\.)?")
_RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}


def movetext_moves(text: str) -> list[str]:
    """The SAN moves of one game's movetext: Karvonen's ``;1.e4 e5 2.Nf3`` or plain PGN
    (``1. e4 e5 2. Nf3 … 1-0``). Move numbers, ``;``, results, ``{comments}``, ``$n`` NAGs
    and ``!``/``?`` annotations are dropped; the moves are returned as written."""
    text = re.sub(r"\{[^}]*\}", " ", text).replace(";", " ")
    out = []
    for word in text.split():
        word = _MOVE_NUMBER.sub("", word)
        if not word or word in _RESULTS or word.startswith("$"):
            continue
        out.append(word.rstrip("!?"))
    return out
