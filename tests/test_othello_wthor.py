"""The WTHOR reader: a database the test writes itself, damaged files, and the shared data."""

from __future__ import annotations

import re

import pytest

from worldmodel.errors import WorldModelError
from worldmodel.worlds.othello import wthor
from worldmodel.worlds.othello.engine import Geometry, random_games, replay

from datahelp import FIXTURES, full_data, needs_full

G8 = Geometry(8)
SHARED = full_data("othello") or FIXTURES / "othello"


def names(game):
    return [G8.name(s) for s in game]


@pytest.fixture
def small_db(tmp_path):
    full = names(random_games(3, 8, seed=7)[0])
    other = names(random_games(3, 8, seed=7)[1])
    illegal = list(full)
    illegal[5] = illegal[2]                              # replays an occupied square
    records_1990 = [
        wthor.encode_game(full, tournament=0, black=0, white=1, black_discs=40),
        wthor.encode_game(full[:20], tournament=0, black=0, white=1),      # stops early
        wthor.encode_game(other, tournament=1, black=0, white=1),          # online
        wthor.encode_game(other, tournament=0, black=2, white=0),          # a program plays
        wthor.encode_game(illegal, tournament=0, black=0, white=1),
    ]
    bad_byte = bytearray(wthor.encode_game(full))
    bad_byte[8 + 4] = 99                                 # row 9, col 9: not a square
    gap = bytearray(wthor.encode_game(full[:10]))
    gap[8 + 12] = 11                                      # a move after the 0 end marker
    records_2001 = [wthor.encode_game(other, tournament=0, black=1, white=0), bytes(bad_byte), bytes(gap)]
    wthor.write_database(tmp_path, {1990: records_1990, 2001: records_2001},
                         players=["Alice", "Bob", "Edax (prog)"],
                         tournaments=["World Championship", "Parties Internet (1-6)"])
    return tmp_path, full, other


def test_reads_and_replays_a_hand_written_database(small_db):
    folder, full, other = small_db
    assert wthor.read_names(folder / "WTH.JOU", wthor.PLAYER_BYTES) == ["Alice", "Bob", "Edax (prog)"]
    head, recs = wthor.read_wtb(folder / "WTH_1990.wtb")
    assert head.n_games == 5 and head.year == 1990 and recs[0].black_discs == 40
    games, report = wthor.load_games(folder, complete_only=False)
    assert report.records == 8 and report.files == 2
    assert report.failed == {"illegal move": 1, "bad move byte": 1, "moves after end marker": 1}
    assert "WTH_1990.wtb record 4" in report.examples["illegal move"]
    assert "move 6" in report.examples["illegal move"]
    assert [g.moves for g in games[:2]] == [tuple(full), tuple(full[:20])]
    assert games[0].tournament == "World Championship" and games[0].black == "Alice" and games[0].complete
    assert not games[1].complete
    for g in games:
        replay([G8.index(m) for m in g.moves], 8)       # every kept game replays legally


def test_filters(small_db):
    folder, full, other = small_db
    games, report = wthor.load_games(folder)                         # complete games only
    assert report.filtered["incomplete"] == 1 and len(games) == 4
    games, report = wthor.load_games(folder, exclude_tournaments=["internet"], exclude_players=["Edax"])
    assert [g.moves for g in games] == [tuple(full), tuple(other)]
    assert report.filtered == {"incomplete": 1, "tournament": 1, "player": 1}
    games, _ = wthor.load_games(folder, years=(2000, 2010))
    assert [g.year for g in games] == [2001]
    games, _ = wthor.load_games(folder, include_tournaments=["Internet"])
    assert len(games) == 1 and games[0].tournament.startswith("Parties Internet")


def test_strict_mode_names_file_and_record(small_db):
    folder, _, _ = small_db
    with pytest.raises(WorldModelError, match=r"WTH_1990\.wtb record 4: move 6 .* is illegal"):
        wthor.load_games(folder, strict=True)


def test_truncated_and_damaged_files_raise_one_clear_error(small_db, tmp_path):
    folder, _, _ = small_db
    path = folder / "WTH_1990.wtb"
    data = path.read_bytes()
    path.write_bytes(data[:-30])
    with pytest.raises(WorldModelError, match=r"WTH_1990\.wtb is truncated.*record 4"):
        wthor.load_games(folder)
    path.write_bytes(data[:10])
    with pytest.raises(WorldModelError, match="16-byte header"):
        wthor.read_wtb(path)
    path.write_bytes(data + b"\0" * 5)
    with pytest.raises(WorldModelError, match="5 bytes after the 5 records"):
        wthor.read_wtb(path)
    jou = folder / "WTH.JOU"
    jou.write_bytes(jou.read_bytes()[:-4])
    with pytest.raises(WorldModelError, match=r"WTH\.JOU is truncated"):
        wthor.read_names(jou, wthor.PLAYER_BYTES)
    with pytest.raises(WorldModelError, match="does not exist"):
        wthor.load_games(tmp_path / "nowhere")


def test_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("WORLDMODEL_OTHELLO_DATA", str(tmp_path))
    assert wthor.default_folder() == tmp_path
    monkeypatch.delenv("WORLDMODEL_OTHELLO_DATA")
    monkeypatch.setenv("WORLDMODEL_SHARED", str(tmp_path))
    (tmp_path / "othello").mkdir()
    assert wthor.default_folder() == tmp_path / "othello"


needs_shared = needs_full("othello", "wthor")


def test_fixture_database_replays():
    """The committed cut (first 300 records of 1990): every game legal and complete."""
    games, report = wthor.load_games(FIXTURES / "othello", complete_only=False)
    assert report.records == 300 and report.kept == 300
    assert not report.failed, report.summary()
    assert all(g.complete and g.moves[0] == "f5" for g in games)
    assert (games[0].year, games[0].tournament) == (1990, "Championnat d'URSS")


def _stated_games(year: int) -> int:
    """Games per year file as PROVENANCE.md's inventory states them."""
    row = re.search(rf"\| WTH_{year}\.wtb \| (\d+) \|", (SHARED / "PROVENANCE.md").read_text())
    return int(row.group(1))


@pytest.mark.slow
@needs_shared
def test_shared_database_early_years_replay():
    years = range(1977, 1986)
    games, report = wthor.load_games(SHARED, years=(1977, 1985), complete_only=False)
    assert report.records == sum(_stated_games(y) for y in years) == 2194
    assert not report.failed, report.summary()
    first = games[0]
    assert (first.year, first.tournament) == (1977, "World Championship")
    assert all(g.moves[0] == "f5" for g in games)


@pytest.mark.slow
@needs_shared
def test_shared_database_replays_completely():
    provenance = (SHARED / "PROVENANCE.md").read_text()
    stated = int(re.search(r"\*\*([\d,]+) games\*\*", provenance).group(1).replace(",", ""))
    games, report = wthor.load_games(SHARED, complete_only=False)
    assert report.records == stated == 137548
    assert not report.failed, report.summary()            # every move of every game is legal
    assert len(games) == stated
    assert sum(g.complete for g in games) == 137135       # as PROVENANCE.md counts
    assert all(g.moves[0] == "f5" for g in games)
