"""The drop grammar of ChatGPT4PCG: blocks dropped into a 20 × 16 grid, Tetris-like.

A level is a program of drops ``ab_drop(block, x)``: ``block`` is ``b11`` (1 × 1),
``b13`` (1 wide, 3 tall) or ``b31`` (3 wide, 1 tall), ``x`` the column (slot) its
centre column occupies, 0 the leftmost of :data:`WIDTH` = 20. A block falls from the
top until it rests on the structure or on the base (row 0 is the bottom of the
:data:`HEIGHT` = 16 rows). It is the competition's text-to-level converter's rule:
scanning down from the top row, a block stops above the first row where any cell of
its footprint is taken, so where it lands depends only on each column's *skyline* (one
more than its highest occupied row; 0 when empty):

* ``b11`` and ``b13`` at ``x`` land on row ``skyline[x]``;
* ``b31`` at ``x`` lands on row ``max(skyline[x-1], skyline[x], skyline[x+1])``.

A drop is an error (:class:`DropError`, and the level is not built) when the block
intrudes on the grid boundary: ``x`` outside ``0..19``, a ``b31`` whose side cells
leave the grid (``x`` = 0 or 19), or a block whose top would pass row 15 (the
structure passes row 16). One deliberate difference from the converter: it places a
``b31`` whose side column is already full to the top *on* row 15, overlapping that
column's top block; here that drop is an error, since no structure has two blocks in
one cell.

This module is pure geometry on grid cells: :func:`land`, :func:`build`, the
:class:`Block` record. Unity units (Science Birds' coordinates) are in
:mod:`.unity`; stability is in :mod:`.stability` (the static rule) and
:mod:`.physics` (Box2D).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

WIDTH = 20  #: columns (slots) 0..19
HEIGHT = 16  #: rows (layers) 0..15
#: block kind -> (width, height) in cells
SIZES = {"b11": (1, 1), "b13": (1, 3), "b31": (3, 1)}
KINDS = tuple(SIZES)


class DropError(Exception):
    """A drop the converter refuses: the block would intrude on the grid boundary."""

    def __init__(self, reason: str, index: int | None = None):
        super().__init__(reason if index is None else f"drop {index + 1}: {reason}")
        self.reason = reason
        self.index = index


class Block(NamedTuple):
    """A settled block: its kind, centre column ``x`` and bottom row ``row`` (grid cells)."""

    kind: str
    x: int
    row: int

    @property
    def width(self) -> int:
        return SIZES[self.kind][0]

    @property
    def height(self) -> int:
        return SIZES[self.kind][1]

    @property
    def left(self) -> int:
        """Leftmost column."""
        return self.x - (self.width - 1) // 2

    @property
    def right(self) -> int:
        """One past the rightmost column."""
        return self.left + self.width

    @property
    def top(self) -> int:
        """One past the top row."""
        return self.row + self.height

    def cells(self) -> list[tuple[int, int]]:
        """``(column, row)`` of every cell the block fills."""
        return [(c, r) for c in range(self.left, self.right) for r in range(self.row, self.top)]


EMPTY_SKYLINE: tuple[int, ...] = (0,) * WIDTH


def land(skyline: Sequence[int], kind: str, x: int) -> Block:
    """Where a ``kind`` block dropped at column ``x`` comes to rest; :class:`DropError` if it cannot."""
    if kind not in SIZES:
        raise DropError(f"unknown block type {kind!r} (known: b11, b13, b31)")
    if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < WIDTH:
        raise DropError(f"slot {x!r} is outside the grid (0..{WIDTH - 1})")
    if skyline[x] >= HEIGHT:
        raise DropError(f"column {x} is full: the height boundary is intruded")
    w, h = SIZES[kind]
    if w > 1:
        half = (w - 1) // 2
        if x - half < 0 or x + half >= WIDTH:
            raise DropError(f"a {kind} at slot {x} intrudes on the width boundary")
        row = max(skyline[x - half:x + half + 1])
    else:
        row = skyline[x]
    if row + h > HEIGHT:
        raise DropError(f"a {kind} at slot {x} would rest on row {row} and pass the top: "
                        "the height boundary is intruded")
    return Block(kind, x, row)


def add(skyline: Sequence[int], block: Block) -> tuple[int, ...]:
    """The skyline after ``block`` settles."""
    out = list(skyline)
    for c in range(block.left, block.right):
        out[c] = block.top
    return tuple(out)


def build(drops: Iterable[tuple[str, int]]) -> list[Block]:
    """The settled blocks of a program of ``(kind, x)`` drops, in drop order.

    Raises :class:`DropError` naming the first drop that cannot be made (its ``index``
    is set).
    """
    sky = EMPTY_SKYLINE
    out: list[Block] = []
    for i, (kind, x) in enumerate(drops):
        try:
            b = land(sky, kind, x)
        except DropError as e:
            raise DropError(e.reason, i) from None
        out.append(b)
        sky = add(sky, b)
    return out


def skyline_of(blocks: Iterable[Block]) -> tuple[int, ...]:
    sky = [0] * WIDTH
    for b in blocks:
        for c in range(b.left, b.right):
            sky[c] = max(sky[c], b.top)
    return tuple(sky)


def occupancy(blocks: Iterable[Block]) -> list[list[int]]:
    """``grid[row][column]`` = 1 where a block is, row 0 at the bottom."""
    grid = [[0] * WIDTH for _ in range(HEIGHT)]
    for b in blocks:
        for c, r in b.cells():
            grid[r][c] = 1
    return grid


def ascii_art(blocks: Iterable[Block]) -> str:
    """The grid as text, top row first: ``.`` empty, ``o`` b11, ``|`` b13, ``=`` b31."""
    mark = {"b11": "o", "b13": "|", "b31": "="}
    grid = [["."] * WIDTH for _ in range(HEIGHT)]
    for b in blocks:
        for c, r in b.cells():
            grid[r][c] = mark[b.kind]
    return "\n".join("".join(row) for row in reversed(grid))
