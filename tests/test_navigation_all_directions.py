"""The navigation DFA and sampler on a hand-built map that uses all eight directions.

The grid cities have no NE/SW streets, so a bug confined to those directions goes unseen
there. This map is a 3x3 "king's grid" (every node linked both ways to each of its up to
eight neighbours), plus a spur ``p`` with one street out and none in, and a dead end ``q``
with one street in and none out. Expectations are computed independently with networkx.
"""

from __future__ import annotations

import re
from collections import Counter

import networkx as nx
import numpy as np
import pytest

from worldmodel.dfa import REJECT, run
from worldmodel.errors import TrialSkipped
from worldmodel.worlds.navigation.geometry import DIRECTIONS
from worldmodel.worlds.navigation.streetmap import StreetMap
from worldmodel.worlds.navigation.sampler import NavigationSampler
from worldmodel.worlds.navigation.world import END, END_TOKEN, START, NavigationWorld, Origin

OFFSETS = {"N": (1, 0), "S": (-1, 0), "E": (0, 1), "W": (0, -1),
           "NE": (1, 1), "NW": (1, -1), "SE": (-1, 1), "SW": (-1, -1)}
GRID = [f"r{r}c{c}" for r in range(3) for c in range(3)]


def king_map() -> StreetMap:
    pos = {f"r{r}c{c}": (r, c) for r in range(3) for c in range(3)}
    pos["p"] = (-1, -1)   # spur: one street out (NE to r0c0), none in
    pos["q"] = (3, 1)     # dead end: one street in (N from r2c1), none out
    at = {v: k for k, v in pos.items()}
    edges = {}
    for name in GRID:
        r, c = pos[name]
        for d, (dr, dc) in OFFSETS.items():
            other = at.get((r + dr, c + dc))
            if other in GRID:
                edges[(name, d)] = other
    edges[("p", "NE")] = "r0c0"
    edges[("r2c1", "N")] = "q"
    coords = {n: (40.0 + 0.001 * r, -74.0 + 0.0013 * c) for n, (r, c) in pos.items()}
    return StreetMap(GRID + ["p", "q"], coords, edges, {k: 100.0 for k in edges}, name="king")


@pytest.fixture(scope="module")
def world():
    return NavigationWorld(king_map(), name="king")


@pytest.fixture(scope="module")
def graph(world):
    g = nx.DiGraph()
    g.add_nodes_from(world.map.nodes)
    g.add_edges_from((u, v) for (u, _), v in world.map.edges.items())
    return g


def all_states(world):
    nodes = world.map.nodes
    return ([START, END, REJECT] + [Origin(n) for n in nodes]
            + [(c, d) for c in nodes for d in nodes])


def test_every_direction_is_used_and_steps_where_the_map_says(world):
    centre = "r1c1"
    assert world.valid_tokens((centre, "r0c0")) == list(DIRECTIONS)      # all eight, in token order
    assert world.valid_tokens((centre, centre)) == list(DIRECTIONS) + [END_TOKEN]
    expected = {"N": "r2c1", "S": "r0c1", "E": "r1c2", "W": "r1c0",
                "NE": "r2c2", "NW": "r2c0", "SE": "r0c2", "SW": "r0c0"}
    for d, node in expected.items():
        assert world.step((centre, "q"), d) == (node, "q"), d
    assert world.valid_tokens(("r0c0", "r0c0")) == ["N", "E", "NE", END_TOKEN]
    assert world.valid_tokens(("r2c2", "r0c0")) == ["S", "W", "SW"]
    assert world.valid_tokens(("p", "q")) == ["NE"]
    assert world.valid_tokens(("q", "r1c1")) == []                      # dead end, not at the destination
    assert world.valid_tokens(("q", "q")) == [END_TOKEN]


def test_valid_tokens_agree_with_step_and_the_map_in_every_state(world, graph):
    tokens = world.tokens
    for s in all_states(world):
        valid = world.valid_tokens(s)
        assert len(valid) == len(set(valid)), s
        by_step = [t for t in tokens if world.step(s, t) is not REJECT]
        assert set(valid) == set(by_step), s
        if isinstance(s, tuple):
            cur, dest = s
            from_map = [d for d in DIRECTIONS if (cur, d) in world.map.edges]
            assert valid == from_map + ([END_TOKEN] if cur == dest else []), s
            for d in from_map:
                assert world.step(s, d) == (world.map.edges[(cur, d)], dest)
            assert world.step(s, END_TOKEN) == (END if cur == dest else REJECT)
        elif isinstance(s, Origin):
            reach = nx.descendants(graph, s.node) | {s.node}
            assert valid == [n for n in world.map.nodes if n in reach], s
            for n in world.map.nodes:
                assert world.step(s, n) == ((s.node, n) if n in reach else REJECT)
    assert world.valid_tokens(START) == world.map.nodes
    assert world.valid_tokens(END) == [] and world.valid_tokens(REJECT) == []
    for t in tokens:
        assert world.step(END, t) is REJECT and world.step(REJECT, t) is REJECT


def test_reachability_and_hops_match_networkx(world, graph):
    assert world.reachable_from("p") == frozenset(GRID + ["p", "q"])
    assert world.reachable_from("r1c1") == frozenset(GRID + ["q"])
    assert world.reachable_from("q") == frozenset({"q"})
    for dest in world.map.nodes:
        expected = nx.single_target_shortest_path_length(graph, dest)
        assert world.hops_to(dest) == dict(expected), dest
    assert world.hops_to("r0c0")["r2c2"] == 2                 # two SW moves
    assert world.hops_to("q")["p"] == 4                        # p NE r0c0 NE r1c1 N r2c1 N q


def test_paths_lengths_probes_and_keys(world):
    seq = ["p", "q", "NE", "NE", "NW", "N", END_TOKEN]      # p r0c0 r1c1 r2c0, and r2c0 has no N street
    assert run(world, seq) is REJECT
    seq = ["p", "q", "NE", "N", "N", "N", END_TOKEN]         # p r0c0 r1c0 r2c0, then N again: off the map
    assert world.path_nodes(seq) is None
    seq = ["p", "q", "NE", "NE", "N", "N", END_TOKEN]        # p r0c0 r1c1 r2c1 q
    assert run(world, seq) == END
    assert world.path_nodes(seq) == ["p", "r0c0", "r1c1", "r2c1", "q"]
    assert world.path_length_m(seq) == pytest.approx(400.0)
    assert world.path_nodes(["p"]) is None and world.path_nodes(["q", "p"]) is None
    assert int(world.probe_targets(("r2c1", "q"))[0]) == world.map.nodes.index("r2c1")
    assert int(world.probe_targets(Origin("q"))[0]) == world.map.nodes.index("q")
    assert world.probe_targets(START) is None and world.probe_targets(END) is None
    assert world.state_key(("r2c1", "q")) == "r2c1->q" and world.state_key(Origin("p")) == "origin:p"
    assert world.state_key(START) == START
    assert world.twin_nodes() == []


def _cap(graph, state, max_tokens, max_len):
    """The longest prefix (directions) that leaves room for the shortest completion and ``end``."""
    cur, dest = state
    return min(max_len, max_tokens - 3 - nx.shortest_path_length(graph, cur, dest))


def _check_prefix(world, prefix, state):
    assert run(world, prefix) == state
    assert prefix[1] == state[1]
    assert all(t in DIRECTIONS for t in prefix[2:])


@pytest.mark.parametrize("length", [1, 3, 6])
def test_sampled_prefixes_have_exactly_the_drawn_length(world, length):
    sampler = NavigationSampler(world, max_tokens=20, min_len=length, max_len=length)
    rng = np.random.default_rng(length)
    for _ in range(60):
        p = sampler.compression_pair(rng)
        assert len(p.prefix1) == len(p.prefix2) == length + 2
        _check_prefix(world, p.prefix1, p.state1)
        _check_prefix(world, p.prefix2, p.state2)
        assert p.prefix1 != p.prefix2 and p.state1 == p.state2
        q = sampler.distinction_pair(rng)
        assert len(q.prefix1) == len(q.prefix2) == length + 2
        _check_prefix(world, q.prefix1, q.state1)
        _check_prefix(world, q.prefix2, q.state2)
        assert q.state1 != q.state2


def test_length_zero_prefixes_are_the_state_itself(world):
    sampler = NavigationSampler(world, max_tokens=20, min_len=0, max_len=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        q = sampler.distinction_pair(rng)
        assert q.prefix1 == q.state1 and q.prefix2 == q.state2      # origin = current node, no moves
    with pytest.raises(TrialSkipped, match="two different prefixes"):
        sampler.compression_pair(rng)                                 # a state has one prefix of length 0


def test_sampled_lengths_fill_exactly_their_bounds(world, graph):
    max_tokens, min_len, max_len = 8, 1, 4
    sampler = NavigationSampler(world, max_tokens=max_tokens, min_len=min_len, max_len=max_len)
    rng = np.random.default_rng(0)
    seen_by_cap: dict[int, set[int]] = {}
    count_by_cap: Counter = Counter()
    curs, dests = set(), set()
    for _ in range(500):
        p = sampler.compression_pair(rng)
        cap = _cap(graph, p.state1, max_tokens, max_len)
        l = len(p.prefix1) - 2
        assert min_len <= l <= cap, (p.state1, l, cap)
        _check_prefix(world, p.prefix1, p.state1)
        seen_by_cap.setdefault(cap, set()).add(l)
        count_by_cap[cap] += 1
        curs.add(p.state1[0])
        dests.add(p.state1[1])
        q = sampler.distinction_pair(rng)
        both = min(_cap(graph, q.state1, max_tokens, max_len), _cap(graph, q.state2, max_tokens, max_len))
        assert min_len <= len(q.prefix1) - 2 == len(q.prefix2) - 2 <= both
        curs.update((q.state1[0], q.state2[0]))
        dests.update((q.state1[1], q.state2[1]))
    # every length from min_len to the state's cap occurs (the bound is exact, not just an upper bound)
    assert {4, 3, 2} <= set(count_by_cap)
    for cap, seen in seen_by_cap.items():
        if count_by_cap[cap] >= 30:
            assert seen == set(range(min_len, cap + 1)), (cap, seen)
    # states are drawn over every node that has a street in (p has none)
    assert curs == set(GRID) | {"q"}
    assert dests == set(GRID) | {"q"}


def test_sampler_bounds_are_checked(world):
    with pytest.raises(ValueError, match="min_len <= max_len"):
        NavigationSampler(world, min_len=3, max_len=2)
    with pytest.raises(ValueError, match="min_len <= max_len"):
        NavigationSampler(world, min_len=-1, max_len=2)
    s = NavigationSampler(world, max_tokens=30)
    assert (s.min_len, s.max_len) == (1, 27)


def test_twin_nodes_are_reported_in_map_order():
    # a, b and c leave only north to t; d and e have no streets out (no signature: not twins)
    coords = {n: (40.0 + 0.001 * i, -74.0) for i, n in enumerate("abcdet")}
    edges = {("a", "N"): "t", ("b", "N"): "t", ("c", "N"): "t", ("t", "S"): "a", ("t", "E"): "d",
             ("t", "W"): "e"}
    m = StreetMap(list("abcdet"), coords, edges, {k: 1.0 for k in edges}, name="twins")
    w = NavigationWorld(m)
    assert w.twin_nodes() == [("a", "b"), ("a", "c")]
    edges[("b", "E")] = "t"
    w = NavigationWorld(StreetMap(list("abcdet"), coords, edges, {k: 1.0 for k in edges}, name="twins"))
    assert w.twin_nodes() == [("a", "c")]


def test_probe_targets_are_int64_indices(world):
    for state in (("r2c1", "q"), Origin("p")):
        t = world.probe_targets(state)
        assert t.dtype == np.int64 and t.shape == (1,)


def test_pair_keys_name_the_states(world):
    sampler = NavigationSampler(world, max_tokens=20, min_len=1, max_len=4)
    rng = np.random.default_rng(3)
    for _ in range(20):
        p = sampler.compression_pair(rng)
        assert p.key == world.state_key(p.state1)
        q = sampler.distinction_pair(rng)
        assert q.key == f"{world.state_key(q.state1)}|{world.state_key(q.state2)}"


def _line_world():
    """s -> x -> t, one way: every backward walk of 2 or more steps from x or t dies at s."""
    coords = {"s": (40.0, -74.0), "x": (40.0, -73.999), "t": (40.0, -73.998)}
    edges = {("s", "E"): "x", ("x", "E"): "t"}
    return NavigationWorld(StreetMap(["s", "x", "t"], coords, edges, {k: 1.0 for k in edges}, name="line"))


def test_skipped_trials_say_why():
    import itertools

    w = _line_world()
    rng = np.random.default_rng(0)
    sampler = NavigationSampler(w, max_tokens=20, min_len=3, max_len=3, tries=4)
    sampler._state = lambda rng: ("x", "t")
    with pytest.raises(TrialSkipped, match=r"^no state with two different prefixes in 4 draws "
                                           r"\(last: no backward walk of length 3 from x\)$"):
        sampler.compression_pair(rng)
    with pytest.raises(TrialSkipped, match=r"^could not draw two different states$"):
        sampler.distinction_pair(rng)
    states = itertools.cycle([("x", "t"), ("t", "t")])
    sampler._state = lambda rng: next(states)
    with pytest.raises(TrialSkipped, match=r"^backward walks of length 3 from x keep hitting nodes with no incoming street$"):
        sampler.distinction_pair(rng)
    # one step back from t always comes from x: a single prefix
    one = NavigationSampler(w, max_tokens=20, min_len=1, max_len=1, tries=3)
    one._state = lambda rng: ("t", "t")
    with pytest.raises(TrialSkipped, match=r"\(last: only one prefix of length 1 reaches t->t\)$"):
        one.compression_pair(rng)
    with pytest.raises(TrialSkipped, match=r"^no state with two different prefixes in 0 draws \(last: \)$"):
        NavigationSampler(w, max_tokens=20, tries=0).compression_pair(rng)
    # no state leaves room for three moves plus the completion in 5 tokens
    with pytest.raises(TrialSkipped, match=r"^no \(current, destination\) state with a reachable destination in 4 draws$"):
        NavigationSampler(w, max_tokens=5, min_len=3, max_len=3, tries=4).distinction_pair(rng)


def test_is_traversal(world):
    seq = ["p", "q", "NE", "NE", "N", "N", END_TOKEN]            # p r0c0 r1c1 r2c1 q
    assert world.is_traversal(seq) and world.is_traversal(["q", "q", END_TOKEN])
    assert not world.is_traversal(seq[:-1])                     # not finished
    assert not world.is_traversal(seq + ["N"])                  # nothing after 'end'
    assert not world.is_traversal(["p", "q", "NE", "SW"])       # p -> r0c0 is one way: no SW back
    assert not world.is_traversal([]) and not world.is_traversal(["p"])


def test_names_defaults_and_refused_node_ids(world):
    from worldmodel.errors import WorldModelError

    assert world.name == "king" and NavigationWorld(king_map()).name == "navigation"
    assert world.path_nodes(["r1c1", "q"]) == ["r1c1"]                 # origin and destination only
    assert world.check_node("q") == "q"
    with pytest.raises(WorldModelError, match=r"^node 'zz' is not a node of street map king$"):
        world.check_node("zz")
    with pytest.raises(WorldModelError, match=r"^destination 'zz' is not a node of street map king$"):
        world.hops_to("zz")
    for bad in ("a b", "", "end", "SW", "x\ty"):
        coords = {bad: (40.0, -74.0), "b": (40.001, -74.0)}
        m = StreetMap([bad, "b"], coords, {(bad, "N"): "b"}, {(bad, "N"): 1.0}, name="bad")
        with pytest.raises(WorldModelError, match=rf"^street map bad: node id {re.escape(repr(bad))} cannot be a token "
                                                  r"\(it is a direction, 'end', empty or contains whitespace\)$"):
            NavigationWorld(m)
    s = NavigationSampler(world)
    assert (s.max_tokens, s.min_len, s.max_len, s.tries) == (100, 1, 97, 200) and s.world is world


@pytest.mark.parametrize("repeats, found", [(0, True), (7, True), (8, False)])
def test_the_second_prefix_is_drawn_up_to_eight_times(world, repeats, found):
    """After the first prefix, ``repeats`` more draws repeat it; a different one comes next."""
    sampler = NavigationSampler(world, max_tokens=20, min_len=1, max_len=1, tries=1)
    sampler._state = lambda rng: ("r1c1", "r1c1")
    first, other = ("r0c0", "r1c1", "NE"), ("r0c1", "r1c1", "N")
    script = iter([first] * (1 + repeats) + [other] + [first] * 20)
    sampler._prefix = lambda state, length, rng: next(script)
    rng = np.random.default_rng(0)
    if found:
        pair = sampler.compression_pair(rng)
        assert (pair.prefix1, pair.prefix2) == (first, other)
    else:
        with pytest.raises(TrialSkipped, match=r"\(last: only one prefix of length 1 reaches r1c1->r1c1\)$"):
            sampler.compression_pair(rng)


def test_next_token_positions_are_the_moves_after_origin_and_destination(world):
    seq = ["p", "q", "NE", "NE", "N", "N", END_TOKEN]
    assert list(world.next_token_positions(seq)) == [2, 3, 4, 5, 6]
    assert list(world.next_token_positions(seq[:2])) == [] and list(world.next_token_positions(seq[:1])) == []
    assert list(world.next_token_positions([])) == [] and list(world.next_token_positions(seq[:3])) == [2]
