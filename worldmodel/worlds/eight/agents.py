"""The benchmark's harness, reproduced: responders that play "8", the episode loop, the per-cell table.

**Responders** (chat backends: they answer the harness's prompts, :mod:`.prompts`):

* :class:`TrueCaller` — the judge: reads each loop's sentences back to their meaning
  (:meth:`~.arcs.Arc.meaning`) and turns back exactly when a property is off its
  baseline (the arc's; in insane, the climb's, i.e. its first appearance);
* :class:`LastLoopCaller` — a scripted agent that compares the current loop with the
  previous one only: it turns back when a property shown in both has changed. It has no
  baseline, so a change that persists, a revert and a change of a detail the last loop
  did not show all trap it;
* :class:`AlwaysGoOn` and :class:`RandomCaller` — the benchmark's two baselines (the
  random one seeded per prompt).

:func:`play` runs episodes the way the upstream ``benchmark.py`` does: each episode
starts a fresh climb; each turn the model sees the rule, the loops of this climb so
far and the current loop, and replies; touches (if offered) are executed, then the
call is committed through the :class:`~.sessions.Session`; a wrong call empties the
history (the climb starts again) and counts one reset; a fold does the same; the
episode ends at the win or after ``max_rounds`` committed calls. An unparseable reply
is counted and ends its episode (a greedy model would only repeat it), unless
``lenient``, which reads it the tolerant upstream way. All live episodes of a cell
advance together, one batch of prompts per turn.

Every loop is also read back into tokens and run through the automaton, which judges
each call as the server does; a disagreement is counted (``automaton_disagrees``): on
a real server this is the faithfulness check of the world.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import mean
from typing import Callable, Sequence

from tqdm.auto import tqdm

from ...chat import Backend, PromptByPromptBackend, SeededRandomBackend
from ...dfa import REJECT
from ...errors import WorldModelError
from .arcs import Arc
from .prompts import (actions_offered, build_prompt, history_entry, parse_reply, parse_reply_lenient,
                      read_prompt, render_loop, reply)
from .rules import CALLS, DOOR, RESET, difficulty
from .sessions import Session, room_tokens

AGENTS = ("random", "always-go-on", "true", "last-loop", "hf", "openai")


# ---------------------------------------------------------------------------
# Responders
# ---------------------------------------------------------------------------


class _ReadsLoops(PromptByPromptBackend):
    batch_size = 4096

    def __init__(self, arc: Arc):
        self.arc = arc

    def loops(self, prompt: str) -> list[list[tuple[str, str]]]:
        """Each loop of the prompt as ``[(prop, value), ...]`` (the current loop last)."""
        out = []
        for loop in read_prompt(prompt)[0]:
            toks = []
            for s in loop.sentences:
                t = self.arc.meaning(s)
                if t is None:
                    raise WorldModelError(f"arc {self.arc.id}: cannot read the sentence {s!r}")
                toks.append(self.arc.split(t))
            out.append(toks)
        return out


class TrueCaller(_ReadsLoops):
    """The judge for one arc at one difficulty (see the module docstring)."""

    backend = "true"

    def __init__(self, arc: Arc, diff: str):
        super().__init__(arc)
        self.insane = difficulty(diff).random_baseline
        self.model = f"rules:{arc.id}:{diff}"

    def call(self, loops: list[list[tuple[str, str]]]) -> str:
        if self.insane:
            base: dict[str, str] = {}
            for loop in loops[:-1]:
                for p, v in loop:
                    base.setdefault(p, v)
            changed = any(p in base and v != base[p] for p, v in loops[-1])
        else:
            changed = any(v != self.arc.prop(p).baseline for p, v in loops[-1])
        return "turn_back" if changed else "go_on"

    def answer(self, prompt: str) -> str:
        c = self.call(self.loops(prompt))
        return reply("a detail is off its baseline" if c == "turn_back" else "every detail is at its baseline", [c])


class LastLoopCaller(_ReadsLoops):
    """Compares the current loop with the previous loop only (see the module docstring)."""

    backend = "last-loop"
    model = "compare-with-last-loop"

    def call(self, loops: list[list[tuple[str, str]]]) -> str:
        if len(loops) < 2:
            return "go_on"
        last = dict(loops[-2])
        return "turn_back" if any(p in last and last[p] != v for p, v in loops[-1]) else "go_on"

    def answer(self, prompt: str) -> str:
        c = self.call(self.loops(prompt))
        return reply("compared with the last loop", [c])


class AlwaysGoOn(PromptByPromptBackend):
    backend = "always-go-on"
    model = "always-go-on"
    batch_size = 4096

    def answer(self, prompt: str) -> str:
        return reply("go on", ["go_on"])


class RandomCaller(SeededRandomBackend):
    """A call drawn at random (never a touch), seeded per prompt."""

    def answer(self, prompt: str) -> str:
        return reply("a coin flip", [self.rng(prompt).choice(list(CALLS))])


# ---------------------------------------------------------------------------
# The episode loop
# ---------------------------------------------------------------------------


@dataclass
class Episode:
    """One episode's record."""

    cell: str
    episode: int
    won: bool = False
    rounds: int = 0
    resets: int = 0
    calls: int = 0
    correct: int = 0
    unparseable: int = 0
    ended: str = ""
    tokens: list[str] = field(default_factory=list)
    automaton_disagrees: int = 0
    automaton_invalid: int = 0
    replies: list[str] = field(default_factory=list, repr=False)

    def to_dict(self, replies: bool = False) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "replies"}
        if replies:
            d["replies"] = list(self.replies)
        return d


class _Live:
    def __init__(self, ep: Episode, session: Session, arc: Arc, world, payload: dict):
        self.ep, self.session, self.arc, self.world = ep, session, arc, world
        self.payload = payload
        self.history: list[str] = []
        self.state = world.initial_state() if world is not None else None
        self.loop_tokens: list[str] = []
        self._read_loop()

    def _read_loop(self) -> None:
        self.loop_tokens = room_tokens(self.arc, self.payload)
        self.ep.tokens += self.loop_tokens
        self._run(self.loop_tokens)

    def _run(self, toks: Sequence[str]) -> None:
        if self.world is None or self.state is REJECT:
            return
        for t in toks:
            self.state = self.world.step(self.state, t)
            if self.state is REJECT:
                self.ep.automaton_invalid += 1
                return

    def observation(self) -> str:
        room = self.payload.get("room") or {}
        return render_loop(int(self.payload.get("level", 0)), str(room.get("heading", "")),
                           list(room.get("sentences", [])), int(self.payload.get("goal", 8)))

    def touches(self) -> list[str]:
        return [t["prop"] for t in ((self.payload.get("room") or {}).get("touch") or []) if "prop" in t]

    def restart_history(self) -> None:
        self.history = []


def play(sessions: Sequence[Session], arcs: dict[str, Arc], backend: Backend, cell: str, register: str = "normal",
         max_rounds: int = 120, touch: bool = False, lenient: bool = False, worlds: dict | None = None,
         progress: bool = True, first_episode: int = 0) -> list[Episode]:
    """Play one episode per session, all together (see the module docstring)."""
    if max_rounds < 1:
        raise WorldModelError(f"max_rounds must be at least 1, got {max_rounds}")
    live: list[_Live] = []
    for i, s in enumerate(sessions):
        world = (worlds or {}).get((s.arc, s.difficulty))
        live.append(_Live(Episode(cell, first_episode + i), s, arcs[s.arc], world, s.new()))
    done: list[_Live] = []
    bar = tqdm(total=len(live), desc=cell, unit="episode", disable=not progress, leave=False)
    steps = 0
    while live:
        steps += 1
        prompts, offered = [], []
        for lv in live:
            acts = actions_offered(lv.touches() if touch else ())
            offered.append(acts)
            prompts.append(build_prompt(register, lv.history, lv.observation(), acts))
        answers = backend.ask(prompts)
        still = []
        for lv, prompt, acts, ans in zip(live, prompts, offered, answers):
            lv.ep.replies.append(ans)
            moves = parse_reply_lenient(ans, acts) if lenient else parse_reply(ans, acts)
            if moves is None:
                lv.ep.unparseable += 1
                lv.ep.ended = "unparseable"
                done.append(lv)
                continue
            obs = lv.observation()
            folded = False
            for mv in moves[:-1]:
                res = lv.session.touch(mv.split(":", 1)[1])
                if res.get("kind") == "fold":
                    lv.ep.resets += 1
                    lv.ep.tokens.append(RESET)
                    lv.state = lv.world.initial_state() if lv.world is not None else None
                    lv.restart_history()
                    lv.payload = res
                    lv._read_loop()
                    folded = True
                    break
            if folded:
                still.append(lv)
                continue
            call = moves[-1]
            verdict = lv.world.verdict(lv.state, call) if lv.world is not None and lv.state is not REJECT else None
            res = lv.session.act(call)
            ep = lv.ep
            ep.rounds += 1
            ep.calls += 1
            ep.correct += int(bool(res.get("correct")))
            ep.tokens.append(call)
            if verdict is not None and verdict != bool(res.get("correct")):
                ep.automaton_disagrees += 1
            lv._run([call])
            if res.get("won"):
                ep.won, ep.ended = True, "won"
                ep.tokens.append(DOOR)
                lv._run([DOOR])
                done.append(lv)
                continue
            if res.get("correct"):
                lv.history.append(history_entry(obs, call, True))
            else:
                ep.resets += 1
                ep.tokens.append(RESET)
                lv._run([RESET])
                lv.restart_history()
            if ep.rounds >= max_rounds or steps >= 4 * max_rounds:
                ep.ended = "round cap"
                done.append(lv)
                continue
            lv.payload = res
            lv._read_loop()
            still.append(lv)
        bar.update(len(live) - len(still))
        live = still
    bar.close()
    return sorted((lv.ep for lv in done), key=lambda e: e.episode)


def summarize(episodes: Sequence[Episode]) -> dict:
    """Per cell: win rate, mean rounds and resets of the won episodes (as upstream), call accuracy, unparseable."""
    wins = [e for e in episodes if e.won]
    calls = sum(e.calls for e in episodes)
    return {
        "episodes": len(episodes), "wins": len(wins),
        "win_rate": len(wins) / len(episodes) if episodes else 0.0,
        "rounds": mean(e.rounds for e in wins) if wins else None,
        "resets": mean(e.resets for e in wins) if wins else None,
        "calls": calls, "call_accuracy": (sum(e.correct for e in episodes) / calls) if calls else None,
        "unparseable": sum(e.unparseable for e in episodes),
        "automaton_disagrees": sum(e.automaton_disagrees for e in episodes),
        "automaton_invalid": sum(e.automaton_invalid for e in episodes),
    }


def cell_table(rows: dict[tuple[str, str, str], dict]) -> str:
    """Markdown: ``arc | difficulty | reading | episodes | win% | rounds | resets | call acc. | unparseable``."""
    lines = ["| arc | difficulty | reading | episodes | win% | rounds | resets | call acc. | unparseable |",
             "|---|---|---|---|---|---|---|---|---|"]

    def f(x, fmt):
        return "–" if x is None else format(x, fmt)
    for (arc, diff, reg), s in rows.items():
        lines.append(f"| {arc} | {diff} | {reg} | {s['episodes']} | {100 * s['win_rate']:.0f}% | "
                     f"{f(s['rounds'], '.1f')} | {f(s['resets'], '.1f')} | {f(s['call_accuracy'], '.3f')} | "
                     f"{s['unparseable']} |")
    lines += ["", "rounds and resets: means over the won episodes (as the upstream benchmark reports them); "
              "call acc.: share of all committed calls judged correct; unparseable: replies that were not the "
              "asked-for JSON (each ends its episode)."]
    return "\n".join(lines)


def win_probability(rounds: int, p: float = 0.5, goal: int = 8) -> float:
    """Chance that independent calls, each correct with probability ``p``, make ``goal`` in a row within ``rounds``.

    The random agent's win rate under a round cap: a Markov chain on the current run
    length (a wrong call resets it to 0; the first run of ``goal`` wins and stops).
    """
    dist = [1.0] + [0.0] * (goal - 1)
    won = 0.0
    for _ in range(rounds):
        nxt = [0.0] * goal
        for k, pr in enumerate(dist):
            if not pr:
                continue
            nxt[0] += pr * (1 - p)
            if k + 1 == goal:
                won += pr * p
            else:
                nxt[k + 1] += pr * p
        dist = nxt
    return won


def make_responder(agent: str, arc: Arc, diff: str, seed: int, factory: Callable[[], Backend] | None = None) -> Backend:
    """The responder for ``--agent`` (``hf`` and ``openai`` come from ``factory``)."""
    if agent == "true":
        return TrueCaller(arc, diff)
    if agent == "last-loop":
        return LastLoopCaller(arc)
    if agent == "always-go-on":
        return AlwaysGoOn()
    if agent == "random":
        return RandomCaller(seed)
    if factory is None:
        raise WorldModelError(f"--agent {agent} needs a chat backend")
    return factory()
