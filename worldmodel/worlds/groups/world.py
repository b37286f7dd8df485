"""The group word problem as a DFA: tokens are generators, the state is the running product.

A sequence is a word over the generators, then the query token ``=``, then the
answer: the token naming the word's product, ``[<element>]`` (``[21453]`` for a
permutation in one-line notation, ``[3]`` in Z_k)::

    c123 c125 c124 c123 = [34512]

The DFA (:class:`GroupWorld`, an :class:`~worldmodel.dfa.ExplicitDFA`) has
``2|G| + 1`` states: a *word* state per element (every generator and ``=``
valid), a *queried* state per element (only its answer valid), and the *answered*
state (nothing valid; answers are stop tokens). It is minimal: two word states
``g ≠ h`` are told apart by the two-token suffix ``= [g]``, so the exact boundary,
every metric and automaton extraction apply, and a model recovers the world
exactly when it composes the group. Without the query, every generator would be
valid everywhere and the minimal DFA would have a single state: the query is
what makes the product visible in the language.

The next-token test scores the answer position only (every other position allows
every generator and ``=``, so any model passes there); the probe reads the
running product (the element index) off word and queried states.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...dfa import REJECT, ExplicitDFA, Token
from .group import FiniteGroup

QUERY = "="


def answer_token(name: str) -> str:
    return f"[{name}]"


class GroupWorld(ExplicitDFA):
    """The word problem of ``group``: ``w = [product(w)]``."""

    def __init__(self, group: FiniteGroup, name: str | None = None):
        G = group.order
        gens = list(group.generator_names)
        answers = [answer_token(n) for n in group.element_names]
        tokens = gens + [QUERY] + answers
        delta = np.full((2 * G + 1, len(tokens)), -1, dtype=np.int64)
        delta[:G, :len(gens)] = np.array(group.table, dtype=np.int64)
        delta[np.arange(G), len(gens)] = G + np.arange(G)
        delta[G + np.arange(G), len(gens) + 1 + np.arange(G)] = 2 * G
        super().__init__(delta, tokens, start=0, name=name or f"group-{group.name}")
        self.group = group
        self.generators = tuple(gens)
        self.answers = tuple(answers)
        self.stop_tokens = frozenset(answers)
        self.answered = 2 * G

    def element(self, state) -> int | None:
        """The group element a word or queried state holds; ``None`` for the answered state."""
        if state is REJECT or state == self.answered:
            return None
        return int(state) % self.group.order

    def is_word_state(self, state) -> bool:
        return state is not REJECT and 0 <= int(state) < self.group.order

    def product(self, word: Sequence[Token]) -> int:
        """Element index of a word's running product."""
        s = 0
        col = {g: j for j, g in enumerate(self.generators)}
        for t in word:
            s = self.group.table[s][col[t]]
        return s

    def sequence(self, word: Sequence[Token]) -> list[Token]:
        """``word = [product]``: the world's sequence for a word."""
        return list(word) + [QUERY, self.answers[self.product(word)]]

    # -- World hooks -------------------------------------------------------------------------
    def state_key(self, state) -> str:
        if state is REJECT:
            return "REJECT"
        s = int(state)
        G = self.group.order
        if s == self.answered:
            return "answered"
        return ("" if s < G else "queried:") + self.group.element_names[s % G]

    def probe_targets(self, state):
        e = self.element(state)
        return None if e is None else np.array([e], dtype=np.int64)

    def next_token_positions(self, sequence: Sequence[Token]) -> list[int]:
        """The answer positions: ``j`` with ``sequence[j - 1] == "="``."""
        return [j for j in range(1, len(sequence)) if sequence[j - 1] == QUERY]
