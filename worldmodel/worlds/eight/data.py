"""Abstract transcripts of "8" for training sequence models, and the judge as a reference player.

Two data sets:

* ``uniform`` — uniform play of the automaton: from the start, every next token drawn
  uniformly among the valid ones (which properties a loop describes, their values,
  either call; ``reset`` after a wrong call), for ``max_len`` tokens or until the door.
  Every state is reachable, but a climb survives a level only half the time, so the
  upper levels are rare;
* ``judge`` — the game's own play: loops drawn by the simulator with the game's odds
  (:class:`~.game.Game`: the anomaly ramp, holds, persistence), every call made by the
  judge, so each transcript is one climb of eight loops ending at the door. Narrow:
  no wrong call and no ``reset`` ever appears, and most loops are clean.

:class:`JudgeModel` is a :class:`~worldmodel.models.SequenceModel`-shaped reference for
detours: uniform over the valid observations, all its call mass on the correct call.
"""

from __future__ import annotations

import random

import numpy as np

from ...dfa import REJECT, random_walk, run
from ...errors import WorldModelError
from .arcs import Arc
from .game import Game
from .rules import CALLS, DOOR, RESET

DATASETS = ("uniform", "judge")


def judge_transcript(game: Game, max_loops: int = 64) -> list[str]:
    """One climb played by the judge: every loop's tokens and the correct call, then ``door``."""
    game.new()
    out: list[str] = []
    for _ in range(max_loops):
        room = game.room
        out += game.tokens(room)
        call = "turn_back" if room.has_anomaly else "go_on"
        out.append(call)
        res = game.act(call)
        if res["won"]:
            out.append(DOOR)
            return out
    raise WorldModelError("the judge did not reach the door")  # unreachable: the judge never errs


def generate(world, arc: Arc, difficulty: str, dataset: str, counts: dict[str, int], seed: int,
             max_len: int) -> dict[str, list[list[str]]]:
    """``{"train": [...], "val": [...], "test": [...]}`` of one dataset, seeded."""
    if dataset not in DATASETS:
        raise WorldModelError(f"unknown eight dataset {dataset!r} (known: {', '.join(DATASETS)})")
    if max_len < 8:
        raise WorldModelError(f"eight data: max_len must be at least 8, got {max_len}")
    out = {}
    for i, (split, n) in enumerate(counts.items()):
        if dataset == "uniform":
            rng = np.random.default_rng([seed, 1, i])
            out[split] = [list(random_walk(world, world.initial_state(), max_len, rng)) for _ in range(n)]
        else:
            game = Game(arc, difficulty, random.Random(f"{seed}:judge:{split}"))
            out[split] = [judge_transcript(game) for _ in range(n)]
    return out


class JudgeModel:
    """A reference player for detours (see the module docstring): it never makes a wrong call."""

    name = "judge"
    missing_tokens: frozenset = frozenset()  # it scores every world token (the SequenceModel hook)

    def __init__(self, world):
        self.world = world
        self.tokens = tuple(world.tokens)
        self._index = {t: i for i, t in enumerate(self.tokens)}

    def next_token_probs(self, prefixes):
        out = np.zeros((len(prefixes), len(self.tokens)))
        for i, p in enumerate(prefixes):
            s = run(self.world, p)
            if s is REJECT:
                continue
            valid = self.world.valid_tokens(s)
            calls = [c for c in valid if c in CALLS and self.world.verdict(s, c)]
            options = calls or [t for t in valid if t not in CALLS and t != RESET] or valid
            for t in options:
                out[i, self._index[t]] = 1.0 / len(options)
        return out
