"""Where street maps come from: the sources a task's ``[world]`` table can name.

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

Every source except ``"paper"`` derives directions from bearings
(:func:`~.geometry.direction_of`) and resolves clashes (two streets leaving a node in
the same sector) by keeping the shortest edge (ties: the smaller neighbour id);
:attr:`~.streetmap.StreetMap.info` records how many edges were dropped. A sub-region
(bounding box, or centre + radius in metres) cuts any map down and keeps its largest
strongly connected component (:meth:`~.streetmap.StreetMap.subregion`).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from worldmodel.errors import WorldModelError

from .geometry import DIRECTIONS, Coord, haversine_m, offset_coord
from .streetmap import StreetMap, finish, from_edge_list

MANHATTAN_PLACE = "Manhattan, New York City, New York, USA"


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
