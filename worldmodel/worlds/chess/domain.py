"""The chess domain: random, engine and PGN games over SAN or UCI move tokens.

Task keys read here (see ``tasks/chess*.toml``)::

    [world]
    notation = "san"              # "san" (PGN strings, 42,018 tokens) or "uci" (1,968 tokens)

    [data]                        # defaults for every dataset
    default = "random"            # the dataset used when a command names none
    max_plies = 120               # games are cut after this many moves
    n_val = 500
    n_test = 500

    [data.random]                 # uniformly random legal games
    n_train = 20000

    [data.engine]                 # games of a simple engine against itself
    n_train = 20000
    player = "greedy"             # "greedy" (the material player of players.py) or "uci"
    engine = "/usr/games/stockfish"   # player = "uci": the engine's path (optional; nothing needs one)
    nodes = 1000                  # player = "uci": nodes per move

    [data.pgn]                    # games read from a file, one game's movetext per line
    file = "games.txt"            # ";1.e4 e5 2.Nf3 …" (Karvonen's layout) or "1. e4 e5 … 1-0"

    [sampler]
    games = 1000                  # random games behind compression / distinction pairs
    seed = 1                      # offset added to the task seed for the pool
    max_plies = 60                # length of the pool's games
    min_len = 3                   # shortest compression prefix
    tries = 40                    # swaps tried per game for a transposition

Each sequence is one game's moves in the world's notation, no result, no end token;
``pgn`` games are replayed with python-chess and rewritten in that notation (a move that
is not legal stops with the file and line). The true boundary is sampled from random
continuations (:attr:`ChessDomain.boundary`), as for Othello.
"""

from __future__ import annotations

from pathlib import Path

import chess

from ...errors import WorldModelError
from ...progress import wanted
from ...tasks import Domain
from .notation import movetext_moves
from .players import EnginePlayer, GreedyPlayer, RandomPlayer, play_games
from .sampler import ChessSampler
from .world import NOTATIONS, ChessWorld

_SPLITS = {"n_train": int, "n_val": int, "n_test": int, "max_plies": int}
_ENGINE = {**_SPLITS, "player": str, "engine": str, "nodes": int}
_PGN = {**_SPLITS, "file": str}
DATASETS = ("random", "engine", "pgn")


def _count(cfg: dict, key: str, default: int, where: str, low: int = 0) -> int:
    value = cfg.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise WorldModelError(f"{where}: {key} must be a whole number >= {low}, got {value!r}")
    return value


class ChessDomain(Domain):
    """Chess games: ``random`` legal games, ``engine`` games, and (with a file) ``pgn`` games."""

    #: distinction's true boundary comes from random valid continuations (positions cannot be enumerated)
    boundary = "sampled"

    schema = {
        "world": {"notation": str},
        "data": {"default": str, **_SPLITS, "random": _SPLITS, "engine": _ENGINE, "pgn": _PGN},
        "sampler": {"games": int, "seed": int, "max_plies": int, "min_len": int, "tries": int},
    }

    def build_world(self) -> ChessWorld:
        notation = self.task.section("world").get("notation", "san")
        if notation not in NOTATIONS:
            raise WorldModelError(f"task {self.task.path}: [world] notation must be one of {', '.join(NOTATIONS)}, "
                                  f"got {notation!r}")
        return ChessWorld(notation)

    def sampler(self) -> ChessSampler:
        cfg = self.task.section("sampler")
        where = f"task {self.task.path} [sampler]"
        return ChessSampler(self.world, games=_count(cfg, "games", 1000, where, 2),
                            pool_seed=self.task.seed + _count(cfg, "seed", 1, where),
                            max_plies=_count(cfg, "max_plies", 60, where, 4), min_len=_count(cfg, "min_len", 3, where, 3),
                            tries=_count(cfg, "tries", 40, where, 1))

    def datasets(self) -> list[str]:
        """``random``, ``engine`` and, when ``[data.pgn] file`` is set, ``pgn``; ``[data] default`` first."""
        names = ["random", "engine"] + (["pgn"] if "file" in self._data_cfg("pgn") else [])
        first = self.task.section("data").get("default")
        if first is not None:
            if first not in names:
                raise WorldModelError(f"task {self.task.path}: [data] default = {first!r} is not one of {', '.join(names)}")
            names.remove(first)
            names.insert(0, first)
        return names

    def _data_cfg(self, dataset: str) -> dict:
        data = self.task.section("data")
        own = data.get(dataset, {})
        if not isinstance(own, dict):
            raise WorldModelError(f"task {self.task.path}: [data.{dataset}] must be a table")
        return {**{k: v for k, v in data.items() if not isinstance(v, dict)}, **own}

    def max_plies(self, dataset: str) -> int:
        """The longest game of ``dataset`` (its ``max_plies``, default 120): every game is cut there."""
        return _count(self._data_cfg(dataset), "max_plies", 120, f"task {self.task.path} [data.{dataset}]", 1)

    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        if dataset not in self.datasets():
            raise WorldModelError(f"task {self.task.name}: unknown chess dataset {dataset!r} "
                                  f"(known: {', '.join(self.datasets())})")
        where = f"task {self.task.path} [data.{dataset}]"
        cfg = self._data_cfg(dataset)
        n_train = 0 if dataset == "pgn" else 20000
        sizes = {s: _count(cfg, f"n_{s}", d, where) for s, d in (("train", n_train), ("val", 500), ("test", 500))}
        max_plies = self.max_plies(dataset)
        if dataset == "pgn":  # in file order: test, val, then train (n_train = 0: all the rest)
            games = self._pgn_games(cfg, where, max_plies)
            if len(games) <= sizes["val"] + sizes["test"]:
                raise WorldModelError(f"{where}: {len(games)} games, too few for val={sizes['val']} and test={sizes['test']}")
            test, val = games[:sizes["test"]], games[sizes["test"]:sizes["test"] + sizes["val"]]
            train = games[sizes["test"] + sizes["val"]:]
            return {"train": train[:sizes["train"]] if sizes["train"] else train, "val": val, "test": test}
        player = self._player(dataset, cfg, where)
        total = sum(sizes.values())
        try:
            games = play_games(self.world, player, total, self.task.seed, max_plies, progress=wanted(total > 2000))
        finally:
            if hasattr(player, "close"):
                player.close()
        a, b = sizes["train"], sizes["train"] + sizes["val"]
        return {"train": games[:a], "val": games[a:b], "test": games[b:]}

    def _player(self, dataset: str, cfg: dict, where: str):
        if dataset == "random":
            return RandomPlayer()
        kind = cfg.get("player", "greedy")
        if kind == "greedy":
            return GreedyPlayer()
        if kind == "uci":
            if "engine" not in cfg:
                raise WorldModelError(f"{where}: player = \"uci\" needs engine = \"/path/to/engine\"")
            return EnginePlayer(cfg["engine"], _count(cfg, "nodes", 1000, where, 1))
        raise WorldModelError(f"{where}: player must be \"greedy\" or \"uci\", got {kind!r}")

    def _pgn_games(self, cfg: dict, where: str, max_plies: int) -> list[list[str]]:
        path = Path(cfg["file"])
        if not path.is_absolute():
            path = (self.task.path.parent / path) if (self.task.path.parent / path).exists() else path
        if not path.exists():
            raise WorldModelError(f"{where}: file {path} does not exist")
        games = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            sans = movetext_moves(line)
            if not sans:
                continue
            board, tokens = chess.Board(), []
            for san in sans[:max_plies]:
                try:
                    move = board.parse_san(san)
                except ValueError:
                    raise WorldModelError(f"{path}:{lineno}: move {len(tokens) + 1} ({san!r}) is not legal") from None
                tokens.append(self.world.token_of(board, move))
                board.push(move)
            games.append(tokens)
        return games
