"""Equivalence oracles: conformance testing of a hypothesis against the model.

Each test word is read by the model once and, at every prefix, the model's whole allowed set is compared with
the hypothesis's valid tokens, which checks every one-token extension too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dfa import ExplicitDFA
from .acceptor import ModelAcceptor, Word


@dataclass
class Hypothesis:
    """A learner's conjecture: the DFA, one access word per state, and the suffixes that tell its states apart."""

    dfa: ExplicitDFA
    access: list[Word]
    suffixes: list[Word]


class RandomWalkTester:
    """``walks`` random walks of 1..``max_len`` tokens through the hypothesis (uniform over its valid tokens).

    Walking only where the hypothesis accepts still catches every disagreement on
    the way: at each step the model's whole allowed set is compared with the
    hypothesis's. A fresh batch of walks is drawn per equivalence query (seeded).
    """

    def __init__(self, walks: int = 1000, max_len: int = 20, seed: int = 0):
        self.walks, self.max_len = int(walks), int(max_len)
        self.rng = np.random.default_rng(seed)

    def find_counterexample(self, hyp: Hypothesis, acceptor: ModelAcceptor) -> Word | None:
        if self.walks <= 0 or self.max_len <= 0:
            return None
        dfa = hyp.dfa
        paths = []
        for _ in range(self.walks):
            q, walk = dfa.start, []
            for _ in range(int(self.rng.integers(1, self.max_len + 1))):
                ok = np.flatnonzero(dfa.delta[q] >= 0)
                if not len(ok):
                    break
                j = int(ok[self.rng.integers(len(ok))])
                walk.append(dfa.tokens[j])
                q = int(dfa.delta[q, j])
            paths.append(tuple(walk))
        return acceptor.first_difference(paths, dfa)


class WMethodTester:
    """The W-method: ``access · middle · suffix`` for every state, every hypothesis path ``middle``
    of at most ``depth`` tokens, and every suffix of the characterisation set.

    Access words times one-token middles is the transition cover, so this is
    the W-method's test suite for a model automaton with at most ``depth - 1``
    states more than the hypothesis (``depth = 1``: as many states), which it
    then cannot miss; on top, every prefix's whole allowed set is compared, so
    every one-token extension of every test word is tested as well.
    """

    def __init__(self, depth: int = 1):
        self.depth = int(depth)

    def find_counterexample(self, hyp: Hypothesis, acceptor: ModelAcceptor) -> Word | None:
        if self.depth < 0:
            return None
        dfa = hyp.dfa
        words: set[Word] = set()
        for q, u in enumerate(hyp.access):
            frontier: list[tuple[int, Word]] = [(q, u)]
            for d in range(self.depth + 1):
                for r, w in frontier:
                    words.update(w + e for e in hyp.suffixes)
                if d == self.depth:
                    break
                frontier = [(int(dfa.delta[r, j]), w + (dfa.tokens[int(j)],))
                            for r, w in frontier for j in np.flatnonzero(dfa.delta[r] >= 0)]
        words = sorted(words, key=lambda w: (len(w), acceptor._key(w)))
        return acceptor.first_difference(words, dfa)


class Conformance:
    """Run several testers in order; the first counterexample wins."""

    def __init__(self, *testers):
        self.testers = testers

    def find_counterexample(self, hyp: Hypothesis, acceptor: ModelAcceptor) -> Word | None:
        for t in self.testers:
            cex = t.find_counterexample(hyp, acceptor)
            if cex is not None:
                return cex
        return None
