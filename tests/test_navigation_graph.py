"""Street maps: direction assignment, sources (grid, GraphML, osmnx cache/offline, CSV, paper graph), bad input."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from worldmodel.errors import WorldModelError

from datahelp import FIXTURES, needs_full
from worldmodel.worlds.navigation.geometry import DIRECTIONS, bearing_deg, direction_of, haversine_m, offset_coord
from worldmodel.worlds.navigation.sources import grid_city, load_csv, load_street_map
from worldmodel.worlds.navigation.streetmap import StreetMap, finish, from_edge_list

CENTRE = (40.75, -73.99)


def star_coords(radius_m=100.0, bearings=(0, 45, 90, 135, 180, 225, 270, 315)):
    """A centre node 'c' and one node per bearing, ``radius_m`` away."""
    coords = {"c": CENTRE}
    for b in bearings:
        r = math.radians(b)
        coords[f"p{b}"] = offset_coord(CENTRE, radius_m * math.cos(r), radius_m * math.sin(r))
    return coords


def test_direction_sectors():
    assert direction_of(0) == "N" and direction_of(359.9) == "N" and direction_of(22.4) == "N"
    assert direction_of(22.6) == "NE" and direction_of(67.4) == "NE" and direction_of(67.6) == "E"
    assert [direction_of(b) for b in (90, 135, 180, 225, 270, 315)] == ["E", "SE", "S", "SW", "W", "NW"]
    assert direction_of(-10) == "N" and direction_of(370) == "N"


def test_haversine_and_bearing():
    a, b = (40.0, -74.0), (41.0, -74.0)
    assert haversine_m(a, b) == pytest.approx(111_195, rel=1e-3)
    assert bearing_deg(a, b) == pytest.approx(0.0, abs=1e-9)
    assert bearing_deg(b, a) == pytest.approx(180.0, abs=1e-9)
    assert bearing_deg((0.0, 0.0), (0.0, 1.0)) == pytest.approx(90.0, abs=1e-9)


def test_hand_made_graph_gets_known_directions():
    bearings = (0, 45, 90, 135, 180, 225, 270, 315)
    coords = star_coords(bearings=bearings)
    m = from_edge_list(coords, [("c", f"p{b}", None) for b in bearings], name="star")
    expected = dict(zip(bearings, ("N", "NE", "E", "SE", "S", "SW", "W", "NW")))
    assert m.neighbours("c") == {expected[b]: f"p{b}" for b in bearings}
    for b in bearings:
        assert m.lengths[("c", expected[b])] == pytest.approx(100.0, rel=1e-3)
    assert m.info["dropped_direction_clashes"] == 0
    # reverse edges: each leaf is entered from c in the leaf's direction
    assert m.reverse_edges()["p90"] == [("c", "E")]


def test_direction_clash_keeps_shortest_and_counts():
    coords = star_coords(bearings=(40, 60))  # both in the NE sector
    coords["far"] = offset_coord(CENTRE, 300.0, 300.0)  # also NE, farther
    m = from_edge_list(coords, [("c", "p40", 500.0), ("c", "p60", 120.0), ("c", "far", 900.0)], name="clash")
    assert m.neighbours("c") == {"NE": "p60"}
    assert m.lengths[("c", "NE")] == 120.0
    assert m.info["dropped_direction_clashes"] == 2
    # parallel edges and self loops
    m2 = from_edge_list(coords, [("c", "p40", 50.0), ("c", "p40", 30.0), ("c", "c", 10.0)], name="par")
    assert m2.lengths[("c", "NE")] == 30.0 and m2.info["dropped_self_loops"] == 1


def test_grid_city_structure():
    m = grid_city(avenues=4, streets=8, two_way_every=4, broadway=True)
    assert len(m.nodes) == 32
    assert all(40 < lat < 41 and -75 < lon < -73 for lat, lon in m.coords.values())
    # street 1 is one-way eastbound, street 2 westbound, street 0 two-way
    assert m.neighbours("a0s1").get("E") == "a1s1" and m.neighbours("a1s1").get("W") != "a0s1"
    assert m.neighbours("a1s2").get("W") == "a0s2" and m.neighbours("a0s2").get("E") != "a1s2"
    assert m.neighbours("a0s0").get("E") == "a1s0" and m.neighbours("a1s0").get("W") == "a0s0"
    diag = [k for k in m.edges if k[1] in ("NW", "SE")]
    assert diag, "the Broadway diagonal adds NW/SE edges"
    assert len(m.strongly_connected_components()) == 1
    assert m.summary()["edges"] == len(m.edges)


def test_default_source_is_grid_and_deterministic():
    a, b = load_street_map({}), load_street_map({"source": "grid"})
    assert a.nodes == b.nodes and a.edges == b.edges


def test_subregion_bbox_and_radius():
    m = grid_city(avenues=6, streets=12)
    lat0, lon0 = m.coords["a2s5"]
    cut = m.subregion(center=(lat0, lon0), radius_m=300)
    assert 2 <= len(cut.nodes) < len(m.nodes)
    assert all(haversine_m((lat0, lon0), cut.coords[n]) <= 300 for n in cut.nodes)
    assert len(cut.strongly_connected_components()) == 1
    lats = [c[0] for c in m.coords.values()]
    lons = [c[1] for c in m.coords.values()]
    box = m.subregion(bbox=(min(lats) - 1e-6, min(lons) - 1e-6, (min(lats) + max(lats)) / 2, max(lons) + 1e-6))
    assert len(box.nodes) < len(m.nodes)
    with pytest.raises(WorldModelError, match="bbox"):
        m.subregion(bbox=(1, 2, 0, 3))
    with pytest.raises(WorldModelError, match="sub-region"):
        m.subregion(center=(0.0, 0.0), radius_m=10)


def write_graphml(path, with_parallel=True):
    import osmnx as ox

    coords = star_coords(bearings=(0, 90, 180))
    g = nx.MultiDiGraph(crs="epsg:4326")
    for i, (n, (lat, lon)) in enumerate(coords.items()):
        g.add_node(100 + i, y=lat, x=lon, street_count=2)
    ids = {n: 100 + i for i, n in enumerate(coords)}
    for leaf in ("p0", "p90", "p180"):
        g.add_edge(ids["c"], ids[leaf], length=100.0, osmid=1)
        g.add_edge(ids[leaf], ids["c"], length=100.0, osmid=1)
    if with_parallel:
        g.add_edge(ids["c"], ids["p0"], length=150.0, osmid=2)
    ox.save_graphml(g, path)
    return ids


def test_graphml_source(tmp_path):
    path = tmp_path / "tiny.graphml"
    ids = write_graphml(path)
    m = load_street_map({"source": "graphml", "graphml": str(path)})
    assert sorted(m.nodes) == sorted(str(i) for i in ids.values())
    c = str(ids["c"])
    assert m.neighbours(c) == {"N": str(ids["p0"]), "E": str(ids["p90"]), "S": str(ids["p180"])}
    assert m.lengths[(c, "N")] == 100.0  # the shorter parallel edge
    with pytest.raises(WorldModelError, match="does not exist"):
        load_street_map({"source": "graphml", "graphml": str(tmp_path / "missing.graphml")})
    bad = tmp_path / "bad.graphml"
    bad.write_text("<graphml>not really")
    with pytest.raises(WorldModelError, match="could not be read"):
        load_street_map({"source": "graphml", "graphml": str(bad)})


def test_osmnx_source_uses_cache_and_fails_clearly_offline(tmp_path, monkeypatch):
    import osmnx as ox

    cache = tmp_path / "cache.graphml"
    write_graphml(cache)
    called = []
    monkeypatch.setattr(ox, "graph_from_place", lambda *a, **k: called.append(a) or (_ for _ in ()).throw(AssertionError))
    m = load_street_map({"source": "osmnx", "cache": str(cache)})
    assert len(m.nodes) == 4 and not called

    def offline(place, network_type):
        assert network_type == "drive"
        raise ConnectionError("Failed to resolve 'nominatim.openstreetmap.org'")

    monkeypatch.setattr(ox, "graph_from_place", offline)
    with pytest.raises(WorldModelError) as exc:
        load_street_map({"source": "osmnx", "cache": str(tmp_path / "none.graphml")})
    msg = str(exc.value)
    assert "Manhattan" in msg and "graphml" in msg and "csv" in msg and "\n" not in msg
    assert not (tmp_path / "none.graphml").exists()


def test_osmnx_fetch_writes_cache(tmp_path, monkeypatch):
    import osmnx as ox

    src = tmp_path / "src.graphml"
    write_graphml(src)
    g = ox.load_graphml(src)
    monkeypatch.setattr(ox, "graph_from_place", lambda place, network_type: g)
    cache = tmp_path / "sub" / "cache.graphml"
    m = load_street_map({"source": "osmnx", "cache": str(cache), "place": "Somewhere"})
    assert cache.exists() and len(m.nodes) == 4


def write_csvs(tmp_path, node_header="osm_id,lat,lon", edge_header="u,v,length"):
    coords = star_coords(bearings=(0, 90))
    ids = {"c": "1", "p0": "2", "p90": "3"}
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(node_header + "\n" + "".join(f"{ids[n]},{lat},{lon}\n" for n, (lat, lon) in coords.items()))
    edges = tmp_path / "edges.csv"
    edges.write_text(edge_header + "\n1,2,100\n2,1,100\n1,3,\n3,1,90\n3,99,5\n")
    return nodes, edges


def test_csv_source(tmp_path):
    nodes, edges = write_csvs(tmp_path)
    m = load_csv(nodes, edges)
    assert m.neighbours("1") == {"N": "2", "E": "3"}
    assert m.lengths[("1", "E")] == pytest.approx(100.0, rel=1e-3)  # blank length -> straight line
    assert m.info["skipped_edges_without_coords"] == 1  # node 99 has no coordinates


def test_csv_missing_columns(tmp_path):
    nodes, edges = write_csvs(tmp_path, node_header="osm_id,latitude,lon")
    with pytest.raises(WorldModelError, match="no lat column"):
        load_csv(nodes, edges)
    nodes, edges = write_csvs(tmp_path, edge_header="from,v,length")
    with pytest.raises(WorldModelError, match="no u column"):
        load_csv(nodes, edges)
    with pytest.raises(WorldModelError, match="needs nodes"):
        load_street_map({"source": "csv", "nodes": str(nodes)})


def test_bad_inputs():
    with pytest.raises(WorldModelError, match="no nodes"):
        StreetMap([], {}, {}, {})
    with pytest.raises(WorldModelError, match="no edges"):
        StreetMap(["a"], {"a": CENTRE}, {}, {})
    with pytest.raises(WorldModelError, match="unknown node id 'zz'"):
        StreetMap(["a"], {"a": CENTRE}, {("a", "N"): "zz"}, {("a", "N"): 1.0})
    with pytest.raises(WorldModelError, match="unknown direction"):
        StreetMap(["a", "b"], {"a": CENTRE, "b": CENTRE}, {("a", "UP"): "b"}, {("a", "UP"): 1.0})
    with pytest.raises(WorldModelError, match="not one of"):
        load_street_map({"source": "atlas"})
    # two islands: refused under "connected", cut under the default
    coords = star_coords(bearings=(0, 180))
    coords["x"] = offset_coord(CENTRE, 5000, 0)
    coords["y"] = offset_coord(CENTRE, 5000, 100)
    m = from_edge_list(coords, [("c", "p0", None), ("p0", "c", None), ("x", "y", None), ("y", "x", None)], name="two")
    with pytest.raises(WorldModelError, match="disconnected"):
        finish(m, "connected")
    assert len(finish(m, "largest-scc").nodes) == 2
    one_way = from_edge_list(star_coords(bearings=(0,)), [("c", "p0", None)], name="oneway")
    with pytest.raises(WorldModelError, match="no two intersections"):
        one_way.largest_scc()
    with pytest.raises(WorldModelError, match="unknown node id"):
        one_way.index("nope")


# -- the shared real data -----------------------------------------------------------------

needs_shared = needs_full("manhattan", "manhattan-paper")


@pytest.fixture
def fixture_shared(monkeypatch):
    """``shared:`` paths resolve to the committed cut of the paper graph."""
    monkeypatch.setenv("WORLDMODEL_SHARED", str(FIXTURES))
    return FIXTURES


def test_fixture_paper_graph_counts(fixture_shared):
    m = load_street_map({"source": "paper"})
    assert (len(m.nodes), m.n_edges) == (348, 651)
    assert m.summary()["directions"] == {"N": 5, "S": 15, "E": 4, "W": 3, "NE": 152, "NW": 167, "SE": 153, "SW": 152}
    assert not m.estimated_coords and all(n in m.coords for n in m.nodes)
    for variant in ("random", "traffic"):
        v = load_street_map({"source": "paper", "variant": variant})
        assert (len(v.nodes), v.n_edges) == (348, 652)
    with pytest.raises(WorldModelError, match="unknown variant"):
        load_street_map({"source": "paper", "variant": "nope"})
    checked = agree = 0
    for (u, d), v in m.edges.items():
        if u != v:
            checked += 1
            agree += direction_of(bearing_deg(m.coords[u], m.coords[v])) == d
    assert checked == 651 and agree / checked > 0.99


def test_fixture_csv_region(fixture_shared):
    cfg = {"source": "csv", "nodes": "shared:manhattan/nodes.csv", "edges": "shared:manhattan/edges.csv",
           "center": [40.758, -73.985], "radius_m": 600}
    m = load_street_map(cfg)
    assert 20 < len(m.nodes) < 200
    assert len(m.strongly_connected_components()) == 1
    assert all(k[1] in DIRECTIONS for k in m.edges)


@pytest.mark.slow
@needs_shared
def test_paper_graph_exact_counts():
    m = load_street_map({"source": "paper"})
    assert len(m.nodes) == 4580
    assert m.n_edges == 9705
    assert m.summary()["directions"] == {"NE": 1940, "SW": 1940, "NW": 1903, "SE": 1855,
                                         "N": 660, "S": 622, "E": 405, "W": 380}
    assert m.info["self_loops"] == 6
    assert sum(1 for n in m.nodes if m.neighbours(n)) == 4562
    assert len(m.estimated_coords) == 5 and all(n in m.coords for n in m.nodes)
    for variant in ("random", "traffic"):
        v = load_street_map({"source": "paper", "variant": variant})
        assert (len(v.nodes), v.n_edges) == (4580, 9705)
    with pytest.raises(WorldModelError, match="unknown variant"):
        load_street_map({"source": "paper", "variant": "nope"})


@pytest.mark.slow
@needs_shared
def test_paper_labels_agree_with_bearings():
    m = load_street_map({"source": "paper"})
    checked = agree = 0
    for (u, d), v in m.edges.items():
        if u == v or u in m.estimated_coords or v in m.estimated_coords:
            continue
        checked += 1
        agree += direction_of(bearing_deg(m.coords[u], m.coords[v])) == d
    assert checked > 9000 and agree / checked > 0.99


@pytest.mark.slow
@needs_shared
def test_shared_csv_region():
    cfg = {"source": "csv", "nodes": "shared:manhattan/nodes.csv", "edges": "shared:manhattan/edges.csv",
           "center": [40.758, -73.985], "radius_m": 600}
    m = load_street_map(cfg)
    assert 20 < len(m.nodes) < 200
    assert len(m.strongly_connected_components()) == 1
    assert all(k[1] in DIRECTIONS for k in m.edges)
