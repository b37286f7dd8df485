"""Prompts for asking a chat model about the seating puzzle, and strict answer parsing.

Two kinds of question, in the style of the paper's App. E:

* **capability** — statements that fully determine the seating, then "where is X
  seated?"; the answer is a seat number written after ``ANSWER:``;
* **validity** — the statements so far, then a proposed continuation of one or
  more statements, "is this a valid continuation?"; the answer is ``yes`` or ``no``
  after ``ANSWER:``.

Parsing is strict: the text after the *last* ``ANSWER:`` (upper case, as the prompt
asks) must be exactly a seat number in ``1..n`` or ``yes``/``no`` (case-insensitive),
allowing only surrounding whitespace, Markdown bold markers, quotes and one final
full stop. Anything else is :data:`UNPARSEABLE`; it is recorded and counted by the
protocol, never guessed.

:func:`parse_prompt` reads a prompt back into its parts; the true-world-model and
random responders (and the test server) use it, so they answer exactly the
question that was asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ...errors import WorldModelError
from .world import people, statement_text, parse_statement

MARKER = "ANSWER:"
UNPARSEABLE = None

_HEADER_RE = re.compile(r"^There are (\d+) people, named [A-Z ,and]+, and (\d+) seats, numbered 1 to \d+\.")
_CAP_Q_RE = re.compile(r"^Based on these statements, where is ([A-Z]) seated\?")


def _names(n: int) -> str:
    ps = people(n)
    return ", ".join(ps[:-1]) + f" and {ps[-1]}" if n > 1 else ps[0]


def _header(n: int) -> str:
    return (
        f"There are {n} people, named {_names(n)}, and {n} seats, numbered 1 to {n}. "
        "Each person sits in exactly one seat and each seat holds exactly one person."
    )


def _numbered(statements: Sequence[str]) -> list[str]:
    return [f"{i}. {statement_text(s)}" for i, s in enumerate(statements, 1)]


def capability_prompt(n: int, statements: Sequence[str], person: str) -> str:
    """Ask where ``person`` sits, given statements (tokens or sentences) that determine the seating."""
    lines = [_header(n), "The following statements are true:"]
    lines += _numbered(statements)
    lines += [
        "",
        f"Based on these statements, where is {person} seated? You may reason step by step, "
        f"but end your response with '{MARKER} ' followed by a single seat number from 1 to {n}.",
    ]
    return "\n".join(lines)


def validity_prompt(n: int, prefix: Sequence[str], continuation: Sequence[str]) -> str:
    """Ask whether ``continuation`` may follow ``prefix`` (a yes/no question)."""
    lines = [_header(n)]
    if prefix:
        lines.append("The following statements have been made so far:")
        lines += _numbered(prefix)
    else:
        lines.append("No statements have been made so far.")
    lines += ["", "Consider the proposed continuation:"]
    lines += _numbered(continuation)
    lines += [
        "",
        "Is this a valid continuation, that is, could all of the statements so far and the "
        "proposed ones be true of one seating at the same time? You may reason step by step, "
        f"but end your response with '{MARKER} ' followed by yes or no.",
    ]
    return "\n".join(lines)


def _final(response: str) -> str | None:
    if not isinstance(response, str) or MARKER not in response:
        return None
    tail = response.rsplit(MARKER, 1)[1].strip()
    tail = tail.strip("*").strip().strip("'\"`").strip()
    if tail.endswith("."):
        tail = tail[:-1].rstrip()
    return tail


def parse_seat(response: str, n: int) -> int | None:
    """The seat number answered, or ``None`` when the response does not end in a valid one."""
    tail = _final(response)
    if tail is None or not re.fullmatch(r"\d+", tail):
        return UNPARSEABLE
    seat = int(tail)
    return seat if 1 <= seat <= n else UNPARSEABLE


def parse_yes_no(response: str) -> bool | None:
    """``True`` for yes, ``False`` for no, ``None`` when neither is the final answer."""
    tail = _final(response)
    if tail is None:
        return UNPARSEABLE
    tail = tail.lower()
    if tail == "yes":
        return True
    if tail == "no":
        return False
    return UNPARSEABLE


@dataclass(frozen=True)
class ParsedPrompt:
    """A prompt read back: its kind (``"capability"`` / ``"validity"``) and contents as tokens."""

    kind: str
    n: int
    statements: tuple[str, ...]  #: the determining statements, or the prefix
    continuation: tuple[str, ...] = ()
    person: str = ""


def parse_prompt(prompt: str) -> ParsedPrompt:
    """Read a prompt made by :func:`capability_prompt` or :func:`validity_prompt`.

    Raises :class:`WorldModelError` when the text is not one of them.
    """
    lines = prompt.split("\n")
    m = _HEADER_RE.match(lines[0]) if lines else None
    if not m:
        raise WorldModelError("not a seating-puzzle prompt (unrecognised first line)")
    n = int(m.group(1))
    blocks: list[list[str]] = [[]]
    question = ""
    for line in lines[1:]:
        if re.match(r"^\d+\. ", line):
            blocks[-1].append(parse_statement(line.split(". ", 1)[1], n))
        elif line.startswith("Consider the proposed continuation"):
            blocks.append([])
        elif line.startswith("Based on") or line.startswith("Is this"):
            question = line
    cap = _CAP_Q_RE.match(question)
    if cap:
        return ParsedPrompt("capability", n, tuple(blocks[0]), (), cap.group(1))
    if question.startswith("Is this a valid continuation") and len(blocks) == 2:
        return ParsedPrompt("validity", n, tuple(blocks[0]), tuple(blocks[1]))
    raise WorldModelError("not a seating-puzzle prompt (no recognised question)")
