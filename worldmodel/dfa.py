"""The world as a deterministic finite automaton, and Myhill–Nerode machinery on it.

The contract, :class:`~worldmodel.api.World` (the paper's DFA with a reject state, every
other state accepting), lives in :mod:`worldmodel.api`; this module holds what works on
any world, and the explicit, table-driven DFA.

Worlds come in two flavours:

* **implicit** worlds (Othello boards, sets of seatings, (node, destination) pairs)
  subclass :class:`World` and compute states on demand;
* **explicit** worlds are a transition table, :class:`ExplicitDFA`, which also supports
  minimisation (the Myhill–Nerode quotient, by Hopcroft's algorithm), equivalence
  checking and random generation.

Generic helpers work on any world: :func:`run`, :func:`is_valid`,
:func:`valid_suffixes`, :func:`exact_boundary` (the paper's Def. 2.4, bounded to
length ``k``), :func:`sampled_boundary` (its approximation from random valid
continuations), :func:`random_walk`, and :func:`explicit_world` (a world's minimal
DFA, enumerated).

Tokens are domain strings throughout; integer ids exist only inside model adapters.
"""

from __future__ import annotations

from collections import deque
from typing import Hashable, Iterator, Sequence

import numpy as np

from .api.world import REJECT, Suffix, Token, World
from .errors import WorldModelError

__all__ = ["REJECT", "ExplicitDFA", "Suffix", "Token", "World", "counterexample", "equivalent", "exact_boundary",
           "explicit_world", "first_rejection", "is_valid", "random_dfa", "random_walk", "run", "sampled_boundary",
           "valid_suffixes"]


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

    #: what :meth:`state_key` calls each state (set by :meth:`from_dict` and :meth:`from_networkx`); None: its number
    state_names: tuple | None = None

    # Constructors ------------------------------------------------------------
    @classmethod
    def from_dict(cls, transitions, start, tokens: Sequence[Token] | None = None, name: str = "dfa") -> "ExplicitDFA":
        """A DFA from ``{state: {token: next state}}``; a missing transition (or ``None``) goes to the reject state.

        States may be any hashable names; they are numbered ``0, 1, …`` from ``start`` in the
        order they first appear (breadth-first from the mapping's own order), and
        :meth:`state_key` reports the names. ``tokens`` fixes the alphabet and its order
        (default: every token of the mapping, in order of first appearance). A target state
        that has no row of its own has no valid token.
        """
        alphabet: list[Token] = list(tokens) if tokens is not None else []
        seen_tok = set(alphabet)
        order: dict = {}
        for root in [start, *transitions]:          # the start first; states it cannot reach keep a row too
            if root in order:
                continue
            order[root] = len(order)
            queue = deque([root])
            while queue:
                for tok, nxt in (transitions.get(queue.popleft()) or {}).items():
                    if tokens is None and tok not in seen_tok:
                        seen_tok.add(tok)
                        alphabet.append(tok)
                    if nxt is not None and nxt not in order:
                        order[nxt] = len(order)
                        queue.append(nxt)
        col = {t: i for i, t in enumerate(alphabet)}
        delta = np.full((len(order), len(alphabet)), -1, dtype=np.int64)
        for s, row in transitions.items():
            for tok, nxt in (row or {}).items():
                if tok not in col:
                    raise WorldModelError(f"transition {s!r} --{tok!r}--> {nxt!r}: {tok!r} is not in the given tokens")
                if nxt is not None:
                    delta[order[s], col[tok]] = order[nxt]
        dfa = cls(delta, alphabet, 0, name=name)
        dfa.state_names = tuple(order)
        return dfa

    @classmethod
    def from_networkx(cls, graph, start, label: str = "label", tokens: Sequence[Token] | None = None,
                      name: str = "dfa") -> "ExplicitDFA":
        """A DFA from a networkx ``DiGraph`` or ``MultiDiGraph`` whose edges carry their token in ``label``.

        An edge's label may be one token or a list of tokens (several transitions to the same
        node). A node with two edges of the same token is not deterministic: one-line error.
        Every node of the graph is a state; a token with no edge from a node is rejected there.
        """
        transitions: dict = {n: {} for n in graph.nodes}
        for u, v, data in graph.edges(data=True):
            if label not in data:
                raise WorldModelError(f"edge {u!r} -> {v!r} has no {label!r} attribute (its token)")
            toks = data[label] if isinstance(data[label], (list, tuple)) else [data[label]]
            for tok in toks:
                if tok in transitions[u] and transitions[u][tok] != v:
                    raise WorldModelError(f"node {u!r} has two edges labelled {tok!r} (to {transitions[u][tok]!r} "
                                          f"and {v!r}): not deterministic")
                transitions[u][tok] = v
        if start not in transitions:
            raise WorldModelError(f"start node {start!r} is not in the graph")
        return cls.from_dict(transitions, start, tokens=tokens, name=name)

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
        return str(state) if self.state_names is None else str(self.state_names[state])

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


def explicit_world(world: World, max_states: int = 5000) -> tuple[ExplicitDFA, list[str]]:
    """The world's minimal DFA by breadth-first enumeration, with a name per state.

    An :class:`ExplicitDFA` world is minimised directly. An implicit world is
    enumerated from its start state; more than ``max_states`` reachable states
    raises :class:`WorldModelError` (the whole true automaton is out of reach).
    Returns ``(minimal, labels)``; ``labels[q]`` is ``world.state_key`` of a state
    in class ``q`` (for an explicit DFA, its original state numbers).
    """
    if isinstance(world, ExplicitDFA):
        minimal, class_of = world.minimise()
        labels = [",".join(str(s) for s in np.flatnonzero(class_of == q)) for q in range(minimal.n_states)]
        return minimal, labels
    start = world.initial_state()
    ids: dict[Hashable, int] = {start: 0}
    states = [start]
    rows: list[list[int]] = []
    queue = deque([start])
    while queue:
        s = queue.popleft()
        row = []
        for t in world.tokens:
            nxt = world.step(s, t)
            if nxt is REJECT:
                row.append(-1)
                continue
            if nxt not in ids:
                if len(states) >= max_states:
                    raise WorldModelError(
                        f"the {world.name} world has more than {max_states:,} reachable states: its whole automaton "
                        f"is out of reach for extraction, which compares against every true state")
                ids[nxt] = len(states)
                states.append(nxt)
                queue.append(nxt)
            row.append(ids[nxt])
        rows.append(row)
    dfa = ExplicitDFA(np.array(rows, dtype=np.int64).reshape(len(states), len(world.tokens)), world.tokens,
                      name=world.name)
    minimal, class_of = dfa.minimise()
    labels = [""] * minimal.n_states
    for old, q in enumerate(class_of):
        if q >= 0 and not labels[q]:
            labels[q] = world.state_key(states[old])
    return minimal, labels
