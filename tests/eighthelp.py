"""Helpers for the tests of the "8" world: the committed arc cut and small task files pointing at it."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

FIX = Path(__file__).resolve().parent / "fixtures" / "eight"
ARCS = FIX / "arcs"


@lru_cache(maxsize=None)
def arc(arc_id: str = "hallway-eight"):
    from worldmodel.worlds.eight.arcs import load_arc

    return load_arc(ARCS, arc_id)


@lru_cache(maxsize=None)
def world(arc_id: str = "hallway-eight", difficulty: str = "normal"):
    from worldmodel.worlds.eight.world import build_world

    return build_world(arc(arc_id), difficulty)


def write_task(folder: Path, name: str = "eight-test", difficulty: str = "normal", arcs=("hallway-eight",),
               difficulties=None, registers=("normal",), episodes: int = 3, max_rounds: int = 40,
               extra: str = "") -> Path:
    """A small eight task in ``folder`` (its arcs from the committed fixture)."""
    diffs = list(difficulties or [difficulty])
    text = f'''name = "{name}"
domain = "eight"
seed = 0

[world]
arc = "{arcs[0]}"
difficulty = "{difficulty}"
arcs_dir = "{ARCS}"

[data]
n_train = 200
n_val = 20
n_test = 20
max_len = 64

[sampler]
max_prefix = 48

[agent]
arcs = {list(arcs)!r}
difficulties = {diffs!r}
registers = {list(registers)!r}
episodes = {episodes}
max_rounds = {max_rounds}

[model]
n_layer = 1
n_embd = 32
n_head = 2
n_positions = 72

[train]
steps = 30
batch_size = 16
lr = 3e-3
warmup = 5
eval_every = 30
keep = "last"

[evaluate]
epsilon = 0.01
M = 8
k = 3
max_boundary = 50
trials = 12
max_sample_len = 12
probe_sequences = 40
probe_epochs = 5
{extra}'''.replace("'", '"')
    path = Path(folder) / f"{name}.toml"
    path.write_text(text)
    return path
