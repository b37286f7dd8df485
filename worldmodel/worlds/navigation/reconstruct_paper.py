"""The paper's map reconstruction (Algorithm 1 as the authors ran it): ``--algorithm paper``.

:mod:`.reconstruct` describes both algorithms side by side; this module holds the
indexed implementation of the paper's. Its semantics, rule by rule:

1. **Used and unused true edges.** The map starts as the true map with every true edge
   *unused*. A node's degree, for the limit, counts its *used* true edges and its new
   edges only.
2. **Unused true edges are soft.** At most one *used or new* edge per direction leaves a
   node. An unused true edge ``u --d-->`` does not stop a new edge ``u --d--> v``; once
   that new edge exists, the unused true edge can never be taken.
3. **Try the map first.** A traversal is walked on the map as it stands: used and new
   edges are followed; an unused true edge is taken (it becomes used) when the node's
   degree, counting the edges this walk has already taken from it, leaves room. If the
   walk makes every move and ends at the destination, the traversal is done.
4. **Otherwise, repair greedily.** The walk stops at the end of its longest prefix that
   ends at a node with room for one more edge in the next direction (room: degree below
   the limit, no used or new edge in that direction, and not an unused edge this walk
   took in that direction). With no such prefix the walk stands at the origin, which
   must itself have room (else the traversal fails). At each stuck step:

   * only the last move left: an edge straight to the destination is added if the
     destination is within the distance limit, else the traversal fails;
   * otherwise every node within the distance limit, the current node included, is tried
     as the target of a new edge labelled with the stuck direction: the remaining moves
     are walked from it (as in 3, with the tentative edge's direction counted in the
     current node's degree and not itself walkable), and the candidate with the longest
     continuation wins (the first in the map's node order on ties; a continuation that
     makes every remaining move counts only if it ends at the destination, and then it
     is full length). The edge is added, the continuation's unused true edges become
     used, and the repair goes on from where the continuation stopped. No candidate with
     a continuation of at least one move: the traversal fails.
5. **No rollback.** A failed traversal keeps the edges it added and the true edges it
   marked used.
6. **Distance** is the haversine great-circle distance on a sphere of radius 3,958.8
   miles, compared with the limit in miles; traversals are processed in input order.

Speed: candidates come from a ``cKDTree`` of unit vectors (cached per node, exact
haversine filter). A candidate continuation is a walk on integer tables of the current
map (no graph, no path copies): the tentative edges of a walk are a small ``{node:
direction bit mask}``; candidates without an edge for the first move are dropped with
one numpy look-up for all of them, and the rest are walked one by one (most stop within
a few moves, where a scalar walk is cheaper than a vectorised step).
``scripts/bench_reconstruct.py --algorithm paper`` checks the output against a plain
implementation of these rules written in the script and prints the ratio.
"""

from __future__ import annotations

import math

import numpy as np

from .geometry import PAPER_EARTH_RADIUS_MILES as EARTH_RADIUS_MILES
from .geometry import haversine_miles


def _haversine_miles_many(a: tuple[float, float], latlon: np.ndarray) -> np.ndarray:
    """:func:`~.geometry.haversine_miles` from ``a`` to each row of ``latlon`` (numpy; may differ in
    the last bit, so values at the limit are rechecked with the scalar one)."""
    lat1, lon1 = math.radians(a[0]), math.radians(a[1])
    lat2, lon2 = np.radians(latlon[:, 0]), np.radians(latlon[:, 1])
    h = np.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return EARTH_RADIUS_MILES * (2 * np.arctan2(np.sqrt(h), np.sqrt(1 - h)))


class PaperState:
    """The map during one paper-algorithm run, as integer tables (``-1`` = no edge).

    ``used[u][d]``: the used true edge or new edge leaving ``u`` in direction ``d``;
    ``free[u][d]``: the true edge there while it is unused and no new edge shadows it;
    ``degree[u]``: the number of used and new edges leaving ``u``; ``step_np[u * 8 + d]``:
    the edge a walk would try (used/new, else free), as a flat numpy array.
    """

    def __init__(self, true_table: np.ndarray, max_degree: int):
        self.max_degree = max_degree
        n, k = true_table.shape
        self.k = k
        self.used = np.full((n, k), -1, dtype=np.int64).tolist()
        self.free = true_table.astype(np.int64).tolist()
        self.degree = [0] * n
        self.step_np = true_table.astype(np.int64).ravel().copy()
        self.marked: list[tuple[int, int]] = []  # true edges marked used, in order
        self.added: list[tuple[int, int, int]] = []  # new edges (u, d, v), in order

    def _take(self, u: int, d: int, v: int) -> None:
        self.used[u][d] = v
        self.free[u][d] = -1
        self.degree[u] += 1
        self.step_np[u * self.k + d] = v

    def mark_used(self, u: int, d: int) -> None:
        v = self.free[u][d]
        self._take(u, d, v)
        self.marked.append((u, d))

    def add_new(self, u: int, d: int, v: int) -> None:
        self._take(u, d, v)
        self.added.append((u, d, v))

    # -- the walk (rule 3 and 4), one start --------------------------------------------
    def walk(self, start: int, dirs: list[int], k0: int, destination: int, block: tuple[int, int] | None = None,
             ) -> int:
        """Length of the continuation from ``start`` for the moves ``dirs[k0:]``.

        ``len(dirs) - k0`` when every move can be made and the walk ends at
        ``destination``; otherwise the longest prefix (``>= 1`` move, else 0) that ends at
        a node with room for an edge in the next direction. ``block = (u, d)`` is a
        tentative new edge: it counts in ``u``'s degree and ``(u, d)`` cannot be walked.
        """
        used, free, degree, cap = self.used, self.free, self.degree, self.max_degree
        taken: dict[int, int] = {}  # node -> bit mask of directions this walk took unused edges in
        if block is not None:
            taken[block[0]] = 1 << block[1]
        pos = start
        best = 0
        n = len(dirs)
        for i in range(k0, n):
            d = dirs[i]
            nxt = used[pos][d]
            if nxt < 0:
                nxt = free[pos][d]
                if nxt < 0:
                    return best
                mask = taken.get(pos, 0)
                if not mask >> d & 1:
                    if degree[pos] + mask.bit_count() >= cap:
                        return best
                    taken[pos] = mask | 1 << d
                elif block is not None and pos == block[0] and d == block[1]:
                    return best
            pos = nxt
            if i + 1 == n:
                return n - k0 if pos == destination else best
            nd = dirs[i + 1]
            mask = taken.get(pos, 0)
            if degree[pos] + mask.bit_count() < cap and used[pos][nd] < 0 and not mask >> nd & 1:
                best = i + 1 - k0
        return best

    def commit(self, start: int, dirs: list[int], k0: int, length: int) -> int:
        """Walk ``length`` moves of ``dirs[k0:]`` from ``start`` for real (unused edges become used)."""
        pos = start
        for i in range(k0, k0 + length):
            d = dirs[i]
            nxt = self.used[pos][d]
            if nxt < 0:
                nxt = self.free[pos][d]
                self.mark_used(pos, d)
            pos = nxt
        return pos


class PaperRun:
    """One run of the paper's algorithm over parsed traversals (see the module docstring)."""

    def __init__(self, true_table: np.ndarray, latlon: np.ndarray, max_degree: int, max_miles: float,
                 candidates):
        self.state = PaperState(true_table, max_degree)
        self.latlon = latlon
        self.max_miles = max_miles
        self.candidates = candidates  # node -> int64 array of candidate targets, node order

    def in_range(self, u: int, v: int) -> bool:
        return haversine_miles(tuple(self.latlon[u]), tuple(self.latlon[v])) <= self.max_miles

    def traverse(self, origin: int, destination: int, dirs: list[int]) -> str | None:
        """Process one traversal; ``None`` when it ends consistent, else the failure reason."""
        st = self.state
        n = len(dirs)
        if n == 0:
            return None if origin == destination else "walk ends away from the destination"
        k = st.walk(origin, dirs, 0, destination)
        pos = st.commit(origin, dirs, 0, k)
        if k == 0 and (st.degree[origin] >= st.max_degree or st.used[origin][dirs[0]] >= 0):
            return "no room at the origin"
        while k < n:
            d = dirs[k]
            if k == n - 1:
                if not self.in_range(pos, destination):
                    return "destination out of range"
                st.add_new(pos, d, destination)
                return None
            best_len, best = self.best_candidate(self.candidates(pos), dirs, k + 1, destination, pos, d)
            if best_len == 0:
                return "no candidate continues"
            st.add_new(pos, d, best)
            pos = st.commit(best, dirs, k + 1, best_len)
            k += 1 + best_len
        return None

    # -- all candidates of one stuck step at once -----------------------------------------
    def best_candidate(self, cands: np.ndarray, dirs: list[int], k0: int, destination: int, cur: int,
                       d0: int) -> tuple[int, int]:
        """(longest continuation, its candidate): the first in node order among the longest."""
        if len(cands) == 0:
            return 0, -1
        lengths = self._continuations(cands, dirs, k0, destination, cur, d0)
        j = int(np.argmax(lengths))
        return int(lengths[j]), int(cands[j])

    def _continuations(self, cands: np.ndarray, dirs: list[int], k0: int, destination: int, cur: int,
                       d0: int) -> np.ndarray:
        """:meth:`PaperState.walk` for every candidate start, with ``block = (cur, d0)``.

        A candidate with no edge for the first move has continuation 0 (one array
        look-up for all of them); the rest are walked one by one, in node order, until one
        makes every move (no later candidate can beat it): most stop within a few moves,
        where a scalar walk is cheaper than a vectorised step.
        """
        st = self.state
        best = np.zeros(len(cands), dtype=np.int64)
        go = np.flatnonzero(st.step_np.take(cands * st.k + dirs[k0]) >= 0)
        walk, block, full = st.walk, (cur, d0), len(dirs) - k0
        for j, c in zip(go.tolist(), cands.take(go).tolist()):
            best[j] = length = walk(c, dirs, k0, destination, block)
            if length == full:  # nothing later in node order can win
                break
        return best
