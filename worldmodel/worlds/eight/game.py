"""The game of "8", simulated: loops drawn with the game's odds, calls judged, climbs reset.

:class:`Game` is one player's slot on the server (upstream ``app.py`` with
``hallway.py``; the numbers are in :mod:`.rules`). :meth:`Game.new` starts a fresh
climb, :meth:`Game.act` judges a call (``"continue"`` or ``"back"``, the server's wire
values) and builds the next loop, :meth:`Game.touch` is the optional Act 2 touch. Each
returns the JSON payload the real server sends (the answer never in the room; the
verdict and, after a change, which detail it was, only after the call), so the
benchmark harness reads the simulator and a real server through the same code.

How a loop is built (:meth:`Game._build`), as upstream:

1. at level 0 (a fresh climb): decide which late properties are held back and when
   each is revealed (hard and insane always one or two, normal 15% of climbs one, easy
   never); insane also draws the climb's baseline of every property;
2. a change happens with the level's chance; in hard and insane, after a changed loop
   the same change persists (22%) or the loop is forced clean (12%); from level 4 a
   second property may change too (30%); a held property cannot change before it has
   been seen, and in insane no property can;
3. 4–6 properties are described (held ones left out until their reveal), every
   changed one among them and a newly revealed one too, in canonical order, each by a
   sentence drawn from its value's pool; the exit sign's text and, after four loops,
   the heading drift.

:meth:`Game.tokens` gives the loop at the level of meaning (``prop=value`` in canonical
order); the simulator's truth and the automaton's must agree on every call
(``tests/test_eight_world.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ...errors import WorldModelError
from .arcs import Arc
from .rules import DOUBLE_LEVEL, GOAL, MAX_DETAILS, MIN_DETAILS, REVEAL_LEVELS, Difficulty, difficulty

WIRE = {"go_on": "continue", "turn_back": "back"}


def fold_chance(level: int) -> float:
    """Chance that touching a detail folds the climb back to level 0 (none before level 3)."""
    onset = max(2, round(GOAL * 0.35))
    if level < onset:
        return 0.0
    return 0.15 if level >= round(GOAL * 0.75) else 0.10


@dataclass
class Room:
    """One loop as built: what is shown (the public part) and the truth (never sent before the call)."""

    heading: str
    sentences: list[str]
    shown: list[str]
    values: dict[str, str]
    sign_text: str
    changed: dict[str, str]
    primary: str | None
    touch: list[dict] = field(default_factory=list)

    @property
    def has_anomaly(self) -> bool:
        return bool(self.changed)

    def public(self) -> dict:
        return {"heading": self.heading, "sentences": list(self.sentences), "shown": list(self.shown),
                "sign_text": self.sign_text, "touch": [dict(t) for t in self.touch], "adaptive": None,
                "exit_offer": None, "npc_utterance": None}


class Game:
    """One player's game of ``arc`` at ``diff`` (see the module docstring); ``rng`` seeds everything."""

    def __init__(self, arc: Arc, diff: Difficulty | str, rng: random.Random | int = 0):
        self.arc = arc
        self.diff = difficulty(diff) if isinstance(diff, str) else diff
        self.rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        self.best = 0
        self._fresh()
        self.room: Room | None = None

    def _fresh(self) -> None:
        self.level = 0
        self.loops = 0
        self.attempts = 1
        self.prev: tuple[str, str] | None = None
        self.seen: list[str] = []
        self.held: dict[str, int] = {}
        self.baseline: dict[str, str] = {}

    # -- building a loop --------------------------------------------------------
    def _base_of(self, prop: str) -> str:
        return self.baseline.get(prop, self.arc.prop(prop).baseline)

    def _pick_change(self, exclude: set[str]) -> tuple[str, str] | None:
        rng = self.rng
        if self.diff.random_baseline:
            options = [(p.name, [v for v in p.values if v != self._base_of(p.name)])
                       for p in self.arc.props if p.name not in exclude]
            options = [(n, alts) for n, alts in options if alts]
            if not options:
                return None
            name, alts = options[rng.randrange(len(options))]
            return name, alts[rng.randrange(len(alts))]
        options = [p for p in self.arc.props if p.anomalies and p.name not in exclude]
        if not options:
            return None
        p = options[rng.randrange(len(options))]
        return p.name, p.anomalies[rng.randrange(len(p.anomalies))]

    def _build(self) -> Room:
        rng, d, arc = self.rng, self.diff, self.arc
        self.loops += 1
        late = [p for p in arc.late]
        if self.level == 0:
            self.seen, self.held, self.baseline = [], {}, {}
            if d.holds == "always" and late:
                k = 1 if len(late) < 2 else rng.randint(1, 2)
            elif d.holds == "rarely" and late and rng.random() < d.hold_rarely:
                k = 1
            else:
                k = 0
            for p in rng.sample(late, k) if k else []:
                self.held[p] = rng.randint(*REVEAL_LEVELS)
            if d.random_baseline:
                for p in arc.props:
                    options = arc.safe_baselines(p.name)
                    self.baseline[p.name] = options[rng.randrange(len(options))]
        held_now = {p for p, r in self.held.items() if self.level < r}
        exclude = {p for p in self.held if p not in self.seen}
        if d.random_baseline:
            exclude |= {p for p in arc.names if p not in self.seen}

        has_change = rng.random() < d.anomaly_chance(self.level)
        changed: dict[str, str] = {}
        if self.level > 0 and d.persist > 0 and self.prev is not None:
            r = rng.random()
            prop, val = self.prev
            valid = (val != self._base_of(prop)) if d.random_baseline else (val in arc.prop(prop).anomalies)
            if r < d.persist and valid:
                changed[prop] = val
            elif r < d.persist + d.revert:
                has_change = False
        if has_change and not changed:
            picked = self._pick_change(exclude)
            if picked:
                changed[picked[0]] = picked[1]
        if d.doubles and len(changed) == 1 and self.level >= DOUBLE_LEVEL and rng.random() < d.double:
            second = self._pick_change(exclude | set(changed))
            if second:
                changed[second[0]] = second[1]
        primary = None
        if arc.npc and arc.npc in changed:
            primary = arc.npc
        elif changed:
            primary = next(iter(changed))

        order = [p for p in arc.names if p not in held_now]
        rng.shuffle(order)
        shown = order[:rng.randint(MIN_DETAILS, MAX_DETAILS)]
        for p in list(changed):
            if p not in shown:
                spare = [s for s in shown if s not in changed]
                shown[shown.index(spare[rng.randrange(len(spare))])] = p
        for p in [p for p in self.held if p not in held_now and p not in self.seen]:
            if p not in shown:
                spare = [s for s in shown if s not in changed]
                shown[shown.index(spare[rng.randrange(len(spare))])] = p
        shown = [p for p in arc.names if p in shown]
        for p in shown:
            if p not in self.seen:
                self.seen.append(p)

        sign = arc.signs[rng.randrange(len(arc.signs))]
        values, sentences = {}, []
        for p in shown:
            v = changed.get(p, self._base_of(p))
            pool = arc.prop(p).pools[v]
            values[p] = v
            sentences.append(pool[rng.randrange(len(pool))].replace("{SIGN}", sign))
        self.prev = (primary, changed[primary]) if primary else None
        heading = arc.titles[0]
        if self.loops >= 4 and rng.random() < min(0.05 + self.loops * 0.01, 0.30):
            heading = arc.titles[rng.randrange(len(arc.titles))]
        touch = [{"prop": p, "verb": str(arc.touch[p].get("verb", ""))} for p in shown if p in arc.touch]
        return Room(heading, sentences, shown, values, sign, changed, primary, touch)

    def tokens(self, room: Room | None = None) -> list[str]:
        """The loop at the level of meaning: ``prop=value`` for every shown property, in canonical order."""
        room = room or self.room
        return [self.arc.token(p, room.values[p]) for p in room.shown]

    # -- the server's moves -------------------------------------------------------
    def payload(self, extra: dict | None = None) -> dict:
        out = {"room": self.room.public(), "level": self.level, "goal": GOAL, "best": self.best,
               "loops": self.loops, "meta": {"id": self.arc.id, "title": self.arc.title},
               "arc": self.arc.id, "difficulty": self.diff.name}
        out.update(extra or {})
        return out

    def new(self) -> dict:
        """A fresh climb (``/api/new``): the opening loop."""
        self._fresh()
        self.room = self._build()
        return self.payload()

    def act(self, choice: str) -> dict:
        """Judge a call (``"continue"``/``"back"``, or ``go_on``/``turn_back``) and build the next loop (``/api/act``)."""
        choice = WIRE.get(choice, choice)
        if choice not in ("continue", "back"):
            raise WorldModelError(f"a call is 'continue' or 'back', not {choice!r}")
        if self.room is None:
            self.room = self._build()
        room = self.room
        correct = (choice == "back") == room.has_anomaly
        result = {"correct": correct, "had_anomaly": room.has_anomaly, "won": False}
        if room.has_anomaly:
            result["anomaly"] = {"prop": room.primary, "val": room.changed[room.primary]}
        if correct and choice == "back" and len(room.changed) >= 2:
            result["flare_props"] = list(room.changed)
        if correct:
            self.level += 1
            self.best = max(self.best, self.level)
            if self.level >= GOAL:
                result.update(won=True, attempts=self.attempts,
                              win_text=list(self.arc.win_text))
                self._fresh()
        else:
            self.level = 0
            self.attempts += 1
        self.room = self._build()
        return self.payload(result)

    def touch(self, prop: str) -> dict:
        """Act 2: touch a shown detail (``/api/interact``). Never judges anything; rarely folds the climb."""
        spec = self.arc.touch.get(prop)
        if self.room is None or not spec or prop not in self.room.shown:
            return {"kind": "none", "level": self.level, "goal": GOAL}
        if spec.get("fold") and self.rng.random() < fold_chance(self.level):
            self.level = 0
            self.attempts += 1
            self.room = self._build()
            return self.payload({"kind": "fold", "line": str(spec["fold"][0])})
        kinds = [k for k in ("reaction", "herring") if spec.get(k)] + (["flashback"] if self.arc.flashbacks else [])
        if not kinds:
            return {"kind": "none", "level": self.level, "goal": GOAL}
        kind = kinds[self.rng.randrange(len(kinds))]
        pool = self.arc.flashbacks if kind == "flashback" else spec[kind]
        return {"kind": kind, "line": str(pool[self.rng.randrange(len(pool))]), "level": self.level, "goal": GOAL,
                "prop": prop}
