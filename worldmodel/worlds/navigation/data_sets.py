"""The navigation world's data set: ``manhattan-paper`` (``worldmodel fetch manhattan-paper``).

The paper's Manhattan graph (Vafa et al.), ``world_model_edges.json`` built from the authors' six
pickles (keyonvafa/world-model-evaluation at a pinned commit; read with :mod:`worldmodel.safe_pickle`,
converted byte for byte to the JSON the checksum names), plus ``nodes.csv``/``edges.csv``
(coordinates and lengths from OpenStreetMap). Online, the coordinates come from a live osmnx
download; OpenStreetMap changes, so those two files cannot match the mirror's checksums and are
recorded in the manifest as unverified. From a mirror all three are verified.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...datasets import DataSet, FetchError, Remote


PAPER_REPO = "keyonvafa/world-model-evaluation"
PAPER_COMMIT = "ba363f05b59fe63f30ff79a3dfbe6609101383f8"
PAPER_PICKLES = {  # (variant, file) -> (sha256, bytes)
    ("shortest", "node_and_direction_to_neighbor"): ("660ba10e503626de6d9357cd38d8149f864b803e18082e3a562796d3f4e597b1", 140672),
    ("shortest", "valid_turns"): ("e7e858b87317630852c48f7dc9a015953d631fc6f306da678d9f75962de57141", 61120),
    ("random", "node_and_direction_to_neighbor"): ("3718bca93a0c4da09ef191adaf0ba7aaef6cc6e465bf9a9ef83e7f169be70320", 140678),
    ("random", "valid_turns"): ("3d18253b54d14e06c9270e765ba615273d870dcf0f3e188680f248395fa48203", 61097),
    ("traffic", "node_and_direction_to_neighbor"): ("3718bca93a0c4da09ef191adaf0ba7aaef6cc6e465bf9a9ef83e7f169be70320", 140678),
    ("traffic", "valid_turns"): ("3493c98fecab1d8837a398710624e84530de1aaeb82785d334de0abffa4bf250", 61129),
}
MANHATTAN_PLACE = "Manhattan, New York City, New York, USA"
DIRECTIONS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
_GRAPH_HEADER = {
    "format": "edges: [u, direction, v] = from OSM node u, moving in `direction`, the next intersection is OSM "
              "node v (one entry per key of node_and_direction_to_neighbor.pkl). valid_turns: {u (as string): "
              "[directions]} copied verbatim from valid_turns.pkl, list order kept.",
    "directions": list(DIRECTIONS),
    "source": "keyonvafa/world-model-evaluation, mapping/sequences/{shortest,random,traffic}/"
              "{node_and_direction_to_neighbor,valid_turns}.pkl; see PROVENANCE.md",
    "note": "random/ and traffic/ node_and_direction_to_neighbor.pkl are byte-identical, so traffic stores "
            "edges_same_as=random. The three valid_turns.pkl differ only in which nodes carry an empty list.",
}


def paper_graph_json(variants: dict[str, tuple[dict, dict]]) -> bytes:
    """``world_model_edges.json`` from the paper's pickles, ``{variant: (neighbours, valid_turns)}``.

    ``neighbours`` maps ``(node, direction)`` to the next node; ``valid_turns`` maps a node
    to its directions (order kept). Edges are written sorted as ``[u, direction, v]``, one
    per line; a variant whose edges equal an earlier one's stores ``edges_same_as``. The
    layout is fixed, so the same pickles always give the same bytes.
    """
    out = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in _GRAPH_HEADER.items()]
    out.append(' "variants": {')
    seen: dict[str, list] = {}
    names = list(variants)
    for i, name in enumerate(names):
        neighbours, turns = variants[name]
        try:
            edges = sorted((int(u), str(d), int(w)) for (u, d), w in neighbours.items())
            turn_table = {str(int(k)): [str(d) for d in v] for k, v in turns.items()}
        except (TypeError, ValueError, AttributeError) as exc:
            raise FetchError(f"paper graph pickles for {name!r} do not hold the expected tables ({exc})") from None
        out.append(f"  {json.dumps(name)}: {{")
        same = next((other for other, e in seen.items() if e == edges), None)
        if same is not None:
            out.append(f'   "edges_same_as": {json.dumps(same)},')
        else:
            seen[name] = edges
            out.append('   "edges": [')
            out += [f"    {json.dumps(list(e))}," for e in edges]
            out[-1] = out[-1].rstrip(",")
            out.append("   ],")
        out.append(f'   "valid_turns": {json.dumps(turn_table)}')
        out.append("  }" + ("," if i < len(names) - 1 else ""))
    out += [" }", "}"]
    return ("\n".join(out) + "\n").encode()


def build_manhattan(downloaded: dict[str, Path], staging: Path) -> list[str]:
    from ... import safe_pickle

    variants = {}
    for variant in ("shortest", "random", "traffic"):
        variants[variant] = tuple(safe_pickle.load(downloaded[f"{variant}-{kind}.pkl"])
                                  for kind in ("node_and_direction_to_neighbor", "valid_turns"))
    (staging / "world_model_edges.json").write_bytes(paper_graph_json(variants))
    osmnx_coordinates(staging / "world_model_edges.json", staging / "nodes.csv", staging / "edges.csv")
    return ["nodes.csv", "edges.csv"]


def osmnx_coordinates(graph_json: Path, nodes_csv: Path, edges_csv: Path, place: str = MANHATTAN_PLACE,
                      graph=None) -> None:
    """Write ``nodes.csv`` (``osm_id,lat,lon,src``) and ``edges.csv`` (``u,v,length_m``) for the
    nodes of ``graph_json`` from an osmnx drive network of ``place`` (downloaded unless
    ``graph``, a networkx MultiDiGraph with ``x``/``y`` node and ``length`` edge attributes, is given)."""
    import csv
    import datetime

    data = json.loads(Path(graph_json).read_text())
    ids: set[str] = set()
    for v in data["variants"].values():
        for u, _, w in v.get("edges", []):
            ids.update((str(u), str(w)))
        ids.update(v.get("valid_turns", {}))
    if graph is None:
        try:
            import osmnx as ox

            graph = ox.graph_from_place(place, network_type="drive", simplify=True)
        except (OSError, ValueError, RuntimeError, KeyError) as exc:  # network or Overpass failures
            raise FetchError(f"could not download coordinates of {place!r} from OpenStreetMap with osmnx "
                             f"({type(exc).__name__}: {exc}); use `worldmodel fetch manhattan-paper --from DIR` "
                             "with a copy of the data") from None
    stamp = "osmnx-" + datetime.date.today().isoformat()
    rows = sorted((str(n), float(a["y"]), float(a["x"])) for n, a in graph.nodes(data=True) if str(n) in ids)
    lengths: dict[tuple[str, str], float] = {}
    for u, v, a in graph.edges(data=True):
        key = (str(u), str(v))
        if key[0] in ids and key[1] in ids and "length" in a:
            lengths[key] = min(float(a["length"]), lengths.get(key, float("inf")))
    with nodes_csv.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["osm_id", "lat", "lon", "src"])
        w.writerows([n, f"{lat:.7f}", f"{lon:.7f}", stamp] for n, lat, lon in rows)
    with edges_csv.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["u", "v", "length_m"])
        w.writerows([u, v, f"{m:.3f}"] for (u, v), m in sorted(lengths.items()))


MANHATTAN = DataSet(
    name="manhattan-paper",
    folder="manhattan",
    description="the paper's Manhattan street graph (4,580 nodes, 9,705 edges per variant) with coordinates",
    files={
        "world_model_edges.json": "c810d3baf795d68c1965bea2c44188179c7419ae172fb6ff093e4fcbbd20de8e",
        "nodes.csv": "c6cf0d48cccd1b6c2f738f493cc5104ab287e6839b80f748255337dc0c78e3b5",
        "edges.csv": "edc3edb132886857b9e5f35f7809cb64bfd927b5dd49c30f35bec09ec349be51",
    },
    remotes=tuple(
        Remote(f"{variant}-{kind}.pkl", sha, size,
               (f"https://raw.githubusercontent.com/{PAPER_REPO}/{PAPER_COMMIT}/mapping/sequences/{variant}/{kind}.pkl",))
        for (variant, kind), (sha, size) in PAPER_PICKLES.items()
    ),
    build=build_manhattan,
    licence="graph: MIT (c) 2024 Keyon Vafa; coordinates and lengths: (c) OpenStreetMap contributors, ODbL 1.0",
)


DATA_SETS = (MANHATTAN,)
