"""The world as a deterministic finite automaton, and Myhill–Nerode machinery on it.

A :class:`World` is the paper's DFA ``W = (Q, Σ, δ, q0, F)`` with a special reject state
and ``F = Q \\ {q_reject}``: every state that is not the reject state accepts, so a
sequence is *valid* exactly when running it never hits :data:`REJECT`.

Worlds come in two flavours:

* **implicit** worlds (Othello boards, sets of seatings, (node, destination) pairs)
  subclass :class:`World` and compute states on demand;
* **explicit** worlds are a transition table, :class:`ExplicitDFA`, which also supports
  minimisation (the Myhill–Nerode quotient, by Hopcroft's algorithm), equivalence
  checking and random generation.

Generic helpers work on any world: :func:`run`, :func:`is_valid`,
:func:`valid_suffixes`, :func:`exact_boundary` (the paper's Def. 2.4, bounded to
length ``k``), :func:`sampled_boundary` (its approximation from random valid
continuations) and :func:`random_walk`.

Tokens are domain strings throughout; integer ids exist only inside model adapters.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from typing import Any, Hashable, Iterator, Sequence

import numpy as np

from .errors import WorldModelError

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

    def _token_set(self) -> frozenset[Token]:
        cached = getattr(self, "_token_set_cache", None)
        if cached is None or len(cached) != len(self.tokens):
            cached = frozenset(self.tokens)
            self._token_set_cache = cached
        return cached


# ---------------------------------------------------------------------------
# Generic helpers on any world
# ---------------------------------------------------------------------------


def run(world: World, tokens: Sequence[Token], state: Hashable | None = None) -> Hashable:
    """Extended transition ``δ̂``: the state reached from ``state`` (default ``q0``)."""
    if state is None:
        state = world.initial_state()
    for t in tokens:
        if state is REJECT:
            return REJECT
        state = world.step(state, t)
    return state


def is_valid(world: World, tokens: Sequence[Token], state: Hashable | None = None) -> bool:
    """True when ``tokens`` never reaches the reject state from ``state``."""
    return run(world, tokens, state) is not REJECT


def valid_suffixes(world: World, state: Hashable, k: int) -> Iterator[Suffix]:
    """All valid non-empty sequences of length ≤ ``k`` from ``state``, depth first."""
    if state is REJECT or k <= 0:
        return
    stack: list[tuple[Hashable, Suffix]] = [(state, ())]
    while stack:
        s, path = stack.pop()
        for t in reversed(world.valid_tokens(s)):
            nxt = world.step(s, t)
            p = path + (t,)
            yield p
            if len(p) < k:
                stack.append((nxt, p))


def exact_boundary(world: World, q1: Hashable, q2: Hashable, k: int) -> list[Suffix]:
    """The true Myhill–Nerode boundary ``MNB^W(q1, q2)`` up to length ``k`` (Def. 2.4).

    The minimal suffixes accepted from ``q1`` and rejected from ``q2``: every proper
    prefix of a returned suffix is accepted from both states (it lies in the interior
    ``MNI^W(q1, q2) = L^W(q1) ∩ L^W(q2)``), and the suffix itself is valid from
    ``q1`` only. The search walks the two states in lock step, so it visits only the
    interior, never the whole language of ``q1``. Directional: swap the arguments
    for the other side of the boundary.
    """
    out: list[Suffix] = []
    if q1 is REJECT or k <= 0:
        return out
    stack: list[tuple[Hashable, Hashable, Suffix]] = [(q1, q2, ())]
    while stack:
        s1, s2, path = stack.pop()
        for t in world.valid_tokens(s1):
            n2 = world.step(s2, t) if s2 is not REJECT else REJECT
            p = path + (t,)
            if n2 is REJECT:
                out.append(p)
            elif len(p) < k:
                stack.append((world.step(s1, t), n2, p))
    out.sort()
    return out


def random_walk(
    world: World, state: Hashable, max_len: int, rng: np.random.Generator
) -> Suffix:
    """A continuation from ``state`` choosing uniformly among valid tokens at each step.

    Stops after ``max_len`` tokens, at a state with no valid token, or after a stop
    token. This is the true world model's sampling distribution. Delegates to
    :meth:`World.random_walk`, which a world may override for speed.
    """
    return world.random_walk(state, max_len, rng)


def first_rejection(world: World, state: Hashable, suffix: Sequence[Token]) -> int | None:
    """Index of the first token of ``suffix`` rejected from ``state``; None if valid.

    Delegates to :meth:`World.first_rejection`, which a world may override for speed.
    """
    return world.first_rejection(state, suffix)


def sampled_boundary(
    world: World,
    q1: Hashable,
    q2: Hashable,
    m: int,
    max_len: int,
    rng: np.random.Generator,
) -> list[Suffix]:
    """Approximate ``MNB^W(q1, q2)`` from ``m`` random valid continuations of ``q1``.

    For worlds too large to enumerate (Othello): draw ``m`` uniform random valid
    continuations from ``q1`` of length ≤ ``max_len``; each one that is rejected from
    ``q2`` contributes its shortest rejected prefix, which is a boundary element
    (valid from ``q1``; every proper prefix valid from both). Returns the distinct
    elements found, sorted; a subset of the exact boundary.
    """
    found: set[Suffix] = set()
    for _ in range(m):
        walk = random_walk(world, q1, max_len, rng)
        j = first_rejection(world, q2, walk)
        if j is not None:
            found.add(walk[: j + 1])
    return sorted(found)


# ---------------------------------------------------------------------------
# Explicit, table-driven DFAs
# ---------------------------------------------------------------------------


class ExplicitDFA(World):
    """A DFA given by a transition table.

    ``delta[s, i]`` is the state reached from state ``s`` on ``tokens[i]``, or ``-1``
    for the reject state. States are ints ``0..n_states-1``; every one of them is
    accepting (the paper's ``F = Q \\ {q_reject}``).
    """

    def __init__(self, delta: np.ndarray, tokens: Sequence[Token], start: int = 0, name: str = "dfa"):
        delta = np.asarray(delta, dtype=np.int64)
        if delta.ndim != 2 or delta.shape[1] != len(tokens):
            raise WorldModelError(
                f"transition table has shape {delta.shape}, expected (n_states, {len(tokens)})"
            )
        if len(set(tokens)) != len(tokens):
            raise WorldModelError("DFA tokens must be distinct")
        n = delta.shape[0]
        if n == 0:
            raise WorldModelError("a DFA needs at least one state")
        if delta.min(initial=0) < -1 or delta.max(initial=0) >= n:
            raise WorldModelError("transition table refers to a state that does not exist")
        if not 0 <= start < n:
            raise WorldModelError(f"start state {start} out of range")
        self.delta = delta
        self.tokens = tuple(tokens)
        self.start = int(start)
        self.name = name
        self._index = {t: i for i, t in enumerate(self.tokens)}
        self._valid = [
            [self.tokens[i] for i in np.flatnonzero(delta[s] >= 0)] for s in range(n)
        ]

    # World interface -----------------------------------------------------
    @property
    def n_states(self) -> int:
        return int(self.delta.shape[0])

    def initial_state(self) -> int:
        return self.start

    def step(self, state, token):
        if state is REJECT:
            return REJECT
        i = self._index.get(token)
        if i is None:
            return REJECT
        nxt = int(self.delta[state, i])
        return REJECT if nxt < 0 else nxt

    def valid_tokens(self, state) -> list[Token]:
        if state is REJECT:
            return []
        return list(self._valid[state])

    def state_key(self, state) -> str:
        return str(state)

    def probe_targets(self, state) -> np.ndarray:
        return np.array([int(state)], dtype=np.int64)

    # Structure -------------------------------------------------------------
    def reachable(self) -> np.ndarray:
        """Boolean mask of states reachable from the start state."""
        seen = np.zeros(self.n_states, dtype=bool)
        seen[self.start] = True
        queue = deque([self.start])
        while queue:
            s = queue.popleft()
            for nxt in self.delta[s]:
                if nxt >= 0 and not seen[nxt]:
                    seen[nxt] = True
                    queue.append(int(nxt))
        return seen

    def minimise(self) -> tuple["ExplicitDFA", np.ndarray]:
        """The minimal equivalent DFA (the Myhill–Nerode quotient), by Hopcroft's algorithm.

        Unreachable states are dropped first. Returns ``(minimal, class_of)`` where
        ``class_of[s]`` is the minimal DFA's state for original state ``s`` (``-1`` for
        unreachable states). Minimal states are numbered in breadth-first order from
        the start state, so two equivalent DFAs minimise to identical tables.
        """
        reach = self.reachable()
        old_ids = np.flatnonzero(reach)
        remap = -np.ones(self.n_states, dtype=np.int64)
        remap[old_ids] = np.arange(len(old_ids))
        n = len(old_ids)
        sink = n  # explicit reject state makes the automaton total
        V = len(self.tokens)
        table = np.full((n + 1, V), sink, dtype=np.int64)
        sub = self.delta[old_ids]
        table[:n] = np.where(sub >= 0, remap[np.maximum(sub, 0)], sink)

        # inverse transitions: pre[a][t] = states s with table[s, a] == t
        pre: list[list[list[int]]] = [[[] for _ in range(n + 1)] for _ in range(V)]
        for s in range(n + 1):
            for a in range(V):
                pre[a][table[s, a]].append(s)

        block_of = np.zeros(n + 1, dtype=np.int64)
        block_of[sink] = 1
        blocks: list[set[int]] = [set(range(n)), {sink}]
        if n == 0:
            blocks = [{sink}]
            block_of[sink] = 0
        work: set[int] = {len(blocks) - 1} if n else set()
        while work:
            splitter = blocks[work.pop()].copy()
            for a in range(V):
                x: set[int] = set()
                for t in splitter:
                    x.update(pre[a][t])
                if not x:
                    continue
                touched: dict[int, set[int]] = {}
                for s in x:
                    touched.setdefault(int(block_of[s]), set()).add(s)
                for b, inter in touched.items():
                    if len(inter) == len(blocks[b]):
                        continue
                    rest = blocks[b] - inter
                    blocks[b] = rest
                    new_id = len(blocks)
                    blocks.append(inter)
                    for s in inter:
                        block_of[s] = new_id
                    if b in work:
                        work.add(new_id)
                    else:
                        work.add(new_id if len(inter) <= len(rest) else b)

        # number the classes in BFS order from the start, dropping the sink's class
        sink_block = int(block_of[sink])
        start_block = int(block_of[remap[self.start]])
        order: dict[int, int] = {start_block: 0}
        queue = deque([start_block])
        rep = {int(block_of[s]): s for s in range(n + 1)}
        while queue:
            b = queue.popleft()
            s = rep[b]
            for a in range(V):
                nb = int(block_of[table[s, a]])
                if nb != sink_block and nb not in order:
                    order[nb] = len(order)
                    queue.append(nb)
        m = len(order)
        new_delta = np.full((m, V), -1, dtype=np.int64)
        for b, i in order.items():
            s = rep[b]
            for a in range(V):
                nb = int(block_of[table[s, a]])
                new_delta[i, a] = -1 if nb == sink_block else order[nb]
        class_of = -np.ones(self.n_states, dtype=np.int64)
        for s_old in old_ids:
            class_of[s_old] = order[int(block_of[remap[s_old]])]
        return ExplicitDFA(new_delta, self.tokens, 0, name=self.name), class_of

    def is_minimal(self) -> bool:
        """True when every state is reachable and no two states are equivalent."""
        return self.minimise()[0].n_states == self.n_states and bool(self.reachable().all())


def equivalent(a: ExplicitDFA, b: ExplicitDFA) -> bool:
    """True when the two DFAs accept the same language (same valid sequences)."""
    return counterexample(a, b) is None


def counterexample(a: ExplicitDFA, b: ExplicitDFA) -> Suffix | None:
    """A shortest sequence valid in exactly one of the DFAs, or None if equivalent.

    Breadth-first search over the product automaton; tokens missing from one
    alphabet are rejected there.
    """
    alphabet = sorted(set(a.tokens) | set(b.tokens))
    start = (a.initial_state(), b.initial_state())
    parent: dict[tuple, tuple | None] = {start: None}
    queue = deque([start])
    while queue:
        pair = queue.popleft()
        for t in alphabet:
            na, nb = a.step(pair[0], t), b.step(pair[1], t)
            if (na is REJECT) != (nb is REJECT):
                path = [t]
                cur = pair
                while parent[cur] is not None:
                    prev, tok = parent[cur]
                    path.append(tok)
                    cur = prev
                return tuple(reversed(path))
            if na is REJECT:
                continue
            nxt = (na, nb)
            if nxt not in parent:
                parent[nxt] = (pair, t)
                queue.append(nxt)
    return None


def random_dfa(
    n_states: int,
    tokens: Sequence[Token] | int,
    rng: np.random.Generator | int,
    reject_prob: float = 0.4,
    minimal: bool = True,
    name: str = "random-dfa",
) -> ExplicitDFA:
    """A random DFA in which every state is reachable and has a valid token.

    Each transition goes to a uniformly random state, or to the reject state with
    probability ``reject_prob`` (at least one token stays valid per state). A random
    spanning tree from the start keeps every state reachable. With ``minimal`` the
    result is minimised, so it may have fewer than ``n_states`` states.
    """
    if isinstance(rng, (int, np.integer)):
        rng = np.random.default_rng(int(rng))
    if isinstance(tokens, (int, np.integer)):
        tokens = [f"t{i}" for i in range(int(tokens))]
    tokens = list(tokens)
    V = len(tokens)
    if n_states < 1 or V < 1:
        raise WorldModelError("random_dfa needs at least one state and one token")
    delta = rng.integers(0, n_states, size=(n_states, V))
    delta = np.where(rng.random((n_states, V)) < reject_prob, -1, delta)
    for s in range(n_states):
        if (delta[s] < 0).all():
            delta[s, rng.integers(V)] = rng.integers(n_states)
    # a random spanning tree: state s hangs off an earlier state through a free slot
    tree: set[tuple[int, int]] = set()
    for s in range(1, n_states):
        free = [(p, a) for p in range(s) for a in range(V) if (p, a) not in tree]
        if not free:
            raise WorldModelError(f"cannot keep {n_states} states reachable with {V} tokens")
        p, a = free[int(rng.integers(len(free)))]
        tree.add((p, a))
        delta[p, a] = s
    dfa = ExplicitDFA(delta, tokens, 0, name=name)
    if minimal:
        dfa, _ = dfa.minimise()
    return dfa

