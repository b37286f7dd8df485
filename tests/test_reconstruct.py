"""Map reconstruction, strict algorithm: constraints, the greedy choice, rollback, corruption.

The paper's algorithm (the default) has its own tests in ``test_reconstruct_paper.py``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from streetmap import at, make_map
from worldmodel.errors import WorldModelError
from worldmodel.worlds.navigation.geometry import DIRECTIONS, MILE_M, haversine_m
from worldmodel.worlds.navigation.reconstruct import corrupt, is_valid_traversal, reconstruct

REPO = Path(__file__).resolve().parents[1]


def strict(*args, **kw):
    return reconstruct(*args, algorithm="strict", **kw)


def grid_map(n: int = 6, spacing: float = 120.0, seed: int = 0):
    """An n x n grid with random one-way and two-way streets (always strongly connected ring)."""
    rng = np.random.default_rng(seed)
    coords = {f"g{r}_{c}": at(r * spacing, c * spacing) for r in range(n) for c in range(n)}
    edges = {}
    for r in range(n):
        for c in range(n):
            u = f"g{r}_{c}"
            for d, (dr, dc) in (("N", (1, 0)), ("S", (-1, 0)), ("E", (0, 1)), ("W", (0, -1))):
                rr, cc = r + dr, c + dc
                if 0 <= rr < n and 0 <= cc < n:
                    ring = r in (0, n - 1) or c in (0, n - 1)
                    if ring and (rr in (0, n - 1) or cc in (0, n - 1)) or rng.random() < 0.6:
                        edges[(u, d)] = f"g{rr}_{cc}"
    return make_map(coords, edges)


def walk(edges: dict, seq: list[str]) -> str | None:
    cur = seq[0]
    for t in seq[2:-1]:
        cur = edges.get((cur, t))
        if cur is None:
            return None
    return cur


def random_valid(m, n: int, seed: int, max_moves: int = 30) -> list[list[str]]:
    """Random valid traversals: random walks, destination = where the walk stops."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        o = m.nodes[int(rng.integers(len(m.nodes)))]
        cur, moves = o, []
        for _ in range(int(rng.integers(1, max_moves))):
            opts = [(d, v) for (u, d), v in m.edges.items() if u == cur]
            if not opts:
                break
            d, cur = opts[int(rng.integers(len(opts)))]
            moves.append(d)
        if moves:
            out.append([o, cur, *moves, "end"])
    return out


# ---------------------------------------------------------------------------


def test_valid_sequences_add_nothing_and_fail_none():
    m = grid_map()
    seqs = random_valid(m, 60, seed=1)
    assert all(is_valid_traversal(s, m) for s in seqs)
    r = strict(seqs, m)
    st = r.stats()
    assert st["new_edges"] == 0 and st["failed"] == 0
    assert st["valid_on_true_map"] == st["used"] == 60
    expected_used = set()
    for s in seqs:
        cur = s[0]
        for t in s[2:-1]:
            expected_used.add((cur, t))
            cur = m.edges[(cur, t)]
    assert r.true_used == expected_used
    assert st["true_edges_used"] + st["true_edges_unused"] == len(m.edges)
    types = {e["type"] for e in r.edge_list()}
    assert "new" not in types


@pytest.mark.parametrize("max_degree,max_miles", [(4, 0.5), (5, 0.2), (8, 1.0)])
def test_added_edges_respect_limits_and_make_used_sequences_valid(max_degree, max_miles):
    m = grid_map(7, seed=2)
    seqs, corrupted = corrupt(random_valid(m, 120, seed=3), m, 0.5, seed=4)
    seqs = seqs + [[s[0], s[1], *s[3:]] for s in seqs[:20] if len(s) > 4]  # dropped steps too
    r = strict(seqs, m, max_degree=max_degree, max_distance_m=max_miles * MILE_M)
    st = r.stats()
    assert st["new_edges"] > 0 and st["used"] + st["failed"] == len(seqs)
    graph = dict(m.edges)
    for e in r.new_edges:
        assert e.direction in DIRECTIONS
        assert (e.u, e.direction) not in graph, "a second edge in one direction"
        graph[(e.u, e.direction)] = e.v
        assert e.u != e.v
        assert haversine_m(m.coords[e.u], m.coords[e.v]) <= max_miles * MILE_M + 1e-3
        assert r.status[e.sequence] == "used"
    degree = {}
    for (u, _) in graph:
        degree[u] = degree.get(u, 0) + 1
    added_from = {e.u for e in r.new_edges}
    assert all(degree[u] <= max_degree for u in added_from)
    # every sequence reported consistent is valid on the reconstructed graph
    for s, status in zip(seqs, r.status):
        if status in ("used", "valid"):
            assert walk(graph, s) == s[1]
        if status == "valid":
            assert is_valid_traversal(s, m)


def test_greedy_choice_prefers_more_valid_steps_then_the_destination():
    # A has only a N edge. The sequence goes E from A (invalid), then N, then ends at Z.
    coords = {
        "A": at(0, 0), "B": at(100, 0),
        "X": at(0, 50),    # nearest candidate: no way on
        "Y1": at(0, 200),  # N leads to W, not the destination
        "Y2": at(0, 300),  # N leads to Z, the destination
        "W": at(100, 200), "Z": at(100, 300),
    }
    edges = {("A", "N"): "B", ("Y1", "N"): "W", ("Y2", "N"): "Z"}
    m = make_map(coords, edges)
    r = strict([["A", "Z", "E", "N", "end"]], m)
    assert [(e.u, e.direction, e.v) for e in r.new_edges] == [("A", "E", "Y2")]
    assert r.status == ["used"]
    # without the destination bonus being reachable, the nearer of equal scores wins
    r2 = strict([["A", "W", "E", "N", "end"]], m)
    assert [(e.u, e.direction, e.v) for e in r2.new_edges] == [("A", "E", "Y1")]
    # with nothing to gain, the nearest node is taken and the walk must still end right
    r3 = strict([["A", "X", "E", "end"]], m)
    assert [(e.u, e.direction, e.v) for e in r3.new_edges] == [("A", "E", "X")]
    r4 = strict([["A", "Z", "E", "end"]], m)  # last step: the destination itself is chosen
    assert [(e.u, e.direction, e.v) for e in r4.new_edges] == [("A", "E", "Z")]


def test_tentative_edge_is_used_when_the_walk_returns():
    # A --E--> ? ; then W back to A, then E again (must reuse the tentative edge), ends at C.
    coords = {"A": at(0, 0), "C": at(0, 120), "D": at(0, 60)}
    edges = {("C", "W"): "A", ("D", "W"): "A"}
    m = make_map(coords, edges)
    r = strict([["A", "C", "E", "W", "E", "end"]], m)
    assert [(e.u, e.v) for e in r.new_edges] == [("A", "C")]  # D is nearer but ends at D
    assert r.status == ["used"]


def test_two_sequences_no_reconstruction_can_satisfy_fail_exactly_one():
    coords = {"O": at(0, 0), "P": at(0, -100), "A": at(0, 100), "B": at(20, 110)}
    edges = {("O", "W"): "P", ("P", "E"): "O"}
    m = make_map(coords, edges)
    seqs = [["O", "A", "E", "end"], ["O", "B", "E", "end"]]
    r = strict(seqs, m)
    st = r.stats()
    assert st["failed"] == 1 and st["used"] == 1
    assert r.status[0] == "used" and r.status[1].startswith("failed")
    assert [(e.u, e.direction, e.v) for e in r.new_edges] == [("O", "E", "A")]
    # the order decides which one survives
    r2 = strict(seqs[::-1], m)
    assert r2.stats()["failed"] == 1 and r2.new_edges[0].v == "B"


def test_failed_sequences_roll_back_and_limits_fail():
    coords = {"O": at(0, 0), "A": at(0, 100), "Far": at(0, 2000),
              "n1": at(100, 100), "n2": at(-100, 100), "n3": at(0, 200), "n4": at(0, 0.5)}
    edges = {("A", "N"): "n1", ("A", "S"): "n2", ("A", "E"): "n3", ("A", "W"): "O"}
    m = make_map(coords, edges)
    # O --NE--> (new): Far is out of range, so the nearest node (n4) is taken, the walk
    # ends away from Far -> failed, and the tentative edge is rolled back
    r = strict([["O", "Far", "NE", "end"]], m, max_distance_m=300)
    assert r.status[0].startswith("failed")
    assert r.new_edges == []
    # degree limit: A already has 4 edges
    r = strict([["A", "n1", "NE", "end"]], m, max_degree=4)
    assert r.status == ["failed: degree limit"]
    r = strict([["A", "n1", "NE", "end"]], m, max_degree=5)
    assert r.status == ["used"] and r.new_edges[0].v == "n1"
    # distance limit: nothing within 0.1 m of Far
    r = strict([["Far", "O", "N", "end"]], m, max_distance_m=0.1)
    assert r.status == ["failed: no candidate in range"]


def test_malformed_lines_are_counted_and_skipped():
    m = grid_map(3)
    good = random_valid(m, 1, seed=0)[0]
    seqs = [good, good[:-1], ["nowhere", good[1], "N", "end"], [good[0], good[1], "UP", "end"],
            [good[0], good[1], "end", "N", "end"], ["end"]]
    st = strict(seqs, m).stats()
    assert st["sequences"] == 6 and st["malformed"] == 5 and st["used"] == 1
    assert set(st["malformed_by_reason"]) == {
        "does not end in 'end'", "unknown origin or destination node",
        "unknown direction (or 'end' before the last token)", "too short"}


def test_bad_settings_are_one_line_errors():
    m = grid_map(3)
    with pytest.raises(WorldModelError, match="max degree"):
        strict([], m, max_degree=0)
    with pytest.raises(WorldModelError, match="distance"):
        strict([], m, max_distance_m=0)
    with pytest.raises(WorldModelError, match="corruption rate"):
        corrupt([], m, 1.5)


def test_corruption_relabels_one_step_in_the_given_share():
    m = grid_map(6, seed=5)
    seqs = random_valid(m, 80, seed=6)
    invalid = [seqs[0][:2] + ["NE", "end"]] if not is_valid_traversal(seqs[0][:2] + ["NE", "end"], m) else []
    out, chosen = corrupt(seqs + invalid, m, 0.25, seed=7)
    assert len(out) == 80 and len(chosen) == 20
    for i, (a, b) in enumerate(zip(seqs, out)):
        diff = [j for j in range(len(a)) if a[j] != b[j]]
        if i in chosen:
            assert len(diff) == 1 and 2 <= diff[0] < len(a) - 1
            assert not is_valid_traversal(b, m)
        else:
            assert diff == []
    out2, chosen2 = corrupt(seqs, m, 0.25, seed=7)
    assert out2 == out and chosen2 == chosen


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_reconstruct", REPO / "scripts" / "bench_reconstruct.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_matches_the_straightforward_implementation():
    bench = _load_bench()
    m = grid_map(7, seed=8)
    seqs, _ = corrupt(random_valid(m, 150, seed=9), m, 0.4, seed=10)
    seqs += [[s[0], s[1], *s[3:]] for s in seqs[:30] if len(s) > 4]
    for deg, miles in ((4, 0.5), (6, 0.25)):
        fast = strict(seqs, m, deg, miles * MILE_M)
        edges, used, status = bench.naive_reconstruct(seqs, m, deg, miles * MILE_M)
        assert [(e.u, e.direction, e.v, e.sequence) for e in fast.new_edges] == edges
        assert fast.true_used == used
        assert fast.status == status


def _shared_manhattan(full: bool = False):
    """The paper graph: the full data set if available (CI), else the committed cut; ``full``
    skips when the full data set is missing."""
    from datahelp import FIXTURES, full_data
    from worldmodel.worlds.navigation.sources import load_paper_graph

    base = full_data("manhattan")
    if base is None:
        if full:
            pytest.skip("full Manhattan data not available: run `worldmodel fetch manhattan-paper`")
        base = FIXTURES / "manhattan"
    return load_paper_graph(base / "world_model_edges.json", base / "nodes.csv", base / "edges.csv")


def test_manhattan_paper_graph_small_job():
    m = _shared_manhattan()
    bench = _load_bench()
    seqs = bench.random_traversals(m, 60, seed=0)
    r = strict(seqs, m)
    assert r.stats()["new_edges"] == 0 and r.stats()["failed"] == 0
    seqs, chosen = corrupt(seqs, m, 0.25, seed=1)
    r = strict(seqs, m)
    st = r.stats()
    assert len(chosen) == 15 and st["new_edges"] > 0
    assert st["new_edge_length_m"]["max"] <= 0.5 * MILE_M


@pytest.mark.slow
def test_manhattan_matches_the_straightforward_implementation():
    m = _shared_manhattan(full=True)
    bench = _load_bench()
    seqs, _ = corrupt(bench.random_traversals(m, 300, seed=2), m, 0.25, seed=3)
    fast = strict(seqs, m)
    edges, used, status = bench.naive_reconstruct(seqs, m)
    assert [(e.u, e.direction, e.v, e.sequence) for e in fast.new_edges] == edges
    assert fast.true_used == used and fast.status == status
