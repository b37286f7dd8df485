"""The call in words: does a language model treat two histories of "8" as the automaton does?

Each question is a turn of the benchmark's prompt (:mod:`.prompts`): the rule, the loops
of the climb so far with their (correct) calls, the current loop, and the request for
the JSON reply; the answer read is the call. Histories are single climbs, as the
harness shows them (a reset empties the history).

* **compression precision** — two different climbs that reach the same automaton state
  (:class:`~.sampler.EightSampler` with ``climb_only``: other subsets of details, other
  anomalous loops turned back on, and every loop in other words, each history rendered
  with its own draw of sentences), each followed by the same ``samples`` continuations
  (random completions of the current loop, rendered identically after both); a trial
  scores 1 when the two calls agree on every continuation whose two replies parse.
  A history is what the automaton says it is: an LLM that calls differently after two
  of them distinguishes what the game does not.
* **distinction recall** — two climbs to different states that the rest of a loop tells
  apart: the second history is the first with one described detail set to another
  value (so the current loop is changed in one and not in the other, or, in insane,
  the climb's baseline differs); continuations valid after both whose correct calls
  differ (up to ``samples``, the rest of the current loop, in insane possibly the next
  loop as well; proposed with each next detail at its baseline four times in five, then
  kept only if the automaton says the calls differ). A continuation counts as recalled
  when both calls are right.

All prompts are built first (every trial from its own seed) and asked in one batch
(:class:`~worldmodel.chat.ChatReport`); unparseable replies are counted, never guessed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from ...chat import Backend, ChatReport
from ...chat import probe_table as words_table
from ...dfa import REJECT, run
from ...errors import TrialSkipped, WorldModelError
from ...results import trial_seed
from .prompts import actions_offered, build_prompt, history_entry, parse_reply, render_loop
from .rules import CALLS
from .sampler import climb_walk

PROBE_METRICS = ("compression_precision", "distinction_recall")


@dataclass
class ProbeSettings:
    states: int = 100       #: trials per metric
    samples: int = 5        #: continuations per trial
    register: str = "normal"
    seed: int = 0
    tries: int = 40         #: draws per trial when looking for pairs and boundary continuations

    def check(self) -> None:
        from .prompts import RULES

        if self.states < 1 or self.samples < 1 or self.tries < 1:
            raise WorldModelError("probe settings: states, samples and tries must be at least 1")
        if self.register not in RULES:
            raise WorldModelError(f"unknown reading register {self.register!r} (known: {', '.join(RULES)})")


@dataclass
class ProbeReport(ChatReport):
    settings: ProbeSettings


# ---------------------------------------------------------------------------
# Climbs and their words
# ---------------------------------------------------------------------------


def split_loops(tokens) -> list[list[str]]:
    """A climb's tokens as loops (each completed loop ends with its call; the last may be open)."""
    loops, cur = [], []
    for t in tokens:
        cur.append(t)
        if t in CALLS:
            loops.append(cur)
            cur = []
    loops.append(cur)
    return loops


class Renderer:
    """Loops in words: a sentence from each token's pool, the sign's drift, the heading's drift."""

    def __init__(self, arc, rng: random.Random):
        self.arc, self.rng = arc, rng

    def sentences(self, tokens) -> list[str]:
        sign = self.arc.signs[self.rng.randrange(len(self.arc.signs))]
        out = []
        for t in tokens:
            prop, value = self.arc.split(t)
            pool = self.arc.prop(prop).pools[value]
            out.append(pool[self.rng.randrange(len(pool))].replace("{SIGN}", sign))
        return out

    def heading(self, loop_no: int) -> str:
        t = self.arc.titles
        if loop_no >= 4 and self.rng.random() < min(0.05 + loop_no * 0.01, 0.30):
            return t[self.rng.randrange(len(t))]
        return t[0]


def turn_prompt(world, register: str, prefix, cont_loops, r_prefix: Renderer, r_cont: Renderer) -> tuple[str, bool]:
    """The prompt after ``prefix`` (a climb) and ``cont_loops`` (the continuation, loops, the last open), and the
    correct call. The prefix's words come from ``r_prefix``, the continuation's from ``r_cont``."""
    arc = world.arc
    loops = split_loops(prefix)
    state = world.initial_state()
    history: list[str] = []
    # completed loops of the prefix; the open one is joined by the continuation's first loop
    for loop in loops[:-1]:
        level = world.level(state)
        obs = render_loop(level, r_prefix.heading(len(history) + 1), r_prefix.sentences(loop[:-1]))
        state = run(world, loop, state)
        history.append(history_entry(obs, loop[-1], True))
    open_part = loops[-1]
    heading = r_prefix.heading(len(history) + 1)
    words = r_prefix.sentences(open_part)
    for i, cont in enumerate(cont_loops):
        level = world.level(state)
        toks = (open_part if i == 0 else []) + [t for t in cont if t not in CALLS]
        sents = (words if i == 0 else []) + r_cont.sentences([t for t in cont if t not in CALLS])
        # sentences come in canonical order: interleave by the tokens' order
        order = sorted(range(len(toks)), key=lambda k: arc.names.index(arc.split(toks[k])[0]))
        obs = render_loop(level, heading if i == 0 else r_cont.heading(len(history) + 1), [sents[k] for k in order])
        state = run(world, (open_part if i == 0 else []) + list(cont), state)
        if i < len(cont_loops) - 1:
            history.append(history_entry(obs, cont[-1], True))
        else:
            correct = next(c for c in CALLS if world.verdict(state, c))
            return build_prompt(register, history, obs, actions_offered()), correct == "turn_back"
    raise WorldModelError("a continuation needs at least one loop")


def _continuation(world, q, rng) -> list[str]:
    """The rest of the current loop from ``q`` (up to its call point), every valid token equally likely."""
    return climb_walk(world, q, rng, 16, stop_at_call=True)


def _calm(world, state, token) -> bool:
    """Whether ``token`` shows its detail at the baseline (the arc's; in insane the climb's, or a first appearance)."""
    prop, value = world.arc.split(token)
    if getattr(world.difficulty, "random_baseline", False):
        seen = state[1][world.arc.names.index(prop)]
        return seen is None or seen == value
    return value == world.arc.prop(prop).baseline


def _calm_continuation(world, q, rng, calm: float = 0.8) -> list[str]:
    """The rest of the loop, each next detail drawn uniformly and shown at its baseline with probability ``calm``:
    the proposal for boundary continuations, which (after a change in one history only) mostly describe the
    other details unchanged."""
    out, s = [], q
    for _ in range(16):
        valid = world.valid_tokens(s)
        if any(t in CALLS for t in valid) and (rng.random() < 0.5 or all(t in CALLS for t in valid)):
            return out
        obs = [t for t in valid if t not in CALLS and t not in ("reset", "door")]
        if not obs:
            return out
        props = sorted({world.arc.split(t)[0] for t in obs}, key=world.arc.names.index)
        prop = props[int(rng.integers(len(props)))]
        mine = [t for t in obs if world.arc.split(t)[0] == prop]
        quiet = [t for t in mine if _calm(world, s, t)]
        pool = quiet if quiet and rng.random() < calm else mine
        t = pool[int(rng.integers(len(pool)))]
        out.append(t)
        s = world.step(s, t)
    return out


def _distinct_pair(world, rng, tries: int, max_prefix: int):
    """Two climbs to different states, the second the first with one detail's value changed."""
    arc = world.arc
    for _ in range(tries):
        p1 = climb_walk(world, world.initial_state(), rng, int(rng.integers(1, max_prefix + 1)))
        loops = split_loops(p1)
        if not p1 or p1[-1] in CALLS or p1[-1] == "door":
            continue
        # candidate positions: the open loop, and (insane) the last completed loop's details
        positions = [len(p1) - len(loops[-1]) + k for k in range(len(loops[-1]))]
        if getattr(world.difficulty, "random_baseline", False) and len(loops) > 1:
            start = len(p1) - len(loops[-1]) - len(loops[-2])
            positions += list(range(start, start + len(loops[-2]) - 1))
        i = positions[int(rng.integers(len(positions)))]
        prop, value = arc.split(p1[i])
        others = [v for v in arc.prop(prop).values if v != value]
        p2 = list(p1)
        p2[i] = arc.token(prop, others[int(rng.integers(len(others)))])
        if i < len(p1) - len(loops[-1]):  # a completed loop changed: its call must be the correct one again
            end = len(p1) - len(loops[-1]) - 1
            s = run(world, p2[:end])
            if s is REJECT:
                continue
            p2[end] = next((c for c in CALLS if world.verdict(s, c)), p2[end])
        q1, q2 = run(world, p1), run(world, p2)
        if q2 is REJECT or q1 == q2:
            continue
        return p1, p2, q1, q2
    raise TrialSkipped("no history with a detail whose change the automaton notices")


def _boundary(world, q1, q2, rng, samples: int, tries: int) -> list[list[list[str]]]:
    """Continuations (as loops) valid after both states whose correct calls differ."""
    found: list[list[list[str]]] = []
    insane = getattr(world.difficulty, "random_baseline", False)
    for _ in range(tries):
        if len(found) >= samples:
            break
        rest = _calm_continuation(world, q1, rng)
        s1, s2 = run(world, rest, q1), run(world, rest, q2)
        if s1 is REJECT or s2 is REJECT:
            continue
        c1 = [c for c in CALLS if world.verdict(s1, c)]
        c2 = [c for c in CALLS if world.verdict(s2, c)]
        if not c1 or not c2:
            continue
        cand = None
        if c1 != c2:
            cand = [rest]
        elif insane:
            s1, s2 = world.step(s1, c1[0]), world.step(s2, c1[0])
            if s1 is REJECT or s2 is REJECT or world.phase(s1) != "loop":
                continue
            nxt = _calm_continuation(world, s1, rng)
            t1, t2 = run(world, nxt, s1), run(world, nxt, s2)
            if t1 is REJECT or t2 is REJECT:
                continue
            d1 = [c for c in CALLS if world.verdict(t1, c)]
            d2 = [c for c in CALLS if world.verdict(t2, c)]
            if d1 and d2 and d1 != d2:
                cand = [rest + [c1[0]], nxt]
        if cand is not None and cand not in found:
            found.append(cand)
    return found


def plan_probe(world, words_sampler, s: ProbeSettings, max_prefix: int = 48) -> dict[str, list[dict]]:
    """Every trial's histories, continuations and prompts (no model involved)."""
    out: dict[str, list[dict]] = {m: [] for m in PROBE_METRICS}
    for i in range(s.states):
        rng = np.random.default_rng(trial_seed(s.seed, "eight-probe:compression", i))
        try:
            pair = words_sampler.compression_pair(rng)
            q = pair.state1
            conts = [_continuation(world, q, rng) for _ in range(s.samples)]
            prompts, truth = [], []
            for k, c in enumerate(conts):
                for j, p in enumerate((pair.prefix1, pair.prefix2)):
                    prompt, correct = turn_prompt(world, s.register, p, [c],
                                                  Renderer(world.arc, random.Random(f"{s.seed}:{i}:h{j}")),
                                                  Renderer(world.arc, random.Random(f"{s.seed}:{i}:c{k}")))
                    prompts.append(prompt)
                truth.append(correct)
        except TrialSkipped as e:
            out["compression_precision"].append({"trial": i, "status": "skipped", "key": str(i), "reason": e.reason})
        else:
            out["compression_precision"].append({
                "trial": i, "status": "ok", "key": str(i), "state": pair.key, "prefix1": list(pair.prefix1),
                "prefix2": list(pair.prefix2), "continuations": conts, "turn_back": truth, "prompts": prompts})
        rng = np.random.default_rng(trial_seed(s.seed, "eight-probe:distinction", i))
        try:
            p1, p2, q1, q2 = _distinct_pair(world, rng, s.tries, max_prefix)
            bound = _boundary(world, q1, q2, rng, s.samples, s.tries)
            if not bound:
                raise TrialSkipped("no continuation found whose correct call differs")
        except TrialSkipped as e:
            out["distinction_recall"].append({"trial": i, "status": "skipped", "key": str(i), "reason": e.reason})
            continue
        prompts, truth = [], []
        for k, cont in enumerate(bound):
            pair_truth = []
            for j, p in enumerate((p1, p2)):
                prompt, correct = turn_prompt(world, s.register, p, cont,
                                              Renderer(world.arc, random.Random(f"{s.seed}:{i}:d{j}")),
                                              Renderer(world.arc, random.Random(f"{s.seed}:{i}:dc{k}")))
                prompts.append(prompt)
                pair_truth.append(correct)
            truth.append(pair_truth)
        out["distinction_recall"].append({
            "trial": i, "status": "ok", "key": str(i), "state": f"{world.state_key(q1)}||{world.state_key(q2)}",
            "prefix1": list(p1), "prefix2": list(p2), "continuations": bound, "turn_back": truth, "prompts": prompts})
    return out


def _call(reply: str) -> str | None:
    acts = parse_reply(reply, list(CALLS))
    return None if acts is None else acts[-1]


def _score(m: str, t: dict, rs: list[str]) -> int:
    pairs = [(_call(rs[j]), _call(rs[j + 1])) for j in range(0, len(rs), 2)]
    t["answers"] = [[a, b] for a, b in pairs]
    scored = [(k, a, b) for k, (a, b) in enumerate(pairs) if a is not None and b is not None]
    if not scored:
        t.update(status="skipped", reason="all answers unparseable")
    elif m == "compression_precision":
        t["score"] = float(all(a == b for _, a, b in scored))
    else:
        hits = [(a == ("turn_back" if t["turn_back"][k][0] else "go_on")) and
                (b == ("turn_back" if t["turn_back"][k][1] else "go_on")) for k, a, b in scored]
        t["score"] = float(np.mean(hits))
    return sum((a is None) + (b is None) for a, b in pairs)


def probe_in_words(backend: Backend, world, words_sampler, settings: ProbeSettings | None = None) -> ProbeReport:
    """The probe in words against ``backend``."""
    s = settings or ProbeSettings()
    s.check()
    return ProbeReport.ask(backend, s, plan_probe(world, words_sampler, s), _score)


def probe_table(summaries: dict[str, dict], capability: dict[str, float] | None = None) -> str:
    """Markdown: one row per responder; with ``capability`` (label -> win rate) the agent's win rate beside it."""
    if capability is None:
        return words_table(summaries, PROBE_METRICS)

    def win_rate(label):
        w = capability.get(label)
        return ["—" if w is None else f"{w:.2f}"]

    return words_table(summaries, PROBE_METRICS, ["Win rate (agent)"], win_rate)
