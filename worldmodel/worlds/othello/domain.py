"""The Othello domain: synthetic and championship move transcripts on an n × n board.

Task keys read here (see ``tasks/othello-*.toml``)::

    [world]
    size = 8                       # even board size; 8 is real Othello

    [data]                         # defaults for both datasets
    default = "synthetic"          # the dataset used when a command names none
    n_val = 500
    n_test = 500

    [data.synthetic]               # uniformly random legal games, seeded by the task seed
    n_train = 20000

    [data.greedy]                  # games of two greedy positional players (player.py), any size <= 8
    n_train = 20000
    explore = 0.1                  # share of moves played uniformly at random instead

    [data.championship]            # WTHOR games (8x8 only)
    folder = "..."                 # optional; else $WORLDMODEL_OTHELLO_DATA, else shared:othello
                                   # ($WORLDMODEL_SHARED, the `worldmodel fetch wthor` cache, ../shared/data)
    years = [1977, 2025]           # inclusive
    include_tournaments = []       # case-insensitive substrings; empty = all
    exclude_tournaments = ["Internet", "XOT"]
    exclude_players = ["Saio", "Ntest", "Zebra", "Logistello", "Edax", "Cassio"]
    complete_only = true
    n_train = 0                    # 0 = every distinct game left after test and val

    [sampler]
    games = 1000                   # simulated random games behind compression/distinction pairs
    seed = 1                       # offset added to the task seed for the pool

Each sequence is one game's moves as square names, no pass tokens, no end token.

The board is far too large to enumerate continuations, so the metric engine must use
the *sampled* true boundary (``worldmodel.dfa.sampled_boundary``: minimal
distinguishing prefixes of M random valid continuations, as in the paper's App. D):
the class attribute :attr:`OthelloDomain.boundary` says so.
"""

from __future__ import annotations

import numpy as np

from ...datastream import PackedSequences, SequenceStream
from ...errors import WorldModelError
from ...progress import wanted
from ...api.domain import Domain
from .engine import random_games, random_games_array
from .player import player_games_array
from .sampler import OthelloSampler
from .wthor import load_games
from .world import OthelloWorld

DEFAULT_EXCLUDE_TOURNAMENTS = ("Internet", "XOT")
DEFAULT_EXCLUDE_PLAYERS = ("Saio", "Ntest", "Zebra", "Logistello", "Edax", "Cassio")

_SPLITS = {"n_train": int, "n_val": int, "n_test": int}
_CHAMPIONSHIP = {**_SPLITS, "folder": str, "years": list, "include_tournaments": list, "exclude_tournaments": list,
                 "exclude_players": list, "complete_only": bool}


def _count(cfg: dict, key: str, default: int, where: str) -> int:
    value = cfg.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise WorldModelError(f"{where}: {key} must be a whole number >= 0, got {value!r}")
    return value


#: Third seed word of the training stream, so streamed games never reuse the files' uniforms.
STREAM_TAG = 0x5157


class OthelloStream(SequenceStream):
    """Fresh uniformly random legal games, block by block (the synthetic training stream).

    Block ``i`` plays one game per row of ``default_rng([seed, STREAM_TAG, i])``
    uniforms with the batched engine (same move rule as :func:`~.engine.random_games`),
    so it never repeats the games of the data files, which read other uniforms.
    """

    def __init__(self, world: OthelloWorld, seed: int, what: str = "streamed Othello games"):
        if world.size > 8:
            raise WorldModelError(f"{what} need a board of at most 8x8, not {world.size}x{world.size}")
        self.size = world.size
        self.seed = int(seed)
        self.max_len = world.size * world.size - 4
        lut = np.full(world.geometry.squares, -1, dtype=np.int16)
        for i, t in enumerate(world.tokens):
            lut[world.square_index(t)] = i
        self._lut = lut

    def block(self, index: int, size: int) -> PackedSequences:
        u = np.random.default_rng([self.seed, STREAM_TAG, int(index)]).random((int(size), self.max_len))
        squares = random_games_array(self.size, u)
        return PackedSequences.from_padded(np.where(squares >= 0, self._lut[np.maximum(squares, 0)], -1))


#: Seed words of the greedy players' stream and of their data files (disjoint uniforms).
GREEDY_STREAM_TAG = 0x6EED
GREEDY_FILES_TAG = 0x6EEF


class GreedyStream(OthelloStream):
    """Fresh games of two greedy positional players (:func:`~.player.player_games_array`), block by block.

    Block ``i`` reads ``default_rng([seed, tag, i])`` uniforms, two per move.
    """

    def __init__(self, world: OthelloWorld, seed: int, explore: float, tag: int = GREEDY_STREAM_TAG):
        super().__init__(world, seed, "greedy Othello games")
        self.explore, self.tag = float(explore), int(tag)

    def block(self, index: int, size: int) -> PackedSequences:
        u = np.random.default_rng([self.seed, self.tag, int(index)]).random((int(size), self.max_len, 2))
        squares = player_games_array(self.size, u, self.explore)
        return PackedSequences.from_padded(np.where(squares >= 0, self._lut[np.maximum(squares, 0)], -1))


class OthelloDomain(Domain):
    """Othello move transcripts: ``synthetic`` random legal games and ``championship`` WTHOR games."""

    #: How the metric engine gets the true Myhill–Nerode boundary for distinction:
    #: "sampled" (from M random valid continuations), since an Othello position's
    #: continuations cannot be enumerated. Domains without the attribute are "exact".
    boundary = "sampled"

    schema = {
        "world": {"size": int},
        "data": {"default": str, **_CHAMPIONSHIP, "synthetic": _SPLITS, "greedy": {**_SPLITS, "explore": float},
                 "championship": _CHAMPIONSHIP},
        "sampler": {"games": int, "seed": int},
    }

    def build_world(self) -> OthelloWorld:
        size = self.task.section("world").get("size", 8)
        if not isinstance(size, int) or isinstance(size, bool):
            raise WorldModelError(f"task {self.task.where}: [world] size must be an even integer, got {size!r}")
        return OthelloWorld(size)

    def sampler(self) -> OthelloSampler:
        cfg = self.task.section("sampler")
        where = f"task {self.task.where} [sampler]"
        games = _count(cfg, "games", 1000, where)
        offset = _count(cfg, "seed", 1, where)
        return OthelloSampler(self.world, games=games, pool_seed=self.task.seed + offset)

    def datasets(self) -> list[str]:
        """``synthetic`` (and ``championship`` on 8×8), ``greedy``; ``[data] default`` names the one listed first."""
        names = ["synthetic", "championship", "greedy"] if self.world.size == 8 else ["synthetic", "greedy"]
        first = self.task.section("data").get("default")
        if first is not None:
            if first not in names:
                raise WorldModelError(f"task {self.task.where}: [data] default = {first!r} is not one of {', '.join(names)}")
            names.remove(first)
            names.insert(0, first)
        return names

    def stream(self, dataset: str) -> OthelloStream | None:
        """Synthetic games can be streamed (fresh games every step); championship games are file-only."""
        if dataset == "greedy":
            return GreedyStream(self.world, self.task.seed, self._explore())
        return OthelloStream(self.world, self.task.seed) if dataset == "synthetic" else None

    def _explore(self) -> float:
        explore = self._data_cfg("greedy").get("explore", 0.1)
        if isinstance(explore, bool) or not isinstance(explore, (int, float)) or not 0.0 <= explore <= 1.0:
            raise WorldModelError(f"task {self.task.path} [data.greedy]: explore must be a number in [0, 1], "
                                  f"got {explore!r}")
        return float(explore)

    def _data_cfg(self, dataset: str) -> dict:
        """``[data]`` keys shared by both datasets, overridden by ``[data.<dataset>]``."""
        data = self.task.section("data")
        own = data.get(dataset, {})
        if not isinstance(own, dict):
            raise WorldModelError(f"task {self.task.where}: [data.{dataset}] must be a table")
        shared = {k: v for k, v in data.items() if not isinstance(v, dict)}
        return {**shared, **own}

    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        if dataset == "synthetic":
            return self._synthetic()
        if dataset == "greedy":
            return self._greedy()
        if dataset == "championship":
            if self.world.size != 8:
                raise WorldModelError(f"task {self.task.name}: championship games exist only for 8x8, not {self.world.size}x{self.world.size}")
            return self._championship()
        raise WorldModelError(f"task {self.task.name}: unknown Othello dataset {dataset!r} (known: {', '.join(self.datasets())})")

    def _synthetic(self) -> dict[str, list[list[str]]]:
        where = f"task {self.task.where} [data.synthetic]"
        cfg = self._data_cfg("synthetic")
        sizes = {s: _count(cfg, f"n_{s}", d, where) for s, d in (("train", 20000), ("val", 500), ("test", 500))}
        total = sum(sizes.values())
        names = [self.world.geometry.name(i) for i in range(self.world.geometry.squares)]
        games = random_games(total, self.world.size, self.task.seed, progress=wanted(total > 50000))
        seqs = [[names[s] for s in g] for g in games]
        a, b = sizes["train"], sizes["train"] + sizes["val"]
        return {"train": seqs[:a], "val": seqs[a:b], "test": seqs[b:]}

    def _greedy(self) -> dict[str, list[list[str]]]:
        """Greedy players' games: block 0 of their file stream is test, block 1 val, block 2 train."""
        where = f"task {self.task.path} [data.greedy]"
        cfg = self._data_cfg("greedy")
        stream = GreedyStream(self.world, self.task.seed, self._explore(), tag=GREEDY_FILES_TAG)
        out = {}
        for b, (split, default) in enumerate((("test", 500), ("val", 500), ("train", 20000))):
            packed = stream.block(b, _count(cfg, f"n_{split}", default, where))
            out[split] = [[self.world.tokens[i] for i in packed[r]] for r in range(len(packed))]
        return out

    def _championship(self) -> dict[str, list[list[str]]]:
        where = f"task {self.task.where} [data.championship]"
        cfg = self._data_cfg("championship")
        years = cfg.get("years")
        if years is not None:
            if not (isinstance(years, list) and len(years) == 2 and all(isinstance(y, int) for y in years)):
                raise WorldModelError(f"{where}: years must be [first, last], got {years!r}")
            years = (years[0], years[1])
        try:
            games, report = load_games(
                cfg.get("folder"),
                years=years,
                include_tournaments=tuple(cfg.get("include_tournaments", ())),
                exclude_tournaments=tuple(cfg.get("exclude_tournaments", DEFAULT_EXCLUDE_TOURNAMENTS)),
                exclude_players=tuple(cfg.get("exclude_players", DEFAULT_EXCLUDE_PLAYERS)),
                complete_only=bool(cfg.get("complete_only", True)),
                progress=wanted(),
            )
        except WorldModelError as exc:
            raise WorldModelError(f"championship dataset of task {self.task.name}: {exc}") from None
        # one copy of each distinct transcript, then a seeded shuffle into test / val / train
        unique = list(dict.fromkeys(g.moves for g in games))
        order = np.random.default_rng(self.task.seed).permutation(len(unique))
        seqs = [list(unique[i]) for i in order]
        n_test = _count(cfg, "n_test", 1000, where)
        n_val = _count(cfg, "n_val", 1000, where)
        n_train = _count(cfg, "n_train", 0, where)
        if n_test + n_val >= len(seqs):
            raise WorldModelError(
                f"{where}: {len(seqs)} distinct games after filtering ({report.summary()}), "
                f"too few for test={n_test} and val={n_val}"
            )
        test, val, train = seqs[:n_test], seqs[n_test:n_test + n_val], seqs[n_test + n_val:]
        if n_train:
            train = train[:n_train]
        return {"train": train, "val": val, "test": test}
