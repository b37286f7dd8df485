"""The paper's Appendix E protocol: asking a chat model about the seating puzzle in words.

Three metrics, each over ``states`` trials (100 by default), each trial drawn from
its own seed (:func:`worldmodel.results.trial_seed`), so a run is reproducible and
the prompts of a trial do not depend on any other trial or on the model's answers:

* **capability** — a fully specified puzzle (random valid statements until one
  seating is left), a random person, "where is X seated?"; the trial scores 1 when
  the answered seat is right.
* **compression precision** — a state ``q`` reached by 1..2 uniform random valid
  statements; two *different* prefixes built from statements that do not narrow
  ``q``, each ending exactly at ``q``; ``samples`` (5) continuations of ``k``
  statements, each drawn with probability 1/2 from those valid at ``q`` and
  otherwise uniformly from all statements. The model is asked after both prefixes
  whether each continuation is valid; the state scores 0 when the two answers
  differ for any continuation, else 1.
* **distinction recall** — two different states reached as above, with a
  non-narrowing prefix to each; the exact true boundary ``MNB^W(q1, q2)`` of
  length ≤ ``k`` (``k = 1`` in the paper); up to ``samples`` (5) boundary suffixes
  drawn without replacement; a suffix counts as recalled when the model says
  *yes* after the first prefix and *no* after the second. The trial's score is
  the recalled share. A pair whose bounded boundary is empty is skipped (as in
  the authors' code) and counted in ``n_failed`` with its reason.

Each trial is one sampled state (pair) and its own group in the aggregate, so the mean
is over the sampled states, as in the authors' code (states are drawn with
replacement by random statements, not uniformly); ``state`` in each trial record
names the state(s).

Unparseable answers are never guessed. A capability trial with an unparseable
answer is not scored; in the other two metrics a continuation (suffix) is scored
only when both of its answers parse, and a trial with none scored is not scored.
Every unparseable answer is counted (``n_unparseable``) and each unscored trial
appears in ``failures`` with its reason. Means and standard errors come from
:func:`worldmodel.results.aggregate` (trials averaged per state, then over states).

All prompts of a run are built first and sent to the backend in one batch
(deduplicated, cached), then scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...chat import Backend, ChatReport
from ...dfa import exact_boundary, is_valid, valid_suffixes
from ...errors import TrialSkipped, WorldModelError
from ...results import trial_seed
from .prompts import capability_prompt, parse_seat, parse_yes_no, validity_prompt
from .world import (SeatingWorld, determining_statements, two_prefixes_different_states,
                    two_prefixes_same_state)

METRICS = ("capability", "compression_precision", "distinction_recall")
COLUMNS = [("capability", "Capability"), ("compression_precision", "Compr. P"),
           ("distinction_recall", "Dist. R")]


@dataclass
class ProtocolSettings:
    """Settings of one run; the defaults are the paper's (n = 3, 100 states, 5 samples, k = 1)."""

    n: int = 3
    states: int = 100  #: trials per metric
    samples: int = 5  #: continuations per compression state, boundary suffixes per distinction pair
    k: int = 1  #: statements per continuation / maximal boundary suffix length
    max_statements: int = 2  #: states are reached with 1..max_statements random statements
    max_prefix: int = 12  #: longest non-narrowing prefix drawn before a draw is abandoned
    seed: int = 0
    metrics: tuple[str, ...] = METRICS

    def check(self) -> None:
        if self.states < 1:
            raise WorldModelError(f"--states must be at least 1, got {self.states}")
        if self.samples < 1:
            raise WorldModelError(f"--samples must be at least 1, got {self.samples}")
        if self.k < 1:
            raise WorldModelError(f"--k must be at least 1, got {self.k}")
        if self.max_statements < 1:
            raise WorldModelError(f"max_statements must be at least 1, got {self.max_statements}")
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown:
            raise WorldModelError(f"unknown metric {unknown[0]!r} (known: {', '.join(METRICS)})")


@dataclass
class SeatingReport(ChatReport):
    """The outcome of one run (:class:`~worldmodel.chat.ChatReport`); its settings list the metrics run."""

    settings: ProtocolSettings

    def settings_dict(self) -> dict[str, Any]:
        out = super().settings_dict()
        out["metrics"] = list(self.settings.metrics)
        return out


# ---------------------------------------------------------------------------
# Planning: prompts for every trial, drawn from the trial's own seed
# ---------------------------------------------------------------------------


def _rng(s: ProtocolSettings, metric: str, i: int) -> np.random.Generator:
    return np.random.default_rng(trial_seed(s.seed, f"seating:{metric}", i))


def _skipped(i: int, reason: str) -> dict:
    return {"trial": i, "status": "skipped", "key": str(i), "pair": str(i), "reason": reason}


def plan_capability(world: SeatingWorld, s: ProtocolSettings, i: int) -> dict:
    rng = _rng(s, "capability", i)
    try:
        stmts, seating = determining_statements(world, rng)
    except TrialSkipped as e:
        return _skipped(i, e.reason)
    person = world.people[int(rng.integers(world.n))]
    return {"trial": i, "status": "ok", "key": str(i), "pair": str(i), "state": "".join(seating),
            "statements": list(stmts),
            "person": person, "truth": world.seat_of(seating, person),
            "prompts": [capability_prompt(world.n, stmts, person)]}


def _continuation(world: SeatingWorld, valid: list[tuple[str, ...]], k: int, rng: np.random.Generator):
    if rng.random() < 0.5:
        return tuple(world.tokens[int(j)] for j in rng.integers(len(world.tokens), size=k)), "uniform"
    return valid[int(rng.integers(len(valid)))], "valid"


def plan_compression(world: SeatingWorld, s: ProtocolSettings, i: int) -> dict:
    rng = _rng(s, "compression", i)
    try:
        p1, p2, q = two_prefixes_same_state(world, rng, s.max_statements, s.max_prefix)
    except TrialSkipped as e:
        return _skipped(i, e.reason)
    valid = [x for x in valid_suffixes(world, q, s.k) if len(x) == s.k]
    if not valid:
        return _skipped(i, f"no valid continuation of {s.k} statements")
    conts, sources = [], []
    for _ in range(s.samples):
        c, src = _continuation(world, valid, s.k, rng)
        conts.append(list(c))
        sources.append(src)
    prompts = []
    for c in conts:
        prompts += [validity_prompt(world.n, p1, c), validity_prompt(world.n, p2, c)]
    return {"trial": i, "status": "ok", "key": str(i), "pair": str(i), "state": world.state_key(q),
            "prefix1": list(p1), "prefix2": list(p2), "continuations": conts, "sources": sources,
            "truth": [is_valid(world, c, q) for c in conts],
            "prompts": prompts}


def plan_distinction(world: SeatingWorld, s: ProtocolSettings, i: int) -> dict:
    rng = _rng(s, "distinction", i)
    try:
        p1, p2, q1, q2 = two_prefixes_different_states(world, rng, s.max_statements, s.max_prefix)
    except TrialSkipped as e:
        return _skipped(i, e.reason)
    states = f"{world.state_key(q1)}|{world.state_key(q2)}"
    boundary = exact_boundary(world, q1, q2, s.k)
    if not boundary:
        t = _skipped(i, f"empty true boundary (k={s.k})")
        t.update(state=states, prefix1=list(p1), prefix2=list(p2))
        return t
    pick = rng.choice(len(boundary), size=min(s.samples, len(boundary)), replace=False)
    suffixes = [list(boundary[int(j)]) for j in pick]
    prompts = []
    for x in suffixes:
        prompts += [validity_prompt(world.n, p1, x), validity_prompt(world.n, p2, x)]
    return {"trial": i, "status": "ok", "key": str(i), "pair": str(i), "state": states, "prefix1": list(p1), "prefix2": list(p2),
            "boundary_size": len(boundary), "suffixes": suffixes, "prompts": prompts}


PLANNERS = {"capability": plan_capability, "compression_precision": plan_compression,
            "distinction_recall": plan_distinction}


def plan(world: SeatingWorld, s: ProtocolSettings) -> dict[str, list[dict]]:
    """Every trial of every metric, with the prompts it needs (no model involved)."""
    return {m: [PLANNERS[m](world, s, i) for i in range(s.states)] for m in s.metrics}


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------


def _score_capability(t: dict, responses: list[str], n: int) -> int:
    seat = parse_seat(responses[0], n)
    t["answer"] = seat
    if seat is None:
        t.update(status="skipped", reason="unparseable answer", raw=responses[0][-300:])
        return 1
    t["score"] = float(seat == t["truth"])
    return 0


def _score_pairs(t: dict, responses: list[str]) -> tuple[list[tuple[bool | None, bool | None]], int]:
    answers = [(parse_yes_no(responses[j]), parse_yes_no(responses[j + 1])) for j in range(0, len(responses), 2)]
    bad = sum((a is None) + (b is None) for a, b in answers)
    t["answers"] = [[a, b] for a, b in answers]
    if bad:
        t["raw_unparseable"] = [r[-300:] for r in responses if parse_yes_no(r) is None][:4]
    return answers, bad


def _score_answer_pairs(t: dict, responses: list[str], score) -> int:
    """Score a validity trial by ``score(pairs)`` over its answer pairs whose two answers parse (skipped when
    none does); returns how many answers did not parse."""
    answers, bad = _score_pairs(t, responses)
    scored = [(a, b) for a, b in answers if a is not None and b is not None]
    if not scored:
        t.update(status="skipped", reason="all answers unparseable")
    else:
        t["score"] = score(scored)
        t["n_scored"] = len(scored)
    return bad


def _score_compression(t: dict, responses: list[str]) -> int:
    return _score_answer_pairs(t, responses, lambda scored: float(all(a == b for a, b in scored)))


def _score_distinction(t: dict, responses: list[str]) -> int:
    return _score_answer_pairs(t, responses,
                               lambda scored: float(np.mean([a is True and b is False for a, b in scored])))


def evaluate_in_words(backend: Backend, settings: ProtocolSettings | None = None) -> SeatingReport:
    """Run the protocol against a backend (wrap it in :class:`~.backends.CachedBackend` to cache)."""
    s = settings or ProtocolSettings()
    s.check()
    world = SeatingWorld(s.n)

    def score(m: str, t: dict, rs: list[str]) -> int:
        if m == "capability":
            return _score_capability(t, rs, s.n)
        if m == "compression_precision":
            return _score_compression(t, rs)
        return _score_distinction(t, rs)

    return SeatingReport.ask(backend, s, plan(world, s), score)


def expected_random(settings: ProtocolSettings) -> dict[str, float]:
    """What a uniformly random responder scores in expectation (ignoring repeated continuations)."""
    return {"capability": 1.0 / settings.n, "compression_precision": 0.5 ** settings.samples,
            "distinction_recall": 0.25}


def markdown_row_table(rows: dict[str, SeatingReport]) -> str:
    """A Markdown table with one row per report: mean (stderr) and unparseable answers per metric."""
    head = "| Model | " + " | ".join(f"{label} | unparseable" for _, label in COLUMNS) + " |"
    sep = "|---|" + "|".join("---|---" for _ in COLUMNS) + "|"
    lines = [head, sep]
    for name, rep in rows.items():
        cells = []
        for key, _ in COLUMNS:
            m = rep.metrics.get(key)
            if m is None:
                cells += ["—", "—"]
                continue
            cell = m.cell() + f", n={m.n}"
            cells += [cell, f"{rep.unparseable[key]}/{rep.answers[key]}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
