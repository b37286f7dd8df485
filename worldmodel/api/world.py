"""The world contract: :class:`World`, a deterministic automaton over a finite token alphabet.

A :class:`World` is the paper's DFA ``W = (Q, Σ, δ, q0, F)`` with a special reject state and
``F = Q \\ {q_reject}``: every state that is not the reject state accepts, so a sequence is
*valid* exactly when running it never hits :data:`REJECT`. Generic algorithms over any world
(runs, boundaries, random walks, minimisation of explicit tables) are in :mod:`worldmodel.dfa`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Hashable, Sequence

import numpy as np

from ..errors import WorldModelError

Token = str
Suffix = tuple[Token, ...]


class _Reject:
    """The reject state ``q_reject``: no outgoing transitions, never accepting."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REJECT"

    def __reduce__(self):
        return (_Reject, ())


REJECT: Any = _Reject()


class World(ABC):
    """A deterministic world over a finite token alphabet.

    Subclasses define :attr:`tokens`, :meth:`initial_state` and :meth:`step`.
    States must be hashable and two states must compare equal exactly when they are
    the same Myhill–Nerode class (accept the same futures); metrics rely on this to
    decide "same state" versus "different states". :meth:`valid_tokens`,
    :meth:`random_walk` and :meth:`first_rejection` have generic implementations that
    subclasses may override for speed, with identical results (Othello overrides all
    three).
    """

    #: The alphabet Σ, in a fixed order. Model adapters build their vocabulary from it.
    tokens: tuple[Token, ...] = ()
    #: Tokens after which a sequence is finished (e.g. navigation's ``end``). Sampling
    #: stops after emitting one.
    stop_tokens: frozenset[Token] = frozenset()
    #: A short name used in messages and results.
    name: str = "world"
    #: How text models of this world write a sequence (a template spec for
    #: :class:`~worldmodel.models.importers.template.Template`, e.g. ``"pgn"`` for chess in
    #: SAN): what a character-level import assumes when none is given. None: no default.
    text_layout: str | None = None

    @abstractmethod
    def initial_state(self) -> Hashable:
        """The start state ``q0``."""

    @abstractmethod
    def step(self, state: Hashable, token: Token) -> Hashable:
        """``δ(state, token)``: the next state, or :data:`REJECT`."""

    def valid_tokens(self, state: Hashable) -> list[Token]:
        """Tokens ``a`` with ``δ(state, a) ≠ q_reject``, in alphabet order."""
        if state is REJECT:
            return []
        return [t for t in self.tokens if self.step(state, t) is not REJECT]

    def random_walk(self, state: Hashable, max_len: int, rng: np.random.Generator) -> Suffix:
        """A continuation from ``state`` choosing uniformly among valid tokens at each step.

        Stops after ``max_len`` tokens, at a state with no valid token, or after a stop
        token. Each step draws ``rng.integers(len(options))`` once, ``options`` being
        :meth:`valid_tokens` of the current state, and takes that option. A world may
        override this for speed only with the same result: the same tokens and the
        same draws from ``rng`` (so ``rng`` ends in the same state).
        """
        out: list[Token] = []
        s = state
        while len(out) < max_len:
            options = self.valid_tokens(s)
            if not options:
                break
            t = options[int(rng.integers(len(options)))]
            out.append(t)
            if t in self.stop_tokens:
                break
            s = self.step(s, t)
        return tuple(out)

    def first_rejection(self, state: Hashable, suffix: Sequence[Token]) -> int | None:
        """Index of the first token of ``suffix`` rejected from ``state``; None if valid.

        Generic: :meth:`step` token by token. A world may override this for speed only
        with the same answers.
        """
        s = state
        for i, t in enumerate(suffix):
            s = self.step(s, t) if s is not REJECT else REJECT
            if s is REJECT:
                return i
        return None

    def state_key(self, state: Hashable) -> str:
        """A JSON-friendly name for a state, used to group trials in results."""
        return repr(state)

    def token_text(self, token: Token) -> str:
        """A token in words, for reports (the token itself unless a world says otherwise)."""
        return str(token)

    def probe_targets(self, state: Hashable) -> np.ndarray | None:
        """Integer labels a linear probe should read off a model's hidden state.

        Returns an int array of shape ``(n_targets,)`` (one label per target: the
        current intersection for maps, one of empty/mine/theirs per square for
        Othello), or ``None`` where the world defines no probe.
        """
        return None

    def next_token_positions(self, sequence: Sequence[Token]) -> range:
        """The prefix lengths ``j`` at which the next-token test asks for ``sequence[j]``.

        Every prefix by default (``j = 0 .. len - 1``). A world whose sequences open
        with given context (navigation: origin and destination) names only the
        positions the model must predict, as the paper's code does.
        """
        return range(len(sequence))

    def check_tokens(self, tokens: Sequence[Token], what: str = "sequence") -> None:
        """Raise :class:`WorldModelError` naming the first token not in the alphabet."""
        known = self._token_set()
        for i, t in enumerate(tokens):
            if t not in known:
                raise WorldModelError(
                    f"{what}: token {t!r} at position {i} is not in the {self.name} world's alphabet"
                )

    _token_set_cache: frozenset[Token] | None = None

    def _token_set(self) -> frozenset[Token]:
        cached = self._token_set_cache
        if cached is None or len(cached) != len(self.tokens):
            cached = frozenset(self.tokens)
            self._token_set_cache = cached
        return cached
