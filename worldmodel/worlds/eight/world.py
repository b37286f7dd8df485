""""8" as a world: the minimal automaton of an arc at easy, normal or hard, and insane as an implicit world.

Tokens (:func:`tokens_of`): every ``prop=value`` of the arc (its baseline value and each
anomalous one), the calls ``go_on`` and ``turn_back``, ``reset`` (forced after a wrong
call: back to the start of the climb) and ``door`` (forced after the eighth correct
call in a row; a stop token). See :mod:`.automaton` for the rules.

:class:`EightWorld` (easy, normal, hard) is the minimised :class:`~worldmodel.dfa.ExplicitDFA`
of the enumerated structure. Easy and normal have the same automaton: normal's rare
hold only removes transcripts that easy can also produce. Every minimal state has one
level and one "changed so far" flag (checked when the world is built), which the probe
reads (:meth:`EightWorld.probe_targets`), and :meth:`EightWorld.verdict` says whether
a call would be judged correct.

:class:`InsaneWorld` is implicit: its state is the structural state (hold hypotheses in
canonical form, every property's first appearance tracked) together with the climb's
baseline as far as it has been seen (a property's first appearance *is* its baseline).
Its states are canonical tuples, not Myhill–Nerode classes: within a loop two
positions with the same continuations can stay apart, so a distinction pair may reach
equivalent states; its true boundary is then empty, and the trial records it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Hashable, Sequence

import numpy as np

from ...dfa import REJECT, ExplicitDFA, World
from ...errors import WorldModelError
from .arcs import Arc
from .automaton import DOOR_PENDING, RESET_PENDING, Loop, Structure, expand
from .rules import CALLS, DOOR, GOAL, RESET, Difficulty, difficulty


def tokens_of(arc: Arc) -> tuple[str, ...]:
    return arc.observation_tokens + CALLS + (RESET, DOOR)


def _facts(s) -> tuple[int, int, str]:
    """(level as the server reports it, changed so far, phase) of a structural state."""
    if isinstance(s, Loop):
        return s.level, int(s.anomalies > 0), "loop"
    if s == RESET_PENDING:
        return 0, 0, "reset"            # the server reports level 0 after a wrong call
    if s == DOOR_PENDING:
        return GOAL, 0, "door"
    return GOAL, 0, "won"


class EightWorld(ExplicitDFA):
    """The minimal automaton of one arc at easy, normal or hard (see the module docstring)."""

    def __init__(self, arc: Arc, diff: Difficulty | str, progress: bool = False):
        diff = difficulty(diff) if isinstance(diff, str) else diff
        if diff.random_baseline:
            raise WorldModelError("insane has no explicit automaton; use InsaneWorld")
        structure = Structure(arc, diff, canonical=True)
        raw = structure.enumerate(progress=progress)
        minimal, class_of = expand(raw, tokens_of(arc)).minimise()
        super().__init__(minimal.delta, minimal.tokens, minimal.start, name=f"eight-{arc.id}-{diff.name}")
        self.arc, self.difficulty, self.raw = arc, diff, raw
        self.stop_tokens = frozenset({DOOR})
        facts: dict[int, tuple] = {}
        for i, s in enumerate(raw.states):
            c = int(class_of[i])
            if c < 0:
                continue
            f = _facts(s)
            if facts.setdefault(c, f) != f:
                raise WorldModelError(f"{self.name}: states {facts[c]} and {f} merged although they differ")
        self.facts = facts
        self.raw_sizes = {"reachable": raw.n_reachable, "live": raw.n_live}
        self.reset_state = next(c for c, f in facts.items() if f[2] == "reset")
        self._col = {t: i for i, t in enumerate(self.tokens)}

    # -- what the game judges ---------------------------------------------------
    def level(self, state) -> int:
        return self.facts[int(state)][0]

    def changed(self, state) -> bool:
        return bool(self.facts[int(state)][1])

    def phase(self, state) -> str:
        return self.facts[int(state)][2]

    def verdict(self, state, call: str) -> bool | None:
        """Whether ``call`` would be judged correct now; ``None`` when no call is legal here."""
        nxt = self.step(state, call)
        if nxt is REJECT:
            return None
        return nxt != self.reset_state

    def probe_targets(self, state) -> np.ndarray | None:
        if state is REJECT:
            return None
        level, changed, _ = self.facts[int(state)]
        return np.array([level, changed], dtype=np.int64)

    probe_names = ("level", "changed so far")


class InsaneWorld(World):
    """Insane: an implicit world whose state also holds the climb's baseline (see the module docstring)."""

    def __init__(self, arc: Arc):
        self.arc = arc
        self.difficulty = difficulty("insane")
        self.structure = Structure(arc, self.difficulty, canonical=True)
        self.tokens = tokens_of(arc)
        self.name = f"eight-{arc.id}-insane"
        self.stop_tokens = frozenset({DOOR})
        self._start = (self.structure.start, (None,) * len(arc.props))
        self._abstract: dict[str, tuple] = {}
        for t in arc.observation_tokens:
            prop, value = arc.split(t)
            self._abstract[t] = (arc.names.index(prop), value)
        self._safe = [set(arc.safe_baselines(p.name)) for p in arc.props]

    def initial_state(self) -> Hashable:
        return self._start

    @lru_cache(maxsize=1 << 18)
    def step(self, state, token):
        if state is REJECT:
            return REJECT
        s, base = state
        if token in CALLS:
            nxt = self.structure.step(s, ("call", token))
            return REJECT if nxt is REJECT else (nxt, base if isinstance(nxt, Loop) else (None,) * len(base))
        if token == RESET or token == DOOR:
            nxt = self.structure.step(s, (token,))
            return REJECT if nxt is REJECT else (nxt, (None,) * len(base))
        ab = self._abstract.get(token)
        if ab is None or not isinstance(s, Loop):
            return REJECT
        j, value = ab
        if base[j] is None:
            if value not in self._safe[j]:
                return REJECT
            nxt = self.structure.step(s, (j, False))
            if nxt is REJECT:
                return REJECT
            return (nxt, base[:j] + (value,) + base[j + 1:])
        nxt = self.structure.step(s, (j, value != base[j]))
        return REJECT if nxt is REJECT else (nxt, base)

    def level(self, state) -> int:
        return _facts(state[0])[0]

    def changed(self, state) -> bool:
        return bool(_facts(state[0])[1])

    def phase(self, state) -> str:
        return _facts(state[0])[2]

    def verdict(self, state, call: str) -> bool | None:
        nxt = self.step(state, call)
        if nxt is REJECT:
            return None
        return nxt[0] != RESET_PENDING

    def probe_targets(self, state) -> np.ndarray | None:
        if state is REJECT:
            return None
        level, changed, _ = _facts(state[0])
        return np.array([level, changed], dtype=np.int64)

    probe_names = ("level", "changed so far")

    def state_key(self, state) -> str:
        s, base = state
        if not isinstance(s, Loop):
            return s[0]
        seen = ",".join(f"{p.name}={b}" for p, b in zip(self.arc.props, base) if b is not None)
        holds = ";".join(",".join(f"{self.arc.props[p].name}@{r}" for p, r in h) for h in sorted(s.hyps))
        return f"L{s.level}|{s.last}:{s.count}:{s.anomalies}|{holds}|{seen}"


_BUILT: dict[tuple, World] = {}


def build_world(arc: Arc, diff: str | Difficulty, progress: bool = False) -> World:
    """The world of ``arc`` at ``diff``: :class:`EightWorld`, or :class:`InsaneWorld` for insane.

    Worlds are kept for the life of the process, keyed by what the automaton depends on
    (the properties, their values, the late properties, the safe baselines), so a sweep
    or a test suite enumerates each one once.
    """
    diff = difficulty(diff) if isinstance(diff, str) else diff
    key = (arc.id, arc.observation_tokens, arc.late, tuple(sorted(arc.insane_baselines.items())), diff.name)
    if key not in _BUILT:
        _BUILT[key] = InsaneWorld(arc) if diff.random_baseline else EightWorld(arc, diff, progress)
    return _BUILT[key]


def transcript_verdicts(world, tokens: Sequence[str]) -> list[bool]:
    """The verdict of every call in ``tokens`` (which must be valid in ``world``)."""
    out, state = [], world.initial_state()
    for t in tokens:
        if t in CALLS:
            v = world.verdict(state, t)
            if v is None:
                raise WorldModelError(f"{world.name}: the call {t!r} is not legal here")
            out.append(v)
        state = world.step(state, t)
        if state is REJECT:
            raise WorldModelError(f"{world.name}: {t!r} is not valid here")
    return out


def sizes(arc: Arc, diff: str) -> dict:
    """Automaton sizes of ``arc`` at ``diff`` (not insane): structural states before and after minimisation.

    ``raw``: reachable structural states with the hold hypotheses kept as drawn;
    ``canonical``: with them in canonical form (what :class:`EightWorld` enumerates);
    ``minimal``: the minimal DFA over the ``prop=value`` alphabet.
    """
    d = difficulty(diff)
    if d.random_baseline:
        raise WorldModelError("insane is an implicit world: no automaton to count")
    raw = Structure(arc, d, canonical=False).enumerate()
    canon = Structure(arc, d, canonical=True).enumerate()
    minimal, _ = expand(canon, tokens_of(arc)).minimise()
    return {"raw": raw.n_reachable, "canonical": canon.n_reachable, "minimal": minimal.n_states}
