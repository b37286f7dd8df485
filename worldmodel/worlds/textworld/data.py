"""Command sequences in a TextWorld house: random walks, goal-directed play, a mixture.

* **random walks** — from the start, each command drawn uniformly among the valid
  ones (the engine's admissible commands within the automaton's scope), for a length
  drawn uniformly in ``[min_len, max_len]``, stopping early at the end of the game
  (won or lost);
* **goal-directed** — walkthrough-like play: at every step, with probability
  ``detour`` a uniformly random valid command that does not lose the game, otherwise
  a command on a shortest plan to the win from the current state (ties broken at
  random, so container openings and other independent steps come in varied order),
  until the game is won or ``max_len`` commands are played — TextWorld's
  ``policy_commands`` (the walkthrough from the current state) with random detours;
* **mixture** — each sequence is one of the two, with probability 1/2.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ...dfa import REJECT, random_walk, run
from ...errors import WorldModelError
from .world import TextWorldWorld

DATASETS = ("random-walks", "goal-directed", "mixture")


def distance_to_win(world: TextWorldWorld) -> np.ndarray:
    """``d[q]``: fewest commands from state ``q`` to the win (``-1`` where the win is out of reach)."""
    n, V = world.delta.shape
    win_idx = [world.tokens.index(t) for t in world.win_tokens]
    stop_idx = {world.tokens.index(t) for t in world.stop_tokens}
    d = np.full(n, -1, dtype=np.int64)
    preds: list[list[int]] = [[] for _ in range(n)]
    for q in range(n):
        for a in range(V):
            nxt = world.delta[q, a]
            if nxt >= 0 and a not in stop_idx:
                preds[nxt].append(q)
    queue = deque()
    for q in range(n):
        if any(world.delta[q, a] >= 0 for a in win_idx):
            d[q] = 1
            queue.append(q)
    while queue:
        q = queue.popleft()
        for p in preds[q]:
            if d[p] < 0:
                d[p] = d[q] + 1
                queue.append(p)
    return d


def plan_commands(world: TextWorldWorld, dist: np.ndarray, state: int) -> list[str]:
    """Valid commands at ``state`` that lie on a shortest plan to the win."""
    if dist[state] < 0:
        return []
    if dist[state] == 1:
        return [t for t in world.valid_tokens(state) if t in world.win_tokens]
    out = []
    for t in world.valid_tokens(state):
        if t in world.stop_tokens:
            continue
        nxt = world.step(state, t)
        if dist[nxt] == dist[state] - 1:
            out.append(t)
    return out


def goal_directed(world: TextWorldWorld, dist: np.ndarray, rng: np.random.Generator, detour: float,
                  max_len: int) -> list[str]:
    """One goal-directed episode (see the module docstring)."""
    state = world.initial_state()
    out: list[str] = []
    while len(out) < max_len and not world.is_terminal(state):
        if rng.random() < detour:
            options = [t for t in world.valid_tokens(state) if t not in world.lose_tokens]
        else:
            options = plan_commands(world, dist, state)
        if not options:
            break
        t = options[int(rng.integers(len(options)))]
        out.append(t)
        state = world.step(state, t)
    return out


def generate(world: TextWorldWorld, dataset: str, counts: dict[str, int], rng: np.random.Generator,
             min_len: int, max_len: int, detour: float) -> dict[str, list[list[str]]]:
    """``{"train": [...], "val": [...], "test": [...]}`` of one dataset."""
    if dataset not in DATASETS:
        raise WorldModelError(f"unknown TextWorld dataset {dataset!r} (known: {', '.join(DATASETS)})")
    if not 1 <= min_len <= max_len:
        raise WorldModelError("TextWorld data: need 1 <= min_len <= max_len")
    if not 0 <= detour <= 1:
        raise WorldModelError(f"TextWorld data: detour must lie in [0, 1], got {detour}")
    dist = distance_to_win(world)
    if dist[world.initial_state()] < 0:
        raise WorldModelError(f"{world.name}: the game cannot be won within the automaton")
    out = {}
    for split, n in counts.items():
        seqs = []
        for _ in range(n):
            kind = dataset
            if kind == "mixture":
                kind = "random-walks" if rng.random() < 0.5 else "goal-directed"
            if kind == "random-walks":
                length = int(rng.integers(min_len, max_len + 1))
                seq = list(random_walk(world, world.initial_state(), length, rng))
            else:
                seq = goal_directed(world, dist, rng, detour, max_len)
            seqs.append(seq)
        out[split] = seqs
    return out


class PlannerModel:
    """A reference player: all its mass on the commands of a shortest plan to the win.

    Offers what :func:`worldmodel.detours.run_detours` uses (``tokens``,
    ``next_token_probs``); greedy decoding of it plays the walkthrough from wherever a
    detour left it (the game's ``policy_commands``). Not a world model: it is the
    detour table's ceiling, as the shortest-route navigator is for maps.
    """

    name = "planner"
    missing_tokens: frozenset = frozenset()  # it scores every world token (the SequenceModel hook)

    def __init__(self, world: TextWorldWorld):
        self.world = world
        self.tokens = tuple(world.tokens)
        self._dist = distance_to_win(world)
        self._index = {t: i for i, t in enumerate(self.tokens)}

    def next_token_probs(self, prefixes):
        out = np.zeros((len(prefixes), len(self.tokens)))
        for i, p in enumerate(prefixes):
            s = run(self.world, p)
            plan = [] if s is REJECT or self.world.is_terminal(s) else plan_commands(self.world, self._dist, s)
            for t in plan:
                out[i, self._index[t]] = 1.0 / len(plan)
        return out
