"""A constructive generator of drop programs that build capital letters.

Each letter has a glyph in a small drop-friendly font (:data:`GLYPHS`, 3 pixels wide
and 5 tall, top row first): shapes a structure of dropped blocks can take, so the
arms of C, E, F and G sit on a stem two pixels thick instead of hanging off a thin
one. A program for a letter:

1. scales the glyph by ``sx`` columns and ``sy`` rows per pixel and places it at a
   column offset, all drawn at random (the letter must fit the 20 × 16 grid);
2. fills its cells bottom row first with blocks, choosing at random among the blocks
   that fit there and rest on something (a ``b13`` where three cells of a column are
   still to fill, a ``b31`` over three cells of a row, else a ``b11``), so the same
   letter comes out of many programs;
3. keeps the program only when every drop is valid in the ``stable`` world (lands in
   the grid, and the structure stands by the static rule after each drop); else it
   draws again (:data:`TRIES` times at most).

:func:`letter_program` makes one program; :func:`letter_programs` many, seeded;
:func:`buildable` lists the letters the font and the stable world allow.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from ...dfa import REJECT
from ...errors import WorldModelError
from .grid import HEIGHT, WIDTH
from .world import END, BlockDropWorld, letter_token

#: the font, top row first; ``#`` a filled pixel
GLYPHS = {
    "A": ["###", "#.#", "###", "#.#", "#.#"],
    "B": ["###", "#.#", "###", "#.#", "###"],
    "C": ["###", "##.", "##.", "##.", "###"],
    "E": ["###", "##.", "###", "##.", "###"],
    "F": ["###", "##.", "###", "##.", "##."],
    "H": ["#.#", "#.#", "###", "#.#", "#.#"],
    "I": ["###", ".#.", ".#.", ".#.", "###"],
    "J": ["###", ".#.", ".#.", ".#.", "##."],
    "L": ["#..", "#..", "#..", "#..", "###"],
    "M": ["###", "###", "#.#", "#.#", "#.#"],
    "N": ["###", "#.#", "#.#", "#.#", "#.#"],
    "O": ["###", "#.#", "#.#", "#.#", "###"],
    "P": ["###", "#.#", "###", "##.", "##."],
    "Q": ["###", "#.#", "#.#", "###", ".##"],
    "S": ["###", "##.", "###", ".##", "###"],
    "T": ["###", ".#.", ".#.", ".#.", ".#."],
    "U": ["#.#", "#.#", "#.#", "#.#", "###"],
    "V": ["#.#", "#.#", "#.#", "###", ".#."],
    "W": ["#.#", "#.#", "#.#", "###", "###"],
    "Y": ["#.#", "#.#", "###", ".#.", ".#."],
}
#: letters with no glyph: every drop-built shape of theirs has a cell with nothing under it
#: (the right stroke of D, the inner strokes of G, K, R, X, the diagonal of Z)
NO_GLYPH = ("D", "G", "K", "R", "X", "Z")
SCALES_X = (1, 2, 3)
SCALES_Y = (1, 2, 3)
TRIES = 100


def glyph_cells(letter: str, sx: int = 1, sy: int = 1, x0: int = 0) -> set[tuple[int, int]]:
    """The ``(column, row)`` cells of a letter's glyph scaled by ``sx`` × ``sy`` at column ``x0``."""
    rows = GLYPHS[letter]
    out = set()
    for i, line in enumerate(reversed(rows)):  # row 0 at the bottom
        for j, ch in enumerate(line):
            if ch == "#":
                out |= {(x0 + j * sx + a, i * sy + b) for a in range(sx) for b in range(sy)}
    return out


def _fill(cells: set[tuple[int, int]], rng: np.random.Generator) -> list[str] | None:
    """Drop tokens that fill ``cells`` exactly, bottom row first, or None when a cell cannot be reached.

    Row by row, a small depth-first search in random order covers the row's cells with
    blocks that rest on what is already there; a ``b13`` is not used where a cell beside
    its upper part would need a ``b31`` through that column to hold it up.
    """
    todo = set(cells)
    filled: set[tuple[int, int]] = set()
    tokens: list[str] = []

    def options(c, r, free):
        def rests(cols):
            return r == 0 or any((x, r - 1) in filled for x in cols)

        out = []
        if all((c, r + k) in free for k in range(3)) and rests([c]):
            hangs = any((c + d, r + k) in cells and (c + d, r + k - 1) not in cells
                        for k in (1, 2) for d in (-1, 1))
            if not hangs:
                out.append(("b13", c, [(c, r), (c, r + 1), (c, r + 2)]))
        for left in (c - 2, c - 1, c):
            span = [(left + k, r) for k in range(3)]
            if 1 <= left + 1 <= WIDTH - 2 and all(q in free for q in span) and rests([x for x, _ in span]):
                out.append(("b31", left + 1, span))
        if rests([c]):
            out.append(("b11", c, [(c, r)]))
        return [out[int(i)] for i in rng.permutation(len(out))]

    def cover(row, free):
        """Blocks covering every cell of ``row`` still in ``free`` (a list of (kind, x, span)), or None."""
        rest = [q for q in row if q in free]
        if not rest:
            return []
        c, r = rest[0]
        for kind, x, span in options(c, r, free):
            more = cover(row, free - set(span))
            if more is not None:
                return [(kind, x, span)] + more
        return None

    for r in range(HEIGHT):
        row = sorted(q for q in todo if q[1] == r)
        if rng.random() < 0.5:
            row.reverse()
        placed = cover(row, todo)
        if placed is None:
            return None
        for kind, x, span in placed:
            tokens.append(f"{kind}@{x}")
            todo -= set(span)
            filled |= set(span)
    return tokens if not todo else None


@lru_cache(maxsize=4)
def _stable_world() -> BlockDropWorld:
    return BlockDropWorld("stable")


def letter_program(letter: str, rng: np.random.Generator, world: BlockDropWorld | None = None) -> list[str] | None:
    """One drop program (tokens, no letter and no ``end``) that builds ``letter`` and is valid in the
    stable world, drawn with ``rng``; None when :data:`TRIES` draws all failed."""
    if letter not in GLYPHS:
        raise WorldModelError(f"the letter generator has no glyph for {letter!r} (it builds {''.join(GLYPHS)})")
    world = world or _stable_world()
    for _ in range(TRIES):
        sx = SCALES_X[int(rng.integers(len(SCALES_X)))]
        sy = SCALES_Y[int(rng.integers(len(SCALES_Y)))]
        width = 3 * sx
        if width > WIDTH or 5 * sy > HEIGHT:
            continue
        x0 = int(rng.integers(0, WIDTH - width + 1))
        tokens = _fill(glyph_cells(letter, sx, sy, x0), rng)
        if tokens is None:
            continue
        s = world.initial_state()
        if world.letters:
            s = world.step(s, letter_token(letter))
        for t in tokens:
            s = world.step(s, t)
            if s is REJECT:
                break
        if s is not REJECT:
            return tokens
    return None


def letter_programs(letters: Sequence[str], n: int, seed: int, world: BlockDropWorld | None = None,
                    progress: bool = False) -> list[list[str]]:
    """``n`` sequences ``[<L>, drops..., end]``, letters drawn uniformly from ``letters``, seeded.

    A letter the generator cannot build is an error (see :func:`buildable`).
    """
    from tqdm.auto import tqdm

    rng = np.random.default_rng([seed, 0xB10C])
    out = []
    for _ in tqdm(range(n), desc="building letters", disable=not progress, leave=False):
        letter = letters[int(rng.integers(len(letters)))]
        prog = None
        for _ in range(3):
            prog = prog or letter_program(letter, rng, world)
        if prog is None:
            raise WorldModelError(f"the letter generator could not build {letter!r} in {3 * TRIES} draws")
        out.append([letter_token(letter)] + prog + [END])
    return out


def buildable(seed: int = 0, draws: int = 20) -> dict[str, float]:
    """Per letter with a glyph, the share of ``draws`` seeded draws of :func:`letter_program` that succeed."""
    out = {}
    for letter in GLYPHS:
        rng = np.random.default_rng([seed, ord(letter)])
        out[letter] = float(np.mean([letter_program(letter, rng) is not None for _ in range(draws)]))
    return out
