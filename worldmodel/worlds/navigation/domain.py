"""The navigation domain: street map -> world, three training sets, sampler, capabilities.

Task settings:

* ``[world]``: the map source and sub-region (see
  :func:`worldmodel.worlds.navigation.graph.load_street_map`).
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

import numpy as np

from worldmodel.errors import WorldModelError
from worldmodel.tasks import Domain

from .data import Generator, Router, iter_od_pairs
from .graph import load_street_map
from .sampler import NavigationSampler
from .world import END_TOKEN, NavigationWorld, START

DATASETS = ("shortest-paths", "noisy-shortest-paths", "random-walks")


class NavigationDomain(Domain):
    """Taxi rides on a street map (Vafa et al. §3)."""

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
            raise WorldModelError(f"task {self.task.path}: [data.{dataset}] must be a table")
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
                    f"task {self.task.path}: [model] n_positions = {n_pos} leaves no room for a prefix before "
                    f"[evaluate] max_sample_len tokens; lower max_sample_len")
            max_len = room if max_len is None else min(int(max_len), room)
        return NavigationSampler(self.world, max_tokens=self.max_tokens(), min_len=int(s.get("min_len", 1)),
                                 max_len=max_len)

    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        if dataset not in DATASETS:
            raise WorldModelError(f"task {self.task.name}: unknown dataset {dataset!r} (known: {', '.join(DATASETS)})")
        cfg = self.data_settings(dataset)
        sizes = {"train": int(cfg.get("n_train", 5000)), "val": int(cfg.get("n_val", 500)),
                 "test": int(cfg.get("n_test", 500))}
        if any(v < 0 for v in sizes.values()) or sizes["train"] == 0:
            raise WorldModelError(f"task {self.task.path}: [data] split sizes must be >= 0 and n_train > 0")
        gen = Generator(self.world, self.task.seed, max_tokens=self.max_tokens())
        per_tree = int(cfg.get("per_tree", 1))
        if per_tree < 1:
            raise WorldModelError(f"task {self.task.path}: [data] per_tree must be at least 1")
        if dataset == "shortest-paths":
            return gen.shortest_paths(sizes, per_tree=per_tree)
        if dataset == "noisy-shortest-paths":
            return gen.noisy_shortest_paths(sizes, n_weightings=int(cfg.get("n_weightings", 50)), per_tree=per_tree)
        return gen.random_walks(sizes, min_moves=int(cfg.get("min_moves", 2)), max_moves=int(cfg.get("max_moves", 97)))

    def extra_metrics(self, model, args) -> dict:
        """Greedy-decoding capabilities from test OD pairs: valid traversals, shortest paths."""
        dataset = getattr(args, "dataset", None) if args is not None else None
        if dataset is None and args is not None and getattr(args, "checkpoint", None):
            from worldmodel.train import checkpoint_dataset

            dataset = checkpoint_dataset(args.checkpoint)
        dataset = dataset or DATASETS[0]
        data_dir = getattr(args, "data_dir", None) if args is not None else None
        c = self.task.section("capabilities")
        pairs = list(iter_od_pairs(self.sequences("test", dataset, data_dir)))[: int(c.get("pairs", 200))]
        progress = not getattr(args, "no_progress", False) if args is not None else False
        noisy = self.data_settings("noisy-shortest-paths")
        return capabilities(self.world, model, pairs, batch=int(c.get("batch", 256)),
                            max_tokens=self.max_tokens(), progress=progress,
                            noisy=(self.task.seed, int(noisy.get("n_weightings", 50))))


def greedy_traversals(world: NavigationWorld, model, pairs: list[tuple[str, str]], batch: int = 256,
                      max_tokens: int = 100, progress: bool = False) -> list[list[str]]:
    """Decode each OD pair greedily (top-1 token each step), all pairs of a batch together.

    A traversal stops after ``end``, after the first token the world rejects (kept, so
    the caller sees it is invalid), or at ``max_tokens`` tokens.
    """
    from tqdm.auto import tqdm

    out: list[list[str]] = []
    tokens = list(model.tokens)
    for b0 in tqdm(range(0, len(pairs), batch), desc="greedy traversals", disable=not progress, leave=False):
        seqs = [[o, d] for o, d in pairs[b0:b0 + batch]]
        states = [world.step(world.step(START, o), d) for o, d in pairs[b0:b0 + batch]]
        live = [i for i, s in enumerate(states) if isinstance(s, tuple)]
        while live:
            probs = np.asarray(model.next_token_probs([seqs[i] for i in live]))
            nxt = []
            for row, i in zip(probs, live):
                tok = tokens[int(np.argmax(row))]
                seqs[i].append(tok)
                states[i] = world.step(states[i], tok)
                if isinstance(states[i], tuple) and len(seqs[i]) < max_tokens:
                    nxt.append(i)
            live = nxt
        out.extend(seqs)
    return out


def capabilities(world: NavigationWorld, model, pairs: list[tuple[str, str]], batch: int = 256,
                 max_tokens: int = 100, progress: bool = False, noisy: tuple[int, int] | None = None) -> dict:
    """Capabilities of greedy decoding from OD pairs (the paper's §3.2 "valid traversals").

    ``legal_moves``: share of traversals in which the world rejects no token (within
    ``max_tokens``; a model that circles forever is legal but does not arrive);
    ``valid_traversal``: share that are legal and end with ``end`` at the destination;
    ``shortest_path``: share that are also a shortest path (by length, to 1e-6 relative);
    with ``noisy = (seed, n_weightings)``, ``noisy_shortest_path``: share that are a
    shortest path under one of the noisy weightings the noisy-shortest-paths data used
    (the paper's measure for its noisy model).
    """
    try:
        from worldmodel.results import aggregate
    except ImportError:  # results.py is the lead's; fall back to plain dicts
        aggregate = None
    router = Router(world)
    names: tuple[str, ...] = ("legal_moves", "valid_traversal", "shortest_path")
    if noisy is not None:
        # the same weightings as Generator.noisy_shortest_paths draws for this seed
        router.add_noisy_weightings(noisy[1], np.random.default_rng([noisy[0], 3]))
        names += ("noisy_shortest_path",)
    trials: dict[str, list[dict]] = {n: [] for n in names}
    if not pairs:
        for n in names:
            trials[n].append({"status": "skipped", "reason": "no test origin-destination pairs", "key": "-", "pair": "-"})
    for i, seq in enumerate(greedy_traversals(world, model, pairs, batch, max_tokens, progress)):
        o, d = seq[0], seq[1]
        legal = world.path_nodes(seq) is not None
        arrived = legal and seq[-1] == END_TOKEN
        best = router.shortest_length(o, d)
        shortest = arrived and best is not None and world.path_length_m(seq) <= best * (1 + 1e-6) + 1e-6
        values = [legal, arrived, shortest]
        if noisy is not None:
            values.append(arrived and router.is_shortest_under_any(world.path_nodes(seq), range(1, noisy[1] + 1)))
        for n, v in zip(names, values):
            trials[n].append({"status": "ok", "key": f"{o}->{d}", "pair": str(i), "score": float(v)})
    if aggregate is not None:
        return {n: aggregate(n, trials[n]) for n in names}
    out = {}
    for name, trials_ in trials.items():
        scores = [t["score"] for t in trials_ if t["status"] == "ok"]
        out[name] = {"mean": float(np.mean(scores)) if scores else float("nan"),
                     "stderr": float(np.std(scores, ddof=1) / np.sqrt(len(scores))) if len(scores) > 1 else 0.0,
                     "n": len(scores), "n_failed": len(trials_) - len(scores)}
    return out
