"""ByteSized32's technical validity check, reproduced: does a generated game initialise, list its
actions, and run a bounded crawl without raising?

The corpus's own check (``bytes32/validity.py`` of cognitiveailab/BYTESIZED32, read for its
semantics) imports the game, builds ``TextGame(randomSeed=0)``, calls ``getTaskDescription()``,
``calculateScore()`` and ``generatePossibleActions()`` on it, then crawls depth first: every
action sequence of up to ``max_steps = 3`` actions, with at most ``max_num_actions = 100``
actions of each verb (first word) at the first step and ``max_num_actions // 10 = 10`` at the
later ones (a sample drawn by ``random.Random(0).sample`` per verb), each sequence replayed on a
fresh game on which ``generatePossibleActions()`` was called once, before the first action
(so later actions are looked up in the first state's action dict: reproduced). A sequence whose
game is over is not extended. The first exception stops the check: in a step it clears
``step``, in a later ``generatePossibleActions()`` it clears ``generatePossibleActions``;
the game is *runnable* when the crawl ends without one (within 15 minutes there).

Here the same crawl runs inside the sandbox, on snapshots instead of replays (a snapshot of
the state after a sequence stands for the fresh game that replays it, stale action dict
included), in the same depth-first order (last sampled action first), and with a memo: two
sequences of one length that reach the same state (the full object graph and the action dict)
have the same crawl below them, which is run once. The observation text and the step counter
are part of that state unless the game's source shows that nothing reads them
(:func:`dead_attributes`); then they are blanked in every state, which changes no later step.
States are named by a hash of the pickled object graph (exact: equal hashes are equal states;
two equal states may get two names, which only costs a memo hit). The table columns of the paper (Table 2) are ``TextGame`` ("game initialisation"),
``generatePossibleActions`` ("valid actions") and ``runnable`` ("runnable game").
"""

from __future__ import annotations

import ast
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...sandbox import Limits, WorkerFailed
from ...simulator import Simulator, SimulatorFailed, SimulatorSpec

#: the crawl's own view of a game: every attribute is state, actions looked up in a stale dict
VALIDITY_SPEC = SimulatorSpec(exclude=(), informational=(), refresh=False, fingerprint="pickle")
METHODS = ("getTaskDescription", "calculateScore", "generatePossibleActions", "step")


@dataclass
class Validity:
    """One game's checks, named as the corpus names them, plus how the crawl went."""

    TextGame: bool = False
    getTaskDescription: bool = False
    calculateScore: bool = False
    generatePossibleActions: bool = False
    step: bool = False
    runnable: bool = False
    winnable: bool = False
    num_valid_actions: int = 0
    error_msg: str = ""
    stage: str = ""              # where it stopped: import, init, getTaskDescription, ..., step, timeout
    sequences: int = 0           # action sequences the corpus's crawl would replay
    steps: int = 0               # steps actually executed here (the memo saves the rest)
    seconds: float = 0.0
    timed_out: bool = False
    blanked: list = field(default_factory=list)  # dead attributes left out of the memo's states

    def to_dict(self) -> dict:
        return asdict(self)


def sample_actions(actions: list[str], max_num_actions: int, seed: int) -> list[str]:
    """The corpus's ``sample_actions``: group by first word (in first-seen order), keep at most
    ``max_num_actions`` per group (``random.Random(seed).sample``), concatenate the groups."""
    groups: dict[str, list[str]] = {}
    for a in actions:
        groups.setdefault(a.split()[0] if a.split() else "", []).append(a)
    out: list[str] = []
    for v, acts in groups.items():
        if len(acts) > max_num_actions:
            acts = random.Random(seed).sample(acts, max_num_actions)
        out += acts
    return out


DYNAMIC = ("getattr", "setattr", "vars", "eval", "exec", "__dict__", "__getattribute__", "globals", "locals")


def dead_attributes(source: str, names=("observationStr", "numSteps")) -> dict:
    """Attributes among ``names`` whose value nothing in the game reads, by a conservative reading of
    its source (parsed, never run): ``{name: value}`` to blank them with.

    An attribute counts as dead when every ``.name`` in the file is a store, the target of an
    augmented assignment (``self.numSteps += 1``: the counter feeds only itself), an element of a
    ``return`` in a method called ``step`` (the value goes to the caller, which the crawl ignores),
    or inside the module-level ``main()`` (never run); and the file names it nowhere as a string and
    uses no dynamic attribute access (``getattr``, ``vars``, ``__dict__``, ``eval`` ...). Blanking a
    dead attribute cannot change what any later step does, so two states that differ only there
    share their crawl.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in DYNAMIC:
            return {}
        if isinstance(node, ast.Attribute) and node.attr in DYNAMIC:
            return {}
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            return {}
    allowed: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == "main" and fn in tree.body:
            allowed.update(id(n) for n in ast.walk(fn))
        if isinstance(fn, ast.FunctionDef) and fn.name == "step":
            for r in ast.walk(fn):
                if isinstance(r, ast.Return) and r.value is not None:
                    elts = r.value.elts if isinstance(r.value, ast.Tuple) else [r.value]
                    allowed.update(id(e) for e in elts if isinstance(e, ast.Attribute))
        if isinstance(fn, ast.AugAssign) and isinstance(fn.target, ast.Attribute):
            allowed.add(id(fn.target))
    dead = {}
    for name in names:
        ok = True
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == name:
                if isinstance(node.ctx, ast.Store) or id(node) in allowed:
                    continue
                ok = False
                break
        if ok:
            dead[name] = "" if name == "observationStr" else 0
    return dead


class _Stop(Exception):
    def __init__(self, kind: str, msg: str):
        self.kind, self.msg = kind, msg


def check_validity(path: str | Path, seed: int = 0, max_steps: int = 3, max_num_actions: int = 100,
                   limits: Limits | None = None, unsafe: bool = False, budget_s: float = 900.0) -> Validity:
    """The corpus's validity check of the game in ``path`` (see the module docstring).

    ``budget_s`` bounds the whole crawl's wall clock (the corpus allowed 15 minutes); past it
    the game counts as not runnable with ``timed_out`` set, as there.
    """
    v = Validity()
    t0 = time.monotonic()
    spec = SimulatorSpec(**{**VALIDITY_SPEC.__dict__, "init": {"randomSeed": seed}, "seed": seed})
    try:
        sim = Simulator(path, spec, limits=limits, unsafe=unsafe)
    except SimulatorFailed as exc:
        v.stage = "timeout" if exc.message.startswith("timeout") else exc.stage if exc.stage in ("import", "init") \
            else "crashed"
        v.timed_out = v.stage == "timeout"
        v.error_msg = exc.message
        v.seconds = time.monotonic() - t0
        return v
    try:
        v.TextGame = True
        root = sim.root["id"]
        has = sim.call({"op": "has", "names": list(METHODS)})["has"]
        r = sim.call({"op": "call", "id": root, "methods": ["getTaskDescription", "calculateScore"]})
        v.getTaskDescription = r["ok"] or r["method"] != "getTaskDescription"
        v.calculateScore = r["ok"]
        if not r["ok"]:
            v.stage, v.error_msg = r["method"], r["error"]
            return v
        r = sim.actions(root, inplace=True)   # the fresh game's one call, kept in its snapshot
        if not r["ok"]:
            v.stage, v.error_msg = "generatePossibleActions", r["error"]
            return v
        v.generatePossibleActions = True
        v.num_valid_actions = len(r["actions"])
        first = sample_actions(r["actions"], max_num_actions, seed)
        if not has.get("step"):
            v.stage, v.error_msg = "step", "TextGame has no step method"
            return v
        memo: dict[tuple[str, int], bool] = {}
        deadline = t0 + budget_s
        blank = dead_attributes(Path(path).read_text(errors="replace"))
        v.blanked = sorted(blank)

        def expand(node: int, actions: list[str], depth: int) -> None:
            """Step each action from ``node`` (children at ``depth``), then recurse, last action first."""
            if time.monotonic() > deadline:
                raise _Stop("timeout", f"crawl exceeded {budget_s:g} s")
            leaf = depth >= max_steps
            rows = sim.children(node, actions, store=not leaf, refresh=False, dedupe=False, leaf=leaf, blank=blank)
            v.steps += len(rows)
            ids = [row.get("id") for row in rows]
            try:
                for row in reversed(rows):
                    v.sequences += 1
                    if "error" in row:
                        raise _Stop("step", row["error"])
                    v.step = True
                    done = row.get("done")
                    if done is None:  # no gameOver attribute: the corpus's bare except
                        raise _Stop("gameOver", "")
                    if done:
                        if row.get("won"):
                            v.winnable = True
                        continue
                    if leaf:
                        continue
                    key = (row["fp"], depth)
                    if key in memo:
                        v.sequences += memo[key]
                        continue
                    before = v.sequences
                    r = sim.actions(row["id"], inplace=False)
                    if not r["ok"]:
                        raise _Stop("generatePossibleActions", r["error"])
                    expand(row["id"], sample_actions(r["actions"], max_num_actions // 10, seed), depth + 1)
                    memo[key] = v.sequences - before
            finally:
                sim.drop([i for i in ids if i is not None])

        try:
            expand(root, first, 1)
        except _Stop as stop:
            v.stage = stop.kind
            v.error_msg = stop.msg
            if stop.kind == "generatePossibleActions":
                v.generatePossibleActions = False
            elif stop.kind == "step":
                v.step = False
            elif stop.kind == "timeout":
                v.timed_out = True
            return v
        v.runnable = True
        return v
    except WorkerFailed as exc:
        v.stage = "timeout" if exc.kind == "timeout" else "crashed"
        v.timed_out = exc.kind == "timeout"
        v.error_msg = str(exc)
        return v
    finally:
        v.seconds = round(time.monotonic() - t0, 2)
        sim.close()
