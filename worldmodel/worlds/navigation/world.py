"""The navigation world: taxi-ride directions on a street map, as a DFA.

A sequence is ``origin destination dir dir ... end``: two node tokens, then compass
directions (one per street taken), then ``end`` once the ride is at its destination.

States:

* :data:`START` before anything is read;
* :class:`Origin` after the origin token;
* ``(current_node, destination)`` after the destination token and after every move;
* :data:`END` after ``end`` (terminal: nothing is valid after it).

Transitions: any node is a valid origin; after the origin a node is a valid
destination when it can be reached from the origin (the origin itself included); a
direction is valid where the map has a street leaving the current node in that
direction; ``end`` is valid only at the destination.

Myhill–Nerode assumption. States compare equal exactly when their tuples are equal, so
two different ``(current, destination)`` pairs count as different states. This is exact
when distinct nodes can be told apart by some sequence of moves, which holds for real
street maps and the grid city (nodes have distinct positions and neighbourhoods), but
not for degenerate graphs: two nodes with identical outgoing streets (same directions
to the same neighbours) would be one Myhill–Nerode class, and so would two states whose
destination is unreachable from the current node. :meth:`NavigationWorld.twin_nodes`
reports the first kind so a user can check a map; the samplers only draw states whose
destination is reachable.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Hashable

import numpy as np

from worldmodel.dfa import REJECT, World
from worldmodel.errors import WorldModelError

from .geometry import DIRECTIONS
from .streetmap import StreetMap

END_TOKEN = "end"
START = "<start>"
END = "<end>"
UNREACHABLE = 1 << 30


@dataclass(frozen=True)
class Origin:
    """The state after the origin token."""

    node: str


class NavigationWorld(World):
    """Directions on a :class:`StreetMap` (see the module docstring for the DFA)."""

    stop_tokens = frozenset({END_TOKEN})

    def __init__(self, street_map: StreetMap, name: str = "navigation"):
        self.map = street_map
        self.name = name
        reserved = set(DIRECTIONS) | {END_TOKEN}
        clash = [n for n in street_map.nodes if n in reserved or not n or any(c.isspace() for c in n)]
        if clash:
            raise WorldModelError(f"street map {street_map.name}: node id {clash[0]!r} cannot be a token "
                                  "(it is a direction, 'end', empty or contains whitespace)")
        self.tokens = tuple(street_map.nodes) + DIRECTIONS + (END_TOKEN,)
        self._nodes = frozenset(street_map.nodes)
        self._hops: dict[str, dict[str, int]] = {}
        self._reach: dict[str, frozenset[str]] = {}

    # -- World interface ---------------------------------------------------------
    def initial_state(self) -> Hashable:
        return START

    def step(self, state, token):
        if state is REJECT or state == END:
            return REJECT
        if isinstance(state, tuple):
            cur, dest = state
            if token == END_TOKEN:
                return END if cur == dest else REJECT
            nxt = self.map.edges.get((cur, token))
            return REJECT if nxt is None else (nxt, dest)
        if state == START:
            return Origin(token) if token in self._nodes else REJECT
        if isinstance(state, Origin):
            if token in self._nodes and token in self.reachable_from(state.node):
                return (state.node, token)
            return REJECT
        return REJECT

    def valid_tokens(self, state) -> list[str]:
        if state is REJECT or state == END:
            return []
        if isinstance(state, tuple):
            cur, dest = state
            out = [d for d in DIRECTIONS if (cur, d) in self.map.edges]
            if cur == dest:
                out.append(END_TOKEN)
            return out
        if state == START:
            return list(self.map.nodes)
        if isinstance(state, Origin):
            reach = self.reachable_from(state.node)
            return [n for n in self.map.nodes if n in reach]
        return []

    def next_token_positions(self, sequence) -> range:
        """The moves (directions and ``end``) after origin and destination: the paper's code scores only these."""
        return range(min(2, len(sequence)), len(sequence))

    def state_key(self, state) -> str:
        if isinstance(state, tuple):
            return f"{state[0]}->{state[1]}"
        if isinstance(state, Origin):
            return f"origin:{state.node}"
        return str(state)

    def probe_targets(self, state) -> np.ndarray | None:
        """The index of the current intersection (the origin before the destination is read)."""
        if isinstance(state, tuple):
            return np.array([self.map.index(state[0])], dtype=np.int64)
        if isinstance(state, Origin):
            return np.array([self.map.index(state.node)], dtype=np.int64)
        return None

    # -- graph helpers -------------------------------------------------------------
    def check_node(self, node: str, what: str = "node") -> str:
        if node not in self._nodes:
            raise WorldModelError(f"{what} {node!r} is not a node of street map {self.map.name}")
        return node

    def reachable_from(self, node: str) -> frozenset[str]:
        """Nodes reachable from ``node`` by following streets (``node`` included); cached."""
        got = self._reach.get(node)
        if got is None:
            seen = {node}
            queue = deque([node])
            while queue:
                for nxt in self.map.neighbours(queue.popleft()).values():
                    if nxt not in seen:
                        seen.add(nxt)
                        queue.append(nxt)
            got = frozenset(seen)
            self._reach[node] = got
        return got

    def hops_to(self, destination: str) -> dict[str, int]:
        """``node -> fewest moves from node to destination`` (BFS on the reversed graph; cached).

        Nodes that cannot reach the destination are absent.
        """
        got = self._hops.get(destination)
        if got is None:
            self.check_node(destination, "destination")
            rev = self.map.reverse_edges()
            got = {destination: 0}
            queue = deque([destination])
            while queue:
                v = queue.popleft()
                for u, _ in rev[v]:
                    if u not in got:
                        got[u] = got[v] + 1
                        queue.append(u)
            self._hops[destination] = got
        return got

    def path_nodes(self, tokens) -> list[str] | None:
        """The nodes a sequence visits (origin first), or None if it is not valid."""
        if len(tokens) < 2:
            return None
        state = self.step(self.step(START, tokens[0]), tokens[1])
        if state is REJECT:
            return None
        nodes = [tokens[0]]
        for t in tokens[2:]:
            state = self.step(state, t)
            if state is REJECT:
                return None
            if isinstance(state, tuple):
                nodes.append(state[0])
        return nodes

    def is_traversal(self, tokens) -> bool:
        """True when ``tokens`` is a whole valid ride: valid from the start and ending with ``end``."""
        state = self.initial_state()
        for t in tokens:
            state = self.step(state, t)
            if state is REJECT:
                return False
        return state == END

    def path_length_m(self, tokens) -> float:
        """Length in metres of the directions in a valid sequence (``end`` adds nothing)."""
        cur, total = tokens[0], 0.0
        for t in tokens[2:]:
            if t == END_TOKEN:
                break
            total += self.map.lengths[(cur, t)]
            cur = self.map.edges[(cur, t)]
        return total

    def twin_nodes(self) -> list[tuple[str, str]]:
        """Pairs of distinct nodes with identical outgoing streets (a Myhill–Nerode caveat)."""
        seen: dict[tuple, str] = {}
        twins = []
        for n in self.map.nodes:
            sig = tuple(sorted(self.map.neighbours(n).items()))
            if sig and sig in seen:
                twins.append((seen[sig], n))
            else:
                seen.setdefault(sig, n)
        return twins
