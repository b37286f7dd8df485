"""Detour fragility: greedy decoding with forced deviations (Vafa et al., Table 2).

From each start prefix, a model decodes greedily (its top-1 token each step). At every
step, with probability ``p``, its token is replaced by a *detour*:

* ``kind="random"``: a uniformly chosen valid token other than the model's top choice;
* ``kind="adversarial"``: the valid token (other than the top choice) the model ranks
  lowest (ties: the first in the model's token order).

Only tokens the caller's predicate ``allowed(state, token, length)`` admits are
candidates (navigation: directions from which the destination can still be reached
within the token limit). Where no candidate exists, the model's token is kept and the
step is counted as "no detour possible".

A trial succeeds when every token is valid in the world, decoding ends with a stop
token within ``max_len`` tokens, and the caller's ``goal(sequence, state)`` holds
(default: nothing more). The share of successes per ``p`` is reported with its
binomial standard error.

Everything is domain-free: it needs a :class:`~worldmodel.dfa.World` and a
:class:`~worldmodel.models.SequenceModel`. Decoding is :func:`worldmodel.decoding.greedy_decode`
with the detour as its ``choose`` rule: all live trials (every ``p`` and every start)
are decoded together, one batched :meth:`~SequenceModel.next_token_probs` call per step.
Trial ``i`` draws its randomness from its own generator seeded by ``(seed, i)``, two
uniforms per step, so a trial's outcome does not depend on batching, and the same
start sees the same uniforms at every ``p`` (common random numbers across ``p``).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Hashable, Sequence

import numpy as np

from .decoding import greedy_decode
from .dfa import REJECT, Token, World, run
from .errors import WorldModelError

KINDS = ("random", "adversarial")

AllowedFn = Callable[[Hashable, Token, int], bool]
GoalFn = Callable[[Sequence[Token], Hashable], bool]


@dataclass
class DetourTrial:
    """One decoded trial."""

    kind: str
    p: float
    trial: int
    tokens: list[Token]
    success: bool
    reason: str  # "ok", "invalid token", "too long", "no token", "goal not reached"
    steps: int = 0  # tokens generated
    drawn: int = 0  # steps where a detour was drawn (u < p)
    replaced: int = 0  # steps where the model's token was actually replaced
    impossible: int = 0  # steps where a detour was drawn but no candidate existed


@dataclass
class DetourResult:
    """The outcome for one ``p``: share of successes and its binomial standard error."""

    kind: str
    p: float
    n: int
    successes: int
    share: float
    stderr: float
    steps: int
    drawn: int
    replaced: int
    impossible: int
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def replace_rate(self) -> float:
        """Replaced tokens per generated token (≈ p when detours are always possible)."""
        return self.replaced / self.steps if self.steps else 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["replace_rate"] = self.replace_rate
        return d


@dataclass
class DetourPlan:
    """What a world needs for ``worldmodel detours``: where trials start, which detours count, what success is.

    A domain returns one from :meth:`~worldmodel.tasks.Domain.detour_plan`; the command
    then runs :func:`run_kinds` with it, the same for every world.
    """

    starts: list[list[Token]]  #: one start prefix per trial
    max_len: int  #: tokens per decoded sequence, start included
    allowed: AllowedFn | None = None  #: which valid tokens may be forced as detours
    goal: GoalFn | None = None  #: success beyond "every token valid, stopped in time"
    reference: object | None = None  #: the world's own player (``--model true``), a SequenceModel
    starts_from: str = ""  #: where the starts come from, in words (for the report header)
    success: str = ""  #: what a success is, in words (recorded in the JSON)
    note: str = ""  #: what the user should know (fewer distinct starts than asked), printed and recorded


def parse_ps(text: str | Sequence[float]) -> list[float]:
    """``"0,0.01,0.1"`` (or a list) -> probabilities, each checked to lie in [0, 1]."""
    if isinstance(text, str):
        parts = [x.strip() for x in text.split(",") if x.strip()]
        try:
            ps = [float(x) for x in parts]
        except ValueError:
            raise WorldModelError(f"detour probabilities {text!r}: give numbers separated by commas") from None
    else:
        ps = [float(x) for x in text]
    if not ps:
        raise WorldModelError("give at least one detour probability")
    bad = [p for p in ps if not 0 <= p <= 1]
    if bad:
        raise WorldModelError(f"detour probability {bad[0]} is not in [0, 1]")
    return ps


def run_detours(
    model,
    world: World,
    starts: Sequence[Sequence[Token]],
    kind: str,
    ps: Sequence[float],
    allowed: AllowedFn | None = None,
    goal: GoalFn | None = None,
    max_len: int = 100,
    seed: int = 0,
    batch_size: int = 256,
    progress: bool = False,
) -> tuple[list[DetourResult], list[DetourTrial]]:
    """Decode every start under detours at every ``p``; return per-``p`` results and all trials.

    ``starts`` are valid prefixes (navigation: ``[origin, destination]``); ``max_len``
    bounds the whole sequence (start included). ``allowed(state, token, length)`` is
    asked about candidate detour tokens, ``length`` being the sequence length before
    the token; ``goal(sequence, state)`` is checked after a valid stop token.
    """
    if kind not in KINDS:
        raise WorldModelError(f"detour kind {kind!r} is not one of {', '.join(KINDS)}")
    ps = [float(p) for p in ps]
    if not starts:
        raise WorldModelError("detours need at least one start prefix")
    tokens = list(model.tokens)
    lacking = getattr(model, "missing_tokens", None) or frozenset()  # it could not read them afterwards
    tok_index = {t: i for i, t in enumerate(tokens) if t not in lacking}
    for i, s in enumerate(starts):
        if run(world, list(s)) is REJECT:
            raise WorldModelError(f"detour start {i} ({' '.join(s)}) is not valid in the {world.name} world")

    # one record per (p, start); trial i of every p draws from its own generator seeded (seed, i)
    prefixes: list[list[Token]] = []
    rngs: list[np.random.Generator] = []
    trials: list[DetourTrial] = []
    for p in ps:
        for i, s in enumerate(starts):
            prefixes.append(list(s))
            rngs.append(np.random.default_rng([int(seed), i]))
            trials.append(DetourTrial(kind=kind, p=p, trial=i, tokens=[], success=False, reason=""))

    def choose(k: int, row: np.ndarray, state, seq: list) -> int:
        """The model's top token, or with probability p a detour (two uniforms per step)."""
        tr = trials[k]
        u_detour, u_pick = rngs[k].random(2)
        top = int(np.argmax(row))
        if u_detour >= tr.p:
            return top
        tr.drawn += 1
        cands = [tok_index[t] for t in world.valid_tokens(state)
                 if t in tok_index and tok_index[t] != top and (allowed is None or allowed(state, t, len(seq)))]
        if not cands:
            tr.impossible += 1
            return top
        tr.replaced += 1
        if kind == "random":
            return cands[min(int(u_pick * len(cands)), len(cands) - 1)]
        cands.sort()
        return min(cands, key=lambda c: row[c])

    decoded = greedy_decode(model, prefixes, stop=world.stop_tokens, max_len=max_len, world=world,
                            batch=batch_size, choose=choose, progress=progress, desc=f"detours ({kind})")
    for k, tr in enumerate(trials):
        seq, state = decoded.sequences[k], decoded.states[k]
        tr.tokens = seq
        tr.steps = len(seq) - len(prefixes[k])
        if tr.steps and state is REJECT:
            tr.reason = "invalid token"
        elif tr.steps and seq[-1] in world.stop_tokens:
            tr.success = goal is None or bool(goal(seq, state))
            tr.reason = "ok" if tr.success else "goal not reached"
        else:
            tr.reason = "too long"
    results = []
    for p in ps:
        group = [t for t in trials if t.p == p]
        n = len(group)
        succ = sum(t.success for t in group)
        share = succ / n
        failures: dict[str, int] = {}
        for t in group:
            if not t.success:
                failures[t.reason] = failures.get(t.reason, 0) + 1
        results.append(DetourResult(
            kind=kind, p=p, n=n, successes=succ, share=share,
            stderr=math.sqrt(share * (1 - share) / n),
            steps=sum(t.steps for t in group), drawn=sum(t.drawn for t in group),
            replaced=sum(t.replaced for t in group), impossible=sum(t.impossible for t in group),
            failures=failures,
        ))
    return results, trials


def parse_kinds(text: str) -> list[str]:
    """``"random,adversarial"`` -> a list of detour kinds; one clear error otherwise."""
    kinds = [k.strip() for k in str(text).split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise WorldModelError(f"--kind {text!r}: choose from {', '.join(KINDS)} (comma-separated)")
    return kinds


def run_kinds(model, world, starts, kinds: Sequence[str], ps: Sequence[float], **kwargs
              ) -> tuple[list[DetourResult], list[DetourTrial]]:
    """:func:`run_detours` for each kind in turn; results and trials concatenated."""
    all_results: list[DetourResult] = []
    all_trials: list[DetourTrial] = []
    for kind in kinds:
        results, trials = run_detours(model, world, starts, kind, list(ps), **kwargs)
        all_results += results
        all_trials += trials
    return all_results, all_trials


class FinishedModel:
    """A model's next-token distributions with a stop column that the world fills in.

    For worlds whose transcripts have no end token (whole games: Othello, chess), the
    generic runner needs a stop token; ``world`` wraps the model's world with one, last in
    its tokens, and says with ``finished(state)`` where a game is over. The model is never
    asked to predict the end: at a finished prefix all mass goes on the stop token, and
    everywhere else the model's own distribution is returned unchanged (the stop token has
    probability 0). Offers what :func:`run_detours` reads (``tokens``, ``next_token_probs``,
    ``missing_tokens``); states of prefixes are cached, so each call costs one world step per
    new prefix, not one per move of it. ``what`` names the world's tokens in the error raised
    when the model's tokens do not match them.
    """

    def __init__(self, model, world: World, what: str = "tokens"):
        if tuple(model.tokens) != tuple(world.tokens[:-1]):
            raise WorldModelError(f"the model's tokens do not match the {world.name} world's {what}")
        self.model, self.world = model, world
        self.tokens = tuple(world.tokens)
        self.name = getattr(model, "name", "model")
        self.missing_tokens = frozenset(getattr(model, "missing_tokens", ()))  # duck-typed players may lack it
        self._states: dict[tuple[Token, ...], object] = {(): world.initial_state()}

    def _state(self, prefix: tuple[Token, ...]):
        s = self._states.get(prefix)
        if s is None:
            parent = self._state(prefix[:-1])
            s = REJECT if parent is REJECT else self.world.step(parent, prefix[-1])
            self._states[prefix] = s
        return s

    def next_token_probs(self, prefixes):
        prefixes = [tuple(p) for p in prefixes]
        done = np.array([(s := self._state(p)) is not REJECT and self.world.finished(s) for p in prefixes], dtype=bool)
        out = np.zeros((len(prefixes), len(self.tokens)))
        live = np.flatnonzero(~done)
        if len(live):
            out[live, :-1] = self.model.next_token_probs([prefixes[i] for i in live])
        out[done, -1] = 1.0
        return out


def openings(sequences, n: int, moves: int, seed: int) -> list[list[Token]]:
    """The first ``moves`` tokens of ``n`` distinct held-out games drawn (seeded) from ``sequences``."""
    long_enough = [s for s in sequences if len(s) > moves]
    if not long_enough:
        raise WorldModelError(f"no held-out game has more than {moves} moves")
    order = np.random.default_rng(seed).permutation(len(long_enough))
    return [list(long_enough[i][:moves]) for i in order[:n]]


def cached(path: str | Path, meta: dict, run: Callable[[], tuple[list, list, dict]]) -> dict:
    """Detour results at ``path`` when its ``meta`` matches; else ``run()``, written there, then read.

    ``run()`` returns ``(results, trials, extra)``: :class:`DetourResult` and
    :class:`DetourTrial` lists and extra header fields. The file holds ``meta``, ``extra``,
    ``seconds``, ``results`` and ``trials`` (:func:`write_results`); the return value is
    that file's content, whether reused or new, so both paths give the same dicts.
    """
    import time

    path = Path(path)
    if path.exists():
        data = json.loads(path.read_text())
        if all(data.get(k) == v for k, v in meta.items()):
            return data
    t0 = time.time()
    results, trials, extra = run()
    write_results(path, results, trials, {**meta, **extra, "seconds": time.time() - t0})
    return json.loads(path.read_text())


def report(out: str | Path, results: Sequence[DetourResult], trials: Sequence[DetourTrial], meta: dict,
           header: str) -> None:
    """Write the JSON summary and print ``header``, the table and where it went (the CLIs' output)."""
    write_results(out, results, trials, meta)
    print(header)
    print(format_results(results))
    print(f"wrote {out}")


def format_results(results: Sequence[DetourResult]) -> str:
    """A Markdown table: one row per p."""
    lines = ["| kind | p | success share | stderr | n | replaced / steps |",
             "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.kind} | {r.p:g} | {r.share:.3f} | {r.stderr:.3f} | {r.n} | "
                     f"{r.replaced} / {r.steps} ({r.replace_rate:.3f}) |")
    return "\n".join(lines)


def write_results(path: str | Path, results: Sequence[DetourResult], trials: Sequence[DetourTrial],
                  meta: dict | None = None) -> None:
    """JSON summary at ``path`` (atomically) with every trial included."""
    from .safety import atomic_json

    data = {**(meta or {}), "results": [r.as_dict() for r in results],
            "trials": [asdict(t) for t in trials]}
    atomic_json(Path(path), data, "detour results", indent=1)
