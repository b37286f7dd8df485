"""Map reconstruction: the street graph a set of traversals implies (the paper's Algorithm 1).

Input: traversals ``origin destination dir dir ... end`` (one token list each, as in the
navigation data files) and the true :class:`StreetMap`. Output: the true map plus *new
edges* (``u --direction--> v``, at most ``max_distance_m`` long) that make traversals
consistent, subject to an out-degree limit (``max_degree``). Two algorithms:

``paper`` (the default; :mod:`.reconstruct_paper`)
    Algorithm 1 exactly as the authors' code (``mapping/reconstruction.py`` in
    keyonvafa/world-model-evaluation) runs it, so that the same traversals give the same
    new-edge set as the paper's Figure 3. Use it to compare a model with the paper. Its
    rules: all true edges start *unused*, and degree counts only used true edges and new
    edges; an unused true edge does not stop a new edge in the same direction (and is
    shadowed by it for good); a traversal first tries the map as it stands, then walks
    as far as it can and, at each stuck step, adds an edge straight to the destination
    if only one move is left, else tries every node within range (the current node
    included) and keeps the one whose continuation is longest (ties: first in node
    order); a failed traversal keeps what it added; distances are haversine on a sphere
    of radius 3,958.8 miles. Details in :mod:`.reconstruct_paper`.

``strict``
    A cleaner variant, for judging a model's traversals on their own: every true edge
    counts toward the degree from the start (so the result does not depend on which
    streets earlier traversals happened to use), a new edge only goes where the true map
    has no edge in that direction, the candidate is scored by how many later moves it
    makes valid (plus one for arriving at the destination; ties to the nearer node,
    then node order; never the current node), and a traversal that cannot be made
    consistent is rolled back (its edges removed, its true edges not counted as used).

Why the paper's maps look as they do. On the paper's graph with the authors' 6,400
published traversals of the shortest-paths model (degree 4, half a mile), ``paper``
adds 2,329 new edges and ``strict`` 695. The paper's algorithm adds edges at nodes that
already have four real streets (they count only once used) and beside real streets of
the same direction; its candidate search prefers the longest continuation and breaks
ties by node order rather than distance, so many new edges run to an arbitrary node
near the half-mile limit (median 481 m against 317 m for ``strict``); and traversals
that fail keep the edges they added. Much of the paper's "implausible map" is therefore
the algorithm's: ``strict`` on the same traversals draws a map three times cleaner, still
far from the true one.

Sequences are processed in input order. Lines that do not end in ``end``, name an
unknown node or direction, or hold fewer than three tokens are *malformed*: counted by
reason and skipped (the authors' code would treat an unknown token as a direction label).

Speed (``strict``): node positions are 3D unit vectors in a ``scipy.spatial.cKDTree``;
each node's candidate list (within range, sorted by distance) is computed once and
cached. Scoring simulates the rest of the sequence for all candidates at once with numpy
on an integer transition table, so nothing is copied per candidate.
``scripts/bench_reconstruct.py`` compares each algorithm with a plain implementation of
it and asserts identical results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ...errors import WorldModelError
from .geometry import DIRECTIONS, EARTH_RADIUS_M, MILE_M, haversine_m
from .world import END_TOKEN as END

#: ``paper``: the authors' Algorithm 1 (the default); ``strict``: order-independent degree, rollback.
ALGORITHMS: tuple[str, ...] = ("paper", "strict")


def distance_mm(a: tuple[float, float], latlon: np.ndarray) -> np.ndarray:
    """Great-circle metres from point ``a`` to each row of ``latlon`` ``[n, 2]``, rounded to mm.

    The greedy search compares candidate distances (the range limit and tie-breaks) on
    these rounded values, so any correct evaluation of the haversine formula (vectorised
    or scalar) gives the same choices.
    """
    lat1, lon1 = math.radians(a[0]), math.radians(a[1])
    lat2, lon2 = np.radians(latlon[:, 0]), np.radians(latlon[:, 1])
    h = np.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return np.round(2 * EARTH_RADIUS_M * np.arcsin(np.minimum(1.0, np.sqrt(h))), 3)


def unit_vectors(latlon: np.ndarray) -> np.ndarray:
    """(lat, lon) degrees ``[n, 2]`` -> points on the unit sphere ``[n, 3]``."""
    lat = np.radians(latlon[:, 0])
    lon = np.radians(latlon[:, 1])
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1)


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


@dataclass
class Parsed:
    """A well-formed traversal as integer ids: node indices and direction indices."""

    index: int  # position in the input
    origin: int
    destination: int
    dirs: list[int]


def parse_sequences(
    sequences: Iterable[Sequence[str]], node_index: dict[str, int]
) -> tuple[list[Parsed], dict[int, str]]:
    """Split token lists into well-formed traversals and ``{input index: reason}`` for the rest."""
    dir_index = {d: i for i, d in enumerate(DIRECTIONS)}
    good: list[Parsed] = []
    bad: dict[int, str] = {}
    for i, seq in enumerate(sequences):
        toks = list(seq)
        reason = None
        if len(toks) < 3:
            reason = "too short"
        elif toks[-1] != END:
            reason = "does not end in 'end'"
        elif toks[0] not in node_index or toks[1] not in node_index:
            reason = "unknown origin or destination node"
        else:
            dirs = [dir_index.get(t, -1) for t in toks[2:-1]]
            if any(d < 0 for d in dirs):
                reason = "unknown direction (or 'end' before the last token)"
        if reason is not None:
            bad[i] = reason
            continue
        good.append(Parsed(i, node_index[toks[0]], node_index[toks[1]], dirs))
    return good, bad


# ---------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------


@dataclass
class NewEdge:
    u: str
    direction: str
    v: str
    length_m: float
    sequence: int  # index of the input sequence that added it


@dataclass
class Reconstruction:
    """The reconstructed graph and what each sequence did.

    ``status[i]`` is, for input sequence ``i``: ``"valid"`` (made consistent, and valid on
    the true map), ``"used"`` (made consistent, but only with new edges, its own or earlier
    sequences'), ``"failed: <reason>"`` or ``"malformed: <reason>"``. Under the strict
    algorithm every sequence valid on the true map is ``"valid"``; under the paper's it can
    fail, or need new edges, when earlier sequences took its streets' degree or shadowed
    them (``true_valid`` says which sequences are valid on the true map).
    ``true_used`` holds the true edges marked used (strict: by consistent sequences only).
    """

    street_map: object
    max_degree: int
    max_distance_m: float
    new_edges: list[NewEdge]
    true_used: set[tuple[str, str]]
    status: list[str]
    malformed: dict[str, int] = field(default_factory=dict)
    algorithm: str = "strict"
    #: per input sequence: well formed and valid on the true map (independent of the algorithm)
    true_valid: list[bool] = field(default_factory=list)

    def edge_list(self) -> list[dict]:
        """Every edge of the reconstructed graph plus the unused true edges, typed.

        ``type`` is ``"true-used"``, ``"true-unused"`` or ``"new"``; lengths in metres
        (true edges: the map's street length; new edges: great-circle).
        """
        m = self.street_map
        out = []
        for (u, d), v in sorted(m.edges.items()):
            kind = "true-used" if (u, d) in self.true_used else "true-unused"
            length = m.lengths.get((u, d)) if hasattr(m, "lengths") else None
            out.append({"u": u, "direction": d, "v": v, "type": kind,
                        "length_m": None if length is None else float(length)})
        for e in self.new_edges:
            out.append({"u": e.u, "direction": e.direction, "v": e.v, "type": "new",
                        "length_m": round(e.length_m, 3), "added_by": e.sequence})
        return out

    def stats(self) -> dict:
        n_total = len(self.status)
        count = lambda prefix: sum(1 for s in self.status if s.startswith(prefix))  # noqa: E731
        failed: dict[str, int] = {}
        for s in self.status:
            if s.startswith("failed: "):
                r = s[len("failed: "):]
                failed[r] = failed.get(r, 0) + 1
        lengths = np.array([e.length_m for e in self.new_edges], dtype=float)
        by_dir = {d: 0 for d in DIRECTIONS}
        for e in self.new_edges:
            by_dir[e.direction] += 1
        n_true = len(self.street_map.edges)
        bins = [0, 100, 200, 400, 800, 1600]
        hist = {}
        for lo, hi in zip(bins[:-1], bins[1:]):
            hist[f"{lo}-{hi} m"] = int(((lengths >= lo) & (lengths < hi)).sum())
        hist[f">={bins[-1]} m"] = int((lengths >= bins[-1]).sum())
        length_summary = None
        if len(lengths):
            length_summary = {
                "min": float(lengths.min()), "p25": float(np.percentile(lengths, 25)),
                "median": float(np.median(lengths)), "mean": float(lengths.mean()),
                "p75": float(np.percentile(lengths, 75)), "max": float(lengths.max()),
            }
        return {
            "sequences": n_total,
            "malformed": sum(self.malformed.values()),
            "malformed_by_reason": dict(self.malformed),
            "well_formed": n_total - sum(self.malformed.values()),
            "algorithm": self.algorithm,
            "valid_on_true_map": sum(self.true_valid),
            "valid_share": (sum(self.true_valid) / (n_total - sum(self.malformed.values()))
                            if n_total > sum(self.malformed.values()) else None),
            "used": count("valid") + count("used"),
            "failed": count("failed"),
            "failed_by_reason": failed,
            "true_edges": n_true,
            "true_edges_used": len(self.true_used),
            "true_edges_unused": n_true - len(self.true_used),
            "new_edges": len(self.new_edges),
            "new_edges_by_direction": by_dir,
            "new_edge_length_m": length_summary,
            "new_edge_length_histogram": hist,
            "max_degree": self.max_degree,
            "max_distance_m": self.max_distance_m,
        }


def format_stats(stats: dict) -> str:
    """A small plain-text table of the headline numbers."""
    share = stats.get("valid_share")
    rows = [
        ("algorithm", stats.get("algorithm", "strict")),
        ("sequences", stats["sequences"]),
        ("malformed (skipped)", stats["malformed"]),
        ("valid on the true map", stats["valid_on_true_map"] if share is None
         else f"{stats['valid_on_true_map']} ({100 * share:.1f}%)"),
        ("used (consistent)", stats["used"]),
        ("failed", stats["failed"]),
        ("true edges used", f"{stats['true_edges_used']} / {stats['true_edges']}"),
        ("true edges unused", stats["true_edges_unused"]),
        ("new edges", stats["new_edges"]),
    ]
    ls = stats.get("new_edge_length_m")
    if ls:
        rows.append(("new edge length median (m)", f"{ls['median']:.0f}"))
        rows.append(("new edge length mean / max (m)", f"{ls['mean']:.0f} / {ls['max']:.0f}"))
    by_dir = stats.get("new_edges_by_direction") or {}
    if any(by_dir.values()):
        rows.append(("new edges by direction", " ".join(f"{d} {n}" for d, n in by_dir.items())))
    w = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(w)}  {v}" for k, v in rows]
    for r, n in sorted(stats.get("failed_by_reason", {}).items()):
        lines.append(f"{('  failed: ' + r).ljust(w)}  {n}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The algorithm
# ---------------------------------------------------------------------------


class Reconstructor:
    """Reusable state for reconstructing on one map (the spatial index is built once).

    ``algorithm`` is ``"paper"`` (the authors' Algorithm 1, the default) or ``"strict"``;
    see the module docstring.
    """

    def __init__(self, street_map, max_degree: int = 4, max_distance_m: float = 0.5 * MILE_M,
                 algorithm: str = "paper"):
        if algorithm not in ALGORITHMS:
            raise WorldModelError(f"unknown reconstruction algorithm {algorithm!r} (choose {' or '.join(ALGORITHMS)})")
        self.algorithm = algorithm
        if max_degree < 1:
            raise WorldModelError(f"max degree must be at least 1, got {max_degree}")
        if not max_distance_m > 0:
            raise WorldModelError(f"max new-edge distance must be positive, got {max_distance_m}")
        nodes = list(street_map.nodes)
        if not nodes:
            raise WorldModelError("map reconstruction needs a map with at least one node")
        self.map = street_map
        self.nodes = nodes
        self.index = {n: i for i, n in enumerate(nodes)}
        self.max_degree = int(max_degree)
        self.max_distance_m = float(max_distance_m)
        dir_index = {d: i for i, d in enumerate(DIRECTIONS)}
        n = len(nodes)
        self.true_table = np.full((n, len(DIRECTIONS)), -1, dtype=np.int64)
        for (u, d), v in street_map.edges.items():
            if u not in self.index or v not in self.index or d not in dir_index:
                raise WorldModelError(f"map edge ({u!r}, {d!r}) -> {v!r} names an unknown node or direction")
            self.true_table[self.index[u], dir_index[d]] = self.index[v]
        self.true_degree = (self.true_table >= 0).sum(axis=1)
        # positions (nodes without coordinates can neither get nor be a new edge's end)
        coords = street_map.coords
        self.latlon: list[tuple[float, float] | None] = [
            (float(coords[x][0]), float(coords[x][1])) if x in coords else None for x in nodes
        ]
        self._located = np.array([i for i, c in enumerate(self.latlon) if c is not None], dtype=np.int64)
        self._tree = None
        if len(self._located):
            from scipy.spatial import cKDTree

            pts = unit_vectors(np.array([self.latlon[i] for i in self._located], dtype=float))
            self._tree = cKDTree(pts)
            self._pts = pts
            self._pos_in_tree = {int(i): k for k, i in enumerate(self._located)}
        self._latlon_arr = np.array([c if c is not None else (np.nan, np.nan) for c in self.latlon], dtype=float)
        self._cand_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._paper_cache: dict[int, np.ndarray] = {}

    def paper_candidates(self, u: int) -> np.ndarray:
        """The paper's candidates for a new edge from ``u``: every node within the limit, ``u``
        included, in node order. Distance: :func:`~.geometry.haversine_miles` against
        the limit in miles (entries within 1e-9 of the limit are recomputed with the scalar
        formula, so the set is the same as the authors' scalar computation)."""
        hit = self._paper_cache.get(u)
        if hit is not None:
            return hit
        from .geometry import PAPER_EARTH_RADIUS_MILES, haversine_miles
        from .reconstruct_paper import _haversine_miles_many

        cu = self.latlon[u]
        limit = self.max_distance_m / MILE_M
        if cu is None or self._tree is None:
            out = np.zeros(0, dtype=np.int64)
        else:
            chord = 2 * math.sin(min(math.pi / 2, limit / (2 * PAPER_EARTH_RADIUS_MILES)))
            near = np.sort(self._located[self._tree.query_ball_point(self._pts[self._pos_in_tree[u]],
                                                                     chord * (1 + 1e-6) + 1e-12)])
            dist = _haversine_miles_many(cu, self._latlon_arr[near])
            keep = dist <= limit
            for j in np.flatnonzero(np.abs(dist - limit) <= 1e-9 * max(limit, 1.0)):
                keep[j] = haversine_miles(cu, self.latlon[int(near[j])]) <= limit
            out = near[keep]
        self._paper_cache[u] = out
        return out

    # -- candidates --------------------------------------------------------------
    def candidates(self, u: int) -> tuple[np.ndarray, np.ndarray]:
        """Nodes ``v != u`` within range of ``u``, sorted by (distance, index); and their distances.

        Distances are great-circle metres rounded to the millimetre (:func:`distance_mm`),
        so that ties and the range limit do not depend on floating-point evaluation order.
        """
        hit = self._cand_cache.get(u)
        if hit is not None:
            return hit
        cu = self.latlon[u]
        if cu is None or self._tree is None:
            out = (np.zeros(0, dtype=np.int64), np.zeros(0))
        else:
            # chord length for the great-circle radius, with slack; exact filter below
            chord = 2 * math.sin(min(math.pi / 2, self.max_distance_m / (2 * EARTH_RADIUS_M)))
            near = self._located[self._tree.query_ball_point(self._pts[self._pos_in_tree[u]], chord * (1 + 1e-6) + 1e-12)]
            near = near[near != u]
            dist = distance_mm(cu, self._latlon_arr[near])
            keep = dist <= self.max_distance_m
            near, dist = near[keep], dist[keep]
            order = np.lexsort((near, dist))
            out = (near[order], dist[order])
        self._cand_cache[u] = out
        return out

    # -- the walk ------------------------------------------------------------------
    def run(self, sequences: Iterable[Sequence[str]], progress: bool = False) -> Reconstruction:
        """Reconstruct the graph implied by ``sequences`` (token lists), in input order."""
        seqs = list(sequences)
        parsed, bad = parse_sequences(seqs, self.index)
        status = [""] * len(seqs)
        malformed: dict[str, int] = {}
        for i, reason in bad.items():
            status[i] = "malformed: " + reason
            malformed[reason] = malformed.get(reason, 0) + 1
        true_rows = self.true_table.tolist()
        true_valid = [False] * len(seqs)
        for seq in parsed:
            cur = seq.origin
            for d in seq.dirs:
                cur = true_rows[cur][d]
                if cur < 0:
                    break
            true_valid[seq.index] = cur == seq.destination
        it = parsed
        if progress:
            from tqdm import tqdm

            it = tqdm(parsed, desc=f"reconstruct ({self.algorithm})", unit="seq")
        if self.algorithm == "paper":
            rec = self._run_paper(it, status, true_valid)
        else:
            rec = self._run_strict(it, status, true_valid)
        rec.malformed = malformed
        return rec

    def _result(self, new_edges: list[tuple[int, int, int, int]], used_true: Iterable[tuple[int, int]],
                status: list[str], true_valid: list[bool]) -> Reconstruction:
        """Node/direction names from integer edges ``(u, d, v, sequence)`` and ``(u, d)``."""
        nodes = self.nodes
        out_new = [NewEdge(nodes[u], DIRECTIONS[d], nodes[v], haversine_m(self.latlon[u], self.latlon[v]), si)
                   for u, d, v, si in new_edges]
        out_used = {(nodes[u], DIRECTIONS[d]) for u, d in used_true}
        return Reconstruction(self.map, self.max_degree, self.max_distance_m, out_new, out_used, status,
                              algorithm=self.algorithm, true_valid=true_valid)

    def _run_paper(self, parsed, status: list[str], true_valid: list[bool]) -> Reconstruction:
        from .reconstruct_paper import PaperRun

        run = PaperRun(self.true_table, self._latlon_arr, self.max_degree, self.max_distance_m / MILE_M,
                       self.paper_candidates)
        added_by: list[int] = []
        for seq in parsed:
            before = len(run.state.added)
            fail = run.traverse(seq.origin, seq.destination, seq.dirs)
            added_by.extend([seq.index] * (len(run.state.added) - before))
            if fail is not None:
                status[seq.index] = "failed: " + fail
            else:
                status[seq.index] = "valid" if true_valid[seq.index] else "used"
        new = [(u, d, v, si) for (u, d, v), si in zip(run.state.added, added_by)]
        return self._result(new, run.state.marked, status, true_valid)

    def _run_strict(self, parsed, status: list[str], true_valid: list[bool]) -> Reconstruction:
        table = self.true_table.copy()  # current map: true edges + new edges (numpy, for scoring)
        rows = table.tolist()  # the same, as Python lists (fast scalar lookups in the walk)
        true_rows = self.true_table.tolist()
        degree = self.true_degree.astype(np.int64).tolist()
        new_edges: dict[tuple[int, int], tuple[int, int]] = {}  # (u, d) -> (v, sequence index)
        used_true: set[int] = set()  # u * 8 + d
        n_dir = len(DIRECTIONS)
        for seq in parsed:
            cur = seq.origin
            dirs = seq.dirs
            added: list[tuple[int, int]] = []
            used: list[int] = []
            off_true_map = False  # the walk used an edge the true map lacks
            fail = None
            for j, d in enumerate(dirs):
                nxt = rows[cur][d]
                if nxt >= 0:
                    if true_rows[cur][d] >= 0:
                        used.append(cur * n_dir + d)
                    else:
                        off_true_map = True
                    cur = nxt
                    continue
                if degree[cur] >= self.max_degree:
                    fail = "degree limit"
                    break
                cands, _ = self.candidates(cur)
                if len(cands) == 0:
                    fail = "no candidate in range"
                    break
                best = int(cands[int(np.argmax(self._scores(table, cands, cur, d, dirs, j + 1, seq.destination)))])
                table[cur, d] = best
                rows[cur][d] = best
                degree[cur] += 1
                added.append((cur, d))
                new_edges[(cur, d)] = (best, seq.index)
                cur = best
            if fail is None and cur != seq.destination:
                fail = "walk ends away from the destination"
            if fail is not None:
                for (u, d) in added:
                    table[u, d] = -1
                    rows[u][d] = -1
                    degree[u] -= 1
                    del new_edges[(u, d)]
                status[seq.index] = "failed: " + fail
                continue
            used_true.update(used)
            status[seq.index] = "used" if (off_true_map or added) else "valid"

        new = [(u, d, v, si) for (u, d), (v, si) in sorted(new_edges.items(), key=lambda kv: kv[1][1])]
        return self._result(new, [(e // n_dir, e % n_dir) for e in used_true], status, true_valid)

    @staticmethod
    def _scores(table: np.ndarray, cands: np.ndarray, cur: int, d: int, dirs: list[int], start: int,
                destination: int) -> np.ndarray:
        """Greedy score of each candidate target for the new edge ``cur --d--> cand``.

        Number of consecutive later steps ``dirs[start:]`` that are valid on the current
        map plus the tentative edge, plus one if all of them are and the walk ends at the
        destination. All candidates are simulated together; nothing is copied per candidate.
        """
        score = np.zeros(len(cands), dtype=np.int64)
        pos = cands.copy()
        alive = np.arange(len(cands))  # indices of candidates still walking
        for k in range(start, len(dirs)):
            dk = dirs[k]
            nxt = table[pos, dk]
            if dk == d:
                # the tentative edge differs per candidate
                nxt = np.where(pos == cur, cands[alive], nxt)
            ok = nxt >= 0
            if not ok.all():
                alive, pos, nxt = alive[ok], pos[ok], nxt[ok]
                if len(alive) == 0:
                    return score
            score[alive] += 1
            pos = nxt
        score[alive[pos == destination]] += 1
        return score


def reconstruct(
    sequences: Iterable[Sequence[str]],
    street_map,
    max_degree: int = 4,
    max_distance_m: float = 0.5 * MILE_M,
    progress: bool = False,
    algorithm: str = "paper",
) -> Reconstruction:
    """Reconstruct the graph ``sequences`` imply on ``street_map`` (see the module docstring)."""
    return Reconstructor(street_map, max_degree, max_distance_m, algorithm).run(sequences, progress=progress)


# ---------------------------------------------------------------------------
# Helpers: validity on the true map, the corruption control
# ---------------------------------------------------------------------------


def is_valid_traversal(seq: Sequence[str], street_map, node_set: set[str] | None = None) -> bool:
    """True when ``seq`` is well formed and valid on the true map (ends at its destination)."""
    if node_set is None:
        node_set = set(street_map.nodes)
    if len(seq) < 3 or seq[-1] != END or seq[0] not in node_set or seq[1] not in node_set:
        return False
    cur, dest = seq[0], seq[1]
    for t in seq[2:-1]:
        nxt = street_map.edges.get((cur, t))
        if nxt is None:
            return False
        cur = nxt
    return cur == dest


def corrupt(
    sequences: Sequence[Sequence[str]], street_map, rate: float, seed: int = 0
) -> tuple[list[list[str]], list[int]]:
    """The paper's corruption control.

    Keeps only the sequences valid on the true map, then re-labels one uniformly chosen
    direction step in ``round(rate * n_valid)`` of them (chosen uniformly, seeded). The
    new label is drawn uniformly from the directions that do *not* exist at that step's
    node, so each corrupted sequence is invalid at exactly that step (if a node has all
    eight directions, any other direction is used). Sequences with no direction step
    cannot be corrupted and are left as they are.

    Returns the sequences (valid ones only, in input order) and the indices into that
    list of the corrupted ones.
    """
    if not 0 <= rate <= 1:
        raise WorldModelError(f"corruption rate must be in [0, 1], got {rate}")
    node_set = set(street_map.nodes)
    valid = [list(s) for s in sequences if is_valid_traversal(s, street_map, node_set)]
    rng = np.random.default_rng(seed)
    n_pick = int(round(rate * len(valid)))
    eligible = [i for i, s in enumerate(valid) if len(s) > 3]
    n_pick = min(n_pick, len(eligible))
    chosen = sorted(rng.choice(eligible, size=n_pick, replace=False).tolist()) if n_pick else []
    for i in chosen:
        s = valid[i]
        j = 2 + int(rng.integers(len(s) - 3))
        # node at step j: walk to it
        cur = s[0]
        for t in s[2:j]:
            cur = street_map.edges[(cur, t)]
        absent = [d for d in DIRECTIONS if (cur, d) not in street_map.edges]
        pool = absent or [d for d in DIRECTIONS if d != s[j]]
        s[j] = pool[int(rng.integers(len(pool)))]
    return valid, chosen
