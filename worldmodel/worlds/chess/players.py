"""Who plays the training games: a uniformly random player, a material-greedy one, any UCI engine.

Every game starts from the initial position and ends where python-chess's
``Board.outcome()`` says it is over (checkmate, stalemate, insufficient material, the
75-move rule, fivefold repetition: the endings FIDE makes automatic) or after
``max_plies`` moves, whichever comes first. A game cut at the ply cap is still a valid
prefix in the world, which accepts every legal continuation.

* :class:`RandomPlayer`: the legal moves sorted by token index (:mod:`.notation`), one
  drawn uniformly (``rng.integers``), as :meth:`~.world.ChessWorld.random_walk` does.
* :class:`GreedyPlayer`: a one-ply material player ("a simple engine", no search): each
  legal move scores the value of what it captures plus, for a promotion, the value
  gained, minus the moving piece's value when the opponent attacks its new square, and
  1000 for a mate; it plays a best-scoring move, ties drawn uniformly. Quiet positions
  are all ties, so its openings look random; it takes free material, avoids hanging
  pieces and mates in one when it can.
* :class:`EnginePlayer`: any UCI engine through ``chess.engine`` (e.g. Stockfish) at a
  fixed node budget, one thread; optional (nothing in the package needs an engine).

Game ``g`` of a data set with seed ``s`` draws from ``default_rng([s, tag, g])`` (``tag``
names the player), so a game does not depend on how many others are generated.
"""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np

from ...errors import WorldModelError

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}
MATE_SCORE = 1000


class RandomPlayer:
    tag = 0x52414E  # "RAN"

    def choose(self, world, board: chess.Board, moves: list[chess.Move], rng: np.random.Generator) -> chess.Move:
        return moves[int(rng.integers(len(moves)))]


class GreedyPlayer:
    tag = 0x475244  # "GRD"

    @staticmethod
    def score(board: chess.Board, move: chess.Move) -> int:
        """Material the move wins (one ply, as described in the module docstring)."""
        gain = 0
        if board.is_en_passant(move):
            gain += VALUES[chess.PAWN]
        else:
            captured = board.piece_type_at(move.to_square)
            if captured:
                gain += VALUES[captured]
        moving = move.promotion or board.piece_type_at(move.from_square)
        if move.promotion:
            gain += VALUES[move.promotion] - VALUES[chess.PAWN]
        board.push(move)
        try:
            if board.is_checkmate():
                return MATE_SCORE
            if board.is_attacked_by(board.turn, move.to_square):
                gain -= VALUES[moving]
        finally:
            board.pop()
        return gain

    def choose(self, world, board, moves, rng):
        scores = np.array([self.score(board, m) for m in moves])
        best = np.flatnonzero(scores == scores.max())
        return moves[int(best[int(rng.integers(len(best)))])]


class EnginePlayer:
    """A UCI engine at ``nodes`` nodes per move; the rng picks nothing (engines at a node budget on
    one thread are deterministic), so its games differ only through the engine's own choices."""

    tag = 0x454E47  # "ENG"

    def __init__(self, path: str, nodes: int = 1000):
        import chess.engine

        if not Path(path).exists():
            raise WorldModelError(f"UCI engine {path} does not exist")
        try:
            self.engine = chess.engine.SimpleEngine.popen_uci(path)
            self.engine.configure({"Threads": 1}) if "Threads" in self.engine.options else None
        except (OSError, chess.engine.EngineError) as exc:
            raise WorldModelError(f"could not start the UCI engine {path}: {exc}") from None
        self.limit = chess.engine.Limit(nodes=int(nodes))

    def choose(self, world, board, moves, rng):
        return self.engine.play(board, self.limit).move

    def close(self):
        self.engine.quit()


def play_games(world, player, n: int, seed: int, max_plies: int, progress: bool = False,
               first: int = 0) -> list[list[str]]:
    """``n`` games (``first`` … ``first + n - 1``) of ``player`` against itself, as token lists."""
    from tqdm.auto import tqdm

    games = []
    for g in tqdm(range(first, first + n), desc=f"{type(player).__name__} games", disable=not progress, leave=False):
        rng = np.random.default_rng([int(seed), player.tag, g])
        board = chess.Board()
        tokens: list[str] = []
        while len(tokens) < max_plies:
            moves = world._ordered(board)
            if not moves or board.outcome() is not None:
                break
            move = player.choose(world, board, moves, rng)
            tokens.append(world.token_of(board, move, moves))
            board.push(move)
        games.append(tokens)
    return games
