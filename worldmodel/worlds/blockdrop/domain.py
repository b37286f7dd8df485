"""The block-drop domain: ChatGPT4PCG drop programs as sequences.

Task keys (see ``tasks/blockdrop*.toml``)::

    [world]
    variant = "grid"        # "grid": a drop is valid when it lands in the grid;
                            # "stable": also when the structure still stands (the static rule)
    letters = false         # sequences open with the letter they build (<A> ... <Z>)

    [data]
    n_train = 20000
    n_val = 500
    n_test = 500
    min_len = 1             # random programs: drops per program, uniform in min_len..max_len
    max_len = 20
    letters = "ILU"         # letters world: the letters to build ("all": every letter with a glyph)

    [sampler]
    programs = 1000         # random programs behind compression / distinction pairs
    min_len = 2
    max_len = 12
    seed = 1                # offset added to the task seed for the pool
    source = "random"       # the pool: random programs, or "letters" (the default in a letters world)

Datasets: ``random`` (worlds without letters): uniformly random valid drops, then
``end``; ``letters`` (letters worlds): programs of the constructive letter generator
(:mod:`.letters`), ``[<L>, drops..., end]``. Both are seeded by the task seed.

A drop program's continuations cannot be enumerated (58 drops a step), so the metric
engine uses the *sampled* true boundary (:attr:`BlockDropDomain.boundary`).
"""

from __future__ import annotations

import numpy as np

from ...errors import WorldModelError
from ...progress import wanted
from ...api import Domain
from .letters import GLYPHS, letter_programs
from .sampler import BlockDropSampler, random_program
from .world import END, VARIANTS, BlockDropWorld

_SPLITS = (("train", 20000), ("val", 500), ("test", 500))


def _whole(cfg: dict, key: str, default: int, where: str, low: int = 0) -> int:
    value = cfg.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise WorldModelError(f"{where}: {key} must be a whole number >= {low}, got {value!r}")
    return value


def parse_letters(text: str, where: str = "letters") -> list[str]:
    """``"ILU"``, ``"I,L,U"`` or ``"all"`` -> the letters, each one the generator can build."""
    if text.strip().lower() == "all":
        return list(GLYPHS)
    letters = [c for c in text.replace(",", "").replace(" ", "").upper()]
    bad = [c for c in letters if c not in GLYPHS]
    if not letters or bad:
        raise WorldModelError(f"{where}: {text!r} names {'no letter' if not letters else repr(bad[0])}; "
                              f"the letter generator builds {''.join(GLYPHS)}")
    return list(dict.fromkeys(letters))


class BlockDropDomain(Domain):
    """Drop programs in the ``grid`` or ``stable`` world: random programs, or letters."""

    boundary = "sampled"

    schema = {
        "world": {"variant": str, "letters": bool},
        "data": {"n_train": int, "n_val": int, "n_test": int, "min_len": int, "max_len": int, "letters": str},
        "sampler": {"programs": int, "min_len": int, "max_len": int, "seed": int, "source": str},
    }

    def build_world(self) -> BlockDropWorld:
        w = self.task.section("world")
        variant = w.get("variant", "grid")
        if variant not in VARIANTS:
            raise WorldModelError(f"task {self.task.path}: [world] variant must be one of "
                                  f"{', '.join(VARIANTS)}, got {variant!r}")
        return BlockDropWorld(variant, letters=bool(w.get("letters", False)))

    def datasets(self) -> list[str]:
        return ["letters"] if self.world.letters else ["random"]

    def sampler(self) -> BlockDropSampler:
        cfg = self.task.section("sampler")
        where = f"task {self.task.path} [sampler]"
        lo, hi = _whole(cfg, "min_len", 2, where, 1), _whole(cfg, "max_len", 12, where, 1)
        if lo > hi:
            raise WorldModelError(f"{where}: min_len must be <= max_len")
        source = cfg.get("source", "letters" if self.world.letters else "random")
        if source not in ("random", "letters") or (source == "letters" and not self.world.letters):
            raise WorldModelError(f"{where}: source must be 'random'{' or letters' if self.world.letters else ''}, "
                                  f"got {source!r}")
        return BlockDropSampler(self.world, programs=_whole(cfg, "programs", 1000, where, 2), min_len=lo,
                                max_len=hi, pool_seed=self.task.seed + _whole(cfg, "seed", 1, where),
                                letters=self.letters() if source == "letters" else None)

    def letters(self) -> list[str]:
        return parse_letters(self.task.section("data").get("letters", "ILU"), f"task {self.task.path} [data] letters")

    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        if dataset not in self.datasets():
            raise WorldModelError(f"task {self.task.name}: unknown dataset {dataset!r} "
                                  f"(known: {', '.join(self.datasets())})")
        d = self.task.section("data")
        where = f"task {self.task.path} [data]"
        sizes = {s: _whole(d, f"n_{s}", default, where, 1) for s, default in _SPLITS}
        if dataset == "letters":
            total = sum(sizes.values())
            seqs = letter_programs(self.letters(), total, self.task.seed, progress=wanted(total > 2000))
        else:
            lo, hi = _whole(d, "min_len", 1, where, 1), _whole(d, "max_len", 20, where, 1)
            if lo > hi:
                raise WorldModelError(f"{where}: min_len must be <= max_len")
            rng = np.random.default_rng([self.task.seed, 0xB0])
            seqs = []
            for _ in range(sum(sizes.values())):
                prog = random_program(self.world, int(rng.integers(lo, hi + 1)), rng)
                seqs.append(prog + [END])
        a, b = sizes["train"], sizes["train"] + sizes["val"]
        return {"train": seqs[:a], "val": seqs[a:b], "test": seqs[b:]}
