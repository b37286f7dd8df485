"""LLM judges of ByteSized32 games, through the project's chat backends, and agreement with labels.

Two judgements the corpus asks of GPT-4 (semantics of ``bytes32/compliance.py`` and
``bytes32/alignment.py``; the prompts here are this project's own wording):

* **specification compliance**: given the task specification and the game's code, does the
  game have the task-critical object (``object`` experiment), the task-critical action
  (``action``), or the distractors the specification asks for (``distractor``)? The answer's
  first word is read as yes / no; the corpus takes the majority of 31 samples, here ``votes``
  prompts (identical under the backends' temperature 0, so ``votes = 1`` unless a backend samples);
* **physical reality alignment**: given short playthroughs (action, observation pairs), does the
  game's response make physical sense? One JSON line per playthrough with ``"evaluation"``
  ``yes`` / ``no``; the score is the share of ``yes``.

Any :class:`~worldmodel.chat.Backend` answers (an OpenAI-compatible endpoint, a local Hugging
Face chat model, wrapped in :class:`~worldmodel.chat.CachedBackend` so nothing is asked twice).
:func:`agreement` gives the share of agreement and Cohen's kappa of two label lists, used for the
released GPT-4 labels against the human ones and for any judge that is run against them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Sequence

from ...chat import Backend

QUESTION = {
    "object": "Does the simulation contain the object {requirement}?",
    "action": "Does the simulation implement the action {requirement}?",
    "distractor": "Does the simulation implement the distractor items and distractor actions that the "
                  "specification requires?",
}


def compliance_prompt(specification: str, code: str, experiment: str, requirement: str) -> str:
    """The compliance question for one game (``experiment``: object, action or distractor)."""
    if experiment not in QUESTION:
        raise ValueError(f"unknown experiment {experiment!r}")
    return ("You review a program that implements a text-based simulation of a small task.\n\n"
            f"The specification of the simulation:\n```\n{specification.strip()}\n```\n\n"
            f"The program:\n```python\n{code.strip()}\n```\n\n"
            "Answer from the specification and the program only. "
            + QUESTION[experiment].format(requirement=requirement)
            + "\nStart your answer with Yes or No, then explain briefly.")


def yes_no(text: str) -> bool | None:
    """The verdict of an answer that starts with yes or no (None when it starts with neither)."""
    m = re.match(r"\W*(yes|no)\b", text.strip().lower())
    return None if m is None else m.group(1) == "yes"


@dataclass
class Verdict:
    passed: bool | None      # majority of the parseable votes (None: none parseable)
    votes: list[bool | None]
    responses: list[str]


def judge_compliance(backend: Backend, items: Sequence[dict], votes: int = 1) -> list[Verdict]:
    """Ask the compliance question for each item ``{specification, code, experiment, requirement}``;
    all prompts go to the backend in one batch."""
    prompts = []
    for it in items:
        base = compliance_prompt(it["specification"], it["code"], it["experiment"], it["requirement"])
        prompts += [base if v == 0 else f"{base}\n(Independent review {v + 1}.)" for v in range(votes)]
    answers = backend.ask(prompts)
    out = []
    for i in range(len(items)):
        chunk = answers[i * votes:(i + 1) * votes]
        vs = [yes_no(a) for a in chunk]
        known = [v for v in vs if v is not None]
        out.append(Verdict(None if not known else sum(known) > len(known) / 2, vs, list(chunk)))
    return out


def alignment_prompt(task: str, playthroughs: Sequence[Sequence[tuple[str, str]]]) -> str:
    """The physical-reality question for a batch of playthroughs (lists of (action, observation))."""
    lines = []
    for i, p in enumerate(playthroughs):
        steps = [{"action": a, "observation": o} for a, o in p]
        lines.append(json.dumps({"idx": i, "playthrough": steps}))
    return ("Below are short playthroughs of a text game. For each, judge whether the game's observations are a "
            "physically plausible response to the actions taken (for example, taking something out of a closed "
            "fridge without opening it is not plausible; an error message from the game is not plausible). Judge "
            "only the actions shown.\n"
            f"Game task: {task.strip()}\n\nPlaythroughs:\n" + "\n".join(lines) + "\n\n"
            'Answer with one JSON object per line: {"idx": N, "evaluation": "yes" or "no", "reason": "..."}.')


def parse_alignment(text: str, n: int) -> list[bool | None]:
    """Per playthrough: True (plausible), False, or None (no parseable line for it)."""
    out: list[bool | None] = [None] * n
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        i = d.get("idx")
        if isinstance(i, int) and 0 <= i < n and isinstance(d.get("evaluation"), str):
            out[i] = d["evaluation"].strip().lower().startswith("yes")
    return out


def judge_alignment(backend: Backend, task: str, playthroughs: Sequence[Sequence[tuple[str, str]]],
                    batch: int = 5) -> dict:
    """Share of playthroughs judged plausible (``score``; unparseable ones counted apart)."""
    groups = [list(playthroughs[i:i + batch]) for i in range(0, len(playthroughs), batch)]
    answers = backend.ask([alignment_prompt(task, g) for g in groups])
    verdicts: list[bool | None] = []
    for g, a in zip(groups, answers):
        verdicts += parse_alignment(a, len(g))
    known = [v for v in verdicts if v is not None]
    return {"score": sum(known) / len(known) if known else None, "n": len(verdicts),
            "unparsed": len(verdicts) - len(known), "verdicts": verdicts}


def agreement(a: Sequence[int | bool | None], b: Sequence[int | bool | None]) -> dict:
    """Share of agreement and Cohen's kappa of two binary label lists (pairs with a missing label skipped)."""
    pairs = [(bool(x), bool(y)) for x, y in zip(a, b) if x is not None and y is not None]
    n = len(pairs)
    if n == 0:
        return {"n": 0, "agreement": None, "kappa": None}
    po = sum(x == y for x, y in pairs) / n
    pa, pb = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    kappa = None if pe == 1 else (po - pe) / (1 - pe)  # undefined when both raters are constant
    return {"n": n, "agreement": po, "kappa": kappa}
