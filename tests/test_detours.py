"""Detours: generic decoding under forced deviations, and the navigation wiring."""

from __future__ import annotations

import math

import numpy as np
import pytest

from worldmodel.dfa import REJECT, World
from worldmodel.detours import parse_ps, run_detours
from worldmodel.errors import WorldModelError
from worldmodel.models import SequenceModel


class CounterWorld(World):
    """Tokens a, b, c are always valid; 'stop' becomes valid after `n` tokens."""

    tokens = ("a", "b", "c", "stop")
    stop_tokens = frozenset({"stop"})
    name = "counter"

    def __init__(self, n: int = 20, only_a_at: frozenset[int] = frozenset()):
        self.n = n
        self.only_a_at = only_a_at  # positions where only 'a' is valid

    def initial_state(self):
        return 0

    def step(self, state, token):
        if state is REJECT or state == "done":
            return REJECT
        if token == "stop":
            return "done" if state >= self.n else REJECT
        if token not in ("a", "b", "c"):
            return REJECT
        if state in self.only_a_at and token != "a":
            return REJECT
        return state + 1


class PreferA(SequenceModel):
    """Ranks a > b > c; says 'stop' once the prefix is long enough."""

    tokens = CounterWorld.tokens
    name = "prefer-a"

    def __init__(self, n: int):
        self.n = n
        self.calls = 0

    def next_token_probs(self, prefixes):
        self.calls += 1
        out = np.zeros((len(prefixes), 4))
        for i, p in enumerate(prefixes):
            out[i] = [0, 0, 0, 1] if len(p) >= self.n else [0.6, 0.3, 0.1, 0]
        return out

    def score(self, *a, **k):  # pragma: no cover
        raise NotImplementedError

    def sample(self, *a, **k):  # pragma: no cover
        raise NotImplementedError


def within(x: int, n: int, p: float, sigmas: float = 4.5) -> bool:
    return abs(x - n * p) <= sigmas * math.sqrt(n * p * (1 - p)) + 1


def before_stop(n):
    """Detour predicate: no detour once 'stop' is due (else a detour could postpone it forever)."""
    return lambda state, tok, length: state < n


@pytest.mark.parametrize("kind", ["random", "adversarial"])
def test_replacement_happens_at_rate_p(kind):
    world, model = CounterWorld(20), PreferA(20)
    ps = [0.0, 0.1, 0.5, 0.75]
    results, trials = run_detours(model, world, [[]] * 50, kind, ps, allowed=before_stop(20), max_len=30, seed=3)
    for r in results:
        assert r.share == 1.0 and r.n == 50 and r.steps == 50 * 21
        # a detour drawn at the stop step has no candidate (the predicate forbids it)
        assert r.drawn == r.replaced + r.impossible
        assert within(r.replaced, 50 * 20, r.p), (r.p, r.replaced)
        assert within(r.impossible, 50, r.p)
    for t in trials:
        moves = t.tokens[:-1]
        assert t.tokens[-1] == "stop" and len(moves) == 20
        replaced = [x for x in moves if x != "a"]
        assert len(replaced) == t.replaced
        if kind == "adversarial":
            assert set(replaced) <= {"c"}  # the lowest-ranked valid token
        else:
            assert set(replaced) <= {"b", "c"}
    zero = [t for t in trials if t.p == 0]
    assert all(t.replaced == 0 and t.tokens == ["a"] * 20 + ["stop"] for t in zero)


def test_random_detours_pick_uniformly_among_other_valid_tokens():
    world, model = CounterWorld(20), PreferA(20)
    _, trials = run_detours(model, world, [[]] * 200, "random", [1.0], allowed=before_stop(20), max_len=30, seed=0)
    toks = [x for t in trials for x in t.tokens[:-1]]
    assert "a" not in toks and len(toks) == 200 * 20
    assert within(toks.count("b"), len(toks), 0.5)


def test_no_detour_possible_keeps_the_models_token():
    world, model = CounterWorld(6, only_a_at=frozenset({1, 3})), PreferA(6)
    results, trials = run_detours(model, world, [[]] * 20, "random", [1.0], allowed=before_stop(6),
                                  max_len=10, seed=1)
    r = results[0]
    assert r.share == 1.0
    for t in trials:
        # only 'a' is valid at positions 1 and 3 and it is the top choice; no detour at stop
        assert t.tokens[1] == "a" and t.tokens[3] == "a"
        assert [x == "a" for i, x in enumerate(t.tokens[:6]) if i not in (1, 3)] == [False] * 4
        assert t.impossible == 3 and t.replaced == 4


def test_detours_can_postpone_a_stop_past_the_limit():
    world, model = CounterWorld(3), PreferA(3)
    res, trials = run_detours(model, world, [[]] * 10, "random", [1.0], max_len=8, seed=0)
    assert res[0].share == 0.0 and res[0].failures == {"too long": 10}
    assert all(len(t.tokens) == 8 for t in trials)


def test_predicate_limits_candidates_and_failures_are_counted():
    world, model = CounterWorld(5), PreferA(5)
    never_b = lambda state, tok, length: tok != "b"  # noqa: E731
    _, trials = run_detours(model, world, [[]] * 20, "random", [1.0], allowed=never_b, max_len=8, seed=2)
    assert all("b" not in t.tokens for t in trials)
    # too long: stop becomes valid only after 5 moves, but the limit is 4 tokens
    res, trials = run_detours(model, world, [[]] * 5, "random", [0.0], max_len=4, seed=0)
    assert res[0].share == 0.0 and res[0].failures == {"too long": 5}
    assert res[0].stderr == 0.0


def test_results_are_seeded_and_independent_of_batch_size():
    world, model = CounterWorld(12), PreferA(12)
    a = run_detours(model, world, [[]] * 30, "random", [0.3, 0.6], seed=9, batch_size=7)[1]
    b = run_detours(model, world, [[]] * 30, "random", [0.3, 0.6], seed=9, batch_size=256)[1]
    c = run_detours(model, world, [[]] * 30, "random", [0.3, 0.6], seed=10)[1]
    assert [t.tokens for t in a] == [t.tokens for t in b]
    assert [t.tokens for t in a] != [t.tokens for t in c]


def test_bad_input():
    world, model = CounterWorld(3), PreferA(3)
    with pytest.raises(WorldModelError, match="kind"):
        run_detours(model, world, [[]], "sideways", [0.1])
    with pytest.raises(WorldModelError, match="not valid"):
        run_detours(model, world, [["stop"]], "random", [0.1])
    with pytest.raises(WorldModelError, match="not in"):
        parse_ps("0.1,2")
    with pytest.raises(WorldModelError, match="numbers"):
        parse_ps("0.1,x")
    assert parse_ps("0, 0.01,0.5") == [0.0, 0.01, 0.5]


def test_binomial_standard_error():
    world = CounterWorld(3)
    res, _ = run_detours(PreferA(3), world, [[]] * 10, "random", [0.0])
    assert res[0].share == 1.0 and res[0].stderr == 0.0
    res, _ = run_detours(PreferA(2), world, [[]] * 10, "random", [0.0])  # stops too early: invalid
    assert res[0].share == 0.0 and res[0].failures == {"invalid token": 10}
    class StopsEarlyUnlessB(PreferA):
        def next_token_probs(self, prefixes):
            out = np.zeros((len(prefixes), 4))
            for i, p in enumerate(prefixes):
                due = 4 if p and p[0] == "b" else 3
                out[i] = [0, 0, 0, 1] if len(p) >= due else [0.6, 0.3, 0.1, 0]
            return out

    # world needs 4 moves; the model stops after 3 unless the start is "b": 6 of 12 succeed
    res, _ = run_detours(StopsEarlyUnlessB(0), CounterWorld(4), [[]] * 6 + [["b"]] * 6, "random", [0.0])
    assert res[0].successes == 6 and res[0].n == 12
    assert res[0].stderr == pytest.approx(math.sqrt(0.25 / 12))


# ---------------------------------------------------------------------------
# Navigation: the world's own navigator reaches the destination under any detours
# ---------------------------------------------------------------------------


def _nav_world():
    from worldmodel.worlds.navigation.sources import grid_city
    from worldmodel.worlds.navigation.world import NavigationWorld

    return NavigationWorld(grid_city(avenues=5, streets=8, two_way_every=3), name="grid")


@pytest.mark.parametrize("kind", ["random", "adversarial"])
def test_true_navigator_reaches_the_destination_in_every_trial(kind):
    from worldmodel.worlds.navigation.navigator import ShortestRouteModel, reachable_within

    world = _nav_world()
    rng = np.random.default_rng(0)
    nodes = world.map.nodes
    starts = []
    while len(starts) < 25:
        o, d = nodes[int(rng.integers(len(nodes)))], nodes[int(rng.integers(len(nodes)))]
        if o != d and o in world.hops_to(d):
            starts.append([o, d])
    max_len = 40
    results, trials = run_detours(ShortestRouteModel(world), world, starts, kind, [0, 0.1, 0.5, 0.75],
                                  allowed=reachable_within(world, max_len), max_len=max_len, seed=4)
    for r in results:
        assert r.successes == r.n == 25, (r.p, r.failures)
    for r in results[1:]:
        assert r.replaced > 0
    for t in trials:
        assert t.tokens[-1] == "end" and len(t.tokens) <= max_len
        assert world.path_nodes(t.tokens)[-1] == t.tokens[1]
