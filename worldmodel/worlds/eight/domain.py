"""Tasks ``eight-*``: the loop memory game "8" as a world, its data, its sampler, its detours.

Task settings:

* ``[world]`` ``arc`` (``hallway-eight``, ``stairway8``, ``coach8``), ``difficulty``
  (``easy``, ``normal``, ``hard``, ``insane``), ``arcs_dir`` (the folder of the arc
  files; default ``shared:eight/arcs``, filled by ``worldmodel fetch eight``; a relative
  path is taken from the repository root);
* ``[data]`` ``n_train``, ``n_val``, ``n_test``, ``max_len`` (tokens of a uniform-play
  transcript);
* ``[sampler]`` ``max_prefix`` (longest prefix the metrics draw);
* ``[agent]`` the benchmark sweep of ``worldmodel eight-agent``: ``arcs``,
  ``difficulties``, ``registers`` (lists), ``episodes`` (per cell), ``max_rounds``
  (the round cap).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from ...datasets import resolve_path
from ...errors import WorldModelError
from ...api import Domain
from .arcs import ARC_IDS, Arc, load_arc
from .data import DATASETS, JudgeModel, generate
from .rules import DIFFICULTIES, EXPOSED, REGISTERS
from .world import build_world


class EightDomain(Domain):
    """One arc at one difficulty (see the module docstring)."""

    schema = {
        "world": {"arc": str, "difficulty": str, "arcs_dir": str},
        "data": {"n_train": int, "n_val": int, "n_test": int, "max_len": int},
        "sampler": {"max_prefix": int},
        "agent": {"arcs": list, "difficulties": list, "registers": list, "episodes": int, "max_rounds": int},
    }

    @cached_property
    def arcs_dir(self) -> Path:
        w = self.task.section("world")
        return resolve_path(str(w.get("arcs_dir", "shared:eight/arcs")), base=self.task.path.resolve().parent.parent)

    def arc(self, arc_id: str | None = None) -> Arc:
        arc_id = arc_id or str(self.task.section("world").get("arc", "hallway-eight"))
        return load_arc(self.arcs_dir, arc_id)

    @property
    def difficulty(self) -> str:
        d = str(self.task.section("world").get("difficulty", "normal"))
        if d not in DIFFICULTIES:
            raise WorldModelError(f"task {self.task.path}: [world] difficulty {d!r} is not one of "
                                  f"{', '.join(DIFFICULTIES)}")
        return d

    def build_world(self):
        return build_world(self.arc(), self.difficulty)

    def sampler(self):
        from .sampler import EightSampler, InsaneSampler

        n = int(self.task.section("sampler").get("max_prefix", 64))
        if self.difficulty == "insane":
            return InsaneSampler(self.world, n)
        return EightSampler(self.world, 1, n)

    def sampler_for_words(self):
        """Prefix pairs within one climb (what the benchmark's prompt shows), for ``eight-probe``."""
        from .sampler import EightSampler, InsaneClimbSampler

        n = int(self.task.section("sampler").get("max_prefix", 64))
        if self.difficulty == "insane":
            return InsaneClimbSampler(self.world, n)
        return EightSampler(self.world, 1, n, climb_only=True)

    def datasets(self) -> list[str]:
        return list(DATASETS)

    def generate(self, dataset: str):
        d = self.task.section("data")
        counts = {}
        for split, default in (("train", 4000), ("val", 200), ("test", 200)):
            n = d.get(f"n_{split}", default)
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise WorldModelError(f"task {self.task.path}: [data] n_{split} must be a positive integer")
            counts[split] = n
        return generate(self.world, self.arc(), self.difficulty, dataset, counts, self.task.seed,
                        int(d.get("max_len", 128)))

    # -- the benchmark sweep ---------------------------------------------------
    def sweep(self) -> dict:
        """``{"arcs", "difficulties", "registers", "episodes", "max_rounds"}`` of ``[agent]`` (checked)."""
        a = self.task.section("agent")
        w = self.task.section("world")
        out = {"arcs": list(a.get("arcs", [w.get("arc", "hallway-eight")])),
               "difficulties": list(a.get("difficulties", [self.difficulty])),
               "registers": list(a.get("registers", list(REGISTERS))),
               "episodes": int(a.get("episodes", 5)), "max_rounds": int(a.get("max_rounds", 120))}
        for key, known in (("arcs", ARC_IDS), ("difficulties", tuple(DIFFICULTIES)), ("registers", REGISTERS)):
            bad = [x for x in out[key] if x not in known]
            if bad or not out[key]:
                raise WorldModelError(f"task {self.task.path}: [agent] {key} must list some of {', '.join(known)}"
                                      + (f" (not {bad[0]!r})" if bad else ""))
        if out["episodes"] < 1 or out["max_rounds"] < 1:
            raise WorldModelError(f"task {self.task.path}: [agent] episodes and max_rounds must be at least 1")
        return out

    # -- detours -----------------------------------------------------------------
    def detour_plan(self, dataset: str, trials: int, seed: int = 0, data_dir=None):
        """Detours on held-out judge transcripts: an observation replaced, the calls left to the model.

        Each trial starts from the first token of a held-out ``judge`` transcript; the
        model plays greedily (its own loops and its own calls). With probability p a
        token it would emit is replaced by another valid *observation* (a property
        described, or its value, changed: the loop becomes another valid loop); calls,
        ``reset`` and ``door`` are never forced. Success: the door reached with no reset
        (eight correct calls in a row) within the task's ``max_prefix`` + 32 tokens.
        ``--model true`` is the judge (:class:`~.data.JudgeModel`).
        """
        import numpy as np

        from ...detours import DetourPlan
        from .rules import CALLS, DOOR, RESET

        world = self.world
        seqs = self.sequences("test", "judge", data_dir)
        order = np.random.default_rng(seed).permutation(len(seqs))
        starts = [list(seqs[i][:1]) for i in order[:trials]]
        max_len = int(self.task.section("sampler").get("max_prefix", 64)) + 32

        def allowed(state, token, length) -> bool:
            return token not in CALLS and token not in (RESET, DOOR)

        def goal(seq, state) -> bool:
            return bool(seq) and seq[-1] == DOOR and RESET not in seq

        return DetourPlan(starts=starts, max_len=max_len, allowed=allowed, goal=goal, reference=JudgeModel(world),
                          starts_from=f"the first token of {len(starts)} held-out judge transcripts",
                          success="the door reached with no reset (eight correct calls in a row)")
