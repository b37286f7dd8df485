"""The rules of "8" that the simulator and the automaton share: goal, loop sizes, difficulties.

These are the game's numbers (alvations/melon-eight, ``hallway.py`` at the pinned
commit), restated here:

* eight correct calls in a row open the door (:data:`GOAL`); a wrong call sends the
  player back to the very start of the climb (level 0);
* each loop describes 4 to 6 properties (:data:`MIN_DETAILS`, :data:`MAX_DETAILS`), in
  the arc's canonical order; a changed property is always among them;
* the chance that a loop holds a change rises with the level
  (:meth:`Difficulty.anomaly_chance`), from a very low opening (1-3%) to a cap;
* **easy** never holds details back; **normal** rarely (15% of climbs) holds one late
  property out of the early loops; **hard** always holds one or two, each revealed at
  a level drawn from 2..6, shown on its reveal loop and never changed before it has
  been seen at baseline. Hard also lets a change *persist* into the next loop (22%) or
  forces a clean *revert* (12%), and from level 4 on adds a second simultaneous change
  (30% of changed loops);
* **insane** (hidden upstream) is hard with a steeper ramp, and each climb draws its
  own baseline value for every property; a property can change only once it has been
  seen this climb, so its first appearance shows the climb's baseline.

Persistence, reverts and the ramp change the *odds*; which transcripts can happen at
all (the automaton) depends only on the holds, the double change and, in insane, the
per-climb baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import WorldModelError

GOAL = 8
MIN_DETAILS = 4
MAX_DETAILS = 6
#: held late properties are revealed at a level drawn uniformly from this range
REVEAL_LEVELS = (min(2, GOAL - 2), max(min(2, GOAL - 2), GOAL - 2))
#: hard/insane: the second simultaneous change may come from this level on
DOUBLE_LEVEL = round(GOAL * 0.5)

CALLS = ("go_on", "turn_back")
RESET = "reset"
DOOR = "door"


@dataclass(frozen=True)
class Difficulty:
    """One difficulty's numbers (see the module docstring)."""

    name: str
    base: float
    step: float
    cap: float
    holds: str                     #: "never", "rarely" (normal) or "always" (hard, insane)
    hold_rarely: float = 0.15
    persist: float = 0.0           #: chance a change repeats on the next loop
    revert: float = 0.0            #: chance the next loop is forced clean instead
    double: float = 0.0            #: chance of a second change, from DOUBLE_LEVEL on
    random_baseline: bool = False  #: insane: a baseline per climb

    def anomaly_chance(self, level: int) -> float:
        return min(self.cap, self.base + self.step * max(0, level))

    @property
    def doubles(self) -> bool:
        return self.double > 0


DIFFICULTIES: dict[str, Difficulty] = {
    "easy": Difficulty("easy", 0.01, 0.042, 0.30, "never"),
    "normal": Difficulty("normal", 0.02, 0.076, 0.55, "rarely"),
    "hard": Difficulty("hard", 0.03, 0.081, 0.60, "always", persist=0.22, revert=0.12, double=0.30),
    "insane": Difficulty("insane", 0.03, 0.092, 0.66, "always", persist=0.22, revert=0.12, double=0.30,
                         random_baseline=True),
}
#: the benchmark's sweep (insane is hidden upstream and runs only when asked for)
EXPOSED = ("easy", "normal", "hard")
REGISTERS = ("normal", "simple")


def difficulty(name: str) -> Difficulty:
    if name not in DIFFICULTIES:
        raise WorldModelError(f"unknown difficulty {name!r} (known: {', '.join(DIFFICULTIES)})")
    return DIFFICULTIES[name]


def hold_hypotheses(diff: Difficulty, late: tuple[int, ...]) -> frozenset[tuple[tuple[int, int], ...]]:
    """Every way a climb can hold late properties back: tuples of ``(property index, reveal level)``.

    ``()`` (nothing held) is one of them for easy and normal; hard and insane hold one
    (or, with two or more late properties, one or two).
    """
    lo, hi = REVEAL_LEVELS
    singles = [((p, r),) for p in late for r in range(lo, hi + 1)]
    if diff.holds == "never" or not late:
        return frozenset({()})
    if diff.holds == "rarely":
        return frozenset({()} | set(singles))
    pairs = [tuple(sorted(((p, r), (q, s)))) for i, p in enumerate(late) for q in late[i + 1:]
             for r in range(lo, hi + 1) for s in range(lo, hi + 1)]
    return frozenset(singles + pairs)
