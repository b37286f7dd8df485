"""The street map of the navigation world: a direction-labelled directed graph.

A :class:`StreetMap` is a directed street graph whose edges are labelled with one of the
eight compass directions (:data:`~.geometry.DIRECTIONS`), with at most one edge per
direction per node: exactly what the navigation DFA needs. Node ids are strings and
double as tokens. :func:`from_edge_list` builds one from coordinates and undirected
edges (directions from bearings, clashes resolved by keeping the shortest edge);
:func:`finish` keeps the part a navigation world can use. The sources that produce
maps (a grid city, osmnx, GraphML, CSV, the paper's graph) are in :mod:`.sources`.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Iterable

from worldmodel.errors import WorldModelError

from .geometry import DIRECTIONS, Coord, bearing_deg, direction_of, haversine_m


# ---------------------------------------------------------------------------
# The map
# ---------------------------------------------------------------------------


class StreetMap:
    """A direction-labelled street graph.

    Attributes:
        nodes: node ids (strings; also the node tokens), in a fixed order.
        coords: ``node -> (lat, lon)`` in degrees, for every node.
        edges: ``(node, direction) -> neighbour``; at most one edge per direction per node.
        lengths: ``(node, direction) -> metres``, same keys as ``edges``.
        name: a short description used in messages.
        info: counts from construction (edges dropped by direction clashes, nodes cut, ...).
        estimated_coords: nodes whose position was not known and was set to the mean of
            their neighbours' positions (only the paper graph has such nodes).
    """

    def __init__(self, nodes: Iterable[str], coords: dict[str, Coord], edges: dict[tuple[str, str], str],
                 lengths: dict[tuple[str, str], float], name: str = "map", info: dict[str, Any] | None = None,
                 estimated_coords: Iterable[str] = ()):
        self.nodes = [str(n) for n in nodes]
        self.coords = dict(coords)
        self.edges = dict(edges)
        self.lengths = dict(lengths)
        self.name = name
        self.info = dict(info or {})
        self.estimated_coords = set(estimated_coords)
        self._validate()
        self._out: dict[str, dict[str, str]] = {n: {} for n in self.nodes}
        for (u, d), v in self.edges.items():
            self._out[u][d] = v
        self._rev: dict[str, list[tuple[str, str]]] | None = None
        self._index = {n: i for i, n in enumerate(self.nodes)}

    def _validate(self) -> None:
        if not self.nodes:
            raise WorldModelError(f"street map {self.name}: the graph has no nodes")
        if not self.edges:
            raise WorldModelError(f"street map {self.name}: the graph has no edges")
        if len(set(self.nodes)) != len(self.nodes):
            raise WorldModelError(f"street map {self.name}: node ids are not unique")
        known = set(self.nodes)
        for (u, d), v in self.edges.items():
            if d not in DIRECTIONS:
                raise WorldModelError(f"street map {self.name}: edge from {u} has unknown direction {d!r}")
            if u not in known or v not in known:
                bad = u if u not in known else v
                raise WorldModelError(f"street map {self.name}: edge {u} {d} -> {v} uses unknown node id {bad!r}")
        if set(self.lengths) != set(self.edges):
            raise WorldModelError(f"street map {self.name}: every edge needs a length")
        missing = [n for n in self.nodes if n not in self.coords]
        if missing:
            raise WorldModelError(f"street map {self.name}: node {missing[0]!r} has no coordinates")

    # -- queries ---------------------------------------------------------------
    def neighbours(self, node: str) -> dict[str, str]:
        """``direction -> neighbour`` for the streets leaving ``node``."""
        return self._out[node]

    def reverse_edges(self) -> dict[str, list[tuple[str, str]]]:
        """``node -> [(previous node, direction), ...]``: the edges arriving at each node (cached)."""
        if self._rev is None:
            rev: dict[str, list[tuple[str, str]]] = {n: [] for n in self.nodes}
            for (u, d), v in sorted(self.edges.items(), key=lambda kv: (self._index[kv[0][0]], kv[0][1])):
                rev[v].append((u, d))
            self._rev = rev
        return self._rev

    def index(self, node: str) -> int:
        """Position of ``node`` in :attr:`nodes`."""
        try:
            return self._index[node]
        except KeyError:
            raise WorldModelError(f"street map {self.name}: unknown node id {node!r}") from None

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    def summary(self) -> dict[str, Any]:
        """Node and edge counts, direction counts and construction notes."""
        counts = {d: 0 for d in DIRECTIONS}
        for (_, d) in self.edges:
            counts[d] += 1
        return {"name": self.name, "nodes": len(self.nodes), "edges": self.n_edges,
                "directions": counts, **self.info}

    # -- structure -------------------------------------------------------------
    def strongly_connected_components(self) -> list[set[str]]:
        """Strongly connected components, largest first (ties: by smallest node position)."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        g.add_edges_from((u, v) for (u, _), v in self.edges.items())
        comps = list(nx.strongly_connected_components(g))
        comps.sort(key=lambda c: (-len(c), min(self._index[n] for n in c)))
        return comps

    def is_weakly_connected(self) -> bool:
        adj: dict[str, set[str]] = {n: set() for n in self.nodes}
        for (u, _), v in self.edges.items():
            adj[u].add(v)
            adj[v].add(u)
        seen = {self.nodes[0]}
        queue = deque(seen)
        while queue:
            for m in adj[queue.popleft()]:
                if m not in seen:
                    seen.add(m)
                    queue.append(m)
        return len(seen) == len(self.nodes)

    def restrict(self, keep: set[str], name: str | None = None, **info) -> "StreetMap":
        """The sub-map induced by the nodes in ``keep`` (order kept)."""
        nodes = [n for n in self.nodes if n in keep]
        edges = {k: v for k, v in self.edges.items() if k[0] in keep and v in keep}
        if not nodes or not edges:
            raise WorldModelError(f"street map {name or self.name}: no streets left after cutting the map")
        return StreetMap(nodes, {n: self.coords[n] for n in nodes}, edges, {k: self.lengths[k] for k in edges},
                         name=name or self.name, info={**self.info, **info},
                         estimated_coords=self.estimated_coords & keep)

    def largest_scc(self) -> "StreetMap":
        """The largest strongly connected component (every node can reach every other)."""
        comps = self.strongly_connected_components()
        if len(comps[0]) < 2:
            raise WorldModelError(f"street map {self.name}: no two intersections can reach each other")
        if len(comps[0]) == len(self.nodes):
            return self
        return self.restrict(comps[0], removed_outside_largest_scc=len(self.nodes) - len(comps[0]))

    def subregion(self, bbox: Iterable[float] | None = None, center: Iterable[float] | None = None,
                  radius_m: float | None = None) -> "StreetMap":
        """Cut the map to a bounding box ``(south, west, north, east)`` or a disc (``center=(lat, lon)``,
        ``radius_m``), then keep the largest strongly connected component."""
        if bbox is not None:
            try:
                south, west, north, east = (float(x) for x in bbox)
            except (TypeError, ValueError):
                raise WorldModelError(f"bbox must be [south, west, north, east] in degrees, got {bbox!r}") from None
            if not (south < north and west < east):
                raise WorldModelError(f"bbox {list(bbox)} is empty: need south < north and west < east")
            keep = {n for n in self.nodes
                    if south <= self.coords[n][0] <= north and west <= self.coords[n][1] <= east}
            what = f"bbox {[south, west, north, east]}"
        elif center is not None:
            try:
                c = tuple(float(x) for x in center)
                assert len(c) == 2
                r = float(radius_m)  # type: ignore[arg-type]
            except (TypeError, ValueError, AssertionError):
                raise WorldModelError(f"a sub-region needs center = [lat, lon] and radius_m > 0, got {center!r}, {radius_m!r}") from None
            if r <= 0:
                raise WorldModelError(f"radius_m must be positive, got {radius_m}")
            keep = {n for n in self.nodes if haversine_m(c, self.coords[n]) <= r}  # type: ignore[arg-type]
            what = f"{r:g} m around {list(c)}"
        else:
            return self
        if len(keep) < 2:
            raise WorldModelError(f"street map {self.name}: the sub-region {what} holds {len(keep)} nodes")
        cut = self.restrict(keep, name=f"{self.name} [{what}]", nodes_outside_region=len(self.nodes) - len(keep))
        return cut.largest_scc()

    def to_networkx(self):
        """A ``networkx.DiGraph`` with ``direction`` and ``length`` edge attributes and ``lat``/``lon`` nodes."""
        import networkx as nx

        g = nx.DiGraph()
        for n in self.nodes:
            g.add_node(n, lat=self.coords[n][0], lon=self.coords[n][1])
        for (u, d), v in self.edges.items():
            g.add_edge(u, v, direction=d, length=self.lengths[(u, d)])
        return g


# ---------------------------------------------------------------------------
# Building a map from undirected-direction edges (u, v, length) and coordinates
# ---------------------------------------------------------------------------


def from_edge_list(coords: dict[str, Coord], edge_list: Iterable[tuple[str, str, float | None]],
                   name: str, nodes: Iterable[str] | None = None) -> StreetMap:
    """Label edges by the compass sector of their bearing; keep at most one per direction per node.

    ``edge_list`` holds directed ``(u, v, length_m)`` triples (a missing or non-finite
    length is replaced by the straight-line distance). Self-loops have no bearing and
    are dropped; parallel edges keep the shortest. When two edges leave a node in the
    same sector the shortest wins (ties: the smaller neighbour id). The counts of
    dropped edges are stored in ``info``.
    """
    best: dict[tuple[str, str], float] = {}
    self_loops = 0
    for u, v, length in edge_list:
        u, v = str(u), str(v)
        if u not in coords or v not in coords:
            raise WorldModelError(f"street map {name}: edge {u} -> {v} uses node id "
                                  f"{u if u not in coords else v!r}, which has no coordinates")
        if u == v:
            self_loops += 1
            continue
        if length is None or not math.isfinite(float(length)):
            length = haversine_m(coords[u], coords[v])
        length = float(length)
        if (u, v) not in best or length < best[(u, v)]:
            best[(u, v)] = length
    edges: dict[tuple[str, str], str] = {}
    lengths: dict[tuple[str, str], float] = {}
    dropped = 0
    zero_length = 0
    for (u, v), length in sorted(best.items()):
        if coords[u] == coords[v]:
            zero_length += 1  # two nodes at one point have no bearing
            continue
        d = direction_of(bearing_deg(coords[u], coords[v]))
        key = (u, d)
        if key in edges:
            dropped += 1
            if (length, v) < (lengths[key], edges[key]):
                edges[key], lengths[key] = v, length
        else:
            edges[key], lengths[key] = v, length
    node_list = list(nodes) if nodes is not None else sorted(coords)
    return StreetMap(node_list, {n: coords[n] for n in node_list}, edges, lengths, name=name,
                     info={"dropped_direction_clashes": dropped, "dropped_self_loops": self_loops,
                           "dropped_zero_length": zero_length})


def finish(m: StreetMap, component: str = "largest-scc") -> StreetMap:
    """Apply the ``component`` policy.

    ``"largest-scc"`` keeps the largest strongly connected component (every node can
    reach every other); ``"connected"`` keeps everything but refuses a graph that falls
    apart into pieces; ``"as-is"`` keeps the graph untouched (the paper's graph, whose
    counts must stay exact although a few of its node ids have no streets).
    """
    if component == "largest-scc":
        return m.largest_scc()
    if component == "connected":
        if not m.is_weakly_connected():
            n = len(m.strongly_connected_components())
            raise WorldModelError(
                f"street map {m.name} is disconnected ({n} strongly connected pieces); "
                "set component = \"largest-scc\" in [world] to keep the largest one")
        return m
    if component == "as-is":
        return m
    raise WorldModelError(f"[world] component must be \"largest-scc\", \"connected\" or \"as-is\", got {component!r}")
