import numpy as np
import pytest
import torch

from worldmodel.acceptance import Epsilon, TopK, TopP, parse_acceptance
from worldmodel.errors import WorldModelError

P = torch.tensor([[0.5, 0.3, 0.15, 0.05, 0.0]], dtype=torch.float64)


def test_epsilon_is_strict():
    assert Epsilon(0.05).mask(P).tolist() == [[True, True, True, False, False]]


def test_top_k():
    assert TopK(2).mask(P).tolist() == [[True, True, False, False, False]]
    # more k than tokens of positive probability: the probability-0 token stays refused
    assert TopK(10).mask(P).tolist() == [[True, True, True, True, False]]


def test_no_rule_allows_probability_zero_and_ties_are_kept():
    """The true world model's rows: uniform over the valid tokens, 0 elsewhere."""
    U = torch.tensor([[0.25, 0.0, 0.25, 0.25, 0.0, 0.25], [0.5, 0.0, 0.0, 0.0, 0.0, 0.5]], dtype=torch.float64)
    valid = (U > 0).tolist()
    for rule in (Epsilon(0.01), TopK(1), TopK(3), TopK(6), TopP(0.1), TopP(0.9), TopP(1.0)):
        assert rule.mask(U).tolist() == valid, rule


def test_top_p_smallest_set_exceeding_p():
    # 0.5 alone is not > 0.5, so the second token is needed; 0.8 > 0.5 suffices
    assert TopP(0.5).mask(P).tolist() == [[True, True, False, False, False]]
    assert TopP(0.8).mask(P).tolist() == [[True, True, True, False, False]]
    assert TopP(0.4).mask(P).tolist() == [[True, False, False, False, False]]


def test_masks_work_batched_and_on_numpy():
    probs = np.random.default_rng(0).dirichlet(np.ones(6), size=(3, 4))
    for rule in (Epsilon(0.1), TopK(2), TopP(0.7)):
        m = rule.mask_np(probs)
        assert m.shape == probs.shape and m.any(-1).all()


def test_parse():
    assert parse_acceptance("top-k:3") == TopK(3)
    assert parse_acceptance("epsilon:0.02") == Epsilon(0.02)
    assert parse_acceptance(0.1) == Epsilon(0.1)
    assert parse_acceptance(None) == Epsilon(0.01)
    with pytest.raises(WorldModelError):
        parse_acceptance("nucleus:0.9")
    with pytest.raises(WorldModelError):
        Epsilon(1.5)


def test_masks_are_boolean_and_follow_the_last_dimension():
    probs = torch.tensor(np.random.default_rng(1).dirichlet(np.ones(4), size=(2, 3)))  # shape (2, 3, 4)
    for rule in (Epsilon(0.1), TopK(2), TopK(10), TopP(0.7)):
        m = rule.mask(probs)
        assert m.dtype == torch.bool and m.shape == probs.shape, rule
    assert TopK(10).mask(probs).all()                   # k larger than the vocabulary: everything
    assert (TopK(3).mask(probs).sum(-1) == 3).all()
    top = probs.argmax(-1, keepdim=True)
    assert TopK(1).mask(probs).equal(torch.zeros_like(probs, dtype=torch.bool).scatter(-1, top, True))
    assert Epsilon(0.0).mask(P).tolist() == [[True, True, True, True, False]]


def test_parse_every_spelling_and_round_trip():
    assert parse_acceptance("eps:0.05") == Epsilon(0.05)
    assert parse_acceptance("topk:4") == TopK(4)
    assert parse_acceptance("topp:0.9") == TopP(0.9) == parse_acceptance("top-p:0.9")
    assert parse_acceptance("0.05") == Epsilon(0.05)
    assert parse_acceptance("  top-k:2 ") == TopK(2)
    assert parse_acceptance(0) == Epsilon(0.0)
    rule = TopP(0.5)
    assert parse_acceptance(rule) is rule
    for r in (Epsilon(0.02), TopK(3), TopP(0.75)):
        assert parse_acceptance(r.spec()) == r and str(r) == r.spec()
    assert [Epsilon(0.02).spec(), TopK(3).spec(), TopP(0.75).spec()] == ["epsilon:0.02", "top-k:3", "top-p:0.75"]
    with pytest.raises(WorldModelError, match=r"acceptance rule 'top-k:x' not understood \(use epsilon:E"):
        parse_acceptance("top-k:x")
    with pytest.raises(WorldModelError, match="not understood"):
        parse_acceptance("eps")


@pytest.mark.parametrize("make, bad, good", [
    (Epsilon, [-0.01, 1.0, 1.5], [0.0, 0.999]),
    (TopK, [0, -1], [1, 7]),
    (TopP, [0.0, -0.5, 1.01], [1.0, 0.001]),
])
def test_rule_bounds(make, bad, good):
    for v in bad:
        with pytest.raises(WorldModelError, match=str(v) if make is not Epsilon else "epsilon must be in"):
            make(v)
    for v in good:
        make(v)


def _top_p_reference(row, p):
    """Smallest prefix of the tokens sorted by probability whose mass exceeds p, plus ties with its
    least probable member; never a token of probability 0."""
    order = sorted(range(len(row)), key=lambda i: (-row[i], i))
    keep, mass = set(), 0.0
    for i in order:
        if mass > p:
            break
        keep.add(i)
        mass += row[i]
    floor = min(row[i] for i in keep)
    return [row[i] >= floor and row[i] > 0 for i in range(len(row))]


def test_top_p_on_batches_and_ties_matches_a_reference():
    probs = np.random.default_rng(2).dirichlet(np.ones(5), size=(3, 4))          # shape (3, 4, 5)
    for p in (0.3, 0.6, 0.9):
        got = TopP(p).mask(torch.tensor(probs)).numpy()
        want = np.array([[_top_p_reference(list(r), p) for r in block] for block in probs])
        assert (got == want).all(), p
    ties = torch.tensor([[0.1, 0.3, 0.3, 0.3]], dtype=torch.float64)
    assert TopP(0.4).mask(ties).tolist() == [[False, True, True, True]]          # ties with the last member kept
    assert TopK(2).mask(ties).tolist() == [[False, True, True, True]]
