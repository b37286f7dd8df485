"""What a language model reads and writes when it plays "8": the benchmark's habits, in this project's words.

The benchmark harness (alvations/melon-eight ``llm-benchmark/``) shows the model the
rule in one of two reading registers (``normal``, ``simple``; neither names a detail
to watch), then, each turn, the loops of the current climb so far (each with the call
made and its verdict; a wrong call empties it, as the climb starts again), the current
loop (``Loop N of 8.``, the heading in brackets, the loop's sentences), and asks for a
JSON object ``{"reason": ..., "actions": [...]}`` whose last action is ``go_on`` or
``turn_back`` (optional ``touch:<detail>`` actions before it, when touches are offered).
The texts below are written for this project; the layout follows the harness.
Upstream, the rule is a system message; here, as in this project's other in-words
worlds, the whole prompt is one user message, the rule first.

:func:`parse_reply` is strict: the reply must be exactly that JSON object (a
surrounding Markdown code fence allowed), every action one of those offered, the last
and only the last a call. :func:`parse_reply_lenient` is the upstream harness's
tolerant reading (the first ``{...}`` in the text, else the verbs in order of
appearance; illegal actions dropped; ``go_on`` when no call is found).
:func:`read_prompt` recovers the loops from a prompt, for the responders that answer
from the rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Sequence

from ...errors import WorldModelError
from .rules import CALLS, GOAL

RULES = {
    "normal": (
        "You are playing 8, a memory game. You pass through the same place again and again, and it ought "
        "to look identical every time. Each pass (a loop) is described in a few sentences, and you make "
        "one call:\n"
        "  - go_on: nothing differs from the place as you have come to know it, so carry on.\n"
        "  - turn_back: something is different from that baseline, so turn around.\n"
        "The sentences are reworded every loop and only some of the details are described each time, so "
        "keep track of what the place is like, not of the exact words. Eight correct calls in a row open "
        "the door; a single wrong call sends you back to the very beginning. Your first loop shows the "
        "place as it should be: go_on, and remember it."
    ),
    "simple": (
        "This is a memory game. You walk through a place again and again. It should look the same each "
        "time.\n"
        "Each time you read a few lines and choose one:\n"
        "  - go_on: it looks the same as before, so keep going.\n"
        "  - turn_back: something changed, so turn around.\n"
        "The words change and you only see some things each time. So remember what the place is like, "
        "not the exact words. Get eight right in a row to win. One wrong choice sends you back to the "
        "start. The first time is safe: nothing has changed yet, so go_on and remember it."
    ),
}

TOUCH_NOTE = ("Some loops also let you touch a detail (touch:<name>). Touching is optional and never "
              "decides the call; it only adds flavour, and now and then a touch sends you back to the start.")

HISTORY_HEAD = "The loops of this climb so far (oldest first):"
INSTRUCTION = ("Answer with only a JSON object of the form {{\"reason\": \"<one short sentence>\", "
               "\"actions\": [<action>, ...]}} where each <action> is one of: {actions}. Put any touch actions "
               "first and end with exactly one of go_on or turn_back, which commits the loop. For example: "
               "{{\"reason\": \"everything matches the place as I remember it\", \"actions\": [\"go_on\"]}}.")
_LOOP_RE = re.compile(r"^Loop (\d+) of (\d+)\.$")
_CHOSE_RE = re.compile(r"^  -> you chose (go_on|turn_back): (correct|wrong)$")


def render_loop(level: int, heading: str, sentences: Sequence[str], goal: int = GOAL) -> str:
    """One loop as the model sees it (``level`` counted from 0, shown from 1)."""
    return "\n".join([f"Loop {level + 1} of {goal}.", f"[{heading}]"] + [f"  {s}" for s in sentences])


def history_entry(observation: str, call: str, correct: bool = True) -> str:
    return f"{observation}\n  -> you chose {call}: {'correct' if correct else 'wrong'}"


def actions_offered(touch: Sequence[str] = ()) -> list[str]:
    return list(CALLS) + [f"touch:{p}" for p in touch]


def build_prompt(register: str, history: Sequence[str], observation: str, actions: Sequence[str]) -> str:
    """The whole prompt of one turn (see the module docstring)."""
    if register not in RULES:
        raise WorldModelError(f"unknown reading register {register!r} (known: {', '.join(RULES)})")
    rule = RULES[register]
    if any(a.startswith("touch:") for a in actions):
        rule += "\n" + TOUCH_NOTE
    parts = [rule]
    if history:
        parts.append(HISTORY_HEAD + "\n" + "\n".join(history))
    parts += [observation, INSTRUCTION.format(actions=", ".join(actions))]
    return "\n\n".join(parts)


def reply(reason: str, actions: Sequence[str]) -> str:
    return json.dumps({"reason": reason, "actions": list(actions)})


# ---------------------------------------------------------------------------
# Reading replies
# ---------------------------------------------------------------------------


def _check_actions(raw, legal: Sequence[str]) -> list[str] | None:
    if not isinstance(raw, list) or not raw or not all(isinstance(a, str) for a in raw):
        return None
    acts = [a.strip() for a in raw]
    if any(a not in legal for a in acts):
        return None
    if acts[-1] not in CALLS or any(a in CALLS for a in acts[:-1]):
        return None
    return acts


def parse_reply(text: str, legal: Sequence[str]) -> list[str] | None:
    """The actions of a strict reply (see the module docstring), or ``None`` when it does not parse."""
    if not isinstance(text, str):
        return None
    body = text.strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    if fence:
        body = fence.group(1)
    try:
        obj = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("reason", ""), str):
        return None
    return _check_actions(obj.get("actions"), legal)


def parse_reply_lenient(text: str, legal: Sequence[str]) -> list[str]:
    """The upstream harness's tolerant reading; never fails (``go_on`` when no call is found)."""
    chosen: list[str] = []
    m = re.search(r"\{.*\}", text or "", re.DOTALL)
    if m:
        try:
            obj = json.loads(m.group(0))
            raw = obj.get("actions", obj.get("action")) if isinstance(obj, dict) else None
            if isinstance(raw, str):
                raw = [raw]
            if isinstance(raw, list):
                chosen = [str(a).strip() for a in raw]
        except (ValueError, TypeError):
            chosen = []
    if not chosen:
        chosen = re.findall(r"touch:[A-Za-z0-9_\-]+|turn_back|go_on", text or "")
    out: list[str] = []
    for a in chosen:
        if a in legal:
            out.append(a)
            if a in CALLS:
                break
    if not out or out[-1] not in CALLS:
        out.append("go_on")
    return out


# ---------------------------------------------------------------------------
# Reading prompts (for the responders that answer from the rules)
# ---------------------------------------------------------------------------


@dataclass
class PromptLoop:
    level: int
    heading: str
    sentences: list[str]
    call: str | None = None         #: history loops: the call made
    correct: bool | None = None


def read_prompt(prompt: str) -> tuple[list[PromptLoop], list[str]]:
    """``(loops, actions)`` of a turn's prompt: the climb's loops so far and the current one last."""
    if "Answer with only a JSON object" not in prompt:
        raise WorldModelError("not a prompt of the 8 benchmark")
    loops: list[PromptLoop] = []
    lines = prompt.split("\n")
    i = 0
    while i < len(lines):
        m = _LOOP_RE.match(lines[i])
        if not m or i + 1 >= len(lines) or not lines[i + 1].startswith("["):
            i += 1
            continue
        loop = PromptLoop(int(m.group(1)) - 1, lines[i + 1][1:-1], [])
        i += 2
        while i < len(lines) and lines[i].startswith("  "):
            c = _CHOSE_RE.match(lines[i])
            if c:
                loop.call, loop.correct = c.group(1), c.group(2) == "correct"
                i += 1
                break
            loop.sentences.append(lines[i][2:])
            i += 1
        loops.append(loop)
    tail = prompt.rsplit("where each <action> is one of: ", 1)
    actions = tail[1].split(". Put any touch", 1)[0].split(", ") if len(tail) == 2 else list(CALLS)
    if not loops or loops[-1].call is not None:
        raise WorldModelError("the prompt shows no current loop")
    return loops, actions
