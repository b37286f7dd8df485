"""The seating world: statements, states, boundaries, prompts and the sampler."""

import itertools

import numpy as np
import pytest

from worldmodel.dfa import REJECT, exact_boundary, run
from worldmodel.errors import TrialSkipped, WorldModelError
from worldmodel.worlds.seating.prompts import (capability_prompt, parse_prompt, parse_seat, parse_yes_no,
                                               validity_prompt)
from worldmodel.worlds.seating.world import (SeatingWorld, parse_statement, prefix_to_state, statement_text,
                                             two_prefixes_different_states, two_prefixes_same_state)


@pytest.fixture(scope="module")
def w3():
    return SeatingWorld(3)


def reachable(world):
    seen = {world.initial_state()}
    todo = [world.initial_state()]
    while todo:
        s = todo.pop()
        for t in world.valid_tokens(s):
            nxt = world.step(s, t)
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def S(*names):
    return frozenset(tuple(x) for x in names)


def test_three_people_have_six_seatings_and_21_statements(w3):
    assert len(w3.seatings) == 6
    assert len(w3.tokens) == 21 == len(set(w3.tokens))
    assert sum("_in_seat_" in t for t in w3.tokens) == 9
    assert all(" " not in t for t in w3.tokens)  # sequence files split on whitespace
    assert w3.valid_tokens(w3.initial_state()) == list(w3.tokens)
    assert len(SeatingWorld(4).tokens) == 16 + 4 * 3 * 3


@pytest.mark.parametrize("statements, expected", [
    (["A is in seat 1"], S("ABC", "ACB")),
    (["A is 1 away from B"], S("ABC", "BAC", "CAB", "CBA")),
    (["B is 1 away from A"], S("ABC", "BAC", "CAB", "CBA")),
    (["A is 2 away from B"], S("ACB", "BCA")),
    (["A is in seat 2", "B is 2 away from C"], S("BAC", "CAB")),
    (["A is in seat 1", "B is in seat 3"], S("ACB")),
    (["C is 1 away from B", "A is in seat 3"], S("BCA", "CBA")),
])
def test_hand_checked_states(w3, statements, expected):
    assert run(w3, [parse_statement(s) for s in statements]) == expected


@pytest.mark.parametrize("statements", [
    ["A is in seat 2", "B is 1 away from C"],  # B and C sit in seats 1 and 3
    ["A is in seat 1", "B is in seat 3", "C is in seat 1"],
    ["A is in seat 1", "A is in seat 2"],
])
def test_contradictions_are_rejected(w3, statements):
    assert run(w3, [parse_statement(s) for s in statements]) is REJECT


def test_statement_text_round_trip(w3):
    for tok in w3.tokens:
        assert parse_statement(statement_text(tok), 3) == tok
    assert statement_text("A_is_2_away_from_C") == "A is 2 away from C"
    for bad in ["A is in seat", "A is 1 away from A", "hello", "A sits in seat 1"]:
        with pytest.raises(WorldModelError):
            parse_statement(bad)
    with pytest.raises(WorldModelError, match="does not fit"):
        parse_statement("D is in seat 1", 3)
    with pytest.raises(WorldModelError, match="n must be"):
        SeatingWorld(1)


def test_different_reachable_states_are_distinguishable(w3):
    states = reachable(w3)
    assert len(states) == 19
    for a, b in itertools.permutations(states, 2):
        # a seating in a but not in b gives a boundary suffix of <= n statements
        if a - b:
            assert exact_boundary(w3, a, b, 3)


def test_k1_boundary_can_be_empty_between_different_states(w3):
    cyclic = S("ABC", "BCA", "CAB")
    assert w3.valid_tokens(cyclic) == list(w3.tokens)
    assert exact_boundary(w3, w3.initial_state(), cyclic, 1) == []
    assert exact_boundary(w3, w3.initial_state(), cyclic, 2)


def test_exact_boundary_k1_matches_valid_sets(w3):
    q1 = run(w3, ["A_is_in_seat_1"])
    q2 = run(w3, ["A_is_in_seat_2"])
    b = exact_boundary(w3, q1, q2, 1)
    expected = sorted((t,) for t in set(w3.valid_tokens(q1)) - set(w3.valid_tokens(q2)))
    assert b == expected
    assert ("A_is_in_seat_1",) in b and ("B_is_1_away_from_C",) in b


def test_probe_targets_mark_the_remaining_seatings(w3):
    q = run(w3, ["A_is_in_seat_1"])
    y = w3.probe_targets(q)
    assert y.sum() == 2 and y.shape == (6,)
    assert w3.parse_state(w3.state_key(q)) == q


def test_non_narrowing_prefixes(w3):
    rng = np.random.default_rng(0)
    for _ in range(50):
        p1, p2, q = two_prefixes_same_state(w3, rng)
        assert p1 != p2 and run(w3, p1) == q == run(w3, p2)
        for t in p1 + p2:
            assert all(w3.is_true(t, seating) for seating in q)  # never narrows q
        a1, a2, q1, q2 = two_prefixes_different_states(w3, rng)
        assert q1 != q2 and run(w3, a1) == q1 and run(w3, a2) == q2
    with pytest.raises(TrialSkipped):
        prefix_to_state(w3, run(w3, ["A_is_in_seat_1", "B_is_in_seat_2"]), rng, max_len=0)


def test_prompts_read_back(w3):
    stmts = ("A_is_in_seat_1", "B_is_2_away_from_A")
    p = parse_prompt(capability_prompt(3, stmts, "C"))
    assert (p.kind, p.n, p.statements, p.person) == ("capability", 3, stmts, "C")
    text = validity_prompt(3, stmts, ["C_is_in_seat_2"])
    assert "A is in seat 1" in text and "ANSWER:" in text
    p = parse_prompt(text)
    assert (p.kind, p.statements, p.continuation) == ("validity", stmts, ("C_is_in_seat_2",))
    p = parse_prompt(validity_prompt(3, (), ["C_is_in_seat_2"]))
    assert p.statements == () and p.continuation == ("C_is_in_seat_2",)
    with pytest.raises(WorldModelError):
        parse_prompt("What is the capital of France?")


@pytest.mark.parametrize("text, want", [
    ("ANSWER: yes", True), ("Reasoning... ANSWER: no", False), ("ANSWER: Yes.", True),
    ("**ANSWER:** no", False), ("ANSWER: 'yes'", True), ("ANSWER: no\n", False),
    ("answer: yes", None), ("ANSWER: yes, since", None), ("ANSWER: maybe", None), ("yes", None),
    ("ANSWER: no ANSWER: yes", True), ("", None), ("ANSWER:", None),
])
def test_yes_no_parsing_is_strict(text, want):
    assert parse_yes_no(text) is want


@pytest.mark.parametrize("text, want", [
    ("ANSWER: 2", 2), ("so seat 3. ANSWER: 3.", 3), ("ANSWER: 4", None), ("ANSWER: 0", None),
    ("ANSWER: seat 2", None), ("ANSWER: 2 or 3", None), ("The answer is 2", None), ("ANSWER: two", None),
])
def test_seat_parsing_is_strict(text, want):
    assert parse_seat(text, 3) == want
