"""LLM agents in a TextWorld house, two ways: playing the game, and a world-model probe in words.

**The agent loop** (the TextWorld Simple benchmark) plays games through the real
engine (``textworld.start``). Each turn the model sees the goal (as the game states
it; nothing for ``goal = none`` games), the commands typed so far, what the game
just said and the admissible commands, and answers with one of them after
``ANSWER:``. A game ends when it is won, lost, or after ``max_steps`` commands; an
answer that is not exactly one of the listed commands (after trimming spaces,
Markdown bold, quotes and a final full stop; case-insensitive) is *unparseable*: it
is counted and ends that game, never guessed (a greedy model would repeat it).
Per game: score / max score (normalised score), steps, won; per configuration: their
means.

**The world-model probe** asks, in the manner of the seating protocol (App. E):
given the house at the start (its facts, in plain sentences) and the commands typed
so far, would the game accept a proposed command now? Answers are ``yes``/``no``
after ``ANSWER:``, read strictly.

* *compression precision* — two different command histories that reach the same
  facts (:class:`~.domain.TextWorldSampler`); ``samples`` proposed commands, each
  with probability 1/2 valid there and otherwise uniform over all commands; a trial
  scores 1 when the answers after the two histories agree on every command whose two
  answers parse;
* *distinction recall* — two histories reaching different facts; up to ``samples``
  commands of the exact one-command boundary (valid after the first, not after the
  second); a command counts as recalled when the answers are *yes* then *no*.

Capability (the win rate of the agent loop) is reported beside them by the caller.
Every trial draws its prompts from its own seed; all prompts are built first and
asked in one batch through the backend (wrap it in :class:`~worldmodel.chat.CachedBackend`).

Responders that need no model: :class:`TrueAgent` answers from the automaton (the
shortest plan to the win; the true validity of a command) and :class:`RandomAgent`
answers at random, seeded per prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from ...chat import Backend, ChatReport, PromptByPromptBackend, SeededRandomBackend
from ...chat import probe_table as words_table
from ...chat import yes_no_pairs
from ...dfa import REJECT, exact_boundary, is_valid, run
from ...errors import TrialSkipped, WorldModelError
from ...results import trial_seed
from .data import distance_to_win, plan_commands
from .house import command_of, token_of
from .world import TextWorldWorld, parse_fact

MARKER = "ANSWER:"
PROBE_METRICS = ("compression_precision", "distinction_recall")

# ---------------------------------------------------------------------------
# Prompts and strict parsing
# ---------------------------------------------------------------------------


def describe_start(world: TextWorldWorld) -> list[str]:
    """The house at the start as plain sentences (one per fact; symmetric facts once)."""
    n = world.name_of
    out, seen = [], set()
    for text in sorted(world.facts(world.initial_state())):
        p, a = parse_fact(text)
        if p == "at" and a[0] == "P":
            out.insert(0, f"You are in the {n(a[1])}.")
        elif p == "at":
            out.append(f"The {n(a[0])} is in the {n(a[1])}.")
        elif p == "in" and a[1] == "I":
            out.append(f"You carry the {n(a[0])}.")
        elif p == "in":
            out.append(f"The {n(a[0])} is in the {n(a[1])}.")
        elif p == "on":
            out.append(f"The {n(a[0])} is on the {n(a[1])}.")
        elif p in ("open", "closed", "locked"):
            out.append(f"The {n(a[0])} is {p}.")
        elif p == "link" and frozenset((a[0], a[2])) not in seen:
            seen.add(frozenset((a[0], a[2])))
            out.append(f"The {n(a[1])} connects the {n(a[0])} and the {n(a[2])}.")
        elif p in ("north_of", "south_of", "east_of", "west_of"):
            out.append(f"The {n(a[0])} is {p.replace('_of', '')} of the {n(a[1])}.")
        elif p == "match":
            out.append(f"The {n(a[0])} unlocks the {n(a[1])}.")
        elif p == "edible":
            out.append(f"The {n(a[0])} is edible.")
    return out


def _numbered(tokens: Sequence[str]) -> list[str]:
    return [f"{i}. {command_of(t)}" for i, t in enumerate(tokens, 1)]


def validity_prompt(world: TextWorldWorld, history: Sequence[str], proposed: Sequence[str]) -> str:
    """Would the game accept ``proposed`` (tokens) after ``history`` (tokens)? A yes/no question."""
    lines = ["You are playing a text adventure game in a house. At the start:"]
    lines += describe_start(world)
    if history:
        lines += ["", "Commands typed so far, each accepted by the game:"] + _numbered(history)
    else:
        lines += ["", "No command has been typed yet."]
    lines += ["", "Proposed next command:" if len(proposed) == 1 else "Proposed next commands, in order:"]
    lines += _numbered(proposed)
    lines += ["", "Would the game accept the proposed command now? A command is accepted when it makes sense "
              "in the current situation: you cannot take what is not within reach, pass a closed door, open "
              "what is already open or unlock without the right key. You may reason step by step, but end "
              f"your response with '{MARKER} ' followed by yes or no."]
    return "\n".join(lines)


def agent_prompt(objective: str, history: Sequence[str], feedback: str, admissible: Sequence[str]) -> str:
    """One turn of the agent loop (commands as text)."""
    lines = ["You are playing a text adventure game."]
    lines += [f"Your goal: {' '.join(objective.split())}" if objective.strip() else "Your goal is not stated."]
    if history:
        lines += ["", "Commands typed so far:"] + [f"{i}. {c}" for i, c in enumerate(history, 1)]
    lines += ["", "The game says:", " ".join(feedback.split()), "", "Commands you can type now:"]
    lines += [f"- {c}" for c in admissible]
    lines += ["", "Choose the command that brings you closest to the goal. You may reason step by step, but "
              f"end your response with '{MARKER} ' followed by one command exactly as listed."]
    return "\n".join(lines)


def _final(response: str) -> str | None:
    if not isinstance(response, str) or MARKER not in response:
        return None
    tail = response.rsplit(MARKER, 1)[1].strip()
    for _ in range(2):  # Markdown bold, quotes and one final full stop, in either order
        tail = tail.strip("*'\"` ")
        if tail.endswith("."):
            tail = tail[:-1]
    return " ".join(tail.lower().split())


def parse_yes_no(response: str) -> bool | None:
    tail = _final(response)
    return True if tail == "yes" else False if tail == "no" else None


def parse_command(response: str, admissible: Sequence[str]) -> str | None:
    """The admissible command answered, or ``None`` when the answer is not exactly one of them."""
    tail = _final(response)
    if tail is None:
        return None
    lookup = {" ".join(c.lower().split()): c for c in admissible}
    return lookup.get(tail)


def _block(prompt: str, start: str) -> list[str]:
    lines = prompt.split("\n")
    out, on = [], False
    for line in lines:
        if line.startswith(start):
            on = True
            continue
        if on:
            m = re.match(r"^\d+\. (.*)$", line)
            if not m:
                break
            out.append(m.group(1))
    return out


def read_validity_prompt(prompt: str) -> tuple[list[str], list[str]]:
    """``(history, proposed)`` tokens of a :func:`validity_prompt`."""
    if "Would the game accept the proposed command now?" not in prompt:
        raise WorldModelError("not a TextWorld validity prompt")
    return ([token_of(c) for c in _block(prompt, "Commands typed so far")],
            [token_of(c) for c in _block(prompt, "Proposed next command")])


def read_agent_prompt(prompt: str) -> tuple[list[str], list[str]]:
    """``(history, admissible)`` commands (text) of an :func:`agent_prompt`."""
    if "Commands you can type now:" not in prompt:
        raise WorldModelError("not a TextWorld agent prompt")
    history = _block(prompt, "Commands typed so far")
    adm = prompt.split("Commands you can type now:\n", 1)[1].split("\n\n", 1)[0]
    return history, [line[2:] for line in adm.split("\n") if line.startswith("- ")]


# ---------------------------------------------------------------------------
# Responders that need no model
# ---------------------------------------------------------------------------


class TrueAgent(PromptByPromptBackend):
    """Answers from one game's automaton: the true validity; in play, a command of a shortest plan."""

    backend = "true"
    batch_size = 4096

    def __init__(self, world: TextWorldWorld):
        self.world = world
        self.model = f"automaton:{world.house.meta.get('uuid') or world.name}"
        self._dist = distance_to_win(world)

    def answer(self, prompt: str) -> str:
        if "Commands you can type now:" in prompt:
            history, admissible = read_agent_prompt(prompt)
            state = run(self.world, [token_of(c) for c in history])
            plan = [] if state is REJECT else plan_commands(self.world, self._dist, state)
            listed = {token_of(c): c for c in admissible}
            choice = next((listed[t] for t in plan if t in listed), admissible[0] if admissible else "look")
            return f"Following the shortest plan. {MARKER} {choice}"
        history, proposed = read_validity_prompt(prompt)
        ok = is_valid(self.world, list(history) + list(proposed))
        return f"{MARKER} {'yes' if ok else 'no'}"


class RandomAgent(SeededRandomBackend):
    """Answers at random (yes/no with probability 1/2; a uniformly chosen listed command), seeded per prompt."""

    def answer(self, prompt: str) -> str:
        rng = self.rng(prompt)
        if "Commands you can type now:" in prompt:
            _, admissible = read_agent_prompt(prompt)
            return f"{MARKER} {rng.choice(admissible)}"
        return f"{MARKER} {rng.choice(['yes', 'no'])}"


# ---------------------------------------------------------------------------
# The world-model probe in words
# ---------------------------------------------------------------------------


@dataclass
class ProbeSettings:
    states: int = 50  #: trials per metric
    samples: int = 5  #: proposed commands per trial
    max_prefix: int = 24  #: longest history (every state is reachable within 21 commands)
    seed: int = 0

    def check(self) -> None:
        if self.states < 1 or self.samples < 1 or self.max_prefix < 1:
            raise WorldModelError("probe settings: states, samples and max_prefix must be at least 1")


@dataclass
class ProbeReport(ChatReport):
    """The outcome of one probe run (:class:`~worldmodel.chat.ChatReport`)."""

    settings: ProbeSettings


def plan_probe(world: TextWorldWorld, s: ProbeSettings) -> dict[str, list[dict]]:
    """Every trial's histories, proposed commands and prompts (no model involved)."""
    from .domain import TextWorldSampler

    sampler = TextWorldSampler(world, 1, s.max_prefix)
    out: dict[str, list[dict]] = {m: [] for m in PROBE_METRICS}
    for i in range(s.states):
        rng = np.random.default_rng(trial_seed(s.seed, "textworld-probe:compression", i))
        try:
            pair = sampler.compression_pair(rng)
        except TrialSkipped as e:
            out["compression_precision"].append({"trial": i, "status": "skipped", "key": str(i), "reason": e.reason})
        else:
            valid = world.valid_tokens(pair.state1)
            props = [valid[int(rng.integers(len(valid)))] if rng.random() < 0.5
                     else world.tokens[int(rng.integers(len(world.tokens)))] for _ in range(s.samples)]
            prompts = [validity_prompt(world, p, [c]) for c in props for p in (pair.prefix1, pair.prefix2)]
            out["compression_precision"].append({
                "trial": i, "status": "ok", "key": str(i), "state": pair.key, "prefix1": list(pair.prefix1),
                "prefix2": list(pair.prefix2), "proposed": props,
                "truth": [world.step(pair.state1, c) is not REJECT for c in props], "prompts": prompts})
        rng = np.random.default_rng(trial_seed(s.seed, "textworld-probe:distinction", i))
        try:
            pair = sampler.distinction_pair(rng)
        except TrialSkipped as e:
            out["distinction_recall"].append({"trial": i, "status": "skipped", "key": str(i), "reason": e.reason})
            continue
        boundary = exact_boundary(world, pair.state1, pair.state2, 1)
        if not boundary:
            out["distinction_recall"].append({"trial": i, "status": "skipped", "key": str(i),
                                              "reason": "empty one-command boundary"})
            continue
        pick = rng.choice(len(boundary), size=min(s.samples, len(boundary)), replace=False)
        props = [boundary[int(j)][0] for j in pick]
        prompts = [validity_prompt(world, p, [c]) for c in props for p in (pair.prefix1, pair.prefix2)]
        out["distinction_recall"].append({
            "trial": i, "status": "ok", "key": str(i), "state": pair.key, "prefix1": list(pair.prefix1),
            "prefix2": list(pair.prefix2), "proposed": props, "boundary_size": len(boundary), "prompts": prompts})
    return out


def probe_in_words(backend: Backend, world: TextWorldWorld, settings: ProbeSettings | None = None) -> ProbeReport:
    """The world-model probe in words against ``backend``."""
    s = settings or ProbeSettings()
    s.check()
    return ProbeReport.ask(backend, s, plan_probe(world, s), yes_no_pairs(parse_yes_no))


# ---------------------------------------------------------------------------
# The agent loop through the real engine
# ---------------------------------------------------------------------------


def play(backend: Backend, games: dict[str, str | Path], max_steps: int = 40, progress: bool = True) -> list[dict]:
    """Play each game (label -> ``game.z8``) to its end with ``backend`` choosing commands.

    All live games advance together, one batch of prompts per turn. Returns one record
    per game: ``score``, ``max_score``, ``normalized_score``, ``steps``, ``won``,
    ``lost``, ``unparseable`` (0 or 1), ``reason`` and the ``commands`` played.
    """
    try:
        import textworld
    except ModuleNotFoundError:
        raise WorldModelError("the agent loop needs the textworld package: pip install -e \".[textworld]\"") from None
    if max_steps < 1:
        raise WorldModelError(f"max_steps must be at least 1, got {max_steps}")
    infos_req = textworld.EnvInfos(admissible_commands=True, objective=True, max_score=True, won=True, lost=True,
                                   score=True)
    live = {}
    for label, path in games.items():
        env = textworld.start(str(path), infos_req)
        state = env.reset()
        live[label] = {"env": env, "state": state, "history": [], "feedback": state.feedback,
                       "objective": state.get("objective") or "", "rec": {
                           "game": label, "score": 0, "max_score": int(state["max_score"]), "steps": 0,
                           "won": False, "lost": False, "unparseable": 0, "reason": "", "commands": []}}
    done_recs = []
    bar = tqdm(total=len(live), desc=f"playing ({backend.backend})", unit="game", disable=not progress)
    turn = 0
    while live:
        turn += 1
        bar.set_postfix(turn=turn, playing=len(live), refresh=True)
        labels = list(live)
        prompts = []
        for lb in labels:
            g = live[lb]
            prompts.append(agent_prompt(g["objective"], g["history"], g["feedback"],
                                        sorted(g["state"]["admissible_commands"])))
        responses = backend.ask(prompts)
        for lb, prompt, resp in zip(labels, prompts, responses):
            g = live[lb]
            rec = g["rec"]
            cmd = parse_command(resp, sorted(g["state"]["admissible_commands"]))
            if cmd is None:
                rec.update(unparseable=1, reason="unparseable answer", raw=resp[-300:])
            else:
                state, score, done = g["env"].step(cmd)
                g["state"], g["feedback"] = state, state.feedback
                g["history"].append(cmd)
                rec["commands"].append(cmd)
                rec.update(score=int(score), steps=rec["steps"] + 1, won=bool(state["won"]), lost=bool(state["lost"]))
                if done:
                    rec["reason"] = "won" if rec["won"] else "lost" if rec["lost"] else "game over"
                elif rec["steps"] >= max_steps:
                    rec["reason"] = "step limit"
                else:
                    continue
            rec["normalized_score"] = rec["score"] / rec["max_score"] if rec["max_score"] else 0.0
            g["env"].close()
            done_recs.append(rec)
            del live[lb]
            bar.update(1)
    bar.close()
    order = list(games)
    return sorted(done_recs, key=lambda r: order.index(r["game"]))


def summarize_play(records: list[dict], group_of=lambda label: label) -> dict[str, dict]:
    """Per group (e.g. configuration): games, mean normalised score, mean steps, win rate, unparseable."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(group_of(r["game"]), []).append(r)
    out = {}
    for g, rs in groups.items():
        out[g] = {"games": len(rs), "normalized_score": float(np.mean([r["normalized_score"] for r in rs])),
                  "steps": float(np.mean([r["steps"] for r in rs])), "win_rate": float(np.mean([r["won"] for r in rs])),
                  "unparseable": int(sum(r["unparseable"] for r in rs))}
    return out


def play_games(backends: dict[str, Backend], games: dict[str, str | Path], max_steps: int = 40,
               progress: bool = True) -> list[dict]:
    """:func:`play` with a backend per game (label -> backend); games sharing one backend play together.

    The true responder answers from one game's automaton, so it is one backend per
    game; a chat model is one backend for all, and its turns are batched across games.
    Records come back in the order of ``games``.
    """
    groups: dict[int, list[str]] = {}
    for label in games:
        groups.setdefault(id(backends[label]), []).append(label)
    if len(groups) == 1:
        label = next(iter(games))
        return play(backends[label], games, max_steps, progress)
    records = []
    bar = tqdm(total=len(games), desc="playing", unit="game", disable=not progress)
    for labels in groups.values():
        records += play(backends[labels[0]], {g: games[g] for g in labels}, max_steps, progress=False)
        bar.update(len(labels))
    bar.close()
    order = list(games)
    return sorted(records, key=lambda r: order.index(r["game"]))


def agent_table(by_configuration: dict[str, dict[str, dict]], overall: dict[str, dict] | None = None) -> str:
    """Markdown: one row per configuration, one column per responder (normalised score / steps / win rate)."""
    labels = list(by_configuration)
    configs = list(dict.fromkeys(c for s in by_configuration.values() for c in s))
    lines = ["| Configuration | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]

    def cell(s: dict | None) -> str:
        if not s:
            return "—"
        return (f"{s['normalized_score']:.2f} / {s['steps']:.1f} / {s['win_rate']:.2f}"
                + (f" ({s['unparseable']} unparseable)" if s["unparseable"] else ""))
    for c in configs:
        lines.append(f"| {c} | " + " | ".join(cell(by_configuration[lb].get(c)) for lb in labels) + " |")
    if overall:
        n = overall[labels[0]]["games"]
        lines.append(f"| **all {n} game{'' if n == 1 else 's'}** | "
                     + " | ".join(cell(overall.get(lb)) for lb in labels) + " |")
    lines += ["", "Cells: mean normalised score (score / max score) / mean steps / win rate; an unparseable "
              "answer ends its game and is counted."]
    return "\n".join(lines)


def probe_table(summaries: dict[str, dict], capability: dict[str, dict] | None = None) -> str:
    """Markdown: one row per responder, the probe's two metrics (and, if given, the agent loop's overall row)."""
    if capability is None:
        return words_table(summaries, PROBE_METRICS)

    def overall(label):
        o = capability.get(label)
        return [f"{o['win_rate']:.2f}", f"{o['normalized_score']:.2f}", f"{o['steps']:.1f}"] if o else ["—", "—", "—"]

    return words_table(summaries, PROBE_METRICS, ["Capability (win rate)", "Normalised score", "Steps"], overall)
