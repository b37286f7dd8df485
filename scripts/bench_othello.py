"""Benchmark the batched Othello random-game generator against a plain list-of-lists engine.

Both engines play the same games: game ``g`` reads the same row of uniforms
(``engine.game_uniforms``) and plays the ``floor(u * L)``-th legal move in increasing
square order. The script asserts that every game is identical, then prints games per
second for each engine and their ratio.

    OMP_NUM_THREADS=1 python scripts/bench_othello.py --games 4096 --reference-games 200
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from worldmodel.worlds.othello.engine import CHUNK, game_uniforms, random_games  # noqa: E402

EMPTY, BLACK, WHITE = 0, 1, 2
DIRS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


def start_board(n: int) -> list[list[int]]:
    board = [[EMPTY] * n for _ in range(n)]
    m = n // 2
    board[m - 1][m - 1] = board[m][m] = WHITE      # d4, e5 on 8x8 (board[row][col])
    board[m][m - 1] = board[m - 1][m] = BLACK      # d5, e4
    return board


def captured(board, r, c, colour) -> list[tuple[int, int]]:
    """Discs flipped if ``colour`` plays (r, c); empty list if the move is illegal."""
    n = len(board)
    if board[r][c] != EMPTY:
        return []
    other = 3 - colour
    out = []
    for dr, dc in DIRS:
        run = []
        rr, cc = r + dr, c + dc
        while 0 <= rr < n and 0 <= cc < n and board[rr][cc] == other:
            run.append((rr, cc))
            rr, cc = rr + dr, cc + dc
        if run and 0 <= rr < n and 0 <= cc < n and board[rr][cc] == colour:
            out.extend(run)
    return out


def legal(board, colour) -> list[tuple[int, int]]:
    n = len(board)
    return [(r, c) for r in range(n) for c in range(n) if captured(board, r, c, colour)]


def reference_game(u, n: int) -> list[int]:
    board = start_board(n)
    colour = BLACK
    moves = []
    for x in u:
        options = legal(board, colour)
        if not options:
            if not legal(board, 3 - colour):
                break
            colour = 3 - colour
            options = legal(board, colour)
        r, c = options[min(int(x * len(options)), len(options) - 1)]
        for rr, cc in captured(board, r, c, colour):
            board[rr][cc] = colour
        board[r][c] = colour
        moves.append(r * n + c)
        colour = 3 - colour
    return moves


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--games", type=int, default=CHUNK, help="games for the batched engine")
    ap.add_argument("--reference-games", type=int, default=200, help="games for the list-of-lists engine")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    n = args.size
    ref_n = min(args.reference_games, args.games, CHUNK)

    t0 = time.perf_counter()
    fast = random_games(args.games, n, args.seed)
    fast_s = time.perf_counter() - t0

    u = game_uniforms(args.seed, 0, ref_n, n * n - 4)
    t0 = time.perf_counter()
    slow = [reference_game(u[i], n) for i in range(ref_n)]
    slow_s = time.perf_counter() - t0

    for i in range(ref_n):
        assert slow[i] == fast[i], f"game {i} differs between the engines"
    fast_rate, slow_rate = args.games / fast_s, ref_n / slow_s
    print(f"board {n}x{n}, seed {args.seed}: {ref_n} games identical in both engines")
    print(f"batched bitboards : {fast_rate:10.0f} games/s ({args.games} games in {fast_s:.2f} s)")
    print(f"list-of-lists     : {slow_rate:10.0f} games/s ({ref_n} games in {slow_s:.2f} s)")
    print(f"ratio             : {fast_rate / slow_rate:10.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
