"""Tasks ``textworld-simple`` and ``textworld-simple-suite``: the house, its data, its sampler.

Task settings:

* ``[world]`` ``rewards`` (``dense``), ``goal`` (``detailed``), ``split`` (``train``),
  ``seed`` (1) — the game (see :mod:`.games`); ``games_dir`` — where games are
  generated and cached (default ``$WORLDMODEL_DATA/textworld-games`` or
  ``data/textworld-games``; a relative path is taken from the task file's folder's
  parent, i.e. the repository root for ``tasks/``); ``suite_seeds`` — for the suite
  task, ``{train = [...], test = [...]}``: the seeds of the 9 configurations × 2 splits
  the agent loop plays (the metrics use the game named by the other keys);
* ``[data]`` ``n_train``, ``n_val``, ``n_test``, ``min_len``, ``max_len`` (commands per
  random walk; also the cap of a goal-directed episode), ``detour`` (probability of a
  random command in goal-directed play);
* ``[sampler]`` ``max_prefix`` — prefixes are uniform random command histories of
  1..``max_prefix`` commands reaching a uniformly drawn live state (two different
  ones for compression: reordered container openings, look/examine loops …).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import numpy as np

from ...errors import WorldModelError
from ...sampling import ExplicitDFASampler
from ...api.domain import Domain
from .data import DATASETS, PlannerModel, distance_to_win, generate
from .games import GameSpec, default_games_dir, ensure_game, suite
from .world import TextWorldWorld


class TextWorldSampler(ExplicitDFASampler):
    """Uniform prefixes (:class:`~worldmodel.sampling.ExplicitDFASampler`) to live states only.

    The won/lost class has no continuation to compare, so it is never drawn.
    """

    def __init__(self, world: TextWorldWorld, min_len: int = 1, max_len: int = 24):
        super().__init__(world, min_len, max_len)
        self.live = np.array([q for q in range(world.n_states) if not world.is_terminal(q)])

    def _draw_state(self, rng) -> int:
        return int(self.live[int(rng.integers(len(self.live)))])

    def _draw_two_states(self, rng) -> tuple[int, int]:
        q1 = self._draw_state(rng)
        q2 = self._draw_state(rng)
        while q2 == q1:
            q2 = self._draw_state(rng)
        return q1, q2


class TextWorldDomain(Domain):
    """One TextWorld Simple game as a world (and, for the suite task, the list of games)."""

    schema = {
        "world": {"rewards": str, "goal": str, "split": str, "seed": int, "games_dir": str,
                  "suite_seeds": {"train": list, "test": list}},
        "data": {"n_train": int, "n_val": int, "n_test": int, "min_len": int, "max_len": int, "detour": float},
        "sampler": {"max_prefix": int},
    }

    @cached_property
    def games_dir(self) -> Path:
        w = self.task.section("world")
        if "games_dir" not in w:
            return default_games_dir()
        p = Path(str(w["games_dir"]))
        return p if p.is_absolute() else (self.task.path.resolve().parent.parent / p)

    @cached_property
    def spec(self) -> GameSpec:
        w = self.task.section("world")
        return GameSpec(str(w.get("rewards", "dense")), str(w.get("goal", "detailed")),
                        str(w.get("split", "train")), w.get("seed", 1))

    def games(self) -> list[GameSpec]:
        """The suite's games (for the suite task), else the task's one game."""
        w = self.task.section("world")
        seeds = w.get("suite_seeds")
        if seeds is None:
            return [self.spec]
        if not isinstance(seeds, dict) or not set(seeds) <= {"train", "test"}:
            raise WorldModelError(f"task {self.task.where}: [world] suite_seeds must be {{train = [...], test = [...]}}")
        return suite({k: list(v) for k, v in seeds.items()})

    def game_file(self, spec: GameSpec | None = None) -> Path:
        """The ``game.z8`` of a game (the task's by default), generated if missing."""
        return ensure_game(spec or self.spec, self.games_dir)

    def build_world(self) -> TextWorldWorld:
        return TextWorldWorld.from_game(self.game_file(), name=self.task.name)

    def sampler(self) -> TextWorldSampler:
        s = self.task.section("sampler")
        return TextWorldSampler(self.world, 1, int(s.get("max_prefix", 24)))

    def datasets(self) -> list[str]:
        return list(DATASETS)

    def generate(self, dataset: str):
        d = self.task.section("data")
        counts = {}
        for split, default in (("train", 20000), ("val", 500), ("test", 500)):
            n = d.get(f"n_{split}", default)
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise WorldModelError(f"task {self.task.where}: [data] n_{split} must be a positive integer")
            counts[split] = n
        rng = np.random.default_rng([self.task.seed, DATASETS.index(dataset) if dataset in DATASETS else 99])
        return generate(self.world, dataset, counts, rng, int(d.get("min_len", 8)), int(d.get("max_len", 40)),
                        float(d.get("detour", 0.2)))

    def detour_starts(self, n: int, opening: int, data_dir=None, seed: int = 0) -> list[list[str]]:
        """The first ``opening`` commands of ``n`` held-out goal-directed episodes (detour starts)."""
        seqs = [s for s in self.sequences("test", "goal-directed", data_dir) if len(s) > opening]
        if not seqs:
            raise WorldModelError(f"task {self.task.name}: no held-out episode has more than {opening} commands")
        order = np.random.default_rng(seed).permutation(len(seqs))
        return [list(seqs[i][:opening]) for i in order[:n]]

    def detour_plan(self, dataset: str, trials: int, seed: int = 0, data_dir=None):
        """Detours from the first command of ``trials`` held-out goal-directed episodes.

        The starts are the same whatever ``dataset`` the model was trained on, so every
        model is pushed from the same places. The model plays greedily for at most
        ``[data] max_len`` commands; a detour is another valid command after which the
        win stays within reach in that budget (so never eating the food); success = the
        game won (the food on the stove). ``--model true`` is the shortest-plan player
        (:class:`~.data.PlannerModel`).
        """
        from ...detours import DetourPlan

        world = self.world
        max_len = int(self.task.section("data").get("max_len", 40))
        dist = distance_to_win(world)

        def allowed(state, token, length) -> bool:
            if token in world.win_tokens:
                return True
            d = dist[world.step(state, token)]
            return d >= 0 and length + 1 + d <= max_len

        def goal(seq, state) -> bool:
            return bool(seq) and seq[-1] in world.win_tokens

        starts = self.detour_starts(trials, 1, data_dir, seed=seed)
        note = (f"only {len(starts)} held-out goal-directed episodes; using all {len(starts)}, not the {trials} asked"
                if len(starts) < trials else "")
        return DetourPlan(starts=starts, max_len=max_len, allowed=allowed, goal=goal, reference=PlannerModel(world),
                          starts_from=f"the first command of {len(starts)} held-out goal-directed episodes",
                          success="the game won (the food on the stove)", note=note)
