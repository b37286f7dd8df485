"""A simulator as a World: a program with "list actions / step / done" methods, crawled into a DFA.

A *simulator* is a Python file defining a class whose instances list the actions available
now, take one, and say when the game is over and whether it was won: the ``TextGame``
convention of ByteSized32 (``generatePossibleActions``, ``step``, ``gameOver``,
``gameWon``) by default; :class:`SimulatorSpec` renames every part for other conventions.
The code is untrusted (an LLM may have written it): it runs only inside the sandbox of
:mod:`worldmodel.sandbox` (its worker is :mod:`worldmodel.simworker`), and an exception, a
hang or a crash in it is one recorded failure of the simulator, never of the run.

**States.** A state is a *fingerprint*: the SHA-256 of a canonical serialisation of the
simulator's whole object graph (every attribute of every reachable object; see
:mod:`worldmodel.simworker`), with three things handled explicitly (``SimulatorSpec.exclude``):

* the *observation text* (``observationStr``) is left out: it reports what the last action
  did, and what comes next does not depend on it (two ways into the same situation that
  print different messages are one state);
* the *step counter* (``numSteps``) is left out, so a state does not remember how long it
  took to get there (a simulator whose dynamics read the counter then looks
  nondeterministic to the crawl; none of ByteSized32's reference games does);
* the cached *action dict* (``possibleActions``) is left out: it is rebuilt before every
  step (``refresh``);
* random number generators are *kept*: a ``random.Random`` in the graph by its internal
  state, and the module ``random``'s global state (seeded with ``SimulatorSpec.seed``
  before the file is imported and again before the class is built), so a simulator that
  draws at random after its start has more states, as it should.

**Valid tokens.** From a state, an action is *valid* when taking it changes the state, or
when its verb (first word) is *informational* (``look``, ``inventory``, ``examine`` by
default: actions that only report); an action that raises is invalid and recorded. A state
in which the game is over has one valid token, ``#won`` or ``#lost``, leading to the
absorbing end state ``#end``; so winning and losing stay apart, and winnability is the
reachability of ``#won``. Tokens are actions with their spaces written ``_`` (sequence files
split on whitespace); :attr:`Crawl.actions` maps them back.

**Crawl.** :func:`crawl` explores breadth first from the start state with bounds on states,
depth and actions per verb (the branching cap); it *closes* when every reachable state has
been expanded with every listed action within those bounds. A closed crawl is the exact
automaton: :meth:`Crawl.dfa` gives it as an :class:`~worldmodel.dfa.ExplicitDFA` (minimise it
for the Myhill–Nerode state count). One that does not close is the explored part;
:class:`SimulatorWorld` then answers beyond it by asking the simulator again (an implicit
world, sampled rather than enumerated). Crawls are data (JSON) and cached by the file's
SHA-256, the spec and the bounds (:func:`cached_crawl`).
"""

from __future__ import annotations

import hashlib
import json
import random as _random
import re
from collections import deque
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Hashable

import numpy as np

from .dfa import REJECT, ExplicitDFA, Token, World
from .errors import WorldModelError
from .sandbox import Limits, Worker, WorkerFailed

WON, LOST, END = "#won", "#lost", "#end"
STOP_TOKENS = frozenset({WON, LOST})
WORKER = Path(__file__).with_name("simworker.py")


@dataclass(frozen=True)
class SimulatorSpec:
    """How to drive a simulator file (names of its parts) and how to name its states.

    Defaults are ByteSized32's ``TextGame`` convention. ``init`` are keyword arguments of
    the class; ``seed`` seeds the module ``random`` before import and construction.
    ``exclude``: attributes of the simulator object left out of the fingerprint;
    ``informational``: verbs whose actions are valid though they change nothing;
    ``refresh``: call the action lister before every step (a ``TextGame``'s ``step`` looks
    actions up in the dict that lister built); ``fingerprint``: ``canonical`` (the default; see
    :mod:`worldmodel.simworker`) or ``pickle`` (a hash of the pickled object graph, no
    exclusions: faster, and finer, so it may split a state in two, never merge two).
    """

    entry: str = "TextGame"
    init: dict = field(default_factory=lambda: {"randomSeed": 0})
    seed: int = 0
    actions: str = "generatePossibleActions"
    step: str = "step"
    done: str = "gameOver"
    won: str = "gameWon"
    observation: str = "observationStr"
    exclude: tuple[str, ...] = ("observationStr", "possibleActions", "numSteps")
    informational: tuple[str, ...] = ("look", "inventory", "examine")
    refresh: bool = True
    fingerprint: str = "canonical"

    @classmethod
    def from_dict(cls, data: dict, where: str = "simulator spec") -> "SimulatorSpec":
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise WorldModelError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(known)})")
        out = {}
        if "fingerprint" in data and data["fingerprint"] not in ("canonical", "pickle"):
            raise WorldModelError(f"{where}: fingerprint must be 'canonical' or 'pickle'")
        for k, v in data.items():
            default = getattr(cls(), k)
            if isinstance(default, tuple):
                if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
                    raise WorldModelError(f"{where}: {k} must be a list of strings")
                v = tuple(v)
            elif isinstance(default, dict):
                if not isinstance(v, dict):
                    raise WorldModelError(f"{where}: {k} must be a table")
            elif isinstance(default, bool):
                if not isinstance(v, bool):
                    raise WorldModelError(f"{where}: {k} must be true or false")
            elif isinstance(default, int):
                if not isinstance(v, int) or isinstance(v, bool):
                    raise WorldModelError(f"{where}: {k} must be an integer")
            elif not isinstance(v, str) or not v:
                raise WorldModelError(f"{where}: {k} must be a non-empty string")
            out[k] = v
        return cls(**out)

    @classmethod
    def load(cls, path: str | Path) -> "SimulatorSpec":
        """A spec from a TOML or JSON file (keys as the fields)."""
        from .safety import loads_json, read_text

        p = Path(path)
        text = read_text(p, "task", "simulator spec")      # bounded, a regular file, UTF-8
        try:
            if p.suffix == ".json":
                data = loads_json(text, f"simulator spec {p}")     # a key twice is an error
            else:
                import tomllib

                data = tomllib.loads(text)
        except ValueError as exc:
            raise WorldModelError(f"simulator spec {p} is malformed ({exc})") from None
        if not isinstance(data, dict):
            raise WorldModelError(f"simulator spec {p} must be a table of keys")
        return cls.from_dict(data, where=str(p))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["exclude"], d["informational"] = list(self.exclude), list(self.informational)
        return d

    def request(self, path: str) -> dict:
        """The worker's ``load`` request for the file at ``path`` (as the worker sees it)."""
        return {"op": "load", "path": path, "entry": self.entry, "init": dict(self.init), "seed": self.seed,
                "actions": self.actions, "step": self.step, "done": self.done, "won": self.won,
                "observation": self.observation, "exclude": list(self.exclude), "refresh": self.refresh,
                "fingerprint": self.fingerprint}


class SimulatorFailed(WorldModelError):
    """The simulator could not be loaded or started (``stage``: import, init, sandbox, worker)."""

    def __init__(self, stage: str, message: str):
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message


def action_token(action: str) -> Token:
    """The token of an action: whitespace runs written ``_`` (tokens are whitespace-free)."""
    return re.sub(r"\s+", "_", action.strip())


def verb(action: str) -> str:
    parts = action.split()
    return parts[0] if parts else ""


class Simulator:
    """One sandboxed simulator process: load the file, list actions, try actions from snapshots.

    Raises :class:`SimulatorFailed` when the file cannot be imported or its class not built;
    a request that hangs or kills the process raises :class:`~worldmodel.sandbox.WorkerFailed`
    (the process is gone then; :attr:`failure` says why).
    """

    def __init__(self, path: str | Path, spec: SimulatorSpec | None = None, limits: Limits | None = None,
                 unsafe: bool = False):
        self.path = Path(path)
        if not self.path.is_file():
            raise WorldModelError(f"simulator file {self.path} does not exist")
        self.spec = spec or SimulatorSpec()
        self.failure: str | None = None
        self.worker = Worker(WORKER, {"sim.py": self.path}, limits=limits, unsafe=unsafe)
        try:
            reply = self.worker.call(self.spec.request(self.worker.paths["sim.py"]),
                                     timeout=self.worker.limits.start_s)
        except WorkerFailed as exc:
            self.failure = str(exc)
            raise SimulatorFailed("load", str(exc)) from None
        if not reply.get("ok"):
            self.close()
            raise SimulatorFailed(reply.get("stage", "load"), reply.get("error", "failed"))
        self.root = reply

    def call(self, request: dict) -> dict:
        try:
            return self.worker.call(request)
        except WorkerFailed as exc:
            self.failure = str(exc)
            raise

    def actions(self, node: int, inplace: bool = False) -> dict:
        return self.call({"op": "actions", "id": node, "inplace": inplace})

    def children(self, node: int, actions: list[str], store: bool = True, refresh: bool | None = None,
                 dedupe: bool = True, leaf: bool = False, blank: dict | None = None) -> list[dict]:
        """Try each action from a copy of ``node`` (see :mod:`worldmodel.simworker`, ``children``)."""
        req = {"op": "children", "id": node, "actions": actions, "store": store, "dedupe": dedupe, "leaf": leaf,
               "blank": dict(blank or {})}
        if refresh is not None:
            req["refresh"] = bool(refresh)
        reply = self.call(req)
        if not reply.get("ok"):
            raise WorkerFailed("protocol", reply.get("error", "children failed"))
        return reply["children"]

    def replay(self, path: list[str]) -> dict:
        return self.call({"op": "replay", "path": list(path)})

    def drop(self, ids: list[int]) -> None:
        if ids:
            self.call({"op": "drop", "ids": list(ids)})

    def close(self) -> None:
        self.worker.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------------------
# The crawl
# ---------------------------------------------------------------------------


@dataclass
class Crawl:
    """What a breadth-first crawl of a simulator found (plain data; JSON round trip).

    ``states[i]`` is a fingerprint (state 0 the start); ``depth[i]`` its distance from the
    start; ``parent[i]`` ``(state, token)`` of its first discovery. ``edges[i]`` maps each
    valid token to the next state (``-1`` for the end state after ``#won``/``#lost``) for
    expanded states; ``expanded[i]`` says whether state ``i`` was. ``terminal[i]`` is
    ``"won"``/``"lost"`` where the game is over. A state whose successors the state bound cut
    short keeps the edges it got and stays unexpanded. ``errors`` maps ``"i|token"`` to what the code
    raised. ``listed`` / ``noop`` count listed actions and those that changed nothing.
    ``actions`` maps tokens to the simulator's action strings.
    """

    source: str
    sha256: str
    spec: dict
    bounds: dict
    states: list[str] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    parent: list[list] = field(default_factory=list)
    edges: list[dict] = field(default_factory=list)
    expanded: list[bool] = field(default_factory=list)
    terminal: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    listed: int = 0
    noop: int = 0
    capped: int = 0
    actions: dict = field(default_factory=dict)
    closed: bool = False
    stop: str = ""
    failure: str | None = None

    # -- views --------------------------------------------------------------
    @property
    def n_states(self) -> int:
        return len(self.states)

    @property
    def alphabet(self) -> tuple[Token, ...]:
        toks = {t for e in self.edges for t in e}
        return tuple(sorted(toks))

    @property
    def winnable(self) -> bool | None:
        """A ``#won`` state was reached; ``None`` if not and the crawl did not close."""
        if any(v == "won" for v in self.terminal.values()):
            return True
        return False if self.closed else None

    def dfa(self, tokens: tuple[Token, ...] | None = None, name: str = "simulator") -> ExplicitDFA:
        """The crawled automaton (exact when :attr:`closed`) over ``tokens`` (default: its alphabet).

        States ``0..n-1`` are the crawl's, state ``n`` the end state. Unexpanded states of an
        open crawl have no transitions here (use :class:`SimulatorWorld` beyond the crawl).
        """
        tokens = tuple(tokens) if tokens is not None else self.alphabet
        index = {t: j for j, t in enumerate(tokens)}
        n = self.n_states
        delta = np.full((n + 1, len(tokens)), -1, dtype=np.int64)
        for i, e in enumerate(self.edges):
            for t, nxt in e.items():
                j = index.get(t)
                if j is not None:
                    delta[i, j] = n if nxt < 0 else nxt
        return ExplicitDFA(delta, tokens, 0, name=name)

    def summary(self) -> dict:
        return {"source": self.source, "states": self.n_states, "expanded": int(sum(self.expanded)),
                "closed": self.closed, "stop": self.stop, "tokens": len(self.alphabet),
                "listed_actions": self.listed, "noop_actions": self.noop, "errors": len(self.errors),
                "capped_states": self.capped, "winnable": self.winnable,
                "max_depth": max(self.depth) if self.depth else 0, "failure": self.failure}

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Crawl":
        if not isinstance(data, dict) or set(data) != {f.name for f in fields(cls)}:
            raise WorldModelError("not a simulator crawl (keys do not match)")
        return cls(**data)

    def path_to(self, i: int) -> list[Token]:
        """The tokens of the first-found history to state ``i``."""
        out = []
        while i > 0:
            p, t = self.parent[i]
            out.append(t)
            i = p
        return list(reversed(out))


def _cap(actions: list[str], per_verb: int | None, seed: int) -> tuple[list[str], bool]:
    """At most ``per_verb`` actions of each verb (a seeded sample, kept in listing order)."""
    if per_verb is None:
        return actions, False
    groups: dict[str, list[str]] = {}
    for a in actions:
        groups.setdefault(verb(a), []).append(a)
    keep: set[str] = set()
    capped = False
    for v, acts in groups.items():
        if len(acts) > per_verb:
            capped = True
            acts = _random.Random(seed).sample(acts, per_verb)
        keep.update(acts)
    return [a for a in actions if a in keep], capped


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def crawl(path: str | Path, spec: SimulatorSpec | None = None, max_states: int = 20000,
          max_depth: int | None = None, per_verb: int | None = None, limits: Limits | None = None,
          unsafe: bool = False, progress: bool = False, keep_open: bool = False, budget_s: float | None = None):
    """Crawl the simulator in ``path`` breadth first (see the module docstring).

    ``max_states``: stop once this many states are known; ``max_depth``: do not expand
    states this far from the start; ``per_verb``: try at most this many actions of each
    verb per state (a seeded sample; the crawl is then not closed); ``budget_s``: stop after this
    many seconds of wall clock (not closed either; the same bound gives different crawls on
    machines of different speed, so it is a guard, not a bound to cache). A failure to load, a
    hang or a crash is recorded in :attr:`Crawl.failure` (the crawl so far is kept).
    With ``keep_open`` returns ``(crawl, simulator)`` with the process still running
    (the caller closes it), for :class:`SimulatorWorld` to go on from.
    """
    spec = spec or SimulatorSpec()
    path = Path(path)
    out = Crawl(str(path), file_sha256(path), spec.to_dict(),
                {"max_states": max_states, "max_depth": max_depth, "per_verb": per_verb})
    try:
        sim = Simulator(path, spec, limits=limits, unsafe=unsafe)
    except SimulatorFailed as exc:
        out.failure = str(exc)
        out.stop = "failed"
        return (out, None) if keep_open else out
    explorer = _Explorer(sim, spec, out, per_verb)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(desc=f"crawl {path.name}", unit="state", leave=False)
    try:
        explorer.run(max_states, max_depth, bar, budget_s)
    finally:
        if bar is not None:
            bar.close()
        if not keep_open:
            sim.close()
    return (out, sim) if keep_open else out


class _Explorer:
    """Expands states of a :class:`Crawl` through a :class:`Simulator` (the crawl and the world share it)."""

    MAX_LIVE = 4000  # snapshots kept in the worker; states beyond are rebuilt by replay

    def __init__(self, sim: Simulator, spec: SimulatorSpec, out: Crawl, per_verb: int | None):
        self.sim, self.spec, self.out, self.per_verb = sim, spec, out, per_verb
        self.index: dict[str, int] = {}
        self.node: dict[int, int] = {}  # state -> worker node id (live snapshot)
        self.informational = set(spec.informational)
        if not out.states:
            self._add(sim.root["fp"], 0, [-1, ""], sim.root.get("done"), sim.root.get("won"))
            self.node[0] = sim.root["id"]
        else:
            self.index = {fp: i for i, fp in enumerate(out.states)}

    def _add(self, fp, depth, parent, done, won) -> int:
        i = len(self.out.states)
        self.index[fp] = i
        self.out.states.append(fp)
        self.out.depth.append(depth)
        self.out.parent.append(parent)
        self.out.edges.append({})
        self.out.expanded.append(False)
        if done:
            self.out.terminal[str(i)] = "won" if won else "lost"
        return i

    def _live(self, i: int) -> int:
        """A worker node holding state ``i`` (rebuilt by replaying its first history if needed)."""
        n = self.node.get(i)
        if n is not None:
            return n
        actions = [self.out.actions.get(t, t) for t in self.out.path_to(i)]
        reply = self.sim.replay(actions)
        if not reply.get("ok"):
            raise WorkerFailed("protocol", f"replay failed: {reply.get('error')}")
        if reply["fp"] != self.out.states[i]:
            raise WorkerFailed("protocol", "replaying a history did not reach the same state (the simulator is "
                                           "not deterministic)")
        self.node[i] = reply["id"]
        return reply["id"]

    def expand(self, i: int, max_states: int | None = None, max_depth: int | None = None) -> list[int]:
        """Expand state ``i``; returns the states discovered. Stops adding at ``max_states``."""
        out = self.out
        if out.expanded[i]:
            return []
        if str(i) in out.terminal:
            out.edges[i] = {WON if out.terminal[str(i)] == "won" else LOST: -1}
            out.expanded[i] = True
            self._release(i)
            return []
        node = self._live(i)
        # listed on the node itself, so its snapshot carries the fresh action dict its children step with
        reply = self.sim.actions(node, inplace=True)
        if not reply.get("ok"):
            out.errors[f"{i}|#actions"] = reply.get("error", "")
            out.expanded[i] = True
            self._release(i)
            return []
        listed = list(dict.fromkeys(reply["actions"]))
        acts, capped = _cap(listed, self.per_verb, self.spec.seed)
        out.capped += int(capped)
        out.listed += len(acts)
        store = len(self.node) < self.MAX_LIVE
        rows = self.sim.children(node, acts, store=store, refresh=False)
        new: list[int] = []
        edges: dict[str, int] = {}
        me = out.states[i]
        truncated = False
        for row in rows:
            a = row["action"]
            tok = action_token(a)
            prev = out.actions.setdefault(tok, a)
            if prev != a:
                raise WorldModelError(f"{out.source}: actions {prev!r} and {a!r} have the same token {tok!r}")
            if "error" in row:
                out.errors[f"{i}|{tok}"] = row["error"]
                continue
            fp = row["fp"]
            if fp == me and verb(a) not in self.informational:
                out.noop += 1
                continue
            j = self.index.get(fp)
            if j is None:
                if max_states is not None and len(out.states) >= max_states:
                    out.stop = out.stop or f"state bound ({max_states:,} states)"
                    truncated = True
                    if "id" in row:
                        self.sim.drop([row["id"]])
                    continue
                j = self._add(fp, out.depth[i] + 1, [i, tok], row.get("done"), row.get("won"))
                new.append(j)
            if "id" in row:
                if j in self.node or out.expanded[j]:
                    self.sim.drop([row["id"]])
                else:
                    self.node[j] = row["id"]
            edges[tok] = j
        out.edges[i] = edges
        out.expanded[i] = not truncated  # a state cut short by the bound is expanded again on demand
        self._release(i)
        return new

    def _release(self, i: int) -> None:
        n = self.node.pop(i, None)
        if n is not None and i != 0:
            self.sim.drop([n])
        elif n is not None:
            self.node[0] = n  # the root stays: replays start from it

    def run(self, max_states: int, max_depth: int | None, bar=None, budget_s: float | None = None) -> None:
        import time

        out = self.out
        queue = deque(i for i in range(out.n_states) if not out.expanded[i])
        deadline = None if budget_s is None else time.monotonic() + budget_s
        try:
            while queue:
                if deadline is not None and time.monotonic() > deadline:
                    out.stop = out.stop or f"time bound ({budget_s:g} s)"
                    break
                i = queue.popleft()
                if max_depth is not None and out.depth[i] >= max_depth and str(i) not in out.terminal:
                    out.stop = out.stop or f"depth bound ({max_depth})"
                    continue
                new = self.expand(i, max_states)
                queue.extend(new)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(states=out.n_states)
        except WorkerFailed as exc:
            out.failure = str(exc)
            out.stop = "failed"
            out.closed = False
            return
        out.closed = not out.stop and out.capped == 0
        if out.capped and not out.stop:
            out.stop = f"actions capped ({self.per_verb} per verb) in {out.capped} states"


# ---------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------


def crawl_key(path: str | Path, spec: SimulatorSpec, bounds: dict) -> str:
    text = json.dumps({"sha256": file_sha256(path), "spec": spec.to_dict(), "bounds": bounds,
                       "worker": file_sha256(WORKER)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cached_crawl(path: str | Path, spec: SimulatorSpec | None = None, cache: str | Path | None = None,
                 **bounds) -> Crawl:
    """:func:`crawl`, cached as JSON in ``cache`` (a folder; None: no cache) under a key of the
    file's SHA-256, the spec, the bounds and the worker's own code."""
    spec = spec or SimulatorSpec()
    keyed = {k: bounds.get(k) for k in ("max_states", "max_depth", "per_verb")}  # budget_s: not a property
    keyed["max_states"] = bounds.get("max_states", 20000)
    if cache is None:
        return crawl(path, spec, **bounds)
    folder = Path(cache)
    file = folder / f"{Path(path).stem}-{crawl_key(path, spec, keyed)}.json"
    if file.is_file():
        from .safety import read_json

        try:
            found = Crawl.from_json(read_json(file, "log", "crawl cache entry"))
            found.source = str(path)
            return found
        except (ValueError, WorldModelError):
            pass  # a damaged cache entry is redone
    result = crawl(path, spec, **bounds)
    if result.stop.startswith("time bound") or result.failure:
        return result  # a machine-speed or failure outcome is not a property of the simulator: not cached
    from .safety import atomic_json

    atomic_json(file, result.to_json(), "crawl cache entry")
    return result


# ---------------------------------------------------------------------------
# The world
# ---------------------------------------------------------------------------


class SimulatorWorld(World):
    """A crawled simulator as a :class:`~worldmodel.dfa.World`.

    States are crawl state numbers (``int``; the end state is ``-1``); its tokens are the
    crawl's alphabet, or ``tokens`` when given (a union with another simulator's, for
    comparing two). With a live ``simulator`` (from ``crawl(..., keep_open=True)``), states the
    crawl did not expand are expanded on demand (an implicit world; new states are added to
    the crawl); without one, an unexpanded state has no valid token. Valid actions first
    seen beyond the crawl that are not in ``tokens`` are dropped and counted in
    :attr:`unlisted`.
    """

    stop_tokens = STOP_TOKENS

    def __init__(self, crawled: Crawl, tokens: tuple[Token, ...] | None = None, simulator: Simulator | None = None,
                 name: str = "simulator", max_states: int | None = None):
        self.crawl = crawled
        self.tokens = tuple(tokens) if tokens is not None else crawled.alphabet
        self._tokset = frozenset(self.tokens)
        self.name = name
        self.unlisted = 0
        self.max_states = max_states
        self._explorer = None
        if simulator is not None:
            spec = SimulatorSpec.from_dict(crawled.spec)
            self._explorer = _Explorer(simulator, spec, crawled, crawled.bounds.get("per_verb"))
            self._explorer.node = {0: simulator.root["id"]}

    def initial_state(self) -> int:
        return 0

    def _edges(self, state: int) -> dict:
        c = self.crawl
        if not c.expanded[state] and self._explorer is not None:
            try:
                self._explorer.expand(state, self.max_states)
            except WorkerFailed as exc:
                c.failure = str(exc)
                self._explorer = None
        return c.edges[state]

    def step(self, state: Hashable, token: Token) -> Hashable:
        if state is REJECT or state == -1 or token not in self._tokset:
            return REJECT
        nxt = self._edges(int(state)).get(token)
        return REJECT if nxt is None else int(nxt)

    def valid_tokens(self, state: Hashable) -> list[Token]:
        if state is REJECT or state == -1:
            return []
        e = self._edges(int(state))
        out = [t for t in e if t in self._tokset]
        self.unlisted += len(e) - len(out)
        return sorted(out)

    def is_expanded(self, state: Hashable) -> bool:
        """Whether the valid tokens of ``state`` are known (always, with a live simulator)."""
        if state is REJECT or state == -1 or self._explorer is not None:
            return True
        return bool(self.crawl.expanded[int(state)])

    def state_key(self, state: Hashable) -> str:
        return "end" if state == -1 else str(state)

    def token_text(self, token: Token) -> str:
        return self.crawl.actions.get(token, token)
