"""The static stability rule: does a structure stand, judged without simulating it?

Science Birds' evaluator counts a block as *moving* when its centre travels 0.1 Unity
units in 10 s. Two things move blocks in a level built by drops, and the rule checks
both on the structure as placed (:mod:`.unity` sizes and positions):

1. **Settling.** The grid's cells (0.2401 units) are a little taller than the blocks
   (0.21–0.22), so every block starts a small gap above what it rests on and sinks
   when the physics starts. A block's sink is the least, over what lies under it, of
   that support's sink plus the gap between them beyond :data:`REST_GAP` (the
   separation Box2D keeps between resting boxes, its polygon skins less its slop:
   0.016 units, measured on stacks of ``b11`` in :mod:`.physics`). A block sinking
   :data:`~.physics.THRESHOLD` = 0.1 or more is moving: a column of 9 ``b11`` is not
   stable, its top block sinks about 0.11 (Box2D: 0.106 under load).
2. **Equilibrium.** After settling, a block rests on the supports that touch it (those
   under it whose settled top is within :data:`ROCK` = 0.03 of the highest: so small a
   difference the block rocks onto all of them; the ground for row 0), each bearing
   load across its width widened by Box2D's polygon skin and slop (:data:`SKIN` = 0.015). The structure
   stands when there are non-negative vertical contact forces, at the two ends of
   every contact (the overlap of the two blocks' widths), that balance every block's
   weight (its area; wood's density is 1) and its torque about its centre — the
   rigid-block statics of stacking (a linear feasibility problem). Frictional side
   forces are left out: all contacts are horizontal and friction (4) is high, so
   toppling, not sliding, is how drop structures fail.

:func:`check` returns a :class:`Verdict` (stable or not, and why). The rule is fast
(a witness of the forces is tried first, top down; a linear program decides only
when the witness fails) so that the ``stable`` world can call it on every drop.
Agreement with the physics is measured by ``scripts/reproduce_blockdrop.py``
(``results/blockdrop/static-vs-physics.md``).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .grid import Block
from .unity import CELL, ORIGIN, PREFABS

REST_GAP = 0.016  #: separation Box2D keeps between two resting boxes (Unity units)
SINK_LIMIT = 0.1  #: the evaluator's movement threshold
SKIN = 0.015  #: Box2D's polygon skin (0.01) and linear slop (0.005): a box bears load this far past its edges
ROCK = 0.03  #: supports whose settled tops are this close all carry the block (it rocks onto them)
_TOUCH = 1e-6
_TOL = 1e-9
_BIG = 1 << 30


@dataclass(frozen=True)
class Verdict:
    stable: bool
    reason: str = ""  #: why not: ``"block 3 (b11 at slot 5) sinks 0.104"``, ``"... overhangs ..."``
    sinks: tuple[float, ...] = ()

    def __bool__(self) -> bool:
        return self.stable


class Geometry:
    """A structure as the rule sees it, built block by block (drop order).

    Per block: placed centre, x extent (widened by :data:`SKIN`), weight, sink, and
    the contacts it rests on; :meth:`extend` adds one dropped block in time linear in
    the structure (an owner map finds what lies under it), so the stable world's
    states carry their geometry along.
    """

    __slots__ = ("blocks", "placed", "lo", "hi", "bottom", "top", "sink", "contacts", "owner", "ends")

    def __init__(self):
        self.blocks: list[Block] = []
        self.placed = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.bottom: list[float] = []
        self.top: list[float] = []
        self.sink: list[float] = []
        self.contacts: list[tuple[int, int, float, float]] = []  #: (upper, lower or -1 for the ground, a, b)
        self.owner: dict[tuple[int, int], int] = {}
        self.ends: list[list[tuple[float, int]]] = []  #: per block: its contacts' ends (x, lower), sorted

    @classmethod
    def of(cls, blocks: Sequence[Block]) -> "Geometry":
        """The geometry of a structure; ``blocks`` in drop order, or any order bottom row first."""
        g = cls()
        for b in blocks:
            g = g.extend(b)
        return g

    def extend(self, b: Block) -> "Geometry":
        """A new geometry with ``b`` dropped on this one (this one is left as it is)."""
        g = Geometry.__new__(Geometry)
        g.blocks = self.blocks + [b]
        # Unity x positions depend on the converter's left shift; a block further left
        # moves every block by the same amount, which changes no force balance, so
        # positions here are unshifted (column 0 at the origin).
        prefab, w, h, _ = PREFABS[b.kind]
        x = b.left * CELL + b.width * CELL / 2 + ORIGIN[0]
        y = b.row * CELL + b.height * CELL / 2 + ORIGIN[1]
        g.placed = self.placed + [(x, w * h)]
        g.lo = self.lo + [x - w / 2 - SKIN]
        g.hi = self.hi + [x + w / 2 + SKIN]
        g.bottom = self.bottom + [y - h / 2]
        g.top = self.top + [y + h / 2]
        i = len(self.blocks)
        owner = dict(self.owner)
        for cell in b.cells():
            owner[cell] = i
        g.owner = owner
        under = sorted({self.owner[(c, b.row - 1)] for c in range(b.left, b.right) if (c, b.row - 1) in self.owner})
        if b.row == 0 or not under:
            sink = max(0.0, g.bottom[i] - ORIGIN[1] - REST_GAP)
            touching = [-1]
        else:
            drops = {j: self.sink[j] + max(0.0, g.bottom[i] - self.top[j] - REST_GAP) for j in under}
            sink = min(drops.values())
            touching = [j for j, d in drops.items() if d <= sink + ROCK]
        g.sink = self.sink + [sink]
        contacts = list(self.contacts)
        ends = []
        for j in touching:
            a, c = (g.lo[i], g.hi[i]) if j < 0 else (max(g.lo[i], g.lo[j]), min(g.hi[i], g.hi[j]))
            if c - a > _TOUCH:
                contacts.append((i, j, a, c))
                ends += [(a, j), (c, j)]
        g.contacts = contacts
        g.ends = self.ends + [sorted(ends)]
        return g

    def last_fails(self) -> str:
        """Why the last block dropped cannot stay put on its own (sinks too far, or its centre is
        outside what it rests on); ``""`` when it could (then :meth:`verdict` decides)."""
        i = len(self.blocks) - 1
        b = self.blocks[i]
        if self.sink[i] >= SINK_LIMIT:
            return f"block {i + 1} ({b.kind} at slot {b.x}) sinks {self.sink[i]:.3f}"
        ends = [e for (u, _, a, c) in self.contacts if u == i for e in (a, c)]
        if not ends or not min(ends) - _TOL <= self.placed[i][0] <= max(ends) + _TOL:
            return f"block {i + 1} ({b.kind} at slot {b.x}) overhangs what it rests on"
        return ""

    def verdict(self) -> Verdict:
        sinks = tuple(self.sink)
        for i, s in enumerate(self.sink):
            if s >= SINK_LIMIT:
                b = self.blocks[i]
                return Verdict(False, f"block {i + 1} ({b.kind} at slot {b.x}) sinks {s:.3f}", sinks)
        if not self.blocks:
            return Verdict(True)
        weight = [p[1] for p in self.placed]
        centre = [p[0] for p in self.placed]
        if _witness(self, weight, centre) or \
                _feasible(len(self.blocks), self.contacts, weight, centre):
            return Verdict(True, "", sinks)
        return Verdict(False, "no balance of contact forces holds every block", sinks)


def sinks(blocks: Sequence[Block]) -> list[float]:
    """How far each block's bottom settles when the gaps close (Unity units), drop order."""
    return list(Geometry.of(blocks).sink)


def check(blocks: Sequence[Block]) -> Verdict:
    """Apply the rule to a settled structure (its blocks in drop order)."""
    return Geometry.of(blocks).verdict()


def check_drop(geometry: Geometry, new: Block) -> tuple[Verdict, Geometry]:
    """The verdict on ``geometry`` with ``new`` dropped on it (a structure that stood), and the new geometry.

    The same verdict as :func:`check`, sooner when it is a no: the new block carries
    only its own weight (nothing rests on it yet), so it fails at once when it sinks
    too far or its centre lies outside the supports it touches.
    """
    g = geometry.extend(new)
    why = g.last_fails()
    if why:
        return Verdict(False, why, tuple(g.sink)), g
    return g.verdict(), g


def _witness(g: Geometry, weight, centre) -> bool:
    """Try one load path, top down: each block passes its load (weight plus what rests on it, as a
    resultant force and position) to the two support ends nearest on either side of the resultant.
    True means a balance of forces exists; False proves nothing (the linear program decides).
    Blocks are in drop order and rest only on earlier ones, so reverse order is top down."""
    n = len(g.blocks)
    force = list(weight)
    moment = [w * x for w, x in zip(weight, centre)]
    for i in range(n - 1, -1, -1):
        f = force[i]
        if f <= _TOL:
            continue
        ends = g.ends[i]
        if not ends:
            return False
        x = moment[i] / f
        k = bisect_right(ends, (x + 1e-9, _BIG))  # ends at or left of the resultant
        if k == 0:
            return False
        xa, ja = ends[k - 1]
        if xa >= x - 1e-9:  # an end right under the resultant takes it all
            if ja >= 0:
                force[ja] += f
                moment[ja] += f * xa
            continue
        if k == len(ends):
            return False
        xb, jb = ends[k]
        t = (x - xa) / (xb - xa)
        if ja >= 0:
            force[ja] += f * (1 - t)
            moment[ja] += f * (1 - t) * xa
        if jb >= 0:
            force[jb] += f * t
            moment[jb] += f * t * xb
    return True


def _feasible(n, contacts, weight, centre) -> bool:
    """Non-negative end forces on every contact balancing every block's force and torque (an LP)."""
    from scipy.optimize import linprog

    if not contacts:
        return False
    m = len(contacts)
    A = np.zeros((2 * n, 2 * m))
    rhs = np.zeros(2 * n)
    for i in range(n):
        rhs[2 * i] = weight[i]
        rhs[2 * i + 1] = 0.0
    for c, (i, j, a, b) in enumerate(contacts):
        # torque about each block's own centre keeps the rows well scaled
        for k, (px) in ((2 * c, a), (2 * c + 1, b)):
            A[2 * i, k] += 1.0
            A[2 * i + 1, k] += px - centre[i]
            if j >= 0:
                A[2 * j, k] -= 1.0
                A[2 * j + 1, k] -= px - centre[j]
    res = linprog(np.zeros(2 * m), A_eq=A, b_eq=rhs, bounds=(0, None), method="highs")
    return bool(res.status == 0)
