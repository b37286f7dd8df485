"""Level images as the competition's evaluator renders them for the letter classifier.

After the level has run for 10 s, the evaluator draws every block black on a white
background: an orthographic camera centred on the structure's bounding box (the union
of the blocks' collider boxes) and fitted to it (the box's height fills the view, or
its width when it is wider than tall) renders ``size - 2 · margin`` pixels square,
pasted into a ``size`` × ``size`` white image at ``margin`` from the edges: 1024 and
100 in the competition (``BatchSimilarityTest``).

:func:`render` draws blocks given as :class:`Pose` (centre, size as placed, rotation);
:func:`poses` turns a simulation's end positions (or the placed positions) into them.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from .grid import Block
from .unity import place

SIZE = 1024
MARGIN = 100


class Pose(NamedTuple):
    x: float
    y: float
    w: float  #: width as placed (before ``angle``)
    h: float
    angle: float  #: radians, counter-clockwise, relative to the placed orientation


def poses(blocks: Sequence[Block], simulation=None) -> list[Pose]:
    """Every block's pose: where it ended in ``simulation`` (:class:`~.physics.Simulation`), else as placed."""
    out = []
    for i, p in enumerate(place(blocks)):
        if simulation is None:
            out.append(Pose(p.x, p.y, p.w, p.h, 0.0))
        else:
            x, y = simulation.end[i]
            rot = math.radians(p.rotation)
            out.append(Pose(x, y, p.w, p.h, simulation.angles[i] - rot))
    return out


def _corners(p: Pose) -> list[tuple[float, float]]:
    c, s = math.cos(p.angle), math.sin(p.angle)
    out = []
    for dx, dy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
        ax, ay = dx * p.w / 2, dy * p.h / 2
        out.append((p.x + ax * c - ay * s, p.y + ax * s + ay * c))
    return out


def render(blocks: Sequence[Pose], size: int = SIZE, margin: int = MARGIN):
    """A grayscale PIL image (mode ``"L"``): the blocks black on white, framed as the evaluator frames them.

    An empty level gives a white image.
    """
    from PIL import Image, ImageDraw

    img = Image.new("L", (size, size), 255)
    if not blocks:
        return img
    polys = [_corners(p) for p in blocks]
    xs = [x for poly in polys for x, _ in poly]
    ys = [y for poly in polys for _, y in poly]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    view = size - 2 * margin
    span = max(x1 - x0, y1 - y0, 1e-9)  # a square view: the longer side of the box fills it
    scale = view / span
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    draw = ImageDraw.Draw(img)
    for poly in polys:
        draw.polygon([((x - cx) * scale + size / 2, (cy - y) * scale + size / 2) for x, y in poly], fill=0)
    return img
