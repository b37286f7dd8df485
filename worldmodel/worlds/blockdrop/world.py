"""The drop grammar as a DFA: a token is one drop (``b31@7``), or ``end``.

Alphabet (:func:`drop_tokens`): ``b11@x`` and ``b13@x`` for every column ``x`` in
0..19, ``b31@x`` for ``x`` in 1..18 (a ``b31`` at 0 or 19 always intrudes on the width
boundary, so those tokens would never be valid), and ``end``; 59 tokens. With
``letters=True`` the 26 letter tokens ``<A>`` … ``<Z>`` come first: a sequence then
opens with the letter it should build (the letter says nothing about validity, so the
state after ``<I>`` equals the state after ``<L>``).

Two variants (:class:`BlockDropWorld`, ``variant=``):

* ``"grid"`` — a drop is valid when the block lands inside the grid
  (:func:`~.grid.land`). Where blocks land depends only on the column skyline, so the
  state is the skyline (plus whether anything was dropped and whether the program
  ended): that is the exact Myhill–Nerode class, since a column's height is told by how
  many ``b11`` it still takes.
* ``"stable"`` — a drop is also refused when the structure it leaves does not stand by
  the static rule of :mod:`.stability`. Stability depends on every block, not only the
  skyline, so the state is the settled structure: the set of blocks (kind, column, row).
  Two structures could in principle allow the same futures (a hidden block that no
  later load reaches); like Othello's boards, the states are at least as fine as the
  Myhill–Nerode classes, and equal states always are one class.

``end`` is valid once at least one block was dropped and closes the program (a stop
token); nothing is valid after it. The state space is far too large to enumerate
(an implicit world), so distinction uses the sampled boundary
(:attr:`~.domain.BlockDropDomain.boundary`).
"""

from __future__ import annotations

import string
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ...api import REJECT, World
from ...errors import WorldModelError
from .grid import EMPTY_SKYLINE, HEIGHT, KINDS, SIZES, WIDTH, Block, DropError, add, land
from .stability import Geometry, check_drop

END = "end"
LETTERS = tuple(string.ascii_uppercase)
VARIANTS = ("grid", "stable")


def drop_tokens() -> tuple[str, ...]:
    """Every drop token that can ever be valid, in alphabet order."""
    out = []
    for kind in KINDS:
        half = (SIZES[kind][0] - 1) // 2
        out += [f"{kind}@{x}" for x in range(half, WIDTH - half)]
    return tuple(out)


def letter_token(letter: str) -> str:
    return f"<{letter}>"


def parse_drop(token: str) -> tuple[str, int] | None:
    """``("b31", 7)`` for ``"b31@7"``; None for any other token."""
    kind, sep, x = token.partition("@")
    if not sep or kind not in SIZES or not x.isdigit():
        return None
    return kind, int(x)


def drop_text(token: str) -> str:
    """A drop token as the competition's code: ``ab_drop('b31', 7)``."""
    kind, x = parse_drop(token)
    return f"ab_drop('{kind}', {x})"


@dataclass(frozen=True)
class Opening:
    """The state before the letter token of a ``letters`` world."""

    def __repr__(self) -> str:
        return "Opening()"


@dataclass(frozen=True)
class Structure:
    """A state: the settled structure (``blocks`` sorted; empty in the grid variant),
    its ``skyline``, how many blocks it holds and whether the program has ended."""

    skyline: tuple[int, ...]
    blocks: tuple[Block, ...] = ()
    n: int = 0
    ended: bool = False
    geometry: Geometry | None = field(default=None, compare=False, hash=False, repr=False)  #: the stable rule's view


class BlockDropWorld(World):
    """The ChatGPT4PCG drop grammar (``variant`` ``"grid"`` or ``"stable"``)."""

    stop_tokens = frozenset({END})

    def __init__(self, variant: str = "grid", letters: bool = False, cache_size: int = 200_000):
        if variant not in VARIANTS:
            raise WorldModelError(f"blockdrop variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        self.variant = variant
        self.letters = bool(letters)
        self.drops = drop_tokens()
        self.letter_tokens = tuple(letter_token(c) for c in LETTERS) if letters else ()
        self.tokens = self.letter_tokens + self.drops + (END,)
        self.name = f"blockdrop-{variant}" + ("-letters" if letters else "")
        self._parsed = {t: parse_drop(t) for t in self.drops}
        self._letter_set = frozenset(self.letter_tokens)
        self._cache: OrderedDict = OrderedDict()
        self._valid_cache: OrderedDict = OrderedDict()
        self._cache_size = int(cache_size)

    # -- the automaton --------------------------------------------------------
    def empty(self) -> Structure:
        return Structure(EMPTY_SKYLINE)

    def initial_state(self):
        return Opening() if self.letters else self.empty()

    def step(self, state, token):
        if state is REJECT:
            return REJECT
        if isinstance(state, Opening):
            return self.empty() if token in self._letter_set else REJECT
        if state.ended:
            return REJECT
        if token == END:
            return Structure(state.skyline, state.blocks, state.n, True, state.geometry) if state.n else REJECT
        drop = self._parsed.get(token)
        if drop is None:
            return REJECT
        if self.variant == "grid":
            try:
                b = land(state.skyline, *drop)
            except DropError:
                return REJECT
            return Structure(add(state.skyline, b), (), 1, False)  # n: only "something was dropped"
        key = (state, token)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        nxt = self._stable_step(state, drop)
        self._cache[key] = nxt
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return nxt

    def _stable_step(self, state: Structure, drop: tuple[str, int]):
        try:
            b = land(state.skyline, *drop)
        except DropError:
            return REJECT
        geometry = state.geometry if state.geometry is not None else Geometry.of(sorted(state.blocks, key=lambda b: b.row))
        verdict, geometry = check_drop(geometry, b)
        if not verdict:
            return REJECT
        return Structure(add(state.skyline, b), tuple(sorted(state.blocks + (b,))), state.n + 1, False, geometry)

    def valid_tokens(self, state) -> list[str]:
        if state is REJECT:
            return []
        if self.variant == "grid" or isinstance(state, Opening):
            return super().valid_tokens(state)
        hit = self._valid_cache.get(state)
        if hit is None:
            hit = super().valid_tokens(state)
            self._valid_cache[state] = hit
            if len(self._valid_cache) > self._cache_size // 10:
                self._valid_cache.popitem(last=False)
        return list(hit)

    # -- reading states -------------------------------------------------------
    def blocks_of(self, tokens: Sequence[str]) -> list[Block]:
        """The settled blocks of a valid token sequence, in drop order (letters and ``end`` skipped)."""
        sky = EMPTY_SKYLINE
        out = []
        for t in tokens:
            d = self._parsed.get(t)
            if d is None:
                continue
            b = land(sky, *d)
            out.append(b)
            sky = add(sky, b)
        return out

    def state_key(self, state) -> str:
        if state is REJECT:
            return "REJECT"
        if isinstance(state, Opening):
            return "opening"
        tail = "/end" if state.ended else ""
        if self.variant == "grid":
            return "".join(f"{h:x}" for h in state.skyline) + f"/{min(state.n, 1)}{tail}"
        return ";".join(f"{b.kind}:{b.x}:{b.row}" for b in state.blocks) + tail

    def token_text(self, token: str) -> str:
        return drop_text(token) if token in self._parsed else token

    def probe_targets(self, state) -> np.ndarray | None:
        """The column skyline: 20 labels, each a height 0..16 (zeros before the letter)."""
        if state is REJECT:
            return None
        if isinstance(state, Opening):
            return np.zeros(WIDTH, dtype=np.int64)
        return np.asarray(state.skyline, dtype=np.int64)

    def next_token_positions(self, sequence: Sequence[str]) -> range:
        """Every position after the letter (the letter is the prompt, not a prediction)."""
        start = 1 if self.letters and sequence and sequence[0] in self._letter_set else 0
        return range(start, len(sequence))


HEIGHT_LABELS = HEIGHT + 1  #: a skyline value is one of 0..16
