"""Reader for the WTHOR database of Othello games (Fédération Française d'Othello).

Files (all integers little-endian), as described in the data folder's PROVENANCE.md:

* every file starts with a 16-byte header: creation date (4 bytes), ``N1`` uint32 (game
  records, ``.wtb``), ``N2`` uint16 (name records, ``.JOU``/``.TRN``), the games' year
  uint16, board size (0 or 8 = 8×8), solitaire flag, theoretical-score depth, reserved;
* ``WTH_<year>.wtb``: ``N1`` records of 68 bytes: tournament index, black and white
  player indices (uint16 each), black's final disc count, black's theoretical score,
  then 60 move bytes ``10*row + col`` (row and col 1..8, col 1 = ``a``), 0 after the
  last move;
* ``WTH.JOU`` (players, 20 bytes each) and ``WTH.TRN`` (tournaments, 26 bytes each):
  NUL-padded Latin-1 names.

Passes are not recorded; :func:`load_games` replays every game with the engine and
infers them. Structural damage (a truncated file, a header that does not match the
file size, a record that cannot be decoded) raises :class:`WorldModelError` naming the
file and record. Problems of single games that can be classified (an undecodable move
byte, moves after the end marker, an illegal move, an unknown player or tournament
index) are counted in a :class:`LoadReport` by reason, or raise in ``strict`` mode.

The folder comes from an argument (``shared:othello`` allowed), else
``$WORLDMODEL_OTHELLO_DATA``, else ``shared:othello``: ``$WORLDMODEL_SHARED/othello``, the
user cache that ``worldmodel fetch wthor`` fills, or ``shared/data/othello`` beside the
repository (:func:`worldmodel.datasets.resolve_shared`).
"""

from __future__ import annotations

import os
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ...datasets import resolve_path, resolve_shared
from ...errors import WorldModelError
import numpy as np

from .engine import Geometry, Position, replay_batch

HEADER = 16
RECORD = 68
PLAYER_BYTES = 20
TOURNAMENT_BYTES = 26
_GEOM = Geometry(8)


def default_folder() -> Path:
    """Where the WTHOR files are looked for when no folder is given: ``$WORLDMODEL_OTHELLO_DATA``,
    else ``shared:othello`` (see :func:`worldmodel.datasets.resolve_shared`; ``worldmodel fetch wthor``)."""
    env = os.environ.get("WORLDMODEL_OTHELLO_DATA")
    if env:
        return Path(env)
    return resolve_shared("othello")


@dataclass(frozen=True)
class Header:
    created: tuple[int, int, int]  # (year, month, day)
    n_games: int
    n_names: int
    year: int
    board_size: int


def read_header(path: Path, data: bytes) -> Header:
    if len(data) < HEADER:
        raise WorldModelError(f"WTHOR file {path} is truncated: {len(data)} bytes, shorter than the 16-byte header")
    century, yy, month, day, n1, n2, year, p1 = struct.unpack_from("<BBBBIHHB", data, 0)
    return Header((century * 100 + yy, month, day), n1, n2, year, p1 or 8)


def read_names(path: str | Path, width: int) -> list[str]:
    """Names of a ``.JOU`` (width 20) or ``.TRN`` (width 26) file, in index order."""
    path = Path(path)
    if not path.exists():
        raise WorldModelError(f"WTHOR name file {path} does not exist")
    data = path.read_bytes()
    head = read_header(path, data)
    need = HEADER + head.n_names * width
    if len(data) < need:
        whole = max(0, (len(data) - HEADER) // width)
        raise WorldModelError(
            f"WTHOR name file {path} is truncated: header says {head.n_names} records of {width} bytes "
            f"but record {whole} ends past the end of the file ({len(data)} bytes)"
        )
    out = []
    for i in range(head.n_names):
        raw = data[HEADER + i * width: HEADER + (i + 1) * width]
        out.append(raw.split(b"\0", 1)[0].decode("latin-1").strip())
    return out


@dataclass(frozen=True)
class RawRecord:
    """One 68-byte game record, undecoded moves."""

    file: str
    record: int
    year: int
    tournament: int
    black: int
    white: int
    black_discs: int
    theoretical: int
    move_bytes: bytes


def read_wtb(path: str | Path) -> tuple[Header, list[RawRecord]]:
    """Header and raw records of a ``.wtb`` file; WorldModelError if it is damaged."""
    path = Path(path)
    if not path.exists():
        raise WorldModelError(f"WTHOR game file {path} does not exist")
    data = path.read_bytes()
    head = _check_wtb(path, data)
    records = []
    for i in range(head.n_games):
        off = HEADER + i * RECORD
        trn, blk, wht, discs, theo = struct.unpack_from("<HHHBB", data, off)
        records.append(RawRecord(str(path), i, head.year, trn, blk, wht, discs, theo, data[off + 8: off + RECORD]))
    return head, records


def _check_wtb(path: Path, data: bytes) -> Header:
    head = read_header(path, data)
    if head.board_size != 8:
        raise WorldModelError(f"WTHOR game file {path}: board size {head.board_size} in the header, only 8x8 is supported")
    body = len(data) - HEADER
    if body < head.n_games * RECORD:
        whole = body // RECORD
        raise WorldModelError(
            f"WTHOR game file {path} is truncated: header says {head.n_games} games, "
            f"record {whole} (0-based) is cut off after {body - whole * RECORD} of {RECORD} bytes"
            if body % RECORD else
            f"WTHOR game file {path} is truncated: header says {head.n_games} games, the file holds {whole} "
            f"(record {whole} onwards missing)"
        )
    if body != head.n_games * RECORD:
        raise WorldModelError(
            f"WTHOR game file {path}: {body - head.n_games * RECORD} bytes after the {head.n_games} records the header announces"
        )
    return head


def read_wtb_array(path: str | Path) -> tuple[Header, np.ndarray]:
    """Header and the records as a ``(n_games, 68)`` uint8 array; WorldModelError if damaged."""
    path = Path(path)
    if not path.exists():
        raise WorldModelError(f"WTHOR game file {path} does not exist")
    data = path.read_bytes()
    head = _check_wtb(path, data)
    table = np.frombuffer(data, dtype=np.uint8, offset=HEADER, count=head.n_games * RECORD)
    return head, table.reshape(head.n_games, RECORD)


@dataclass(frozen=True)
class Game:
    """A replayed WTHOR game: moves as square names (``"f5"``), passes inferred."""

    year: int
    tournament: str
    black: str
    white: str
    black_discs: int
    moves: tuple[str, ...]
    complete: bool      # played to the end: neither side can move
    file: str
    record: int


@dataclass
class LoadReport:
    """What :func:`load_games` read, kept and left out, by reason."""

    files: int = 0
    records: int = 0
    kept: int = 0
    failed: Counter = field(default_factory=Counter)      # data problems, by reason
    filtered: Counter = field(default_factory=Counter)    # left out by a filter, by filter
    examples: dict = field(default_factory=dict)          # reason -> "file record N: detail"

    def summary(self) -> str:
        parts = [f"{self.records} records in {self.files} files, {self.kept} games kept"]
        if self.failed:
            parts.append("failed: " + ", ".join(f"{k} {v}" for k, v in sorted(self.failed.items())))
        if self.filtered:
            parts.append("filtered out: " + ", ".join(f"{k} {v}" for k, v in sorted(self.filtered.items())))
        return "; ".join(parts)


def decode_moves(move_bytes: bytes) -> tuple[list[int], str | None]:
    """Square indices of the move bytes, and a failure reason or None."""
    squares = []
    ended = False
    for b in move_bytes:
        if b == 0:
            ended = True
            continue
        if ended:
            return squares, "moves after end marker"
        row, col = divmod(b, 10)
        if not (1 <= row <= 8 and 1 <= col <= 8):
            return squares, "bad move byte"
        squares.append((row - 1) * 8 + (col - 1))
    return squares, None


def replay_record(squares: Sequence[int]) -> tuple[Position | None, int | None]:
    """Replay moves from the start; ``(final position, None)`` or ``(None, index of the illegal move)``."""
    pos = Position.start(8)
    for t, sq in enumerate(squares):
        nxt = pos.play(sq)
        if nxt is None:
            return None, t
        pos = nxt
    return pos, None


def _year_of(path: Path) -> int | None:
    m = re.search(r"(\d{4})", path.stem)
    return int(m.group(1)) if m else None


def wtb_files(folder: Path, years: tuple[int, int] | None = None) -> list[Path]:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".wtb")
    if years is not None:
        lo, hi = years
        files = [p for p in files if (y := _year_of(p)) is None or lo <= y <= hi]
    return files


def _matches(name: str, needles: Iterable[str]) -> bool:
    low = name.lower()
    return any(n.lower() in low for n in needles)


def load_games(
    folder: str | Path | None = None,
    years: tuple[int, int] | None = None,
    include_tournaments: Sequence[str] = (),
    exclude_tournaments: Sequence[str] = (),
    exclude_players: Sequence[str] = (),
    complete_only: bool = True,
    strict: bool = False,
    progress: bool = False,
) -> tuple[list[Game], LoadReport]:
    """Read, replay and filter every game of a WTHOR folder.

    ``years`` is an inclusive ``(first, last)`` range on the games' year. Tournament and
    player filters are case-insensitive substrings: a game is kept when its tournament
    matches one of ``include_tournaments`` (if any are given), matches none of
    ``exclude_tournaments``, and neither player matches ``exclude_players`` (e.g. program
    names). ``complete_only`` keeps games played to the end (neither side can move).
    Returns the games in file order and a :class:`LoadReport`.
    """
    folder = resolve_path(folder) if folder is not None else default_folder()
    if not folder.is_dir():
        raise WorldModelError(
            f"WTHOR data folder {folder} does not exist (give a folder or set WORLDMODEL_OTHELLO_DATA)"
        )
    files = wtb_files(folder, years)
    if not files:
        raise WorldModelError(f"WTHOR data folder {folder} holds no .wtb game files" + (f" for years {years}" if years else ""))
    players = read_names(folder / "WTH.JOU", PLAYER_BYTES)
    tournaments = read_names(folder / "WTH.TRN", TOURNAMENT_BYTES)
    report = LoadReport()
    games: list[Game] = []
    names = [_GEOM.name(i) for i in range(64)]
    it: Iterable[Path] = files
    if progress:
        from tqdm import tqdm

        it = tqdm(files, desc="WTHOR files", unit="file")
    for path in it:
        head, table = read_wtb_array(path)
        report.files += 1
        report.records += len(table)
        if not len(table):
            continue
        trn = table[:, 0].astype(np.int64) | (table[:, 1].astype(np.int64) << 8)
        blk = table[:, 2].astype(np.int64) | (table[:, 3].astype(np.int64) << 8)
        wht = table[:, 4].astype(np.int64) | (table[:, 5].astype(np.int64) << 8)
        raw = table[:, 8:].astype(np.int64)
        row, col = raw // 10, raw % 10
        squares = np.where(raw > 0, (row - 1) * 8 + (col - 1), -1)
        byte_bad = (raw > 0) & ~((row >= 1) & (row <= 8) & (col >= 1) & (col <= 8))
        after_end = (raw > 0) & (np.cumsum(raw == 0, axis=1) > 0)
        index_bad = (trn >= len(tournaments)) | (blk >= len(players)) | (wht >= len(players))
        broken = byte_bad.any(axis=1) | after_end.any(axis=1) | index_bad
        illegal, over, _, _ = replay_batch(np.where(broken[:, None], -1, squares), 8)

        for i in range(len(table)):
            where = f"WTHOR file {path} record {i}"
            reason = detail = None
            if index_bad[i]:
                reason, detail = "unknown name index", f"tournament {trn[i]}, players {blk[i]}/{wht[i]} out of range"
            elif byte_bad[i].any():
                reason, detail = "bad move byte", f"move byte {raw[i, np.argmax(byte_bad[i])]} at move {np.argmax(byte_bad[i]) + 1} is not a square"
            elif after_end[i].any():
                reason, detail = "moves after end marker", f"move {np.argmax(after_end[i]) + 1} follows a 0 end marker"
            elif illegal[i] >= 0:
                t = int(illegal[i])
                reason, detail = "illegal move", f"move {t + 1} ({names[squares[i, t]]}) is illegal"
            if reason:
                if strict:
                    raise WorldModelError(f"{where}: {detail}")
                report.failed[reason] += 1
                report.examples.setdefault(reason, f"{where}: {detail}")
                continue
            if years is not None and not years[0] <= head.year <= years[1]:
                report.filtered["year"] += 1
                continue
            t_name = tournaments[trn[i]]
            b_name, w_name = players[blk[i]], players[wht[i]]
            if include_tournaments and not _matches(t_name, include_tournaments):
                report.filtered["tournament"] += 1
                continue
            if exclude_tournaments and _matches(t_name, exclude_tournaments):
                report.filtered["tournament"] += 1
                continue
            if exclude_players and (_matches(b_name, exclude_players) or _matches(w_name, exclude_players)):
                report.filtered["player"] += 1
                continue
            if complete_only and not over[i]:
                report.filtered["incomplete"] += 1
                continue
            moves = tuple(names[s] for s in squares[i] if s >= 0)
            games.append(Game(head.year, t_name, b_name, w_name, int(table[i, 6]), moves, bool(over[i]), str(path), i))
            report.kept += 1
    return games, report


# ---------------------------------------------------------------------------
# Writing (for tests and small hand-made databases)
# ---------------------------------------------------------------------------


def encode_header(n_games: int = 0, n_names: int = 0, year: int = 0, created=(2024, 1, 1)) -> bytes:
    y, m, d = created
    return struct.pack("<BBBBIHHBBBB", y // 100, y % 100, m, d, n_games, n_names, year, 8, 0, 24, 0)


def encode_game(moves: Sequence[str], tournament: int = 0, black: int = 0, white: int = 0,
                black_discs: int = 0, theoretical: int = 0) -> bytes:
    """One 68-byte record for moves given as square names."""
    if len(moves) > 60:
        raise WorldModelError(f"a WTHOR record holds at most 60 moves, got {len(moves)}")
    out = bytearray(struct.pack("<HHHBB", tournament, black, white, black_discs, theoretical))
    for name in moves:
        i = _GEOM.index(name)
        out.append(10 * (i // 8 + 1) + (i % 8 + 1))
    out.extend(b"\0" * (RECORD - len(out)))
    return bytes(out)


def write_database(folder: str | Path, games_by_year: dict[int, list[bytes]],
                   players: Sequence[str], tournaments: Sequence[str]) -> None:
    """Write ``WTH_<year>.wtb`` files of encoded records plus ``WTH.JOU`` and ``WTH.TRN``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for year, records in games_by_year.items():
        (folder / f"WTH_{year}.wtb").write_bytes(encode_header(len(records), 0, year) + b"".join(records))
    for name, names, width in (("WTH.JOU", players, PLAYER_BYTES), ("WTH.TRN", tournaments, TOURNAMENT_BYTES)):
        body = b"".join(n.encode("latin-1")[:width].ljust(width, b"\0") for n in names)
        (folder / name).write_bytes(encode_header(0, len(names)) + body)
