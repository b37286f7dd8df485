"""Prompt templates for the generation protocol: the project's own sample prompt and its five variants.

The paper (Taveekitworachai et al., CoG 2023) studied five variants of its sample
prompt: each removes one part, and v5 keeps everything. These are written here, in
this project's words, with the same parts, so the experiment's design can be run
against any chat model:

* **v1** — without the stability constraint;
* **v2** — without the code snippets describing ``ab_drop`` (the grid initialisation
  and the function's definition);
* **v3** — without the role of a Tetris player;
* **v4** — without the words "as in the block-stacking problem";
* **v5** — everything.

Each holds the marker ``<OBJECT>`` (replaced by the target letter) and passes the
competition's rules (:func:`~.scoring.qualify`). :func:`template` returns one by name;
a ``--prompt`` that is not a name is read as a file.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import WorldModelError

_INTRO = ("Write a sequence of ab_drop() calls that builds a stable structure shaped like the capital "
          "letter <OBJECT>, the goal, while keeping every hard constraint below. The order and the slots of "
          "the drops decide the result{stacking}.")
_STACKING = ", so choose them with the methods used for the block-stacking problem"
_ROLE_TETRIS = "1. Role\nYou play a game like Tetris: you drop blocks one at a time to build a structure that reaches the goal and keeps the hard constraints."
_ROLE_PLAIN = "1. Role\nYou drop blocks one at a time to build a structure that reaches the goal and keeps the hard constraints."
_DEFS = """2. Definitions
Slots: the width of the map is split into W = 20 slots, slot 0 on the far left and slot 19 on the far right.
Layers: the height of the map is split into H = 16 layers, layer 0 at the bottom and layer 15 at the top.
Base: the floor of the map, below layer 0."""
_INIT = """The map starts empty:
# the map as an empty W x H grid
grid = [[' '] * W for _ in range(H)]"""
_BLOCKS = """3. Blocks
Three kinds of block can be dropped:
b11, a square block 1 unit wide and 1 unit tall
b31, a flat block 3 units wide and 1 unit tall
b13, an upright block 1 unit wide and 3 units tall"""
_TOOL = """4. Tool
ab_drop(x, y) drops a block of type x from above layer 15 so that its centre is over slot y. The block falls straight down until it lands on the base or on a block dropped before it. Drop the blocks of the lower part of the structure first."""
_SNIPPET = """In code, the function behaves like this:
def ab_drop(x, y):
    # x: the block type; y: the slot its centre is over, 0 to W-1
    layer = H - 1
    # fall while the cells below are free
    while layer > 0 and grid[layer - 1][y] == ' ':
        layer = layer - 1
    grid[layer][y] = x"""
_STABILITY = ("5.{n} Stability: a hard constraint. Gravity pulls every block down{stacking_short}: a block must be "
              "dropped where what lies under it can carry it, so that the structure stands after every drop and "
              "does not fall over. A badly balanced load makes the structure collapse.")
_BOUNDARY = ("5.{n} Inside the map: a soft constraint, to keep when you can. No block may reach outside the map, "
             "past slot 0, slot 19 or layer 15.")
_OUTPUT = "6. Output\nGive the calls in one code block between three backticks, one ab_drop() call per line, with numbers only (no loops or variables)."


def _build(stability: bool = True, snippets: bool = True, tetris: bool = True, stacking: bool = True) -> str:
    parts = [_INTRO.format(stacking=_STACKING if stacking else ""), _ROLE_TETRIS if tetris else _ROLE_PLAIN,
             _DEFS + ("\n" + _INIT if snippets else ""), _BLOCKS, _TOOL + ("\n" + _SNIPPET if snippets else "")]
    cons = ["5. Constraints"]
    n = 1
    if stability:
        cons.append(_STABILITY.format(n=n, stacking_short=", as in the block-stacking problem" if stacking else ""))
        n += 1
    cons.append(_BOUNDARY.format(n=n))
    parts += ["\n".join(cons), _OUTPUT]
    return "\n\n".join(parts) + "\n"


VARIANTS = {
    "v1": _build(stability=False),
    "v2": _build(snippets=False),
    "v3": _build(tetris=False),
    "v4": _build(stacking=False),
    "v5": _build(),
}


def template(spec: str) -> tuple[str, str]:
    """``(name, text)`` of a built-in variant (``v1`` … ``v5``) or of a prompt file."""
    if spec in VARIANTS:
        return spec, VARIANTS[spec]
    path = Path(spec)
    if not path.is_file():
        raise WorldModelError(f"--prompt {spec!r} is neither a prompt file nor a built-in variant "
                              f"({', '.join(VARIANTS)})")
    try:
        return path.stem, path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise WorldModelError(f"prompt file {path} is not UTF-8 text") from None
