"""Tasks ``bytesized32-*``: one ByteSized32 game, crawled into its exact automaton, as a task world.

The game runs only in the sandbox, once: its crawl (:func:`worldmodel.simulator.cached_crawl`) is
cached in the user cache's ``simulators/`` folder under the file's SHA-256. The crawl must close
within ``max_states``: the task world is then its minimal DFA (:class:`~worldmodel.dfa.ExplicitDFA`,
tokens the game's actions with ``_`` for spaces, plus ``#won`` / ``#lost`` at the end of a game).

Task settings: ``[world]`` ``game`` (a path, or ``shared:bytesized32/data/programs/NAME.py``),
``max_states`` (20000); ``[data]`` ``n_train``, ``n_val``, ``n_test``, ``min_len``, ``max_len``:
random playthroughs (uniform over the valid actions at each step, from the start, ending at
``#won`` / ``#lost`` or after a length drawn uniformly in ``[min_len, max_len]``);
``[sampler]`` ``max_prefix`` (prefixes of 1..max_prefix actions to states that still have an action).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ...datasets import cache_dir, resolve_path
from ...dfa import ExplicitDFA, random_walk
from ...errors import WorldModelError
from ...sampling import ExplicitDFASampler
from ...simulator import STOP_TOKENS, Crawl, cached_crawl
from ...tasks import Domain


class LiveSampler(ExplicitDFASampler):
    """Uniform prefixes to states that still have a valid action (the end state has none)."""

    def __init__(self, world: ExplicitDFA, min_len: int = 1, max_len: int = 12):
        super().__init__(world, min_len, max_len)
        self.live = np.array([q for q in range(world.n_states) if world.valid_tokens(q)])

    def _draw_state(self, rng) -> int:
        return int(self.live[int(rng.integers(len(self.live)))])

    def _draw_two_states(self, rng) -> tuple[int, int]:
        if len(self.live) < 2:
            from ...errors import TrialSkipped

            raise TrialSkipped("the game has a single live state")
        a, b = rng.choice(len(self.live), size=2, replace=False)
        return int(self.live[int(a)]), int(self.live[int(b)])


class ByteSized32Domain(Domain):
    schema = {
        "world": {"game": str, "max_states": int},
        "data": {"n_train": int, "n_val": int, "n_test": int, "min_len": int, "max_len": int},
        "sampler": {"max_prefix": int},
    }

    @cached_property
    def crawl(self) -> Crawl:
        w = self.task.section("world")
        if "game" not in w:
            raise WorldModelError(f"task {self.task.path}: [world] needs game = a ByteSized32 game file")
        path = resolve_path(str(w["game"]), self.task.path.resolve().parent.parent)
        if not path.is_file():
            raise WorldModelError(f"task {self.task.path}: game file {path} does not exist")
        c = cached_crawl(path, cache=cache_dir() / "simulators", max_states=int(w.get("max_states", 20000)))
        if not c.closed:
            raise WorldModelError(f"task {self.task.path}: the crawl of {path.name} did not close "
                                  f"({c.failure or c.stop}); a task world must be the whole automaton")
        return c

    def build_world(self) -> ExplicitDFA:
        dfa, _ = self.crawl.dfa(name=self.task.name).minimise()
        dfa.stop_tokens = STOP_TOKENS
        return dfa

    def sampler(self):
        s = self.task.section("sampler")
        return LiveSampler(self.world, min_len=1, max_len=int(s.get("max_prefix", 12)))

    def generate(self, dataset: str):
        d = self.task.section("data")
        lo, hi = int(d.get("min_len", 4)), int(d.get("max_len", 24))
        if not 1 <= lo <= hi:
            raise WorldModelError(f"task {self.task.path}: need 1 <= min_len <= max_len")
        rng = np.random.default_rng(self.task.seed + 1)
        out = {}
        for split, default in (("train", 2000), ("val", 200), ("test", 200)):
            n = int(d.get(f"n_{split}", default))
            out[split] = [list(random_walk(self.world, self.world.initial_state(), int(rng.integers(lo, hi + 1)), rng))
                          for _ in range(n)]
        return out
