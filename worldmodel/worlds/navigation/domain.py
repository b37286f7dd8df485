"""The navigation domain: street map -> world, three training sets, sampler, capabilities.

Task settings:

* ``[world]``: the map source and sub-region (see
  :func:`worldmodel.worlds.navigation.sources.load_street_map`).
* ``[data]``: ``n_train``, ``n_val``, ``n_test`` (sequences per split), ``max_tokens``
  (default 100), ``n_weightings`` (noisy shortest paths, default 50), ``min_moves`` /
  ``max_moves`` (random walks, default 2 / 97). A sub-table per dataset
  (``[data.random-walks]``) overrides any of them for that dataset. ``per_tree``
  (default 1): destinations routed per Dijkstra tree (raise it on big maps).
* ``[sampler]`` (optional): ``min_len`` / ``max_len`` of sampled prefixes (directions).
  The budget for prefix + shortest completion is ``min(max_tokens, n_positions - 1)``.
* ``[capabilities]`` (optional): ``pairs`` (test OD pairs decoded greedily, default 200),
  ``batch`` (pairs decoded together, default 256).
"""

from __future__ import annotations

from typing import Any

from worldmodel.errors import WorldModelError
from worldmodel.api.domain import Domain

from .data import Generator, NavigationStream, iter_od_pairs
from .sources import WORLD_KEYS, load_street_map
from .sampler import NavigationSampler
from .world import NavigationWorld

DATASETS = ("shortest-paths", "noisy-shortest-paths", "random-walks")
#: ``[data]`` keys; each also allowed in a per-dataset sub-table (``[data.random-walks]``)
DATA_KEYS = {"n_train": int, "n_val": int, "n_test": int, "max_tokens": int, "n_weightings": int,
             "min_moves": int, "max_moves": int, "per_tree": int}


class NavigationDomain(Domain):
    """Taxi rides on a street map (Vafa et al. §3)."""

    schema = {
        "world": WORLD_KEYS,
        "data": {**DATA_KEYS, **{name: DATA_KEYS for name in DATASETS}},
        "sampler": {"min_len": int, "max_len": int},
        "capabilities": {"pairs": int, "batch": int},
    }

    def build_world(self) -> NavigationWorld:
        street_map = load_street_map(self.task.section("world"), base=self.task.path.parent.parent)
        return NavigationWorld(street_map, name=self.task.name)

    def datasets(self) -> list[str]:
        return list(DATASETS)

    # -- settings ------------------------------------------------------------------
    def data_settings(self, dataset: str) -> dict[str, Any]:
        d = self.task.section("data")
        base = {k: v for k, v in d.items() if not isinstance(v, dict)}
        extra = d.get(dataset, {})
        if not isinstance(extra, dict):
            raise WorldModelError(f"task {self.task.where}: [data.{dataset}] must be a table")
        return {**base, **extra}

    def max_tokens(self) -> int:
        """Longest sequence: ``[data] max_tokens`` (100), within the model's context minus BOS."""
        limit = int(self.task.section("data").get("max_tokens", 100))
        n_pos = self.task.section("model").get("n_positions")
        return min(limit, int(n_pos) - 1) if n_pos else limit

    # -- Domain interface ------------------------------------------------------------
    def sampler(self) -> NavigationSampler:
        """Reversed-walk prefixes; prefix + ``[evaluate] max_sample_len`` fits the model's context.

        The metric engine samples up to ``max_sample_len`` tokens after each prefix, and
        a batch of prefixes must fit the context with the longest continuation, so the
        prefix length is capped at ``n_positions - 1 - max_sample_len`` tokens.
        """
        s = self.task.section("sampler")
        max_len = s.get("max_len")
        n_pos = self.task.section("model").get("n_positions")
        if n_pos:
            room = int(n_pos) - 1 - int(self.task.section("evaluate").get("max_sample_len", 100)) - 2
            if room < int(s.get("min_len", 1)):
                raise WorldModelError(
                    f"task {self.task.where}: [model] n_positions = {n_pos} leaves no room for a prefix before "
                    f"[evaluate] max_sample_len tokens; lower max_sample_len")
            max_len = room if max_len is None else min(int(max_len), room)
        return NavigationSampler(self.world, max_tokens=self.max_tokens(), min_len=int(s.get("min_len", 1)),
                                 max_len=max_len)

    def _sizes_and_draw(self, dataset: str) -> tuple[dict[str, int], dict[str, int]]:
        """Split sizes and draw settings of one dataset, checked."""
        if dataset not in DATASETS:
            raise WorldModelError(f"task {self.task.name}: unknown dataset {dataset!r} (known: {', '.join(DATASETS)})")
        cfg = self.data_settings(dataset)
        sizes = {"train": int(cfg.get("n_train", 5000)), "val": int(cfg.get("n_val", 500)),
                 "test": int(cfg.get("n_test", 500))}
        if any(v < 0 for v in sizes.values()) or sizes["train"] == 0:
            raise WorldModelError(f"task {self.task.where}: [data] split sizes must be >= 0 and n_train > 0")
        per_tree = int(cfg.get("per_tree", 1))
        if per_tree < 1:
            raise WorldModelError(f"task {self.task.where}: [data] per_tree must be at least 1")
        draw = {"per_tree": per_tree, "n_weightings": int(cfg.get("n_weightings", 50)),
                "min_moves": int(cfg.get("min_moves", 2)), "max_moves": int(cfg.get("max_moves", 97))}
        return sizes, draw

    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        sizes, d = self._sizes_and_draw(dataset)
        gen = Generator(self.world, self.task.seed, max_tokens=self.max_tokens())
        if dataset == "shortest-paths":
            return gen.shortest_paths(sizes, per_tree=d["per_tree"])
        if dataset == "noisy-shortest-paths":
            return gen.noisy_shortest_paths(sizes, n_weightings=d["n_weightings"], per_tree=d["per_tree"])
        return gen.random_walks(sizes, min_moves=d["min_moves"], max_moves=d["max_moves"])

    def stream(self, dataset: str) -> NavigationStream:
        """Every navigation dataset can be streamed: fresh rides of the same distribution, train OD pairs only."""
        sizes, d = self._sizes_and_draw(dataset)
        gen = Generator(self.world, self.task.seed, max_tokens=self.max_tokens())
        return NavigationStream(gen, dataset, sizes, d)

    def extra_metrics(self, model, dataset: str | None = None, data_dir=None, progress: bool = False) -> dict:
        """Greedy-decoding capabilities from ``dataset``'s test OD pairs: valid traversals, shortest paths."""
        from .navigator import capabilities

        c = self.task.section("capabilities")
        pairs = list(iter_od_pairs(self.sequences("test", dataset or DATASETS[0], data_dir)))[: int(c.get("pairs", 200))]
        noisy = self.data_settings("noisy-shortest-paths")
        return capabilities(self.world, model, pairs, batch=int(c.get("batch", 256)),
                            max_tokens=self.max_tokens(), progress=progress,
                            noisy=(self.task.seed, int(noisy.get("n_weightings", 50))))

    def detour_plan(self, dataset: str, trials: int, seed: int = 0, data_dir=None):
        """Detours from ``trials`` random test origin–destination pairs of ``dataset``.

        A detour is a direction after which the destination stays reachable within the
        token limit; success = the destination reached (``end`` there). ``--model true``
        is the shortest-route navigator.
        """
        from worldmodel.detours import DetourPlan

        from .navigator import ShortestRouteModel, od_pairs, reachable_within

        max_len = self.max_tokens()
        pairs = od_pairs(self, dataset, trials, seed, data_dir, max_len)
        note = (f"the {dataset} test split has only {len(pairs)} distinct usable origin-destination pairs; "
                f"using all {len(pairs)}, not the {trials} asked" if len(pairs) < trials else "")
        return DetourPlan(starts=[[o, d] for o, d in pairs], max_len=max_len,
                          allowed=reachable_within(self.world, max_len),
                          reference=ShortestRouteModel(self.world), starts_from=f"{len(pairs)} {dataset} test pairs",
                          success="the destination reached within the token limit", note=note)
