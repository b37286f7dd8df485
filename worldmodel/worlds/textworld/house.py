"""Enumerate a TextWorld game's reachable facts into an automaton, once, and cache it.

A TextWorld game (``game.json`` beside the compiled ``game.z8``) holds its world as
logic facts (``at(P, r_0)``, ``closed(c_1)``, ``in(k_0, c_1)`` …) and its rules as
actions over them. :func:`enumerate_house` starts from the initial facts and, with
TextWorld's own logic engine (``textworld.logic.State``, ``all_applicable_actions``,
commands through ``Inform7Game.gen_commands_from_actions``), visits every reachable
set of facts breadth first — no Z-machine involved. The result, a :class:`House`, is
written as gzipped JSON beside the game (``game.automaton.json.gz``) and read back by
:func:`load_house` without importing ``textworld`` at all.

**Scope (which commands are tokens).** A TextWorld Simple house has about a dozen
portable objects, and the engine lets the player drop, put or insert each of them on
or into about two dozen places, so the full reachable fact space is astronomically
large (roughly 24^12 placements). The automaton keeps every command that does not
move an object — ``look``, ``inventory``, ``examine …``, ``go …``, ``open``/``close``
of doors and containers, ``lock``/``unlock`` — and, for moving objects, only what the
quest needs: taking the quest's objects (those the walkthrough moves: the key and the
food), the winning command (``put <food> on <stove>``) and eating the quest's food
(which loses the game). Every other command the engine admits is recorded in
``excluded``, so a test can check that the engine's admissible commands are exactly
the automaton's valid tokens plus excluded ones, at every state. Facts-wise this is
the game restricted to a sub-alphabet: a DFA whose language is the game's language
intersected with the kept commands.

**Terminal states.** A state is *won* when the main quest's final condition holds
(the food on the stove) and *lost* when a fail condition holds (the food eaten); the
engine ends the game there, and so does the automaton (no valid tokens). The
command that wins is a *win token*, the one that loses a *lose token*.

Tokens are the commands' canonical text with spaces written as underscores
(``take_old_key_from_antique_trunk``), because sequence files separate tokens by
whitespace.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from ...errors import WorldModelError

FORMAT = 1
MOVING = frozenset({"take", "take/c", "take/s", "drop", "put", "insert", "eat"})
PORTABLE_TYPES = frozenset({"o", "f", "k"})


def token_of(command: str) -> str:
    """``"take old key from antique trunk"`` -> ``"take_old_key_from_antique_trunk"``."""
    return "_".join(command.split())


def command_of(token: str) -> str:
    """The command text of a token (underscores back to spaces)."""
    return token.replace("_", " ")


def automaton_path(game: str | Path) -> Path:
    """Where the automaton of ``game`` (``…/game.json`` or ``…/game.z8``) is cached."""
    game = Path(game)
    return game.with_name(game.stem + ".automaton.json.gz")


def _sha256(path: Path) -> str:
    """SHA-256 of the parts of ``game.json`` the automaton depends on.

    ``tw-make`` writes the grammar's name lists in an order that varies from run to
    run (the compiled game does not), so the grammar is left out and keys sorted.
    """
    from worldmodel.safety import read_json

    data = read_json(path, "json", "TextWorld game")      # bounded, a regular file, strict JSON
    if not isinstance(data, dict) or "world" not in data:
        raise WorldModelError(f"TextWorld game {path} is not a game.json (no 'world')")
    data.pop("grammar", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


@dataclass
class House:
    """The enumerated automaton of one game (raw states: one per reachable set of facts).

    * ``tokens`` — the kept commands (as tokens), sorted;
    * ``facts`` — every fact that occurs in some state, as text; ``initial`` the ids
      of the initial facts; ``added[s]`` / ``removed[s]`` the ids added to / removed
      from the initial facts in state ``s`` (state 0 is the start);
    * ``edges[s]`` — ``[(token index, next state), …]``;
    * ``won`` / ``lost`` — terminal states; ``win_tokens`` / ``lose_tokens``;
    * ``excluded`` — commands the engine admits somewhere that are out of scope;
    * ``names`` — entity id -> display name (``"r_0"`` -> ``"bedroom"``);
      ``quest_objects`` — the ids of the objects that may move;
    * ``walkthrough`` — the game's walkthrough, as tokens; ``max_score``; ``objective``.
    """

    game: str
    game_sha256: str
    tokens: list[str]
    facts: list[str]
    initial: list[int]
    added: list[list[int]]
    removed: list[list[int]]
    edges: list[list[tuple[int, int]]]
    won: list[int]
    lost: list[int]
    win_tokens: list[str]
    lose_tokens: list[str]
    excluded: list[str]
    names: dict[str, str]
    quest_objects: list[str]
    walkthrough: list[str]
    max_score: int
    objective: str = ""
    meta: dict = field(default_factory=dict)
    #: ``classes[s]``: the minimal DFA's state of raw state ``s`` (Hopcroft, computed once when enumerating)
    classes: list[int] = field(default_factory=list)

    @property
    def n_states(self) -> int:
        return len(self.edges)

    def state_facts(self, s: int) -> frozenset[str]:
        """The facts (as text) that hold in raw state ``s``."""
        base = set(self.initial) - set(self.removed[s])
        return frozenset(self.facts[i] for i in base | set(self.added[s]))

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["edges"] = [[x for e in row for x in e] for row in self.edges]
        d["format"] = FORMAT
        return d

    @classmethod
    def from_json(cls, d: dict, where: str) -> "House":
        if d.get("format") != FORMAT:
            raise WorldModelError(f"{where}: automaton format {d.get('format')!r}, expected {FORMAT}")
        try:
            d = dict(d)
            d.pop("format")
            d["edges"] = [list(zip(row[0::2], row[1::2])) for row in d["edges"]]
            return cls(**d)
        except (TypeError, KeyError) as exc:
            raise WorldModelError(f"{where}: not an automaton file ({exc})") from None


def _game_json(game: str | Path) -> Path:
    game = Path(game)
    path = game.with_suffix(".json") if game.suffix != ".json" else game
    if not path.exists():
        raise WorldModelError(f"TextWorld game {path} does not exist (generate it with tw-make, see games.py)")
    return path


def load_house(game: str | Path, build: bool = True, progress: bool = True) -> House:
    """The automaton of ``game``: read from its cache, or enumerated (and cached) when missing or stale.

    The cache records a SHA-256 of ``game.json`` (its grammar aside); a cache made for another game is
    rebuilt (or, with ``build=False``, an error).
    """
    path = _game_json(game)
    cache = automaton_path(path)
    digest = _sha256(path)
    if cache.exists():
        try:
            with gzip.open(cache, "rt", encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise WorldModelError(f"automaton cache {cache} is unreadable ({exc}); delete it to rebuild") from None
        house = House.from_json(data, str(cache))
        if house.game_sha256 == digest:
            return house
        if not build:
            raise WorldModelError(f"automaton cache {cache} was made for another game.json")
    elif not build:
        raise WorldModelError(f"no automaton cache {cache}")
    house = enumerate_house(path, progress=progress)
    house.classes = minimal_classes(house)
    save_house(house, cache)
    return house


def save_house(house: House, cache: str | Path) -> None:
    """Write the automaton as gzipped JSON (atomically)."""
    cache = Path(cache)
    tmp = cache.with_name(cache.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(house.to_json(), f, separators=(",", ":"))
    tmp.replace(cache)


def raw_dfa(house: House, name: str = "textworld"):
    """The enumerated automaton as an (unminimised) :class:`~worldmodel.dfa.ExplicitDFA`."""
    import numpy as np

    from ...dfa import ExplicitDFA

    delta = np.full((house.n_states, len(house.tokens)), -1, dtype=np.int64)
    for s, row in enumerate(house.edges):
        for t, n in row:
            delta[s, t] = n
    return ExplicitDFA(delta, house.tokens, 0, name=name)


def minimal_classes(house: House) -> list[int]:
    """Each raw state's Myhill–Nerode class, numbered as :meth:`ExplicitDFA.minimise` numbers them."""
    _, class_of = raw_dfa(house).minimise()
    return [int(c) for c in class_of]


# ---------------------------------------------------------------------------
# Enumeration with TextWorld's logic engine
# ---------------------------------------------------------------------------


class Engine:
    """TextWorld's logic engine on one game: applicable actions and their commands from a State."""

    def __init__(self, game_json: str | Path):
        try:
            from textworld import Game
            from textworld.generator.inform7 import Inform7Game
            from textworld.logic import State
        except ModuleNotFoundError:
            raise WorldModelError("the TextWorld world needs the textworld package: "
                                  "pip install -e \".[textworld]\"") from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.game = Game.load(str(game_json))
        self.State = State
        self.inform7 = Inform7Game(self.game)
        self.rules = list(self.game.kb.rules.values())
        self.constants = self.game.kb.types.constants_mapping
        self.names = {k: v.name for k, v in self.game.infos.items() if v.name}

    def initial(self):
        return self.State(self.game.kb.logic, self.game.world.facts)

    def actions(self, state) -> list[tuple[str, object]]:
        """``[(command text, action), …]`` of every action applicable in ``state``."""
        acts = list(state.all_applicable_actions(self.rules, self.constants))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cmds = self.inform7.gen_commands_from_actions(acts)
        return list(zip(cmds, acts))

    @staticmethod
    def after(state, action):
        nxt = state.copy()
        nxt.apply(action)
        return nxt


def _moved_object(action) -> str | None:
    objs = [v.name for v in action.variables if v.type in PORTABLE_TYPES]
    return objs[0] if objs else None


def enumerate_house(game: str | Path, progress: bool = True, max_states: int = 200_000) -> House:
    """Breadth-first enumeration of the reachable facts of ``game`` (see the module docstring)."""
    path = _game_json(game)
    eng = Engine(path)
    g = eng.game
    walk_cmds = list(g.metadata.get("walkthrough") or g.walkthrough or [])
    if not walk_cmds:
        raise WorldModelError(f"{path}: the game has no walkthrough")
    main = max((q for q in g.quests if q.win_events), key=lambda q: len(q.commands), default=None)
    if main is None:
        raise WorldModelError(f"{path}: the game has no quest to win")
    win_conditions = [e.condition for e in main.win_events]
    fail_conditions = [e.condition for q in g.quests for e in q.fail_events]

    # the quest's objects: everything the walkthrough's actions move
    s = eng.initial()
    quest_objects: set[str] = set()
    for cmd in walk_cmds:
        match = [a for c, a in eng.actions(s) if c == cmd]
        if not match:
            raise WorldModelError(f"{path}: walkthrough command {cmd!r} is not applicable when its turn comes")
        if match[0].name in MOVING and _moved_object(match[0]):
            quest_objects.add(_moved_object(match[0]))
        s = eng.after(s, match[0])
    if not any(s.is_applicable(c) for c in win_conditions):
        raise WorldModelError(f"{path}: the walkthrough does not win the game")

    def in_scope(action) -> bool:
        if action.name not in MOVING:
            return True
        obj = _moved_object(action)
        if obj not in quest_objects:
            return False
        if action.name in ("take", "take/c", "take/s", "eat"):
            return True
        return False  # drop/put/insert: only the winning put, decided below

    def status(state) -> str:
        if any(state.is_applicable(c) for c in fail_conditions):
            return "lost"
        if any(state.is_applicable(c) for c in win_conditions):
            return "won"
        return "live"

    fact_id: dict[str, int] = {}
    fact_text: list[str] = []

    def ids(state) -> frozenset[int]:
        out = []
        for p in state.facts:
            t = str(p)
            if t not in fact_id:
                fact_id[t] = len(fact_text)
                fact_text.append(t)
            out.append(fact_id[t])
        return frozenset(out)

    s0 = eng.initial()
    k0 = ids(s0)
    index = {k0: 0}
    keys = [k0]
    edges: list[list[tuple[str, int]]] = []
    won, lost = [], []
    win_cmds, lose_cmds, excluded = set(), set(), set()
    queue = deque([s0])
    bar = tqdm(desc=f"enumerating {path.parent.name or path.name}", unit="state", disable=not progress)
    while queue:
        state = queue.popleft()
        sid = len(edges)
        row: list[tuple[str, int]] = []
        edges.append(row)
        st = status(state)
        if st != "live":
            (won if st == "won" else lost).append(sid)
            bar.update(1)
            continue
        seen_cmd: dict[str, frozenset[int]] = {}
        for cmd, act in eng.actions(state):
            nxt = eng.after(state, act)
            kept = in_scope(act)
            nst = status(nxt)
            if not kept and act.name in ("put", "drop", "insert") and nst == "won":
                kept = True  # the winning put
            if not kept:
                excluded.add(cmd)
                continue
            if "_" in cmd:
                raise WorldModelError(f"{path}: command {cmd!r} contains an underscore; tokens would be ambiguous")
            k = ids(nxt)
            if cmd in seen_cmd:
                if seen_cmd[cmd] != k:
                    raise WorldModelError(f"{path}: command {cmd!r} names two actions with different outcomes")
                continue
            seen_cmd[cmd] = k
            if nst == "won":
                win_cmds.add(cmd)
            elif nst == "lost":
                lose_cmds.add(cmd)
            if k not in index:
                if len(index) >= max_states:
                    raise WorldModelError(f"{path}: more than {max_states} reachable states; the scope is too wide")
                index[k] = len(keys)
                keys.append(k)
                queue.append(nxt)
            row.append((cmd, index[k]))
        bar.update(1)
    bar.close()

    tokens = sorted({token_of(c) for row in edges for c, _ in row})
    tok_index = {t: i for i, t in enumerate(tokens)}
    init = sorted(k0)
    return House(
        game=path.name, game_sha256=_sha256(path), tokens=tokens, facts=fact_text, initial=init,
        added=[sorted(k - k0) for k in keys], removed=[sorted(k0 - k) for k in keys],
        edges=[sorted((tok_index[token_of(c)], n) for c, n in row) for row in edges],
        won=won, lost=lost,
        win_tokens=sorted(token_of(c) for c in win_cmds), lose_tokens=sorted(token_of(c) for c in lose_cmds),
        excluded=sorted(token_of(c) for c in excluded - win_cmds),
        names=eng.names, quest_objects=sorted(quest_objects), walkthrough=[token_of(c) for c in walk_cmds],
        max_score=int(g.max_score), objective=str(g.objective or ""),
        meta={"textworld": _tw_version(), "uuid": g.metadata.get("uuid", "")},
    )


def _tw_version() -> str:
    try:
        import textworld

        return str(textworld.__version__)
    except (ImportError, AttributeError):
        return "unknown"
