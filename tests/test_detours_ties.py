"""Detour choices when the model's probabilities tie: exact tokens, not just rates."""

from __future__ import annotations

import numpy as np
import pytest

from worldmodel.detours import run_detours
from worldmodel.dfa import REJECT, World
from worldmodel.models import SequenceModel


class FreeWorld(World):
    """Tokens a, b, c, d are always valid; 'stop' is valid (and ends) after `n` tokens."""

    tokens = ("a", "b", "c", "d", "stop")
    stop_tokens = frozenset({"stop"})
    name = "free"

    def __init__(self, n: int, banned: frozenset[str] = frozenset()):
        self.n = n
        self.banned = banned  # tokens that are never valid

    def initial_state(self):
        return 0

    def step(self, state, token):
        if state is REJECT or state == "done":
            return REJECT
        if token == "stop":
            return "done" if state >= self.n else REJECT
        if token not in self.tokens or token in self.banned:
            return REJECT
        return state + 1


class Fixed(SequenceModel):
    """The same next-token distribution at every step until ``n`` tokens, then 'stop'."""

    tokens = FreeWorld.tokens
    name = "fixed"

    def __init__(self, probs, n: int):
        self.probs = np.asarray(probs, dtype=float)
        self.n = n

    def next_token_probs(self, prefixes):
        stop = np.eye(5)[4]
        return np.stack([stop if len(p) >= self.n else self.probs for p in prefixes])

    def score(self, *a, **k):  # pragma: no cover
        raise NotImplementedError

    def sample(self, *a, **k):  # pragma: no cover
        raise NotImplementedError


def decode(probs, kind, n=5, p=1.0, world=None, allowed=None):
    world = world or FreeWorld(n)
    res, trials = run_detours(Fixed(probs, n), world, [[]], kind, [p], max_len=n + 1, seed=0,
                              allowed=allowed or (lambda s, t, length: s < n))
    return res[0], trials[0]


@pytest.mark.parametrize("probs, want", [
    ([0.5, 0.1, 0.1, 0.3, 0.0], "b"),     # b and c tie for lowest: the first in token order
    ([0.5, 0.3, 0.1, 0.1, 0.0], "c"),     # c and d tie
    ([0.4, 0.2, 0.2, 0.2, 0.0], "b"),     # three-way tie
    ([0.1, 0.1, 0.1, 0.7, 0.0], "a"),     # the tie includes the first token
    ([0.25, 0.25, 0.25, 0.25, 0.0], "b"),  # all tie: a is the model's top (first), so b
])
def test_adversarial_ties_take_the_first_token_in_model_order(probs, want):
    r, t = decode(probs, "adversarial")
    assert t.tokens == [want] * 5 + ["stop"]
    # a detour is drawn at all 6 steps; at the last one no candidate is allowed ('stop' is due)
    assert t.success and (r.steps, r.drawn, r.replaced, r.impossible) == (6, 6, 5, 1)


def test_top_choice_ties_take_the_first_token_and_are_never_the_detour():
    # a and b tie for the top: the model's token is a; the adversarial detour is d (lowest)
    r, t = decode([0.35, 0.35, 0.2, 0.1, 0.0], "adversarial")
    assert t.tokens == ["d"] * 5 + ["stop"]
    r, t = decode([0.35, 0.35, 0.2, 0.1, 0.0], "random", p=0.0)
    assert t.tokens == ["a"] * 5 + ["stop"] and r.drawn == r.replaced == 0
    # random detours never pick the model's own token, and use every other candidate
    res, trials = run_detours(Fixed([0.35, 0.35, 0.2, 0.1, 0.0], 30), FreeWorld(30), [[]] * 20, "random", [1.0],
                              allowed=lambda s, tok, length: s < 30, max_len=31, seed=1)
    picked = {tok for tr in trials for tok in tr.tokens[:-1]}
    assert picked == {"b", "c", "d"}


def test_adversarial_ties_skip_invalid_and_disallowed_tokens():
    # b (lowest, tied with c) is never valid; c is not allowed: d is the lowest remaining
    world = FreeWorld(5, banned=frozenset({"b"}))
    r, t = decode([0.5, 0.1, 0.1, 0.1, 0.2], "adversarial", world=world,
                  allowed=lambda s, tok, length: s < 5 and tok != "c")
    assert t.tokens == ["d"] * 5 + ["stop"] and t.success


def test_adversarial_ignores_zero_probability_invalid_tokens():
    # 'stop' has probability 0 (the lowest) but is not valid before n tokens: never a candidate
    r, t = decode([0.7, 0.2, 0.06, 0.04, 0.0], "adversarial")
    assert t.tokens == ["d"] * 5 + ["stop"]
