"""How a text model's training data lays out a sequence of world tokens (a *template*).

A character-level model does not see world tokens; it sees text such as Karvonen's
chess strings ``;1.e4 e5 2.Nf3 Nc6 3.`` — moves, with move numbers and separators
between them. A :class:`Template` says what text surrounds the tokens:

``start``
    the text before the first token (``";1."``), fed as context: the model predicts the
    first token after it, so it plays the role of a BOS;
``between``
    one string per token of a period (``(" ", " {n}.")`` for chess: after white's move a
    space, after black's a space and the next move number); ``{n}`` is the number of the
    period that begins next (2 after the first black move).

Every ``between`` string must begin with the same character, the *terminator* (``" "``),
and no world token may contain it. A world token is then spelled as its characters
followed by the terminator: ``"e4 "``. With the terminator the spellings are
prefix-free (``Nf3`` begins ``Nf3+``, but ``"Nf3 "`` begins no other spelling), and the
model's probability of a token is the chain rule over its characters *and* the
terminator: the probability that the model writes that move and ends it there. The
rest of each ``between`` string (``"2."``) is context, fed after the token and never
scored.

Spec strings (:meth:`Template.parse`): ``"pgn"`` names the chess layout; any other spec
writes out the first tokens with ``{move}`` placeholders, e.g. ``";1.{move} {move}
2.{move}"``: the text before the first ``{move}`` is ``start``, the texts between the
placeholders make one period, and a number in the last of them (here ``2``) is the
period counter. ``"{move} {move}"`` is a plain space-separated layout.
"""

from __future__ import annotations

import re
from typing import Sequence

from ...errors import WorldModelError

NAMED = {"pgn": ";1.{move} {move} 2.{move}"}


class Template:
    def __init__(self, start: str, between: Sequence[str]):
        self.start = str(start)
        self.between = tuple(str(b) for b in between)
        if not self.between:
            raise WorldModelError("a template needs at least one separator between tokens")
        firsts = {b[:1] for b in self.between}
        if len(firsts) != 1 or "" in firsts:
            raise WorldModelError(f"template separators {list(self.between)} must all begin with one character "
                                  "(the terminator that ends a token)")
        self.terminator = firsts.pop()
        for b in self.between[:-1]:
            if "{n}" in b:
                raise WorldModelError("only the last separator of a template period may hold the number {n}")

    @classmethod
    def parse(cls, spec: str) -> "Template":
        """A template from ``"pgn"`` or a written-out layout with ``{move}`` placeholders."""
        text = NAMED.get(spec, spec)
        parts = text.split("{move}")
        if len(parts) < 3:
            raise WorldModelError(f"template {spec!r}: write at least two tokens as {{move}}, e.g. "
                                  "';1.{move} {move} 2.{move}' (or name one: pgn)")
        if parts[-1]:
            raise WorldModelError(f"template {spec!r} must end with {{move}}")
        start, between = parts[0], list(parts[1:-1])
        if "{n}" not in text:
            last = between[-1]
            m = re.search(r"\d+", last)
            if m:
                if m.group() != "2":
                    raise WorldModelError(f"template {spec!r}: the number after the first period must be 2, "
                                          f"got {m.group()}")
                between[-1] = last[:m.start()] + "{n}" + last[m.end():]
        return cls(start.replace("{n}", "1"), between)

    def spec(self) -> str:
        """A spec that :meth:`parse` reads back into this template."""
        return self.start + "{move}" + "".join(b.replace("{n}", "2") + "{move}" for b in self.between)

    def after(self, i: int) -> str:
        """The text after token ``i`` (0-based), terminator included."""
        k = len(self.between)
        return self.between[i % k].replace("{n}", str(i // k + 2))

    def context_after(self, i: int) -> str:
        """What follows token ``i``'s terminator: context, never scored."""
        return self.after(i)[1:]

    def text(self, tokens: Sequence[str]) -> str:
        """The training text of a token sequence, up to where the next token would begin."""
        return self.start + "".join(t + self.after(i) for i, t in enumerate(tokens))

    def to_dict(self) -> dict:
        return {"start": self.start, "between": list(self.between)}

    @classmethod
    def from_dict(cls, d: dict) -> "Template":
        return cls(d["start"], d["between"])
