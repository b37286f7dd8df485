"""The seating logic puzzle as an implicit DFA (the paper's third world, App. E).

``n`` people, named ``A, B, C, ...``, sit in ``n`` seats numbered ``1..n``, one person
per seat. A *seating* is a tuple ``p`` with ``p[i]`` the person in seat ``i + 1``.
Statements are of two kinds:

* ``"X is in seat i"`` — true of ``p`` when ``p[i - 1] == X``;
* ``"X is d away from Y"`` (``X != Y``, ``1 <= d <= n - 1``) — true of ``p`` when the
  seats of ``X`` and ``Y`` differ by exactly ``d`` (in either direction).

**Tokens.** One token per distinct statement *string*, exactly as the authors'
code enumerates them: the ordered pair matters in the text, so ``"A is 1 away from
B"`` and ``"B is 1 away from A"`` are two tokens with the same meaning. For ``n``
people that is ``n * n`` seat statements plus ``n (n - 1) * (n - 1)`` distance
statements: 9 + 12 = 21 for ``n = 3``. A token is the statement with its spaces
written as underscores (``"A_is_in_seat_1"``, ``"A_is_2_away_from_C"``), because
sequence files separate tokens by whitespace; :func:`statement_text` and
:func:`parse_statement` convert between the token and the English sentence used in
prompts. Each token has exactly one spelling (the canonical form).

**States.** The state after a sequence of statements is the frozenset of seatings
consistent with all of them; the start state holds all ``n!`` seatings. A
statement is valid unless it contradicts every seating in the state, so a valid
step never produces the empty set, and the reject state is the only "empty" state.

**Myhill–Nerode.** Two *different* non-empty sets of seatings ``S1 != S2`` are
never equivalent, so the frozenset itself is the Myhill–Nerode class and the
core's "states compare equal exactly when equivalent" holds. Proof: say seating
``p`` lies in ``S1`` but not ``S2``. The suffix ``"p[0] is in seat 1", ...,
"p[n-1] is in seat n"`` is valid from ``S1`` (every statement is true of ``p``,
which stays in the state) and leads to ``{p}``; from ``S2`` it would leave
``S2 ∩ {p} = ∅``, so one of its statements contradicts every remaining seating and
is rejected. The distinguishing suffix may need up to ``n`` statements: with the
paper's suffix length ``k = 1`` the bounded boundary between two different states
can be empty (e.g. for ``n = 3`` the three cyclic shifts ``ABC, BCA, CAB`` allow
all 21 statements, just as the start state does).
"""

from __future__ import annotations

import itertools
import re
import string
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from ...dfa import REJECT, World
from ...errors import TrialSkipped, WorldModelError

Seating = tuple[str, ...]
State = frozenset  # frozenset[Seating]

MAX_PEOPLE = 8  # 8! = 40320 seatings; beyond that the explicit state set is impractical

_SEAT_RE = re.compile(r"^([A-Z]) is in seat (\d+)$")
_AWAY_RE = re.compile(r"^([A-Z]) is (\d+) away from ([A-Z])$")


def people(n: int) -> tuple[str, ...]:
    """The names of ``n`` people: ``('A', 'B', ...)``."""
    return tuple(string.ascii_uppercase[:n])


def seat_token(person: str, seat: int) -> str:
    """The token for "``person`` is in seat ``seat``" (seats count from 1)."""
    return f"{person}_is_in_seat_{seat}"


def away_token(x: str, d: int, y: str) -> str:
    """The token for "``x`` is ``d`` away from ``y``"."""
    return f"{x}_is_{d}_away_from_{y}"


def statement_text(token: str) -> str:
    """The English sentence of a token: ``"A_is_in_seat_1"`` -> ``"A is in seat 1"``."""
    return token.replace("_", " ")


def parse_statement(text: str, n: int | None = None) -> str:
    """The canonical token of a statement given as a sentence or as a token.

    Raises :class:`WorldModelError` naming the text when it is not a statement
    (or, with ``n``, names a person or seat outside an ``n``-person puzzle).
    """
    s = " ".join(text.replace("_", " ").split())
    m = _SEAT_RE.match(s)
    if m:
        tok = seat_token(m.group(1), int(m.group(2)))
    else:
        m = _AWAY_RE.match(s)
        if not m or m.group(1) == m.group(3):
            raise WorldModelError(f"not a seating statement: {text!r}")
        tok = away_token(m.group(1), int(m.group(2)), m.group(3))
    if n is not None and tok not in set(statement_tokens(n)):
        raise WorldModelError(f"statement {text!r} does not fit a puzzle with {n} people and seats")
    return tok


@lru_cache(maxsize=None)
def statement_tokens(n: int) -> tuple[str, ...]:
    """Every distinct statement for ``n`` people, seat statements first, in a fixed order."""
    ps = people(n)
    seats = [seat_token(p, i) for p in ps for i in range(1, n + 1)]
    aways = [away_token(x, d, y) for x in ps for y in ps if x != y for d in range(1, n)]
    return tuple(seats + aways)


def _truth_table(n: int, seatings: Sequence[Seating], tokens: Sequence[str]) -> np.ndarray:
    """``table[t, j]``: is statement ``tokens[t]`` true of ``seatings[j]``?"""
    table = np.zeros((len(tokens), len(seatings)), dtype=bool)
    for j, p in enumerate(seatings):
        where = {person: i for i, person in enumerate(p)}
        for t, tok in enumerate(tokens):
            parts = tok.split("_")
            if parts[1:4] == ["is", "in", "seat"]:
                table[t, j] = where[parts[0]] == int(parts[4]) - 1
            else:  # X_is_d_away_from_Y
                table[t, j] = abs(where[parts[0]] - where[parts[5]]) == int(parts[2])
    return table


class SeatingWorld(World):
    """The seating puzzle with ``n`` people and ``n`` seats (``n = 3`` in the paper).

    States are frozensets of seatings (tuples, ``p[i]`` = person in seat ``i + 1``);
    see the module docstring for why they are exactly the Myhill–Nerode classes.
    Truth values are precomputed as a bit mask per statement, so :meth:`step` is a
    set intersection.
    """

    def __init__(self, n: int = 3):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= int(n) <= MAX_PEOPLE:
            raise WorldModelError(f"seating puzzle: n must be an integer from 2 to {MAX_PEOPLE}, got {n!r}")
        self.n = int(n)
        self.name = f"seating-{self.n}"
        self.people = people(self.n)
        self.seatings: tuple[Seating, ...] = tuple(itertools.permutations(self.people))
        self.tokens = statement_tokens(self.n)
        self.stop_tokens = frozenset()
        table = _truth_table(self.n, self.seatings, self.tokens)
        self._index = {p: j for j, p in enumerate(self.seatings)}
        self._tok = {t: i for i, t in enumerate(self.tokens)}
        # for each token, the set of seatings it is true of
        self._true_of = [frozenset(self.seatings[j] for j in np.flatnonzero(row)) for row in table]
        self._start = frozenset(self.seatings)

    # World interface -------------------------------------------------------
    def initial_state(self) -> State:
        return self._start

    def step(self, state, token):
        if state is REJECT:
            return REJECT
        i = self._tok.get(token)
        if i is None:
            return REJECT
        nxt = state & self._true_of[i]
        return nxt if nxt else REJECT

    def valid_tokens(self, state) -> list[str]:
        if state is REJECT:
            return []
        return [t for t, ok in zip(self.tokens, self._true_of) if not ok.isdisjoint(state)]

    def state_key(self, state) -> str:
        if state is REJECT:
            return "REJECT"
        return ",".join(sorted("".join(p) for p in state))

    def token_text(self, token: str) -> str:
        """The statement in words: ``"A_is_in_seat_1"`` -> ``"A is in seat 1"``."""
        return statement_text(token)

    def probe_targets(self, state) -> np.ndarray | None:
        """One 0/1 label per seating: is it still consistent with the statements so far?"""
        if state is REJECT:
            return None
        out = np.zeros(len(self.seatings), dtype=np.int64)
        for p in state:
            out[self._index[p]] = 1
        return out

    # Puzzle helpers ----------------------------------------------------------
    def is_true(self, token: str, seating: Seating) -> bool:
        """Whether a statement is true of one seating."""
        return seating in self._true_of[self._tok[token]]

    def narrows(self, state: State, token: str) -> bool:
        """True when the statement is valid at ``state`` but removes some of its seatings."""
        nxt = self.step(state, token)
        return nxt is not REJECT and nxt != state

    def non_narrowing(self, state: State) -> list[str]:
        """Statements true of every seating in ``state`` (valid there, removing nothing)."""
        return [t for t, ok in zip(self.tokens, self._true_of) if state <= ok]

    def seat_of(self, seating: Seating, person: str) -> int:
        """The seat number (from 1) of ``person`` in ``seating``."""
        return seating.index(person) + 1

    def parse_state(self, key: str) -> State:
        """Inverse of :meth:`state_key` (``"ABC,BCA"`` -> frozenset of two seatings)."""
        out = set()
        for part in key.split(","):
            p = tuple(part.strip())
            if p not in self._index:
                raise WorldModelError(f"{part!r} is not a seating of {self.n} people")
            out.add(p)
        if not out:
            raise WorldModelError("a state needs at least one seating")
        return frozenset(out)


# ---------------------------------------------------------------------------
# Drawing states and prefixes (App. E)
# ---------------------------------------------------------------------------


def random_statements(world: SeatingWorld, length: int, rng: np.random.Generator) -> tuple[tuple[str, ...], State]:
    """``length`` statements each drawn uniformly from those valid so far; returns them and the state."""
    state = world.initial_state()
    out = []
    for _ in range(length):
        valid = world.valid_tokens(state)
        t = valid[int(rng.integers(len(valid)))]
        out.append(t)
        state = world.step(state, t)
    return tuple(out), state


def random_state(world: SeatingWorld, rng: np.random.Generator, max_statements: int = 2) -> State:
    """The paper's state draw: the state reached by 1..``max_statements`` uniform random valid statements."""
    length = int(rng.integers(1, max_statements + 1))
    return random_statements(world, length, rng)[1]


def prefix_to_state(world: SeatingWorld, state: State, rng: np.random.Generator,
                    max_len: int = 12) -> tuple[str, ...]:
    """A prefix of statements that never narrows ``state`` and ends exactly at it.

    Statements are drawn uniformly from those true of every seating in ``state``
    until the seatings consistent with all of them equal ``state``. This always
    ends when ``state`` is reachable (the statements that reached it are among the
    candidates); a draw that grows beyond ``max_len`` is abandoned with
    :class:`TrialSkipped`.
    """
    candidates = world.non_narrowing(state)
    if not candidates:
        raise TrialSkipped(f"no statement is true of every seating in {world.state_key(state)}")
    cur = world.initial_state()
    out: list[str] = []
    while cur != state:
        if len(out) >= max_len:
            raise TrialSkipped(f"prefix to {world.state_key(state)} grew beyond {max_len} statements")
        t = candidates[int(rng.integers(len(candidates)))]
        out.append(t)
        cur = world.step(cur, t)
    return tuple(out)


def two_prefixes_same_state(world: SeatingWorld, rng: np.random.Generator, max_statements: int = 2,
                            max_len: int = 12, attempts: int = 50):
    """Compression draw: a random state and two *different* non-narrowing prefixes reaching it."""
    for _ in range(attempts):
        q = random_state(world, rng, max_statements)
        try:
            p1 = prefix_to_state(world, q, rng, max_len)
            p2 = prefix_to_state(world, q, rng, max_len)
        except TrialSkipped:
            continue
        if p1 != p2:
            return p1, p2, q
    raise TrialSkipped(f"no two different prefixes to one state in {attempts} draws")


def two_prefixes_different_states(world: SeatingWorld, rng: np.random.Generator, max_statements: int = 2,
                                  max_len: int = 12, attempts: int = 50):
    """Distinction draw: two different random states and a non-narrowing prefix to each."""
    for _ in range(attempts):
        q1 = random_state(world, rng, max_statements)
        q2 = random_state(world, rng, max_statements)
        if q1 == q2:
            continue
        try:
            return prefix_to_state(world, q1, rng, max_len), prefix_to_state(world, q2, rng, max_len), q1, q2
        except TrialSkipped:
            continue
    raise TrialSkipped(f"no two different states in {attempts} draws")


def determining_statements(world: SeatingWorld, rng: np.random.Generator, max_len: int = 50):
    """Random valid statements until exactly one seating is left (a fully specified puzzle)."""
    state = world.initial_state()
    out: list[str] = []
    while len(state) > 1:
        if len(out) >= max_len:
            raise TrialSkipped(f"puzzle not determined after {max_len} statements")
        valid = world.valid_tokens(state)
        t = valid[int(rng.integers(len(valid)))]
        out.append(t)
        state = world.step(state, t)
    return tuple(out), next(iter(state))


def tokens_of(statements: Iterable[str], n: int) -> tuple[str, ...]:
    """Canonical tokens of statements given as sentences or tokens."""
    return tuple(parse_statement(s, n) for s in statements)
