"""DFA core: minimisation, equivalence, boundaries (hand-made cases and properties)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldmodel.dfa import (
    REJECT, ExplicitDFA, World, counterexample, equivalent, exact_boundary, first_rejection, is_valid,
    random_dfa, random_walk, run, sampled_boundary, valid_suffixes,
)
from worldmodel.errors import WorldModelError


def with_start(dfa: ExplicitDFA, start: int) -> ExplicitDFA:
    return ExplicitDFA(dfa.delta, dfa.tokens, start)


def test_hopcroft_merges_equivalent_states():
    # states 1 and 2 both allow only 'a' back to 0: equivalent; 3 is unreachable
    delta = [[1, 2], [0, -1], [0, -1], [3, 3]]
    dfa = ExplicitDFA(delta, ["a", "b"])
    m, class_of = dfa.minimise()
    assert m.n_states == 2
    assert class_of[1] == class_of[2] != class_of[0]
    assert class_of[3] == -1
    assert equivalent(dfa, m)
    assert not dfa.is_minimal() and m.is_minimal()
    # merged states but everything reachable, and reachable but not merged
    assert not ExplicitDFA([[1, 2], [0, -1], [0, -1]], ["a", "b"]).is_minimal()
    assert not ExplicitDFA([[1, -1], [0, -1], [2, 2]], ["a", "b"]).is_minimal()


def test_counterexample_is_shortest():
    a = ExplicitDFA([[1, -1], [1, 1]], ["x", "y"])
    b = ExplicitDFA([[1, -1], [1, -1]], ["x", "y"])
    assert counterexample(a, b) == ("x", "y")
    assert not equivalent(a, b)


def test_bad_tables_are_rejected():
    with pytest.raises(WorldModelError):
        ExplicitDFA([[5]], ["a"])
    with pytest.raises(WorldModelError):
        ExplicitDFA([[0, 0]], ["a"])


def test_run_and_validity():
    dfa = ExplicitDFA([[1, -1], [0, 1]], ["a", "b"])
    assert run(dfa, ["a", "b", "a"]) == 0
    assert run(dfa, ["b"]) is REJECT
    assert is_valid(dfa, ["a", "b"]) and not is_valid(dfa, ["a", "a", "b"])
    assert first_rejection(dfa, 0, ["a", "a", "b"]) == 2
    # every valid suffix up to length k, each once; none for k <= 0 or from REJECT
    assert sorted(valid_suffixes(dfa, 0, 2)) == [("a",), ("a", "a"), ("a", "b")]
    assert list(valid_suffixes(dfa, 0, 0)) == [] and list(valid_suffixes(dfa, 0, -1)) == []
    assert list(valid_suffixes(dfa, REJECT, 3)) == []


def test_exact_boundary_hand_made():
    # 0 -a-> 1, 0 -b-> 1 ; 1 -a-> 1, 1 -c-> 0
    dfa = ExplicitDFA([[1, 1, -1], [1, -1, 0]], ["a", "b", "c"])
    assert exact_boundary(dfa, 1, 0, 5) == [("c",)]
    assert exact_boundary(dfa, 0, 1, 5) == [("b",)]
    assert exact_boundary(dfa, 0, 0, 5) == []


dfas = st.builds(
    lambda n, v, seed, p: random_dfa(n, v, seed, reject_prob=p, minimal=False),
    st.integers(1, 9), st.integers(1, 4), st.integers(0, 10_000), st.floats(0.0, 0.7),
)


@settings(max_examples=60, deadline=None)
@given(dfas)
def test_minimisation_is_equivalent_and_minimal(dfa):
    m, class_of = dfa.minimise()
    assert equivalent(dfa, m)
    assert m.n_states <= dfa.n_states
    # no two states of the minimal DFA are equivalent
    for i, j in itertools.combinations(range(m.n_states), 2):
        assert counterexample(with_start(m, i), with_start(m, j)) is not None
    # every original reachable state behaves like its class
    for s in np.flatnonzero(class_of >= 0):
        assert equivalent(with_start(dfa, int(s)), with_start(m, int(class_of[s])))
    # minimising again changes nothing
    again, _ = m.minimise()
    assert np.array_equal(again.delta, m.delta)


@settings(max_examples=60, deadline=None)
@given(dfas, st.integers(1, 4), st.data())
def test_boundary_elements_are_minimal_and_complete(dfa, k, data):
    q1 = data.draw(st.integers(0, dfa.n_states - 1))
    q2 = data.draw(st.integers(0, dfa.n_states - 1))
    boundary = exact_boundary(dfa, q1, q2, k)
    for x in boundary:
        assert 1 <= len(x) <= k
        assert is_valid(dfa, x, q1) and not is_valid(dfa, x, q2)
        for j in range(1, len(x)):
            assert is_valid(dfa, x[:j], q1) and is_valid(dfa, x[:j], q2)
    # brute force: every valid suffix from q1 up to k that q2 rejects has exactly one boundary prefix
    expected = set()
    for x in valid_suffixes(dfa, q1, k):
        j = first_rejection(dfa, q2, x)
        if j is not None:
            expected.add(x[: j + 1])
    assert set(boundary) == expected
    if q1 == q2:
        assert boundary == []


def test_sampled_boundary_is_subset_of_exact():
    dfa = random_dfa(10, 3, 7)
    rng = np.random.default_rng(0)
    for q1, q2 in [(0, 1), (2, 3), (1, 4)]:
        if max(q1, q2) >= dfa.n_states:
            continue
        exact = set(exact_boundary(dfa, q1, q2, 12))
        sampled = sampled_boundary(dfa, q1, q2, 200, 12, rng)
        assert set(sampled) <= exact
        assert sampled  # with 200 walks of length 12 the boundary is found


def test_random_dfa_is_reachable_and_live():
    for seed in range(20):
        dfa = random_dfa(12, 3, seed)
        assert dfa.reachable().all()
        assert all(dfa.valid_tokens(s) for s in range(dfa.n_states))
        walk = random_walk(dfa, 0, 30, np.random.default_rng(seed))
        assert len(walk) == 30 and is_valid(dfa, walk)


def test_check_tokens_names_the_first_unknown_token_and_its_position():
    class Tiny(World):
        tokens = ("x", "y")
        name = "tiny"

        def initial_state(self):
            return 0

        def step(self, state, token):
            return state

    w = Tiny()
    w.check_tokens(["x", "y", "x"])
    with pytest.raises(WorldModelError, match=r"^sequence: token 'z' at position 2 is not in the tiny world's alphabet$"):
        w.check_tokens(["x", "y", "z", "q"])
    with pytest.raises(WorldModelError, match=r"^prefix: token 'q' at position 0 "):
        w.check_tokens(["q"], what="prefix")
    w.tokens = ("x", "y", "z")           # a changed alphabet is picked up
    w.check_tokens(["z"])
    assert w.state_key(3) == "3" and repr(REJECT) == "REJECT"
