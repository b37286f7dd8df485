"""Automaton extraction (L*) and its diff against the world."""

import json

import numpy as np
import pytest

from worldmodel.acceptance import Epsilon, TopK
from worldmodel.cli import main
from worldmodel.dfa import REJECT, ExplicitDFA, counterexample, equivalent, explicit_world, random_dfa
from worldmodel.extract import Conformance, ModelAcceptor, RandomWalkTester, WMethodTester, diff, extract, lstar
from worldmodel.models import HFModel, TrueWorldModel, Vocabulary

X, Y = "x", "y"


def learn(dfa, **kw):
    """Extract the DFA of the model that is ``dfa`` itself (uniform over its valid tokens)."""
    return extract(TrueWorldModel(dfa), Epsilon(), walks=200, walk_len=12, **kw)


def same_table(a: ExplicitDFA, b: ExplicitDFA) -> bool:
    """Identical minimal DFAs (minimise numbers states breadth-first, so equivalent DFAs get one table)."""
    ma, mb = a.minimise()[0], b.minimise()[0]
    return ma.tokens == mb.tokens and ma.delta.shape == mb.delta.shape and (ma.delta == mb.delta).all()


@pytest.mark.parametrize("seed", range(8))
def test_extracting_the_true_world_model_gives_the_minimal_true_dfa(seed):
    world = random_dfa(int(3 + seed % 6), 2 + seed % 3, seed, reject_prob=0.35)
    ex, _ = learn(world)
    true, _ = explicit_world(world)
    assert ex.complete and ex.stopped is None
    assert equivalent(ex.dfa, true)
    assert same_table(ex.dfa, true)
    d = diff(ex.dfa, true)
    assert d.equivalent and not d.merges and not d.split_sizes and d.n_extra == d.n_missing == 0


def test_seating_true_world_model_is_extracted_exactly():
    from worldmodel.worlds.seating.world import SeatingWorld

    world = SeatingWorld(3)
    true, labels = explicit_world(world)
    assert true.n_states == 19 and labels[0] == world.state_key(world.initial_state())
    ex, _ = extract(TrueWorldModel(world), Epsilon(), walks=100, walk_len=8)
    assert ex.complete and same_table(ex.dfa, true)


# world: 0 -x-> 1, 0 -y-> 2; 1 -x-> 3, 1 -y-> 0; 2 -x-> 3, 2 -y-> reject; 3 -x-> 0, 3 -y-> reject
WORLD = ExplicitDFA(np.array([[1, 2], [3, 0], [3, -1], [0, -1]]), (X, Y), name="four")


def merged_dfa(dfa: ExplicitDFA, keep: int, drop: int) -> ExplicitDFA:
    """``dfa`` with state ``drop`` merged into ``keep`` (transitions into ``drop`` go to ``keep``)."""
    delta = np.where(dfa.delta == drop, keep, dfa.delta)
    delta[drop] = -1  # unreachable now
    return ExplicitDFA(delta, dfa.tokens, dfa.start, name="merged")


def test_a_model_with_two_states_merged_is_extracted_as_that_dfa_and_the_pair_is_named():
    assert WORLD.is_minimal()
    model_dfa = merged_dfa(WORLD, 1, 2)
    ex, acceptor = learn(model_dfa)
    assert ex.complete and same_table(ex.dfa, model_dfa)
    d = diff(ex.dfa, WORLD, acceptor)
    assert [m.true for m in d.merges] == [(1, 2)]
    m = d.merges[0]
    assert m.suffix == (Y,) and m.valid_after == 0  # y is valid after reaching 1, not after reaching 2
    assert set(m.prefixes) == {(X,), (Y,)}
    assert m.confirmed and m.model == (True, True)  # the model allows y after both
    assert not d.split_sizes
    assert d.extra[0] == (Y, Y) and d.n_extra == 1 and d.n_missing == 0


@pytest.mark.parametrize("seed", range(6))
def test_random_merges_are_extracted_exactly_and_reported(seed):
    world = random_dfa(6, 3, 100 + seed, reject_prob=0.3)
    rng = np.random.default_rng(seed)
    a, b = sorted(int(v) for v in rng.choice(np.arange(1, world.n_states), 2, replace=False))
    model_dfa = merged_dfa(world, a, b)
    ex, acceptor = learn(model_dfa)
    assert ex.complete and same_table(ex.dfa, model_dfa)
    d = diff(ex.dfa, world, acceptor)
    if not equivalent(model_dfa, world):
        assert (a, b) in {tuple(sorted(m.true)) for m in d.merges}
        assert all(m.confirmed for m in d.merges)  # a complete extraction's witnesses hold on the model
        for m in d.merges:  # the witness separates the two true states in the world
            ta, tb = (ExplicitDFA(world.delta, world.tokens, q) for q in m.true)
            assert counterexample(ta, tb) is not None


def test_a_model_that_splits_a_state_is_reported_as_splitting_it():
    # world: 0 -x-> 1, 0 -y-> 0; 1 -x-> 0, 1 -y-> reject
    world = ExplicitDFA(np.array([[1, 0], [0, -1]]), (X, Y), name="two")
    # the model keeps a copy 2 of state 0, reached by y, that refuses x
    model_dfa = ExplicitDFA(np.array([[1, 2], [0, -1], [-1, 2]]), (X, Y), name="split")
    ex, acceptor = learn(model_dfa)
    assert ex.complete and same_table(ex.dfa, model_dfa)
    d = diff(ex.dfa, world, acceptor)
    assert d.split_sizes == {0: 2} and not d.merges
    s = d.splits[0]
    assert s.true == 0 and s.prefixes == ((), (Y,)) and s.suffix == (X,) and s.allowed_after == 0
    assert s.confirmed and s.model == (True, False)
    assert d.missing[0] == (Y, X) and d.n_extra == 0


def test_query_budget_and_state_bound_are_respected():
    world = random_dfa(12, 3, 7, reject_prob=0.3)
    for budget in (40, 200, 1000):
        acc = ModelAcceptor(TrueWorldModel(world), Epsilon(), max_queries=budget)
        ex = lstar(acc, Conformance(WMethodTester(1), RandomWalkTester(100, 12, 0)))
        assert acc.stats.queries <= budget
        assert ex.stats.queries <= budget
        assert not ex.complete and "query budget" in ex.stopped
    full, _ = learn(world)
    assert full.complete and full.dfa.n_states == world.n_states
    for bound in (2, 5):
        ex, _ = learn(world, max_states=bound)
        assert not ex.complete and "more than" in ex.stopped and ex.dfa.n_states <= bound


def test_a_model_is_never_queried_past_the_longest_sequence_it_was_trained_on(tiny_model_cfg):
    """The acceptor's bound is the metrics' (trained length when recorded, else context): L* stops there."""
    world = random_dfa(6, 3, 2, reject_prob=0.2)
    model = HFModel.untrained(Vocabulary(world.tokens, world.name), dict(tiny_model_cfg, n_layer=1, n_positions=64),
                              seed=0)
    assert ModelAcceptor(model, Epsilon()).max_word_len == 63                 # context less the BOS position
    model.trained_len = 5
    acc = ModelAcceptor(model, Epsilon(0.3))
    assert acc.max_word_len == 5
    ex = lstar(acc, Conformance(WMethodTester(1), RandomWalkTester(50, 12, 0)))
    if not ex.complete:                                    # a short bound stops a learner that needs longer words
        assert "trained on (5 tokens)" in ex.stopped or "more than" in ex.stopped or "budget" in ex.stopped
    words = [w for w in _queried(acc.root)]
    assert words and max(map(len, words)) < 5           # a mask after 4 tokens reads the 5th position


def _queried(node, word=()):
    """Every word the acceptor's prefix tree holds a model answer for."""
    if getattr(node, "mask", None) is not None:
        yield word
    for t, child in getattr(node, "children", {}).items():
        yield from _queried(child, word + (t,))


def test_the_prefix_tree_answers_repeated_and_extended_queries_without_the_model():
    world = random_dfa(5, 3, 3, reject_prob=0.2)
    acc = ModelAcceptor(TrueWorldModel(world), Epsilon())
    words = [("t0", "t1", "t2"), ("t1",), ("t2", "t2")]
    first = acc.accepted(words)
    calls, nodes = acc.stats.model_calls, acc.stats.nodes
    # the same words, their prefixes, and one-token extensions of computed prefixes: no model call
    again = acc.accepted(words + [("t0",), ("t0", "t1"), ("t0", "t0"), ("t2", "t0")])
    assert again[:3] == first and acc.stats.model_calls == calls and acc.stats.nodes == nodes
    truth = [_valid(world, w) for w in words + [("t0",), ("t0", "t1"), ("t0", "t0"), ("t2", "t0")]]
    assert again == truth


def _valid(world, word):
    q = world.initial_state()
    for t in word:
        q = world.step(q, t)
        if q is REJECT:
            return False
    return True


def test_membership_matches_the_models_batched_scorer(tiny_model_cfg):
    """On a real network the acceptor's verdicts equal ``model.score``'s "every token allowed"."""
    world = random_dfa(6, 4, 1)
    model = HFModel.untrained(Vocabulary(world.tokens, world.name), dict(tiny_model_cfg, n_layer=1), seed=3)
    rng = np.random.default_rng(0)
    words = [tuple(world.tokens[i] for i in rng.integers(0, 4, int(rng.integers(1, 9)))) for _ in range(60)]
    for rule in (Epsilon(0.13), Epsilon(0.145), TopK(3)):
        acc = ModelAcceptor(model, rule)
        got = acc.accepted(words)
        want = [sc.all_accepted() for sc in model.score([()], [words], rule)[0]]
        assert got == want
        assert 0 < sum(got) < len(got)  # the check is not vacuous
        assert acc.stats.model_calls == 1  # one batched call for all sixty words


def test_extract_command_writes_the_four_files(tmp_path, capsys):
    out = tmp_path / "ex"
    rc = main(["extract", "toy-dfa", "--model", "true", "--out", str(out), "--no-progress", "--walks", "100"])
    assert rc == 0
    assert "equivalent: yes" in capsys.readouterr().out
    doc = json.loads((out / "automaton.json").read_text())
    assert doc["diff"]["equivalent"] and doc["learned"]["n_states"] == doc["true"]["n_states"]
    assert doc["learning"]["membership"] > 0 and doc["learning"]["complete"]
    report = (out / "report.md").read_text()
    assert "is equivalent to the world's minimal DFA" in report and "membership queries" in report
    assert (out / "automaton.dot").read_text().startswith("digraph")
    assert (out / "automaton.png").read_bytes()[:4] == b"\x89PNG"


def test_extract_command_reports_merges_in_words_for_seating(tmp_path, capsys):
    """An untrained network on the seating puzzle: statements are written as sentences."""
    out = tmp_path / "seat"
    rc = main(["extract", "seating-tiny", "--model", "untrained", "--out", str(out), "--no-progress",
               "--walks", "20", "--max-states", "12"])
    assert rc == 0
    report = (out / "report.md").read_text()
    assert " is in seat " in report and "_is_" not in report.split("## Against the world")[1].split("## Picture")[0]
    doc = json.loads((out / "automaton.json").read_text())
    assert doc["true"]["n_states"] == 19


def test_extract_command_refuses_a_bad_out_before_any_work(tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("x")
    rc = main(["extract", "toy-dfa", "--model", "true", "--out", str(target)])
    assert rc == 2 and "not a folder" in capsys.readouterr().err and target.read_text() == "x"


def test_extract_command_refuses_a_world_out_of_reach(tmp_path, capsys):
    out = tmp_path / "othello"
    rc = main(["extract", "othello-6x6-tiny", "--model", "true", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "out of reach" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
