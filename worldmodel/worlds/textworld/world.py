"""The TextWorld house as a :class:`~worldmodel.dfa.ExplicitDFA`.

:class:`TextWorldWorld` is the minimal DFA of a game's enumerated automaton
(:mod:`.house`): tokens are commands (``open_antique_trunk``), a valid token is a
command the engine admits (within the automaton's scope), and states are the
Myhill–Nerode classes of the reachable sets of facts. Every non-terminal set of
facts is its own class (checked when the world is built: two of them merging would
be reported); the won and lost states have no valid command, so they merge into one
terminal class. Minimisation, exact boundaries, the uniform-prefix sampler and every
metric of the core apply directly.

:meth:`TextWorldWorld.facts` gives a state's facts (for the terminal class, those of
the first terminal state found); :meth:`probe_targets` reads the player's room, what
the player carries of the quest's objects, and each door's state off them.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ...dfa import REJECT, ExplicitDFA
from ...errors import WorldModelError
from .house import House, load_house, raw_dfa

_FACT_RE = re.compile(r"^(\w+)\((.*)\)$")


def parse_fact(text: str) -> tuple[str, tuple[str, ...]]:
    """``"at(P, r_0: r)"`` -> ``("at", ("P", "r_0"))``."""
    m = _FACT_RE.match(text)
    if not m:
        raise WorldModelError(f"not a TextWorld fact: {text!r}")
    args = tuple(a.split(":")[0].strip() for a in m.group(2).split(",") if a.strip())
    return m.group(1), args


def _quotient(house: House):
    """The minimal DFA from the cached classes, checking that they are a congruence.

    Every member of a class must allow the same commands and reach the same classes
    (so the quotient is a well-defined DFA equivalent to the enumerated one); the
    classes themselves come from Hopcroft's algorithm when the game was enumerated.
    """
    cls = np.asarray(house.classes, dtype=np.int64)
    if len(cls) != house.n_states or cls.min() < 0:
        raise WorldModelError(f"{house.game}: the cached classes do not cover the automaton's states")
    n = int(cls.max()) + 1
    delta = np.full((n, len(house.tokens)), -2, dtype=np.int64)
    for s, row in enumerate(house.edges):
        mine = np.full(len(house.tokens), -1, dtype=np.int64)
        for t, nxt in row:
            mine[t] = cls[nxt]
        c = cls[s]
        if delta[c, 0] == -2:
            delta[c] = mine
        elif not np.array_equal(delta[c], mine):
            raise WorldModelError(f"{house.game}: the cached classes are not a congruence (state {s}); "
                                  "delete the automaton cache to rebuild it")
    return delta, int(cls[0]), cls


class TextWorldWorld(ExplicitDFA):
    """The minimal automaton of one TextWorld game (see the module docstring)."""

    def __init__(self, house: House, name: str = "textworld"):
        if house.classes:
            delta, start, class_of = _quotient(house)
        else:
            minimal, class_of = raw_dfa(house, name).minimise()
            delta, start = minimal.delta, minimal.start
        super().__init__(delta, house.tokens, start, name=name)
        self.house = house
        self.class_of = class_of
        terminal = set(house.won) | set(house.lost)
        members: dict[int, list[int]] = {}
        for s, c in enumerate(class_of):
            if c >= 0:
                members.setdefault(int(c), []).append(s)
        self.members = members
        merged = [c for c, ms in members.items() if len(ms) > 1 and not set(ms) <= terminal]
        if merged:
            c = merged[0]
            raise WorldModelError(f"{name}: fact sets {members[c][:2]} behave alike although they differ; "
                                  "the automaton's scope hides a difference the facts record")
        self.terminal = {int(class_of[s]) for s in terminal}
        self.stop_tokens = frozenset(house.win_tokens) | frozenset(house.lose_tokens)
        self.win_tokens = frozenset(house.win_tokens)
        self.lose_tokens = frozenset(house.lose_tokens)
        self.rep = {c: ms[0] for c, ms in members.items()}
        self._facts_cache: dict[int, frozenset[str]] = {}
        self._probe_setup()

    @classmethod
    def from_game(cls, game: str | Path, name: str = "textworld", progress: bool = True) -> "TextWorldWorld":
        """The world of a game file (``game.json`` or ``game.z8``), enumerating it once if needed."""
        return cls(load_house(game, progress=progress), name=name)

    # -- facts ---------------------------------------------------------------
    def facts(self, state) -> frozenset[str]:
        """The facts that hold in ``state`` (text, e.g. ``"open(c_1: c)"``)."""
        if state is REJECT:
            raise WorldModelError("the reject state has no facts")
        f = self._facts_cache.get(state)
        if f is None:
            f = self.house.state_facts(self.rep[int(state)])
            self._facts_cache[state] = f
        return f

    def is_terminal(self, state) -> bool:
        return state is not REJECT and int(state) in self.terminal

    def name_of(self, entity: str) -> str:
        return self.house.names.get(entity, entity)

    # -- probe ---------------------------------------------------------------
    def _probe_setup(self) -> None:
        init = [parse_fact(self.house.facts[i]) for i in self.house.initial]
        all_facts = [parse_fact(f) for f in self.house.facts]
        self.rooms = sorted({a[1] for p, a in all_facts if p == "at" and a[0] == "P"})
        self.doors = sorted({a[1] for p, a in init if p == "link"})
        self.carried = list(self.house.quest_objects)
        #: names of the probe's targets, in order
        self.probe_names = (["room"] + [f"carries {self.name_of(o)}" for o in self.carried]
                            + [f"{self.name_of(d)} locked/closed/open" for d in self.doors])

    def probe_targets(self, state) -> np.ndarray | None:
        """``[room, carries object…, door state…]``: room index (``len(rooms)`` when the game is over),
        1 when the player carries each quest object, and 0/1/2 for each door locked/closed/open
        (3 when the game is over)."""
        if state is REJECT:
            return None
        if self.is_terminal(state):
            return np.array([len(self.rooms)] + [2] * len(self.carried) + [3] * len(self.doors), dtype=np.int64)
        facts = [parse_fact(f) for f in self.facts(state)]
        room = next(a[1] for p, a in facts if p == "at" and a[0] == "P")
        inv = {a[0] for p, a in facts if p == "in" and len(a) == 2 and a[1] == "I"}
        door = {}
        for p, a in facts:
            if p in ("locked", "closed", "open") and a and a[0] in self.doors:
                door[a[0]] = {"locked": 0, "closed": 1, "open": 2}[p]
        out = [self.rooms.index(room)] + [int(o in inv) for o in self.carried] + [door.get(d, 2) for d in self.doors]
        return np.array(out, dtype=np.int64)

    def state_key(self, state) -> str:
        return "REJECT" if state is REJECT else str(int(state))
