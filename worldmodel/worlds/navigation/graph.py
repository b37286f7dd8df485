"""Street maps for the navigation world: one small graph type and the sources that build it.

A :class:`StreetMap` is a directed street graph whose edges are labelled with one of the
eight compass directions (:data:`DIRECTIONS`), with at most one edge per direction per
node: exactly what the navigation DFA needs. Node ids are strings and double as tokens.

Sources (chosen by ``source`` in a task's ``[world]`` table; see :func:`load_street_map`):

* ``"grid"`` (default): a synthetic grid city built by :func:`grid_city` (avenues and
  streets, alternating one-way streets, a Broadway-like diagonal, lat/lon coordinates).
  Needs no files.
* ``"osmnx"``: ``osmnx.graph_from_place(place, network_type="drive")``, cached to a
  GraphML file on first use (needs the network; offline it stops with one clear error).
* ``"graphml"``: an osmnx GraphML file (node attributes ``y``/``x``, edge ``length``).
* ``"csv"``: a node CSV (id, lat, lon) and an edge CSV (u, v, length).
* ``"paper"``: the paper's exact direction-labelled graph, ``world_model_edges.json``
  from the shared data, with coordinates and lengths from the CSV pair beside it.

Every source except ``"paper"`` derives directions from bearings (:func:`direction_of`)
and resolves clashes (two streets leaving a node in the same sector) by keeping the
shortest edge (ties: the smaller neighbour id); :attr:`StreetMap.info` records how many
edges were dropped. A sub-region (bounding box, or centre + radius in metres) cuts any
map down and keeps its largest strongly connected component (:meth:`StreetMap.subregion`).
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections import deque
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from worldmodel.errors import WorldModelError

from .geometry import DIRECTIONS, Coord, bearing_deg, direction_of, haversine_m, offset_coord

MANHATTAN_PLACE = "Manhattan, New York City, New York, USA"


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


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------


def grid_city(avenues: int = 6, streets: int = 12, avenue_spacing_m: float = 250.0,
              street_spacing_m: float = 80.0, two_way_every: int = 4, broadway: bool = True,
              origin: Coord = (40.7060, -74.0110), rotation_deg: float = 0.0, name: str = "grid") -> StreetMap:
    """A synthetic Manhattan-like grid city.

    ``avenues`` run north–south, ``streets`` east–west. Streets are one-way, alternating
    eastbound/westbound, except every ``two_way_every``-th street (counting from 0),
    which is two-way; avenues alternate northbound/southbound with the outermost ones
    two-way. With ``broadway`` a two-way diagonal runs from the south-east corner to the
    north-west, adding diagonal (NW/SE) edges between grid nodes it passes. Node ids are
    ``"a{avenue}s{street}"``; coordinates are lat/lon around ``origin`` (the grid is
    rotated clockwise by ``rotation_deg``; keep it under 22.5° so directions stay on axis).
    """
    if avenues < 2 or streets < 2:
        raise WorldModelError(f"grid city needs at least 2 avenues and 2 streets, got {avenues} x {streets}")
    if two_way_every < 1:
        raise WorldModelError(f"two_way_every must be at least 1, got {two_way_every}")
    rot = math.radians(rotation_deg)

    def place(a: int, s: int) -> Coord:
        east, north = a * avenue_spacing_m, s * street_spacing_m
        e = east * math.cos(rot) + north * math.sin(rot)
        n = -east * math.sin(rot) + north * math.cos(rot)
        return offset_coord(origin, n, e)

    node_id = lambda a, s: f"a{a}s{s}"  # noqa: E731
    coords = {node_id(a, s): place(a, s) for a in range(avenues) for s in range(streets)}
    edge_list: list[tuple[str, str, float | None]] = []

    def link(a1, s1, a2, s2, both: bool) -> None:
        u, v = node_id(a1, s1), node_id(a2, s2)
        edge_list.append((u, v, None))
        if both:
            edge_list.append((v, u, None))

    for s in range(streets):  # east–west streets
        two_way = s % two_way_every == 0
        eastbound = s % 2 == 1
        for a in range(avenues - 1):
            if two_way or eastbound:
                link(a, s, a + 1, s, two_way)
            else:
                link(a + 1, s, a, s, False)
    for a in range(avenues):  # north–south avenues
        two_way = a in (0, avenues - 1)
        northbound = a % 2 == 0
        for s in range(streets - 1):
            if two_way or northbound:
                link(a, s, a, s + 1, two_way)
            else:
                link(a, s + 1, a, s, False)
    if broadway:
        # a diagonal from the south-east to the north-west corner, stepping one avenue
        # west every `per` streets; its edges join grid nodes it crosses
        per = max(1, round((streets - 1) / (avenues - 1)))
        a, s = avenues - 1, 0
        while a > 0 and s + per <= streets - 1:
            link(a, s, a - 1, s + per, True)
            a, s = a - 1, s + per
    nodes = [node_id(a, s) for s in range(streets) for a in range(avenues)]
    m = from_edge_list(coords, edge_list, name=name, nodes=nodes)
    return m


def from_networkx(g, name: str) -> StreetMap:
    """A map from an osmnx-style graph: node attributes ``y`` (lat) and ``x`` (lon), edge ``length``."""
    if g.number_of_nodes() == 0:
        raise WorldModelError(f"street map {name}: the graph has no nodes")
    coords: dict[str, Coord] = {}
    for n, data in g.nodes(data=True):
        try:
            coords[str(n)] = (float(data["y"]), float(data["x"]))
        except (KeyError, TypeError, ValueError):
            raise WorldModelError(f"street map {name}: node {n!r} lacks numeric 'y' (lat) / 'x' (lon) attributes") from None
    edge_list = []
    for u, v, data in g.edges(data=True):
        length = data.get("length")
        try:
            length = float(length) if length is not None else None
        except (TypeError, ValueError):
            raise WorldModelError(f"street map {name}: edge {u} -> {v} has a non-numeric length {length!r}") from None
        edge_list.append((str(u), str(v), length))
    return from_edge_list(coords, edge_list, name=name)


def load_graphml(path: str | Path) -> StreetMap:
    """An osmnx GraphML file (as written by ``osmnx.save_graphml``)."""
    import osmnx as ox

    path = Path(path)
    if not path.is_file():
        raise WorldModelError(f"GraphML file {path} does not exist")
    try:
        g = ox.load_graphml(path)
    except Exception as exc:  # noqa: BLE001 - osmnx/networkx raise many types on bad files
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise WorldModelError(f"GraphML file {path} could not be read: {first}") from None
    return from_networkx(g, name=path.stem)


def fetch_osmnx(place: str = MANHATTAN_PLACE, cache: str | Path = "data/osmnx/manhattan-drive.graphml") -> StreetMap:
    """``osmnx.graph_from_place(place, network_type="drive")``, cached to GraphML on first use."""
    cache = Path(cache)
    if cache.is_file():
        return load_graphml(cache)
    import osmnx as ox

    try:
        g = ox.graph_from_place(place, network_type="drive")
    except Exception as exc:  # noqa: BLE001 - network, geocoder and parsing errors all end here
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise WorldModelError(
            f"osmnx could not fetch the drive network for {place!r} ({type(exc).__name__}: {first}); "
            "offline, use source = \"graphml\" (graphml = PATH) or source = \"csv\" (nodes = PATH, edges = PATH)"
        ) from None
    cache.parent.mkdir(parents=True, exist_ok=True)
    ox.save_graphml(g, cache)
    return from_networkx(g, name=place)


def _read_csv(path: Path, need: dict[str, tuple[str, ...]]) -> tuple[list[dict[str, str]], dict[str, str]]:
    """Rows of a CSV and, for each wanted field, the column that holds it (first alias present)."""
    if not path.is_file():
        raise WorldModelError(f"CSV file {path} does not exist")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        cols: dict[str, str] = {}
        for field, aliases in need.items():
            found = next((a for a in aliases if a in header), None)
            if found is None:
                raise WorldModelError(
                    f"CSV file {path} has no {field} column (looked for {', '.join(aliases)}; it has {', '.join(header) or 'none'})")
            cols[field] = found
        return list(reader), cols


def load_csv(nodes_path: str | Path, edges_path: str | Path) -> StreetMap:
    """A node CSV (id, lat, lon) and a directed edge CSV (u, v, optional length in metres).

    Column names accepted: ``osm_id``/``osmid``/``id`` with ``lat``/``y`` and ``lon``/``x``;
    ``u``/``src`` with ``v``/``dst`` and ``length``/``length_m`` (blank lengths fall back to
    the straight-line distance). Edges touching a node without coordinates are skipped
    and counted in ``info["skipped_edges_without_coords"]``.
    """
    nodes_path, edges_path = Path(nodes_path), Path(edges_path)
    rows, c = _read_csv(nodes_path, {"id": ("osm_id", "osmid", "id", "node"), "lat": ("lat", "y"), "lon": ("lon", "x")})
    coords: dict[str, Coord] = {}
    for i, r in enumerate(rows, 2):
        try:
            coords[r[c["id"]].strip()] = (float(r[c["lat"]]), float(r[c["lon"]]))
        except (TypeError, ValueError):
            raise WorldModelError(f"{nodes_path}:{i}: lat/lon are not numbers") from None
    erows, ec = _read_csv(edges_path, {"u": ("u", "src", "source"), "v": ("v", "dst", "target")})
    length_col = next((a for a in ("length", "length_m") if erows and a in erows[0]), None)
    edge_list = []
    skipped = 0
    for i, r in enumerate(erows, 2):
        u, v = r[ec["u"]].strip(), r[ec["v"]].strip()
        if u not in coords or v not in coords:
            skipped += 1
            continue
        raw = (r.get(length_col) or "").strip() if length_col else ""
        try:
            length = float(raw) if raw else None
        except ValueError:
            raise WorldModelError(f"{edges_path}:{i}: length {raw!r} is not a number") from None
        edge_list.append((u, v, length))
    if not edge_list:
        raise WorldModelError(f"CSV files {nodes_path} / {edges_path} give no edge between known nodes")
    m = from_edge_list(coords, edge_list, name=edges_path.parent.name or edges_path.stem)
    m.info["skipped_edges_without_coords"] = skipped
    return m


def load_paper_graph(json_path: str | Path, nodes_csv: str | Path | None = None, edges_csv: str | Path | None = None,
                     variant: str = "shortest") -> StreetMap:
    """The paper's exact graph: ``world_model_edges.json`` (edges ``[u, direction, v]`` per variant).

    Nodes are every node id any variant mentions (4,580 for the shared file), so the
    vocabulary is the paper's; edges are the chosen variant's (9,705 for each). Directions
    are taken as given, self-loops included. Coordinates come from ``nodes_csv``; nodes it
    lacks get the mean position of their located neighbours (listed in
    ``estimated_coords``). Lengths come from ``edges_csv`` (``length_m``, else
    ``straight_m``), else the straight-line distance, else the median edge length.
    """
    json_path = Path(json_path)
    if not json_path.is_file():
        raise WorldModelError(f"paper graph file {json_path} does not exist "
                              "(run `worldmodel fetch manhattan-paper`, or give edges_json = PATH in [world])")
    try:
        data = json.loads(json_path.read_text())
        variants = data["variants"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise WorldModelError(f"paper graph file {json_path} is malformed ({exc})") from None
    if variant not in variants:
        raise WorldModelError(f"paper graph file {json_path}: unknown variant {variant!r} (known: {', '.join(variants)})")

    def edges_of(name: str) -> list:
        v = variants[name]
        return v["edges"] if "edges" in v else variants[v["edges_same_as"]]["edges"]

    all_ids: set[str] = set()
    for name, v in variants.items():
        for u, _, w in edges_of(name):
            all_ids.update((str(u), str(w)))
        all_ids.update(str(k) for k in v.get("valid_turns", {}))
    edges: dict[tuple[str, str], str] = {}
    for u, d, w in edges_of(variant):
        key = (str(u), str(d))
        if d not in DIRECTIONS:
            raise WorldModelError(f"paper graph file {json_path}: direction {d!r} is not one of {DIRECTIONS}")
        if key in edges:
            raise WorldModelError(f"paper graph file {json_path}: two edges leave {u} going {d}")
        edges[key] = str(w)

    coords: dict[str, Coord] = {}
    if nodes_csv is not None:
        rows, c = _read_csv(Path(nodes_csv), {"id": ("osm_id", "osmid", "id"), "lat": ("lat", "y"), "lon": ("lon", "x")})
        for r in rows:
            if r[c["id"]] in all_ids:
                coords[r[c["id"]]] = (float(r[c["lat"]]), float(r[c["lon"]]))
    estimated = _estimate_missing_coords(sorted(all_ids, key=_id_order), coords, edges)

    pair_len: dict[tuple[str, str], float] = {}
    if edges_csv is not None:
        rows, c = _read_csv(Path(edges_csv), {"u": ("u",), "v": ("v",)})
        for r in rows:
            raw = (r.get("length_m") or "").strip() or (r.get("straight_m") or "").strip()
            if raw:
                pair_len[(r["u"], r["v"])] = float(raw)
    lengths: dict[tuple[str, str], float] = {}
    unknown = []
    for (u, d), w in edges.items():
        if (u, w) in pair_len:
            lengths[(u, d)] = pair_len[(u, w)]
        elif u in coords and w in coords and u not in estimated and w not in estimated and u != w:
            lengths[(u, d)] = haversine_m(coords[u], coords[w])
        else:
            unknown.append((u, d))
    fill = float(np.median(list(lengths.values()))) if lengths else 100.0
    for key in unknown:
        lengths[key] = fill
    nodes = sorted(all_ids, key=_id_order)
    if not coords:  # no coordinate file: place nodes on a circle so geometry stays defined
        for i, n in enumerate(nodes):
            coords[n] = offset_coord((40.78, -73.97), 5000 * math.cos(2 * math.pi * i / len(nodes)),
                                     5000 * math.sin(2 * math.pi * i / len(nodes)))
        estimated = set(nodes)
    return StreetMap(nodes, coords, edges, lengths, name=f"paper-{variant}",
                     info={"variant": variant, "self_loops": sum(1 for (u, _), v in edges.items() if u == v),
                           "estimated_coords": len(estimated), "lengths_filled_with_median": len(unknown),
                           "dropped_direction_clashes": 0},
                     estimated_coords=estimated)


def _id_order(n: str):
    return (0, int(n), n) if n.isdigit() else (1, 0, n)


def _estimate_missing_coords(nodes: list[str], coords: dict[str, Coord], edges: dict[tuple[str, str], str]) -> set[str]:
    """Fill absent coordinates with the mean of located neighbours (repeatedly); returns the filled nodes."""
    adj: dict[str, set[str]] = {n: set() for n in nodes}
    for (u, _), v in edges.items():
        adj[u].add(v)
        adj[v].add(u)
    missing = [n for n in nodes if n not in coords]
    filled: set[str] = set()
    while missing:
        progress = []
        for n in missing:
            known = [coords[m] for m in adj[n] if m in coords]
            if known:
                progress.append((n, (float(np.mean([k[0] for k in known])), float(np.mean([k[1] for k in known])))))
        if not progress:
            centre = (float(np.mean([c[0] for c in coords.values()])), float(np.mean([c[1] for c in coords.values()]))) \
                if coords else (40.78, -73.97)
            progress = [(n, centre) for n in missing]
        for n, c in progress:
            coords[n] = c
            filled.add(n)
        missing = [n for n in missing if n not in coords]
    return filled


# ---------------------------------------------------------------------------
# Task configuration -> map
# ---------------------------------------------------------------------------


def shared_data_dir() -> Path:
    """Where ``shared:`` paths resolve (see :func:`worldmodel.datasets.resolve_shared`)."""
    from worldmodel.datasets import BESIDE, resolve_shared

    try:
        return resolve_shared("manhattan").parent
    except WorldModelError:  # not fetched anywhere: the default place, for messages
        return BESIDE


def _path(value: str, base: Path | None) -> Path:
    """Resolve a path from a task: ``shared:`` through the data cache (``worldmodel fetch``);
    relative paths are taken from the task file's folder's parent (the repository root) when
    ``base`` is given."""
    from worldmodel.datasets import resolve_path

    return resolve_path(value, base)


SOURCES = ("grid", "osmnx", "graphml", "csv", "paper")
#: ``[world]`` keys :func:`load_street_map` reads (checked when a task is loaded).
WORLD_KEYS = {"source": str, "avenues": int, "streets": int, "avenue_spacing_m": float, "street_spacing_m": float,
              "two_way_every": int, "broadway": bool, "rotation_deg": float, "place": str, "cache": str,
              "graphml": str, "nodes": str, "edges": str, "edges_json": str, "variant": str, "bbox": list,
              "center": list, "radius_m": float, "component": str}


def load_street_map(cfg: dict[str, Any], base: Path | None = None) -> StreetMap:
    """Build the map a task's ``[world]`` table describes.

    Keys: ``source`` (one of :data:`SOURCES`, default ``"grid"``); per source ``grid``
    settings (``avenues``, ``streets``, ``avenue_spacing_m``, ``street_spacing_m``,
    ``two_way_every``, ``broadway``), ``place`` + ``cache`` (osmnx), ``graphml``,
    ``nodes`` + ``edges`` (csv), ``edges_json`` + ``nodes`` + ``edges`` + ``variant``
    (paper). Paths may start with ``shared:`` for the shared data folder. Sub-region:
    ``bbox = [south, west, north, east]`` or ``center = [lat, lon]`` + ``radius_m``.
    ``component``: see :func:`finish`; default ``"largest-scc"``, except for the paper
    graph, which is kept ``"as-is"``.
    """
    source = cfg.get("source", "grid")
    if source == "grid":
        m = grid_city(avenues=int(cfg.get("avenues", 6)), streets=int(cfg.get("streets", 12)),
                      avenue_spacing_m=float(cfg.get("avenue_spacing_m", 250.0)),
                      street_spacing_m=float(cfg.get("street_spacing_m", 80.0)),
                      two_way_every=int(cfg.get("two_way_every", 4)), broadway=bool(cfg.get("broadway", True)),
                      rotation_deg=float(cfg.get("rotation_deg", 0.0)))
    elif source == "osmnx":
        m = fetch_osmnx(cfg.get("place", MANHATTAN_PLACE), _path(cfg.get("cache", "data/osmnx/manhattan-drive.graphml"), base))
    elif source == "graphml":
        if "graphml" not in cfg:
            raise WorldModelError("[world] source = \"graphml\" needs graphml = PATH")
        m = load_graphml(_path(cfg["graphml"], base))
    elif source == "csv":
        if "nodes" not in cfg or "edges" not in cfg:
            raise WorldModelError("[world] source = \"csv\" needs nodes = PATH and edges = PATH")
        m = load_csv(_path(cfg["nodes"], base), _path(cfg["edges"], base))
    elif source == "paper":
        m = load_paper_graph(_path(cfg.get("edges_json", "shared:manhattan/world_model_edges.json"), base),
                             _path(cfg.get("nodes", "shared:manhattan/nodes.csv"), base),
                             _path(cfg.get("edges", "shared:manhattan/edges.csv"), base),
                             variant=cfg.get("variant", "shortest"))
    else:
        raise WorldModelError(f"[world] source {source!r} is not one of {', '.join(SOURCES)}")
    if "bbox" in cfg or "center" in cfg:
        return m.subregion(bbox=cfg.get("bbox"), center=cfg.get("center"), radius_m=cfg.get("radius_m"))
    return finish(m, cfg.get("component", "as-is" if source == "paper" else "largest-scc"))
