"""Map reconstruction, the paper's algorithm (``algorithm="paper"``, the default).

Each hand-built graph makes one of the rules in ``reconstruct_paper`` matter; the
expected edge sets are written out by hand. Then: valid traversals never add an edge
(both algorithms), and the indexed implementation agrees with the plain one in
``scripts/bench_reconstruct.py`` on random graphs and traversals.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streetmap import at, make_map
from worldmodel.worlds.navigation.geometry import DIRECTIONS, MILE_M, haversine_miles
from worldmodel.worlds.navigation.geometry import haversine_m
from worldmodel.worlds.navigation.reconstruct import reconstruct

REPO = Path(__file__).resolve().parents[1]


def paper(seqs, m, **kw):
    return reconstruct(seqs, m, algorithm="paper", **kw)


def strict(seqs, m, **kw):
    return reconstruct(seqs, m, algorithm="strict", **kw)


def new_set(r) -> set[tuple[str, str, str]]:
    return {(e.u, e.direction, e.v) for e in r.new_edges}


def seq(text: str) -> list[str]:
    return text.split()


# ---------------------------------------------------------------------------
# Rule 1: degree counts used true edges and new edges only
# ---------------------------------------------------------------------------


def test_unused_true_edges_do_not_count_toward_the_degree():
    coords = {"A": at(0, 0), "n": at(100, 0), "s": at(-100, 0), "e": at(0, 100), "w": at(0, -100),
              "T": at(100, 100)}
    edges = {("A", "N"): "n", ("A", "S"): "s", ("A", "E"): "e", ("A", "W"): "w"}
    m = make_map(coords, edges)
    # A has four true streets, none used yet: the paper's algorithm adds A --NE--> T
    r = paper([seq("A T NE end")], m, max_degree=4)
    assert new_set(r) == {("A", "NE", "T")}
    assert r.status == ["used"] and r.true_used == set()
    # the strict algorithm counts all four true streets: no room
    r = strict([seq("A T NE end")], m, max_degree=4)
    assert new_set(r) == set() and r.status == ["failed: degree limit"]
    # once the four streets are used, A has no room under the paper's rule either
    uses = [seq("A n N end"), seq("A s S end"), seq("A e E end"), seq("A w W end")]
    r = paper(uses + [seq("A T NE end")], m, max_degree=4)
    assert new_set(r) == set()
    assert r.status == ["valid"] * 4 + ["failed: no room at the origin"]
    assert r.true_used == {("A", "N"), ("A", "S"), ("A", "E"), ("A", "W")}


def test_a_walk_counts_the_unused_edges_it_takes():
    # B --S--> A is used first (B is full at degree 1). Then A -N-> B -S-> A -E-> C:
    # the walk takes A --N--> B tentatively, so back at A a second unused edge (E) would
    # be A's second: refused under degree 1, allowed under degree 2.
    coords = {"A": at(0, 0), "B": at(100, 0), "C": at(0, 100)}
    edges = {("A", "N"): "B", ("B", "S"): "A", ("A", "E"): "C"}
    m = make_map(coords, edges)
    seqs = [seq("B A S end"), seq("A C N S E end")]
    r = paper(seqs, m, max_degree=2)
    assert r.status == ["valid", "valid"] and new_set(r) == set()
    assert r.true_used == {("B", "S"), ("A", "N"), ("A", "E")}
    # degree 1: the walk stops at A; no prefix ends with room (B is full, A holds its
    # tentative N); from the origin, A --N--> ? is tried with every node, but each
    # continuation (S, E) needs a second edge at A or an S edge elsewhere: none continues
    r = paper(seqs, m, max_degree=1)
    assert r.status == ["valid", "failed: no candidate continues"]
    assert new_set(r) == set() and r.true_used == {("B", "S")}


# ---------------------------------------------------------------------------
# Rule 2: a new edge beside an unused true edge of the same direction
# ---------------------------------------------------------------------------


def test_new_edge_beside_an_unused_true_edge_shadows_it():
    coords = {"A": at(0, 0), "B": at(0, 100), "X": at(100, 100), "C": at(0, 300), "D": at(100, 300)}
    edges = {("A", "E"): "B", ("B", "N"): "X", ("C", "N"): "D"}
    m = make_map(coords, edges)
    seqs = [seq("B X N end"),      # uses B --N--> X
            seq("A D E N end"),    # A-E->B, B-N->X ends at X; no prefix with room -> new A --E--> C
            seq("A B E end")]      # valid on the true map, but A's E now leads to C
    r = paper(seqs, m)
    assert new_set(r) == {("A", "E", "C")}
    assert r.true_used == {("B", "N"), ("C", "N")}
    assert r.status == ["valid", "used", "failed: no room at the origin"]
    assert r.true_valid == [True, False, True]
    # strict: no edge may go beside a true one; the second traversal fails, the third is valid
    r = strict(seqs, m)
    assert new_set(r) == set()
    assert r.status == ["valid", "failed: walk ends away from the destination", "valid"]


# ---------------------------------------------------------------------------
# Rule 4: the last-step shortcut; the current node as a candidate; tie order
# ---------------------------------------------------------------------------


def test_last_move_goes_straight_to_the_destination():
    # Z lies west of B, yet the last move (E) is added as B --E--> Z
    coords = {"A": at(0, 0), "B": at(100, 0), "Z": at(100, -400), "Y": at(100, 50)}
    edges = {("A", "N"): "B", ("Y", "S"): "A"}
    m = make_map(coords, edges)
    r = paper([seq("A Z N E end")], m)
    assert new_set(r) == {("B", "E", "Z")}
    assert r.status == ["used"] and r.true_used == {("A", "N")}
    # with the destination out of range the traversal fails, keeping A --N--> B used
    r = paper([seq("A Z N E end")], m, max_distance_m=300)
    assert new_set(r) == set()
    assert r.status == ["failed: destination out of range"] and r.true_used == {("A", "N")}


def test_the_current_node_is_a_candidate():
    # A has only N -> B. Moves: E (missing), N. The best target for A --E--> is A itself.
    coords = {"A": at(0, 0), "B": at(100, 0), "C": at(0, 100)}
    edges = {("A", "N"): "B"}
    m = make_map(coords, edges)
    r = paper([seq("A B E N end")], m)
    assert new_set(r) == {("A", "E", "A")}
    assert r.status == ["used"] and r.true_used == {("A", "N")}
    assert r.new_edges[0].length_m == 0.0


def test_ties_go_to_the_first_node_in_node_order_not_the_nearest():
    # A --E--> ? then N, N. P (far, listed first) and Q (near) both continue one move.
    coords = {"P": at(0, 500), "A": at(0, 0), "Q": at(0, 50), "P2": at(100, 500), "Q2": at(100, 50),
              "D": at(300, 500)}
    edges = {("P", "N"): "P2", ("Q", "N"): "Q2"}
    m = make_map(coords, edges)
    r = paper([seq("A D E N N end")], m)
    assert new_set(r) == {("A", "E", "P"), ("P2", "N", "D")}
    assert r.true_used == {("P", "N")} and r.status == ["used"]
    # the strict algorithm breaks the same tie by distance: Q
    r = strict([seq("A D E N N end")], m)
    assert new_set(r) == {("A", "E", "Q"), ("Q2", "N", "D")}
    # reorder the nodes: now Q comes first and wins the paper's tie too
    m2 = make_map({k: coords[k] for k in ("Q", "A", "P", "P2", "Q2", "D")}, edges)
    r = paper([seq("A D E N N end")], m2)
    assert new_set(r) == {("A", "E", "Q"), ("Q2", "N", "D")}


def test_longest_continuation_wins_and_must_end_at_the_destination():
    # candidates for A --E-->: P continues N,N but ends at P3 (not the destination):
    # counts only its longest prefix with room (1); R continues N,N to the destination.
    coords = {"A": at(0, 0), "P": at(0, 100), "P2": at(100, 100), "P3": at(200, 100),
              "R": at(0, 300), "R2": at(100, 300), "D": at(200, 300)}
    edges = {("P", "N"): "P2", ("P2", "N"): "P3", ("R", "N"): "R2", ("R2", "N"): "D"}
    m = make_map(coords, edges)
    r = paper([seq("A D E N N end")], m)
    assert new_set(r) == {("A", "E", "R")}
    assert r.true_used == {("R", "N"), ("R2", "N")}


# ---------------------------------------------------------------------------
# Rule 5: no rollback
# ---------------------------------------------------------------------------


def test_a_failed_traversal_keeps_its_edges():
    coords = {"A": at(0, 0), "C": at(0, 100), "C2": at(100, 100), "D": at(0, 3000)}
    edges = {("C", "N"): "C2"}
    m = make_map(coords, edges)
    # A --E--> C (the only continuation), C --N--> C2, then the last move cannot reach D
    seqs = [seq("A D E N N end"), seq("A C2 E N end")]
    r = paper(seqs, m)
    assert new_set(r) == {("A", "E", "C")}
    assert r.new_edges[0].sequence == 0
    assert r.true_used == {("C", "N")}
    assert r.status == ["failed: destination out of range", "used"]
    # strict rolls the first one back; the second adds A --E--> C itself
    r = strict(seqs, m)
    assert r.status[0].startswith("failed") and r.new_edges[0].sequence == 1


def test_a_sequence_stuck_with_no_continuation_fails():
    coords = {"A": at(0, 0), "B": at(0, 100), "D": at(0, 200)}
    m = make_map(coords, {("B", "W"): "A"})
    # A --E--> ? then N, N: no node continues with N
    r = paper([seq("A D E N N end")], m)
    assert r.status == ["failed: no candidate continues"] and r.new_edges == []


# ---------------------------------------------------------------------------
# Rule 6: great-circle miles on a 3,958.8-mile sphere
# ---------------------------------------------------------------------------


def test_distance_is_the_authors_haversine_in_miles():
    a, b = (40.75, -73.98), (40.76, -73.97)
    phi1, phi2 = math.radians(a[0]), math.radians(b[0])
    h = math.sin((phi2 - phi1) / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(math.radians(b[1] - a[1]) / 2) ** 2
    assert haversine_miles(a, b) == pytest.approx(3958.8 * 2 * math.asin(math.sqrt(h)), rel=1e-12)
    # a node 2 m inside / outside half a mile (in the paper's miles), due east of A
    limit_m = 0.5 * 111_195.0 / (3958.8 * math.pi / 180)  # east offset of 0.5 mile in at()'s metres
    for offset, ok in ((-2, True), (2, False)):
        coords = {"A": at(0, 0), "B": at(0, 10), "Z": at(0, limit_m + offset)}
        assert (haversine_miles(coords["A"], coords["Z"]) <= 0.5) is ok
        r = paper([seq("A Z E end")], make_map(coords, {("A", "N"): "B"}))
        assert (new_set(r) == {("A", "E", "Z")}) is ok
        assert r.status == (["used"] if ok else ["failed: destination out of range"])


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


def random_map(rng: np.random.Generator, n: int, p: float, max_out: int | None = None, spacing: float = 150.0):
    """A jittered n x n grid with random edges in all eight directions."""
    coords = {f"v{r}_{c}": at(r * spacing + rng.normal(0, 10), c * spacing + rng.normal(0, 10))
              for r in range(n) for c in range(n)}
    steps = {"N": (1, 0), "S": (-1, 0), "E": (0, 1), "W": (0, -1),
             "NE": (1, 1), "NW": (1, -1), "SE": (-1, 1), "SW": (-1, -1)}
    edges = {}
    for r in range(n):
        for c in range(n):
            out = 0
            for d in DIRECTIONS:
                dr, dc = steps[d]
                if 0 <= r + dr < n and 0 <= c + dc < n and rng.random() < p:
                    if max_out is not None and out >= max_out:
                        break
                    edges[(f"v{r}_{c}", d)] = f"v{r + dr}_{c + dc}"
                    out += 1
    if not edges:
        edges[("v0_0", "N")] = "v1_0"
    order = list(coords)
    rng.shuffle(order)  # node order unrelated to position
    return make_map({k: coords[k] for k in order}, edges)


def random_walks(m, rng: np.random.Generator, count: int, max_moves: int = 12) -> list[list[str]]:
    out_edges: dict[str, list[tuple[str, str]]] = {}
    for (u, d), v in m.edges.items():
        out_edges.setdefault(u, []).append((d, v))
    starts = sorted(out_edges)
    seqs = []
    for _ in range(count):
        cur = o = starts[int(rng.integers(len(starts)))]
        moves = []
        for _ in range(int(rng.integers(1, max_moves + 1))):
            opts = out_edges.get(cur)
            if not opts:
                break
            d, cur = opts[int(rng.integers(len(opts)))]
            moves.append(d)
        seqs.append([o, cur, *moves, "end"])
    return seqs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(2, 5), p=st.floats(0.2, 0.9), max_degree=st.integers(1, 5))
def test_valid_traversals_never_add_an_edge(seed, n, p, max_degree):
    rng = np.random.default_rng(seed)
    # the paper's rule needs true out-degree <= the limit (else a valid traversal can be
    # refused its last street); the strict one follows true streets whatever the degree
    m = random_map(rng, n, p, max_out=max_degree)
    seqs = random_walks(m, rng, 25)
    for algo in ("paper", "strict"):
        r = reconstruct(seqs, m, max_degree=max_degree, algorithm=algo)
        assert r.new_edges == [], algo
        assert r.status == ["valid"] * len(seqs), algo
        assert all(r.true_valid)
    m_any = random_map(rng, n, p)
    r = strict(random_walks(m_any, rng, 25), m_any, max_degree=max_degree)
    assert r.new_edges == [] and set(r.status) == {"valid"}


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_reconstruct", REPO / "scripts" / "bench_reconstruct.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def corrupted(m, seqs, rng: np.random.Generator, rate: float) -> list[list[str]]:
    """Relabel one move, drop one or append one in a share of the traversals."""
    out = []
    for s in seqs:
        s = list(s)
        if len(s) > 3 and rng.random() < rate:
            j = 2 + int(rng.integers(len(s) - 3))
            kind = rng.integers(3)
            if kind == 0:
                s[j] = DIRECTIONS[int(rng.integers(8))]
            elif kind == 1 and len(s) > 4:
                del s[j]
            else:
                s.insert(j, DIRECTIONS[int(rng.integers(8))])
        if rng.random() < 0.05:
            s[1] = m.nodes[int(rng.integers(len(m.nodes)))]
        out.append(s)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_matches_the_plain_implementation_on_random_graphs(seed):
    bench = _load_bench()
    rng = np.random.default_rng(100 + seed)
    m = random_map(rng, int(rng.integers(3, 7)), float(rng.uniform(0.3, 0.8)), spacing=float(rng.uniform(80, 400)))
    seqs = corrupted(m, random_walks(m, rng, 80, max_moves=15), rng, rate=float(rng.uniform(0.2, 0.8)))
    seqs.append(["v0_0", "nowhere", "N", "end"])  # malformed: skipped by both
    for max_degree, miles in ((int(rng.integers(1, 5)), float(rng.uniform(0.1, 0.6))), (4, 0.5)):
        fast = paper(seqs, m, max_degree=max_degree, max_distance_m=miles * MILE_M)
        edges, used, status = bench.plain_paper_reconstruct(seqs, m, max_degree, miles * MILE_M / MILE_M)
        assert [(e.u, e.direction, e.v, e.sequence) for e in fast.new_edges] == edges
        assert fast.true_used == used
        assert [s.split(":")[0] if s.startswith("malformed") else s for s in fast.status] == status
        assert len(edges) > 0 or max_degree == 1


def test_stats_report_the_valid_share_and_new_edges_by_direction():
    coords = {"A": at(0, 0), "B": at(100, 0), "Z": at(100, -400), "Y": at(100, 50)}
    m = make_map(coords, {("A", "N"): "B", ("Y", "S"): "A"})
    st_ = paper([seq("A Z N E end"), seq("A B N end"), seq("A B N"), seq("Y A S end")], m).stats()
    assert st_["algorithm"] == "paper"
    assert st_["valid_on_true_map"] == 2 and st_["valid_share"] == pytest.approx(2 / 3)
    assert st_["new_edges"] == 1 and st_["new_edges_by_direction"]["E"] == 1
    assert sum(st_["new_edges_by_direction"].values()) == 1
    assert st_["new_edge_length_m"]["max"] == pytest.approx(haversine_m(coords["B"], coords["Z"]), abs=1e-3)


def test_unknown_algorithm_is_a_one_line_error():
    from worldmodel.errors import WorldModelError

    m = make_map({"A": at(0, 0), "B": at(100, 0)}, {("A", "N"): "B"})
    with pytest.raises(WorldModelError, match="unknown reconstruction algorithm"):
        reconstruct([], m, algorithm="fast")


# ---------------------------------------------------------------------------
# The authors' published traversals (read from a path; not part of the repository)
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_published_samples_match_the_plain_implementation():
    """``$WORLDMODEL_AUTHORS_SAMPLES``: the ``mapping/sequences`` folder of keyonvafa/world-model-evaluation."""
    folder = os.environ.get("WORLDMODEL_AUTHORS_SAMPLES")
    if not folder or not (Path(folder) / "shortest" / "samples.txt").is_file():
        pytest.skip("set WORLDMODEL_AUTHORS_SAMPLES to the authors' mapping/sequences folder")
    base = Path(os.environ.get("WORLDMODEL_SHARED", REPO.parent / "shared" / "data")) / "manhattan"
    if not (base / "world_model_edges.json").is_file():
        pytest.skip(f"shared Manhattan data not found at {base}")
    from worldmodel.worlds.navigation.sources import load_paper_graph

    m = load_paper_graph(base / "world_model_edges.json", base / "nodes.csv", base / "edges.csv")
    lines = (Path(folder) / "shortest" / "samples.txt").read_text().splitlines()
    seqs = [line.split() for line in lines if line.strip()][:400]
    bench = _load_bench()
    fast = paper(seqs, m)
    edges, used, status = bench.plain_paper_reconstruct(seqs, m)
    assert [(e.u, e.direction, e.v, e.sequence) for e in fast.new_edges] == edges
    assert fast.true_used == used
