"""Science Birds' geometry of a block-drop level, in Unity units, and its level XML.

The competition's converter places grid cell ``(column, row)`` at Unity coordinates
with cells :data:`CELL` = 0.2401 units wide and tall, after shifting the structure so
that its leftmost occupied column is column 0; the structure's bottom-left corner is
:data:`ORIGIN` = (2, -3.5), the top of the ground. The blocks themselves are Science
Birds' prefabs, a little smaller than the cells they fill (their box colliders):

=========  ==============  ========================  =================
drop kind  prefab          collider (w × h)          rotation
=========  ==============  ========================  =================
``b11``    ``SquareTiny``  0.22 × 0.21               0
``b31``    ``RectSmall``   0.70 × 0.22               0
``b13``    ``RectSmall``   0.70 × 0.22 → 0.22 × 0.70  90
=========  ==============  ========================  =================

So a block is placed centred in its cells and settles through the small gaps the
grid leaves below it (0.0301 units under a ``b11``, 0.0201 under a ``b31``, 0.0203
under a ``b13``) when the physics starts; a tall stack sinks by the sum of its gaps.

:func:`level_xml` writes the level as the competition's converter does (wood blocks,
one red bird, the slingshot at (-9, -2.5)), for loading into Science Birds itself.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from .grid import Block

CELL = 0.2401  #: a grid cell's width and height, Unity units
ORIGIN = (2.0, -3.5)  #: Unity position of the structure's bottom-left corner (the ground's top)
#: drop kind -> (prefab, collider width, collider height, rotation in degrees) as placed
PREFABS = {"b11": ("SquareTiny", 0.22, 0.21, 0), "b31": ("RectSmall", 0.70, 0.22, 0),
           "b13": ("RectSmall", 0.22, 0.70, 90)}


class Placed(NamedTuple):
    """A block as Science Birds places it: prefab, centre ``(x, y)``, size ``(w, h)`` as placed, rotation."""

    kind: str
    prefab: str
    x: float
    y: float
    w: float
    h: float
    rotation: int


def shift(blocks: Sequence[Block]) -> int:
    """Columns the converter shifts the structure left by (its leftmost occupied column)."""
    return min((b.left for b in blocks), default=0)


def place(blocks: Sequence[Block]) -> list[Placed]:
    """Every block's Unity placement, in drop order (the converter's formula)."""
    s = shift(blocks)
    out = []
    for b in blocks:
        prefab, w, h, rot = PREFABS[b.kind]
        x = (b.left - s) * CELL + b.width * CELL / 2 + ORIGIN[0]
        y = b.row * CELL + b.height * CELL / 2 + ORIGIN[1]
        out.append(Placed(b.kind, prefab, x, y, w, h, rot))
    return out


def _num(v: float) -> str:
    return f"{v:.6f}".rstrip("0").rstrip(".")


def level_xml(blocks: Sequence[Block]) -> str:
    """The Science Birds level XML for ``blocks`` (the competition converter's layout)."""
    placed = place(blocks)
    from .grid import occupancy

    grid = occupancy(blocks)
    grid_width = max(sum(row) for row in grid)  # the converter's content width: the fullest row
    grid_height = max((r + 1 for r, row in enumerate(grid) if any(row)), default=0)
    width = abs(ORIGIN[0]) + grid_width * CELL
    height = abs(ORIGIN[1]) + grid_height * CELL
    camera = max(max(height * 1.6, width) * 2, 17.0)
    lines = ['<?xml version="1.0" encoding="utf-16"?>', f'<Level width="{int(width / 18) + 3}">',
             f'  <Camera x="{_num(ORIGIN[0])}" y="0" minWidth="{_num(camera)}" maxWidth="{_num(camera + 5)}" />',
             "  <Birds>", '    <Bird type="BirdRed" />', "  </Birds>", '  <Slingshot x="-9" y="-2.5" />',
             "  <GameObjects>"]
    for p in placed:
        lines.append(f'    <Block type="{p.prefab}" material="wood" x="{_num(p.x)}" y="{_num(p.y)}" '
                     f'rotation="{p.rotation}" />')
    lines += ["  </GameObjects>", "</Level>"]
    return "\n".join(lines) + "\n"
