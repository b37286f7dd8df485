"""Seeded generators of the three navigation training sets (the paper's §3.1).

* **shortest paths**: origin–destination (OD) pairs drawn uniformly among pairs where
  the destination is reachable, each routed by Dijkstra on edge length; one sequence
  per OD pair.
* **noisy shortest paths**: ``n_weightings`` resampled weightings
  ``W̃ = W + Gamma(shape=W, scale=1)`` (one noise draw per edge and weighting); each
  sequence picks a weighting uniformly and is routed by Dijkstra on it.
* **random walks**: start node uniform, number of moves uniform in
  ``[min_moves, max_moves]``, each move a uniform choice among the streets leaving the
  current node (a dead end stops the walk early); the last node is the destination.

Every sequence is ``origin destination dir ... end``. Traversals of two nodes or fewer
and sequences over ``max_tokens`` tokens are dropped. Each OD pair belongs to exactly one
split (train/val/test), decided by a seeded hash of the pair, so the splits share no OD
pair. All randomness comes from ``numpy.random.default_rng`` seeded by the task.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Callable, Iterator

import numpy as np

from worldmodel.datastream import PackedSequences, SequenceStream
from worldmodel.errors import WorldModelError

from .world import END_TOKEN, NavigationWorld

SPLITS = ("train", "val", "test")
Sequence_ = list[str]


class Router:
    """Dijkstra on a street map under one or more edge weightings (scipy, cached trees).

    Weightings are arrays aligned with :attr:`pairs` (distinct ``(u, v)`` edges; where a
    map has two directions to the same neighbour, the shorter is used).
    """

    def __init__(self, world: NavigationWorld, cache_size: int = 4096):
        m = world.map
        self.world = world
        self.idx = {n: i for i, n in enumerate(m.nodes)}
        best: dict[tuple[str, str], tuple[float, str]] = {}
        for (u, d), v in m.edges.items():
            if u == v:
                continue  # a self-loop is never on a shortest path
            cand = (m.lengths[(u, d)], d)
            if (u, v) not in best or cand < best[(u, v)]:
                best[(u, v)] = cand
        self.pairs = sorted(best, key=lambda p: (self.idx[p[0]], self.idx[p[1]]))
        self.direction = {p: best[p][1] for p in self.pairs}
        self.base = np.array([best[p][0] for p in self.pairs], dtype=float)
        self._rows = np.array([self.idx[u] for u, _ in self.pairs], dtype=np.int64)
        self._cols = np.array([self.idx[v] for _, v in self.pairs], dtype=np.int64)
        self.weightings: list[np.ndarray] = [self.base]
        self._graphs: list = []
        self._cache: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._build_graphs()

    def _build_graphs(self) -> None:
        from scipy.sparse import csr_matrix

        n = len(self.idx)
        # a tiny positive offset keeps zero-length edges from vanishing in the sparse matrix
        self._graphs = [csr_matrix((w + 1e-6, (self._rows, self._cols)), shape=(n, n)) for w in self.weightings]

    def add_noisy_weightings(self, k: int, rng: np.random.Generator) -> None:
        """Append ``k`` weightings ``W + Gamma(shape=W, scale=1)``."""
        shape = np.maximum(self.base, 1e-6)
        for _ in range(k):
            self.weightings.append(self.base + rng.gamma(shape, 1.0))
        self._build_graphs()

    def _tree(self, weighting: int, source: int) -> np.ndarray:
        key = (weighting, source)
        pred = self._cache.get(key)
        if pred is None:
            from scipy.sparse.csgraph import dijkstra

            _, pred = dijkstra(self._graphs[weighting], directed=True, indices=source, return_predecessors=True)
            self._cache[key] = pred
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return pred

    def path(self, origin: str, destination: str, weighting: int = 0) -> list[str] | None:
        """Node path from origin to destination under a weighting, or None if unreachable."""
        s, t = self.idx[origin], self.idx[destination]
        pred = self._tree(weighting, s)
        if s != t and pred[t] < 0:
            return None
        nodes = self.world.map.nodes
        out = [t]
        while out[-1] != s:
            out.append(int(pred[out[-1]]))
        return [nodes[i] for i in reversed(out)]

    def length(self, nodes: list[str]) -> float:
        """Length in metres of a node path under the true weighting."""
        return float(sum(self.base_length[(a, b)] for a, b in zip(nodes, nodes[1:])))

    @property
    def base_length(self) -> dict[tuple[str, str], float]:
        got = getattr(self, "_base_length", None)
        if got is None:
            got = {p: float(w) for p, w in zip(self.pairs, self.base)}
            self._base_length = got
        return got

    def weight(self, nodes: list[str], weighting: int) -> float | None:
        """Total weight of a node path under a weighting; None if it uses a pair with no edge."""
        pos = getattr(self, "_pos", None)
        if pos is None:
            pos = {p: i for i, p in enumerate(self.pairs)}
            self._pos = pos
        w = self.weightings[weighting]
        total = 0.0
        for a, b in zip(nodes, nodes[1:]):
            i = pos.get((a, b))
            if i is None:
                return None
            total += float(w[i])
        return total

    def is_shortest_under_any(self, nodes: list[str], weightings: range | list[int]) -> bool:
        """Whether a node path is a shortest route (to 1e-9 relative) under one of the weightings."""
        for k in weightings:
            best = self.path(nodes[0], nodes[-1], k)
            mine = self.weight(nodes, k)
            if best is not None and mine is not None and mine <= self.weight(best, k) * (1 + 1e-9) + 1e-9:
                return True
        return False

    def shortest_length(self, origin: str, destination: str) -> float | None:
        p = self.path(origin, destination, 0)
        return None if p is None else self.length(p)

    def to_sequence(self, nodes: list[str]) -> list[str]:
        return [nodes[0], nodes[-1]] + [self.direction[(a, b)] for a, b in zip(nodes, nodes[1:])] + [END_TOKEN]


def split_of(origin: str, destination: str, seed: int, fractions: tuple[float, float, float]) -> str:
    """The split an OD pair belongs to: a seeded hash of the pair, cut by the split fractions."""
    h = hashlib.blake2b(f"{seed}|{origin}|{destination}".encode(), digest_size=8).digest()
    u = int.from_bytes(h, "big") / 2.0 ** 64
    if u < fractions[2]:
        return "test"
    if u < fractions[2] + fractions[1]:
        return "val"
    return "train"


def fill_splits(draw: Callable[[], list[list[str]]], sizes: dict[str, int], seed: int,
                dedupe: str, max_draws: int, desc: str) -> dict[str, list[list[str]]]:
    """Draw sequences until each split has its size; each OD pair goes to its hashed split.

    ``draw()`` returns a (possibly empty) list of candidate sequences; ``max_draws``
    bounds the number of calls.

    ``dedupe`` is ``"od"`` (one sequence per OD pair), ``"sequence"`` (no repeated
    sequence) or ``"none"``. Stops after ``max_draws`` draws; a split left empty is an error.
    """
    from tqdm import tqdm

    total = sum(sizes.values())
    fr = tuple(sizes[s] / total for s in SPLITS)
    out: dict[str, list[list[str]]] = {s: [] for s in SPLITS}
    seen: set = set()
    with tqdm(total=total, desc=desc, unit="seq", leave=False) as bar:
        for _ in range(max_draws):
            if all(len(out[s]) >= sizes[s] for s in SPLITS):
                break
            for seq in draw():
                split = split_of(seq[0], seq[1], seed, fr)  # type: ignore[arg-type]
                if len(out[split]) >= sizes[split]:
                    continue
                key = (seq[0], seq[1]) if dedupe == "od" else tuple(seq) if dedupe == "sequence" else None
                if key is not None:
                    if key in seen:
                        continue
                    seen.add(key)
                out[split].append(seq)
                bar.update(1)
    empty = [s for s in SPLITS if sizes[s] > 0 and not out[s]]
    if empty:
        raise WorldModelError(f"{desc}: could not draw any {empty[0]} sequence in {max_draws} tries "
                              "(is the map too small for the requested data?)")
    return out


class Generator:
    """The three navigation data generators for one world and one set of data settings."""

    def __init__(self, world: NavigationWorld, seed: int, max_tokens: int = 100):
        self.world = world
        self.seed = int(seed)
        self.max_tokens = int(max_tokens)
        self.router = Router(world)
        m = world.map
        self._movers = [n for n in m.nodes if m.neighbours(n)]
        if not self._movers:
            raise WorldModelError(f"street map {m.name} has no streets to drive on")

    def _keep(self, seq: list[str], n_nodes: int) -> list[str] | None:
        if n_nodes <= 2 or len(seq) > self.max_tokens:
            return None
        return seq

    def _routes(self, rng: np.random.Generator, weighting: int, per_tree: int) -> list[list[str]]:
        """Routes from one uniform origin to ``per_tree`` uniform destinations under one weighting.

        Drawing several destinations per shortest-path tree keeps Dijkstra runs few on
        big maps; origins and destinations stay uniform (pairs with no route, or of
        two nodes or fewer, are dropped).
        """
        nodes = self.world.map.nodes
        o = self._movers[int(rng.integers(len(self._movers)))]
        out = []
        for _ in range(per_tree):
            d = nodes[int(rng.integers(len(nodes)))]
            if d == o:
                continue
            path = self.router.path(o, d, weighting)
            if path is not None:
                seq = self._keep(self.router.to_sequence(path), len(path))
                if seq is not None:
                    out.append(seq)
        return out

    # -- draws: each returns a function that yields a (possibly empty) list of sequences per call
    def _shortest_draw(self, rng: np.random.Generator, per_tree: int) -> Callable[[], list[list[str]]]:
        return lambda: self._routes(rng, 0, per_tree)

    def _noisy_draw(self, rng: np.random.Generator, n_weightings: int, per_tree: int) -> Callable[[], list[list[str]]]:
        if n_weightings < 1:
            raise WorldModelError(f"[data] n_weightings must be at least 1, got {n_weightings}")
        if len(self.router.weightings) == 1:
            self.router.add_noisy_weightings(n_weightings, np.random.default_rng([self.seed, 3]))

        def draw():
            k = 1 + int(rng.integers(len(self.router.weightings) - 1))
            return self._routes(rng, k, per_tree)

        return draw

    def _walk_draw(self, rng: np.random.Generator, min_moves: int, max_moves: int) -> Callable[[], list[list[str]]]:
        max_moves = min(int(max_moves), self.max_tokens - 3)
        if not 1 <= min_moves <= max_moves:
            raise WorldModelError(f"[data] random walks need 1 <= min_moves <= max_moves "
                                  f"(<= max_tokens - 3), got {min_moves}..{max_moves}")
        m = self.world.map

        def draw():
            cur = self._movers[int(rng.integers(len(self._movers)))]
            origin, n = cur, int(rng.integers(min_moves, max_moves + 1))
            dirs: list[str] = []
            for _ in range(n):
                options = m.neighbours(cur)
                if not options:
                    break
                keys = list(options)
                d = keys[int(rng.integers(len(keys)))]
                dirs.append(d)
                cur = options[d]
            seq = self._keep([origin, cur] + dirs + [END_TOKEN], len(dirs) + 1)
            return [] if seq is None else [seq]

        return draw

    def draw(self, dataset: str, rng: np.random.Generator, n_weightings: int = 50, per_tree: int = 1,
             min_moves: int = 2, max_moves: int = 97) -> Callable[[], list[list[str]]]:
        """The draw function of one training distribution (``DATASETS``), reading ``rng``."""
        if dataset == "shortest-paths":
            return self._shortest_draw(rng, per_tree)
        if dataset == "noisy-shortest-paths":
            return self._noisy_draw(rng, n_weightings, per_tree)
        if dataset == "random-walks":
            return self._walk_draw(rng, min_moves, max_moves)
        raise WorldModelError(f"unknown navigation dataset {dataset!r}")

    # -- the data files
    def shortest_paths(self, sizes: dict[str, int], per_tree: int = 1,
                       max_draw_factor: int = 20) -> dict[str, list[list[str]]]:
        rng = np.random.default_rng([self.seed, 1])
        return fill_splits(self._shortest_draw(rng, per_tree), sizes, self.seed, "od",
                           max_draw_factor * sum(sizes.values()) + 1000, "shortest paths")

    def noisy_shortest_paths(self, sizes: dict[str, int], n_weightings: int = 50, per_tree: int = 1,
                             max_draw_factor: int = 20) -> dict[str, list[list[str]]]:
        rng = np.random.default_rng([self.seed, 2])
        return fill_splits(self._noisy_draw(rng, n_weightings, per_tree), sizes, self.seed, "sequence",
                           max_draw_factor * sum(sizes.values()) + 1000, "noisy shortest paths")

    def random_walks(self, sizes: dict[str, int], min_moves: int = 2, max_moves: int = 97,
                     max_draw_factor: int = 20) -> dict[str, list[list[str]]]:
        rng = np.random.default_rng([self.seed, 4])
        return fill_splits(self._walk_draw(rng, min_moves, max_moves), sizes, self.seed, "none",
                           max_draw_factor * sum(sizes.values()) + 1000, "random walks")


#: Second seed word of the training streams (the files use 1-4).
STREAM_TAG = 0x5157


class NavigationStream(SequenceStream):
    """Fresh training sequences of one navigation dataset, block by block.

    Block ``i`` draws with ``default_rng([seed, STREAM_TAG, kind, i])`` from the same
    distribution as the dataset's file, and keeps only sequences whose origin–destination
    pair hashes to the *train* split (:func:`split_of` with the files' fractions), so no
    streamed ride shares an OD pair with the validation or test files. Sequences may repeat
    across blocks (no de-duplication, as in several passes over a file).
    """

    KINDS = {"shortest-paths": 1, "noisy-shortest-paths": 2, "random-walks": 4}

    def __init__(self, generator: Generator, dataset: str, sizes: dict[str, int], settings: dict,
                 max_draw_factor: int = 50):
        if dataset not in self.KINDS:
            raise WorldModelError(f"unknown navigation dataset {dataset!r}")
        self.generator = generator
        self.dataset = dataset
        total = sum(sizes.values())
        self.fractions = tuple(sizes[s] / total for s in SPLITS)
        self.settings = dict(settings)
        self.max_len = generator.max_tokens
        if dataset == "random-walks":       # origin, destination, up to max_moves moves, end
            self.max_len = min(self.max_len, int(self.settings.get("max_moves", 97)) + 3)
        self.max_draw_factor = int(max_draw_factor)
        self._index = {t: i for i, t in enumerate(generator.world.tokens)}

    def block(self, index: int, size: int) -> PackedSequences:
        gen = self.generator
        rng = np.random.default_rng([gen.seed, STREAM_TAG, self.KINDS[self.dataset], int(index)])
        draw = gen.draw(self.dataset, rng, **self.settings)
        out: list[list[int]] = []
        for _ in range(self.max_draw_factor * size + 100):
            for seq in draw():
                if split_of(seq[0], seq[1], gen.seed, self.fractions) == "train":
                    out.append([self._index[t] for t in seq])
            if len(out) >= size:
                return PackedSequences.from_lists(out[:size], dtype=np.int32)
        raise WorldModelError(f"{self.dataset} stream: could not draw {size} training sequences "
                              f"in {self.max_draw_factor * size + 100} tries (is the map too small?)")


def iter_od_pairs(sequences: list[list[str]]) -> Iterator[tuple[str, str]]:
    """Distinct OD pairs of a list of sequences, in first-seen order."""
    seen = set()
    for s in sequences:
        if len(s) >= 2 and (s[0], s[1]) not in seen:
            seen.add((s[0], s[1]))
            yield s[0], s[1]
