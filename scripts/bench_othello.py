"""Benchmark the Othello engine: random-game generation, and the world's work in distinction trials.

**games** — the batched random-game generator against a plain list-of-lists engine.
Both engines play the same games: game ``g`` reads the same row of uniforms
(``engine.game_uniforms``) and plays the ``floor(u * L)``-th legal move in increasing
square order. The script asserts that every game is identical, then prints games per
second for each engine and their ratio.

**walks** — the true boundary of a distinction trial on Othello is sampled
(``worldmodel.dfa.sampled_boundary``: ``M`` random valid continuations from the first
state, each checked against the second). For the tasks' own settings (``othello-6x6-tiny``
and ``othello-synthetic``, with ``--M`` continuations per trial) it times, on the same
trials, the generic walk and check (the base class's ``World.random_walk`` and
``World.first_rejection`` over ``valid_tokens`` and ``step``, one ``Position`` per
move) against ``OthelloWorld``'s own (two ints per move), alternating the order every round with the engine's caches cleared before
each pass. It asserts that both give identical boundaries and leave every trial's
generator in the same state, then prints trials per second, and the fast/generic
ratios in wall-clock time and in this process's CPU time (the machine may be shared),
with the load average.

    OMP_NUM_THREADS=1 python scripts/bench_othello.py [--part games|walks|all] [--games 4096]
        [--reference-games 200] [--trials 64] [--M 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from worldmodel.dfa import World, sampled_boundary  # noqa: E402
from worldmodel.results import trial_seed  # noqa: E402
from worldmodel.worlds.othello import engine  # noqa: E402
from worldmodel.worlds.othello.engine import CHUNK, game_uniforms, random_games  # noqa: E402
from worldmodel.worlds.othello.world import OthelloWorld  # noqa: E402

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


def bench_games(args) -> None:
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


class GenericOthello(OthelloWorld):
    """Othello with the base class's walk and check: ``valid_tokens`` and ``step`` at every move."""

    random_walk = World.random_walk
    first_rejection = World.first_rejection


def _boundaries(world, trials, M: int, max_len: int):
    """Every trial's sampled boundary, and its generator's state afterwards; (wall, cpu) seconds."""
    engine.clear_caches()
    out = []
    wall, cpu = time.perf_counter(), time.process_time()
    for state, (q1, q2) in trials:
        rng = np.random.default_rng()
        rng.bit_generator.state = state
        out.append((sampled_boundary(world, q1, q2, M, max_len, rng), rng.bit_generator.state))
    return out, time.perf_counter() - wall, time.process_time() - cpu


def bench_walks(args) -> None:
    from worldmodel.tasks import load_task

    for name in args.tasks:
        task = load_task(name)
        world, sampler = task.world, task.domain.sampler()
        ev = task.section("evaluate")
        max_len = int(ev.get("boundary_len") or ev["max_sample_len"])
        seed = int(task.seed)
        trials = []
        for i in range(args.trials):      # the prefix pairs, drawn as the metric engine draws them
            rng = np.random.default_rng(trial_seed(seed, "distinction", i))
            pair = sampler.distinction_pair(rng)
            trials.append((rng.bit_generator.state, (pair.state1, pair.state2)))
        fast_world, slow_world = world, GenericOthello(world.size)
        tot = {"fast": [0.0, 0.0], "generic": [0.0, 0.0]}
        results = {}
        for r in range(args.rounds):
            order = ("generic", "fast") if r % 2 == 0 else ("fast", "generic")
            for which in order:
                out, wall, cpu = _boundaries(fast_world if which == "fast" else slow_world, trials, args.M, max_len)
                tot[which][0] += wall
                tot[which][1] += cpu
                assert results.setdefault(which, out) == out, f"{which}: a round differs from the first"
        assert results["fast"] == results["generic"], "the fast walk's boundaries differ from the generic walk's"
        found = sum(len(b) for b, _ in results["fast"])
        n_runs = args.trials * args.rounds
        print(f"{name} ({world.size}x{world.size}): {args.trials} distinction trials, M = {args.M}, "
              f"continuations up to {max_len} moves, {args.rounds} rounds; identical boundaries "
              f"({found} elements) and generator states")
        for which in ("generic", "fast"):
            wall, cpu = tot[which]
            print(f"  {which:8s}: {n_runs / wall:8.1f} trials/s wall, {n_runs / cpu:8.1f} trials/s CPU")
        print(f"  ratio   : {tot['generic'][0] / tot['fast'][0]:8.2f}x wall, "
              f"{tot['generic'][1] / tot['fast'][1]:8.2f}x CPU")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("games", "walks", "all"), default="all")
    ap.add_argument("--size", type=int, default=8, help="games: board size")
    ap.add_argument("--games", type=int, default=CHUNK, help="games: games for the batched engine")
    ap.add_argument("--reference-games", type=int, default=200, help="games: games for the list-of-lists engine")
    ap.add_argument("--seed", type=int, default=0, help="games: seed")
    ap.add_argument("--tasks", nargs="+", default=["othello-6x6-tiny", "othello-synthetic"], help="walks: tasks")
    ap.add_argument("--trials", type=int, default=64, help="walks: distinction trials per task")
    ap.add_argument("--M", type=int, default=30, help="walks: random continuations per trial")
    ap.add_argument("--rounds", type=int, default=3, help="walks: rounds per walk, alternating")
    args = ap.parse_args(argv)
    if args.part in ("games", "all"):
        bench_games(args)
    if args.part in ("walks", "all"):
        bench_walks(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
