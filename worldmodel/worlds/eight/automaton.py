"""Which transcripts "8" can produce: the game's support as an automaton over loop observations.

A transcript is what one benchmark episode goes through, at the level of meaning::

    lighting=steady sound=vent figure=distant sign=exit camera=away go_on
    lighting=dim poster=travel door=closed floor=dry sense=steady turn_back
    ... go_on reset                      <- a wrong call: the place sends you back
    lighting=steady ... go_on ... door   <- the eighth correct call in a row opens the door

Each loop lists the properties it describes, in the arc's canonical order, each with
its value (the baseline or an anomalous one), then the player's call (``go_on`` or
``turn_back``). Both calls are always *legal* once a loop is complete; the game judges
them: after a correct call the next loop begins one level higher (or, after the
eighth, the only continuation is ``door``); after a wrong call the only continuation
is ``reset``, which starts a fresh climb at level 0. So the automaton marks a call
correct exactly when it does not lead to the state whose only token is ``reset``.

**Structural state.** Within a climb: the level (0–7), the set of hold hypotheses
still consistent with what has been shown (:func:`~.rules.hold_hypotheses`: which late
properties are held back and when each is revealed), which tracked properties were
seen in earlier loops of the climb, and, within the loop, the last property described
(properties come in canonical order), how many have been described, how many of them
were anomalous and which late properties were shown. The rules applied (upstream
``Hallway.build``):

* a loop describes 4–6 properties; a held property is not described before its reveal
  level; on its reveal loop it is described (when two reveal on the same loop, the
  second placement can overwrite the first, so at least one of them is, and the other
  follows on the next loop);
* a held property cannot be anomalous until it has been seen in an earlier loop;
* at most one anomalous property per loop, two from level 4 on in hard and insane;
* insane only: no property can be anomalous before it has been seen in an earlier loop
  of the climb (so every first appearance is the climb's baseline).

The raw automaton is enumerated over *abstract* observations (property, anomalous or
not): every anomalous value of a property behaves alike. States from which the door
cannot be reached any more are removed (a loop that can no longer be completed is not
something the game produces), then :func:`build_dfa` expands the abstract tokens to the
``prop=value`` alphabet and minimises the result.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Hashable

import numpy as np

from ...dfa import REJECT, ExplicitDFA
from .arcs import Arc
from .rules import CALLS, DOOR, DOUBLE_LEVEL, GOAL, MAX_DETAILS, MIN_DETAILS, RESET, Difficulty, hold_hypotheses

RESET_PENDING = ("reset",)
DOOR_PENDING = ("door",)
WON = ("won",)

Abstract = tuple  # (prop index, anomalous) | ("call", name) | ("reset",) | ("door",)


@dataclass(frozen=True)
class Loop:
    """A structural in-climb state (hashable; see the module docstring)."""

    level: int
    hyps: frozenset
    seen: frozenset        #: tracked properties seen so far this climb (this loop's included)
    last: int = -1         #: index of the last property described in this loop
    count: int = 0
    anomalies: int = 0
    shown_late: frozenset = frozenset()


class Structure:
    """The structural rules of one arc at one difficulty (see the module docstring).

    ``track_all`` (insane) tracks every property's first appearance; otherwise only the
    late properties' (all that the holds need).
    """

    def __init__(self, arc: Arc, diff: Difficulty, track_all: bool | None = None, canonical: bool = False,
                 prune: bool = True):
        self.arc = arc
        self.diff = diff
        self.n = len(arc.props)
        self.late = tuple(arc.names.index(p) for p in arc.late)
        self.late_set = frozenset(self.late)
        self.track_all = diff.random_baseline if track_all is None else track_all
        self.tracked = frozenset(range(self.n)) if self.track_all else frozenset(self.late)
        self.canonical = canonical
        self.prune = prune
        self.start = Loop(0, hold_hypotheses(diff, self.late), frozenset())
        self.obs = [(j, False) for j in range(self.n)] + [(j, True) for j in range(self.n)]
        self.alphabet: list[Abstract] = self.obs + [("call", c) for c in CALLS] + [(RESET,), (DOOR,)]

    # -- one step ------------------------------------------------------------
    def step(self, s, a: Abstract):
        """The next structural state, or REJECT."""
        if s == RESET_PENDING:
            return self.start if a == (RESET,) else REJECT
        if s == DOOR_PENDING:
            return WON if a == (DOOR,) else REJECT
        if s == WON or not isinstance(s, Loop):
            return REJECT
        if a[0] == "call":
            return self._call(s, a[1])
        if isinstance(a[0], str):
            return REJECT
        j, anom = a
        if j <= s.last or s.count >= MAX_DETAILS:
            return REJECT
        if anom and not (s.anomalies == 0 or (s.anomalies == 1 and self.diff.doubles and s.level >= DOUBLE_LEVEL)):
            return REJECT
        L = s.level
        late_before = (s.seen & self.late_set) - s.shown_late
        if self.track_all and anom and j not in s.seen:
            return REJECT           # insane: nothing changes before it has been seen this climb
        shown_late = s.shown_late | (frozenset({j}) if j in self.late_set else frozenset())
        count = s.count + 1
        keep = []
        for h in s.hyps:
            ok = True
            for p, r in h:
                if p == j and (L < r or (anom and p not in late_before)):
                    ok = False      # held now, or held and not yet seen at baseline
                    break
            if ok and (not self.prune or self._completable(h, L, late_before, shown_late, j, count)):
                keep.append(self._canon(h, L, late_before) if self.canonical else h)
        if not keep:
            return REJECT
        seen = s.seen | ({j} & self.tracked)
        return Loop(L, frozenset(keep), seen, j, count, s.anomalies + int(anom), shown_late)

    @staticmethod
    def _canon(h, L, seen):
        """``h`` without what no longer matters: held properties already seen, reveal levels already passed."""
        return tuple(sorted((p, max(r, L)) for p, r in h if p not in seen))

    def _required(self, h, L, seen_before) -> list[int]:
        return [p for p, r in h if L >= r and p not in seen_before]

    def _completable(self, h, L, seen_before, shown_late, last, count) -> bool:
        """Can this loop still be completed under ``h``, having described ``count`` properties up to ``last``?

        Every property it must still reveal comes after ``last`` (when two reveal together,
        one of them is enough), the loop can reach 4 properties from those still allowed,
        and the reveals fit within 6.
        """
        req = self._required(h, L, seen_before)
        left = [p for p in req if p not in shown_late]
        if any(p < last for p in left) and (len(req) == 1 or len(left) == len(req) and all(p < last for p in left)):
            return False
        need = len(left) if len(req) <= 1 else (0 if len(left) < len(req) else 1)
        held = {p for p, r in h if L < r}
        avail = sum(1 for p in range(last + 1, self.n) if p not in held)
        return count + need <= MAX_DETAILS and count + avail >= MIN_DETAILS

    def _reveals_met(self, h, L, seen_before, shown_late) -> bool:
        req = self._required(h, L, seen_before)
        shown = [p for p in req if p in shown_late]
        return len(shown) == len(req) if len(req) <= 1 else len(shown) >= 1

    def _call(self, s: Loop, call: str):
        if s.count < MIN_DETAILS:
            return REJECT
        late_before = (s.seen & self.late_set) - s.shown_late
        keep = frozenset(h for h in s.hyps if self._reveals_met(h, s.level, late_before, s.shown_late))
        if not keep:
            return REJECT
        if (call == "turn_back") != (s.anomalies > 0):
            return RESET_PENDING
        if s.level + 1 >= GOAL:
            return DOOR_PENDING
        if self.canonical:
            keep = frozenset(self._canon(h, s.level + 1, late_before | s.shown_late) for h in keep)
        return Loop(s.level + 1, keep, s.seen, -1, 0, 0, frozenset())

    # -- enumeration ------------------------------------------------------------
    def enumerate(self, progress: bool = False) -> "RawAutomaton":
        """Every reachable structural state and its transitions; dead states removed."""
        from tqdm.auto import tqdm

        index: dict[Hashable, int] = {self.start: 0}
        states: list[Hashable] = [self.start]
        edges: list[list[int]] = []
        queue = deque([self.start])
        bar = tqdm(desc=f"enumerating {self.arc.id} {self.diff.name}", unit="state", disable=not progress)
        while queue:
            s = queue.popleft()
            row = []
            for a in self.alphabet:
                nxt = self.step(s, a)
                if nxt is REJECT:
                    row.append(-1)
                    continue
                if nxt not in index:
                    index[nxt] = len(states)
                    states.append(nxt)
                    queue.append(nxt)
                row.append(index[nxt])
            edges.append(row)
            bar.update(1)
        bar.close()
        delta = np.array(edges, dtype=np.int64)
        won = index.get(WON)
        live = np.zeros(len(states), dtype=bool)
        if won is not None:
            preds: list[list[int]] = [[] for _ in states]
            for s, row in enumerate(edges):
                for t in row:
                    if t >= 0:
                        preds[t].append(s)
            live[won] = True
            stack = [won]
            while stack:
                t = stack.pop()
                for s in preds[t]:
                    if not live[s]:
                        live[s] = True
                        stack.append(s)
        delta = np.where((delta >= 0) & live[np.maximum(delta, 0)], delta, -1)
        return RawAutomaton(self, states, index, delta, live)


@dataclass
class RawAutomaton:
    """The enumerated structural automaton (``delta`` over :attr:`Structure.alphabet`)."""

    structure: Structure
    states: list
    index: dict
    delta: np.ndarray
    live: np.ndarray

    @property
    def n_reachable(self) -> int:
        return len(self.states)

    @property
    def n_live(self) -> int:
        return int(self.live.sum())


def expand(raw: RawAutomaton, tokens: tuple[str, ...]) -> ExplicitDFA:
    """The raw automaton over the concrete alphabet ``tokens`` (``prop=value``, calls, reset, door)."""
    st = raw.structure
    arc = st.arc
    col = {a: i for i, a in enumerate(st.alphabet)}
    cols = []
    for t in tokens:
        if t in CALLS:
            cols.append(col[("call", t)])
        elif t == RESET:
            cols.append(col[(RESET,)])
        elif t == DOOR:
            cols.append(col[(DOOR,)])
        else:
            prop, value = arc.split(t)
            j = arc.names.index(prop)
            cols.append(col[(j, value != arc.props[j].baseline)])
    delta = raw.delta[:, cols]
    return ExplicitDFA(delta, tokens, 0, name=f"{arc.id}-{st.diff.name}")
