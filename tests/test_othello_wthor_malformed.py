"""Malformed WTHOR records: counted by reason (or refused in one line), never silently altered."""

from __future__ import annotations

import re
import numpy as np
import pytest

from worldmodel.errors import WorldModelError
from worldmodel.worlds.othello import wthor
from worldmodel.worlds.othello.engine import Geometry, random_games, replay

G8 = Geometry(8)
PLAYERS = ["Alice", "Bob", "Carol"]
TOURNAMENTS = ["Open", "Cup"]


def names(game):
    return [G8.name(s) for s in game]


@pytest.fixture(scope="module")
def games():
    return [names(g) for g in random_games(6, 8, seed=3)]


def with_byte(record: bytes, move: int, value: int) -> bytes:
    """The record with move byte ``move`` (0-based) set to ``value``."""
    out = bytearray(record)
    out[8 + move] = value
    return bytes(out)


def load(tmp_path, records, **kw):
    wthor.write_database(tmp_path, {1999: records}, players=PLAYERS, tournaments=TOURNAMENTS)
    return wthor.load_games(tmp_path, complete_only=False, **kw)


@pytest.mark.parametrize("value", [50, 10, 80, 9, 19, 89, 90, 91, 99, 100, 255, 1, 5, 8])
def test_bad_move_bytes_are_counted_never_dropped(tmp_path, games, value):
    """Column 0 (50, 10, 80), column 9 (9, 19, 89) and rows 0 (1, 5, 8) or >= 9 are not squares."""
    good = wthor.encode_game(games[0])
    bad = with_byte(wthor.encode_game(games[1]), 7, value)
    kept, report = load(tmp_path, [good, bad])
    assert report.failed == {"bad move byte": 1} and report.kept == 1
    assert report.examples["bad move byte"].endswith(f"record 1: move byte {value} at move 8 is not a square")
    assert [g.moves for g in kept] == [tuple(games[0])]
    squares, reason = wthor.decode_moves(bad[8:])
    assert reason == "bad move byte" and len(squares) == 7
    with pytest.raises(WorldModelError, match=rf"record 1: move byte {value} at move 8 is not a square$"):
        load(tmp_path, [good, bad], strict=True)


def test_bad_move_byte_in_the_last_slot_and_first_slot(tmp_path, games):
    full = [g for g in games if len(g) == 60][0]
    last = with_byte(wthor.encode_game(full), 59, 40)        # row 4, col 0
    first = with_byte(wthor.encode_game(full), 0, 60)        # row 6, col 0
    kept, report = load(tmp_path, [last, first])
    assert kept == [] and report.failed == {"bad move byte": 2}
    assert "move byte 40 at move 60" in report.examples["bad move byte"]


@pytest.mark.parametrize("field, value", [("tournament", 2), ("black", 3), ("white", 3), ("tournament", 65535),
                                          ("black", 999), ("black", 256), ("white", 513), ("tournament", 256)])
def test_out_of_range_name_indices_are_counted(tmp_path, games, field, value):
    ok = dict(tournament=1, black=2, white=0)
    good = wthor.encode_game(games[0], **ok)
    bad = wthor.encode_game(games[1], **{**ok, field: value})
    kept, report = load(tmp_path, [bad, good])
    assert report.failed == {"unknown name index": 1} and report.kept == 1
    assert "record 0: " in report.examples["unknown name index"]
    assert str(value) in report.examples["unknown name index"]
    assert [(g.tournament, g.black, g.white) for g in kept] == [("Cup", "Carol", "Alice")]
    with pytest.raises(WorldModelError, match=r"record 0: tournament \d+, players \d+/\d+ out of range"):
        load(tmp_path, [bad, good], strict=True)


def test_the_last_valid_name_index_is_accepted(tmp_path, games):
    kept, report = load(tmp_path, [wthor.encode_game(games[0], tournament=1, black=2, white=2)])
    assert not report.failed and [(g.tournament, g.black, g.white) for g in kept] == [("Cup", "Carol", "Carol")]


@pytest.mark.parametrize("size", [6, 10, 4])
def test_a_header_with_another_board_size_is_refused_in_one_line(tmp_path, games, size):
    wthor.write_database(tmp_path, {1999: [wthor.encode_game(games[0])], 2000: [wthor.encode_game(games[1])]},
                         players=PLAYERS, tournaments=TOURNAMENTS)
    path = tmp_path / "WTH_2000.wtb"
    data = bytearray(path.read_bytes())
    data[12] = size                                  # the header's board-size byte
    path.write_bytes(bytes(data))
    for call in (lambda: wthor.read_wtb(path), lambda: wthor.read_wtb_array(path),
                 lambda: wthor.load_games(tmp_path)):
        with pytest.raises(WorldModelError) as err:
            call()
        msg = str(err.value)
        assert "\n" not in msg and "WTH_2000.wtb" in msg and f"board size {size}" in msg
    # size 0 means 8x8, as the format says
    data[12] = 0
    path.write_bytes(bytes(data))
    head, recs = wthor.read_wtb(path)
    assert head.board_size == 8 and len(recs) == 1


def test_header_fields_and_records_read_exactly(tmp_path, games):
    recs = [wthor.encode_game(games[0], tournament=1, black=2, white=0, black_discs=37, theoretical=36),
            wthor.encode_game(games[1][:11], tournament=0, black=1, white=2, black_discs=5, theoretical=0)]
    wthor.write_database(tmp_path, {1987: recs}, players=PLAYERS, tournaments=TOURNAMENTS)
    head, raw = wthor.read_wtb(tmp_path / "WTH_1987.wtb")
    assert head == wthor.Header((2024, 1, 1), 2, 0, 1987, 8)
    assert [(r.record, r.year, r.tournament, r.black, r.white, r.black_discs, r.theoretical) for r in raw] == [
        (0, 1987, 1, 2, 0, 37, 36), (1, 1987, 0, 1, 2, 5, 0)]
    assert raw[1].move_bytes == recs[1][8:] and len(raw[1].move_bytes) == 60
    assert wthor.read_names(tmp_path / "WTH.TRN", wthor.TOURNAMENT_BYTES) == TOURNAMENTS
    games_, report = wthor.load_games(tmp_path, complete_only=False)
    assert [(g.black_discs, g.record, g.year) for g in games_] == [(37, 0, 1987), (5, 1, 1987)]
    assert games_[1].moves == tuple(games[1][:11]) and not games_[1].complete
    assert report.summary() == "2 records in 1 files, 2 games kept"


def test_random_byte_damage_is_counted_or_kept_exactly(tmp_path, games):
    """Any single damaged move byte: the game fails with a known reason, or is kept with exactly its bytes."""
    rng = np.random.default_rng(0)
    records, expect = [], []
    for k in range(120):
        game = games[k % len(games)]
        kind = k % 4
        if kind == 0:      # cut short: every byte from a point on set to 0 (a legal, unfinished game)
            rec = wthor.encode_game(game[:int(rng.integers(1, len(game)))])
        elif kind == 1:    # another square
            rec = with_byte(wthor.encode_game(game), int(rng.integers(len(game))),
                            int(10 * rng.integers(1, 9) + rng.integers(1, 9)))
        else:              # any byte value anywhere
            rec = with_byte(wthor.encode_game(game), int(rng.integers(60)), int(rng.integers(256)))
        records.append(rec)
        squares, reason = wthor.decode_moves(rec[8:])
        expect.append((squares, reason))
    wthor.write_database(tmp_path, {1999: records}, players=PLAYERS, tournaments=TOURNAMENTS)
    kept, report = wthor.load_games(tmp_path, complete_only=False)
    assert report.records == 120 and report.kept + sum(report.failed.values()) == 120
    assert set(report.failed) <= {"bad move byte", "moves after end marker", "illegal move"}
    assert report.failed["bad move byte"] == sum(r == "bad move byte" for _, r in expect)
    assert report.failed["moves after end marker"] == sum(r == "moves after end marker" for _, r in expect)
    by_record = {g.record: g for g in kept}
    for i, (squares, reason) in enumerate(expect):
        if i in by_record:
            assert reason is None
            assert by_record[i].moves == tuple(names(squares))      # nothing dropped or changed
            replay(squares, 8)
        elif reason is None:
            with pytest.raises(WorldModelError):
                replay(squares, 8)                                  # left out only for an illegal move
    assert report.failed["illegal move"] > 0 and report.kept > 0


def test_decode_moves():
    assert wthor.decode_moves(bytes([56, 11, 88, 18, 81]) + bytes(55)) == ([37, 0, 63, 7, 56], None)
    assert wthor.decode_moves(bytes([56, 0, 11])) == ([37], "moves after end marker")
    assert wthor.decode_moves(bytes([56, 0, 0])) == ([37], None)
    assert wthor.decode_moves(bytes([56, 50, 11])) == ([37], "bad move byte")
    assert wthor.decode_moves(bytes([56, 59, 11])) == ([37], "bad move byte")
    assert wthor.decode_moves(bytes([56, 19, 11])) == ([37], "bad move byte")
    assert wthor.decode_moves(b"") == ([], None)


def test_summary_lists_failures_and_filters_by_reason():
    report = wthor.LoadReport(files=2, records=9, kept=4)
    report.failed.update({"illegal move": 2, "bad move byte": 1})
    report.filtered.update({"tournament": 1, "incomplete": 1})
    assert report.summary() == ("9 records in 2 files, 4 games kept; failed: bad move byte 1, illegal move 2; "
                                "filtered out: incomplete 1, tournament 1")
    report.failed.clear()
    assert report.summary() == "9 records in 2 files, 4 games kept; filtered out: incomplete 1, tournament 1"


def test_header_bytes_are_the_documented_layout():
    """16 bytes: century, year in century, month, day, N1 (uint32), N2 (uint16), year (uint16), board size 8,
    solitaire flag 0, theoretical-score depth 24, reserved 0."""
    assert wthor.encode_header(3, 0, 1990, (2024, 1, 2)) == bytes(
        [20, 24, 1, 2, 3, 0, 0, 0, 0, 0, 0xC6, 0x07, 8, 0, 24, 0])
    assert wthor.encode_header() == bytes([20, 24, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 24, 0])
    for created in [(1901, 2, 3), (1977, 12, 31), (2100, 6, 7)]:
        head = wthor.read_header("x", wthor.encode_header(70000, 40000, 2001, created))
        assert head == wthor.Header(created, 70000, 40000, 2001, 8)    # unsigned counts beyond the signed ranges


def test_record_bytes_default_to_zero_fields_and_indices_are_unsigned(tmp_path, games):
    rec = wthor.encode_game(games[0][:3])
    assert rec[:8] == bytes(8) and len(rec) == wthor.RECORD and rec[11:] == bytes(57)
    big = wthor.encode_game(games[0], tournament=40000, black=65535, white=33000, black_discs=64, theoretical=64)
    path = tmp_path / "WTH_2005.wtb"
    path.write_bytes(wthor.encode_header(1, 0, 2005) + big)
    head, (raw,) = wthor.read_wtb(path)
    assert (raw.file, raw.record, raw.year) == (str(path), 0, 2005)
    assert (raw.tournament, raw.black, raw.white, raw.black_discs, raw.theoretical) == (40000, 65535, 33000, 64, 64)
    with pytest.raises(WorldModelError, match=r"WTHOR game file .*WTH_1800\.wtb does not exist"):
        wthor.read_wtb(tmp_path / "WTH_1800.wtb")
    with pytest.raises(WorldModelError, match=r"WTHOR game file .*WTH_1800\.wtb does not exist"):
        wthor.read_wtb_array(tmp_path / "WTH_1800.wtb")


def test_year_filter_on_file_names(tmp_path):
    for name in ("WTH_1990.wtb", "WTH_2001.wtb", "WTH_2011.WTB", "extra.wtb", "WTH.JOU", "notes_2005.txt"):
        (tmp_path / name).write_bytes(b"")
    every = [p.name for p in wthor.wtb_files(tmp_path)]
    assert every == ["WTH_1990.wtb", "WTH_2001.wtb", "WTH_2011.WTB", "extra.wtb"]
    # a file without a year in its name is kept (its header's year is checked per game)
    assert [p.name for p in wthor.wtb_files(tmp_path, (2000, 2010))] == ["WTH_2001.wtb", "extra.wtb"]
    assert [p.name for p in wthor.wtb_files(tmp_path, (1990, 1990))] == ["WTH_1990.wtb", "extra.wtb"]


def test_replay_record_returns_the_final_position_or_the_illegal_move(games):
    squares = [G8.index(m) for m in games[0]]
    pos, bad = wthor.replay_record(squares)
    assert bad is None and pos == replay(squares, 8)[-1]
    broken = list(squares)
    broken[4] = broken[1]                                # an occupied square
    assert wthor.replay_record(broken) == (None, 4)
    assert wthor.replay_record([]) == (wthor.Position.start(8), None)


def test_a_record_holds_at_most_sixty_moves():
    sixty = [G8.name(i) for i in range(60)]
    assert wthor.encode_game(sixty)[8:] == bytes(10 * (i // 8 + 1) + i % 8 + 1 for i in range(60))
    with pytest.raises(WorldModelError, match=r"^a WTHOR record holds at most 60 moves, got 61$"):
        wthor.encode_game(sixty + ["h8"])


def test_written_name_files_are_nul_padded_latin1_with_a_names_header(tmp_path):
    folder = tmp_path / "new" / "deeper"                  # made with its parents
    wthor.write_database(folder, {}, players=["Zoë", "B" * 25], tournaments=["Open"])
    jou = (folder / "WTH.JOU").read_bytes()
    assert jou == wthor.encode_header(0, 2) + "Zoë".encode("latin-1") + b"\0" * 17 + b"B" * 20
    assert jou[4:8] == bytes(4) and jou[8:10] == bytes([2, 0])         # N1 = 0 games, N2 = 2 names
    assert (folder / "WTH.TRN").read_bytes() == wthor.encode_header(0, 1) + b"Open" + b"\0" * 22
    assert wthor.read_names(folder / "WTH.JOU", wthor.PLAYER_BYTES) == ["Zoë", "B" * 20]
    assert not list(folder.glob("*.wtb"))


def test_load_games_folder_errors_and_progress(tmp_path, games, capsys, monkeypatch):
    with pytest.raises(WorldModelError, match=r"^WTHOR data folder .*nowhere does not exist "
                                              r"\(give a folder or set WORLDMODEL_OTHELLO_DATA\)$"):
        wthor.load_games(tmp_path / "nowhere")
    wthor.write_database(tmp_path, {1999: [wthor.encode_game(games[0])]}, players=PLAYERS, tournaments=TOURNAMENTS)
    with pytest.raises(WorldModelError, match=r"^WTHOR data folder .* holds no \.wtb game files for years \(2000, 2001\)$"):
        wthor.load_games(tmp_path, years=(2000, 2001))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WorldModelError, match=r"^WTHOR data folder .*empty holds no \.wtb game files$"):
        wthor.load_games(empty)
    kept, report = wthor.load_games(str(tmp_path), progress=True)
    err = capsys.readouterr().err
    assert re.search(r"(^|\r)WTHOR files: ", err) and re.search(r"file/s|s/file", err) and len(kept) == 1
    monkeypatch.setenv("WORLDMODEL_OTHELLO_DATA", str(tmp_path))
    assert [g.moves for g in wthor.load_games()[0]] == [tuple(games[0])]       # the default folder


def test_load_games_counts_every_record_and_keeps_exact_fields(tmp_path, games):
    wthor.write_database(tmp_path, {1999: [wthor.encode_game(games[0], tournament=1, black=2, white=1, black_discs=33),
                                           wthor.encode_game(games[1][:5])],
                                    2000: []},
                         players=PLAYERS, tournaments=TOURNAMENTS)
    kept, report = wthor.load_games(tmp_path, complete_only=False)
    assert (report.files, report.records, report.kept) == (2, 2, 2) and not report.filtered and not report.failed
    g = kept[0]
    assert (g.year, g.tournament, g.black, g.white, g.black_discs, g.complete, g.record) == (
        1999, "Cup", "Carol", "Bob", 33, True, 0)
    assert g.file == str(tmp_path / "WTH_1999.wtb") and g.moves == tuple(games[0])
    assert (kept[1].record, kept[1].complete, kept[1].moves) == (1, False, tuple(games[1][:5]))


def test_the_header_year_filters_games_of_files_without_a_year_in_the_name(tmp_path, games):
    wthor.write_database(tmp_path, {}, players=PLAYERS, tournaments=TOURNAMENTS)
    (tmp_path / "extra.wtb").write_bytes(wthor.encode_header(2, 0, 1985) + wthor.encode_game(games[0]) * 2)
    kept, report = wthor.load_games(tmp_path, years=(1990, 2000))
    assert kept == [] and report.filtered == {"year": 2} and report.records == 2
    kept, report = wthor.load_games(tmp_path, years=(1985, 1985))
    assert len(kept) == 2 and not report.filtered


def test_each_failure_reason_keeps_its_first_example_and_strict_stops_there(tmp_path, games):
    illegal = list(games[0])
    illegal[6] = illegal[1]
    after_end = bytearray(wthor.encode_game(games[1][:10]))
    after_end[8 + 14] = 34                                      # move 15 after the end marker at move 11
    records = [wthor.encode_game(games[2]), wthor.encode_game(illegal), wthor.encode_game(illegal),
               bytes(after_end), wthor.encode_game(games[3], black=7)]
    kept, report = load(tmp_path, records)
    assert report.failed == {"illegal move": 2, "moves after end marker": 1, "unknown name index": 1}
    assert report.examples["illegal move"].endswith(f"WTH_1999.wtb record 1: move 7 ({illegal[6]}) is illegal")
    assert report.examples["moves after end marker"].endswith("record 3: move 15 follows a 0 end marker")
    assert report.examples["unknown name index"].endswith("record 4: tournament 0, players 7/0 out of range")
    assert [g.record for g in kept] == [0]
    with pytest.raises(WorldModelError, match=r"WTH_1999\.wtb record 1: move 15 follows a 0 end marker$"):
        load(tmp_path, [records[0], records[3], records[1]], strict=True)


def test_filters_are_case_insensitive_substrings_and_count_by_filter(tmp_path, games):
    records = [wthor.encode_game(games[0], tournament=0, black=0, white=1),
               wthor.encode_game(games[1], tournament=1, black=1, white=2),
               wthor.encode_game(games[2], tournament=1, black=2, white=0)]
    wthor.write_database(tmp_path, {1999: records}, players=PLAYERS, tournaments=TOURNAMENTS)
    kept, report = wthor.load_games(tmp_path, include_tournaments=["CUP", "nothing"])
    assert [g.record for g in kept] == [1, 2] and report.filtered == {"tournament": 1}
    kept, report = wthor.load_games(tmp_path, exclude_tournaments=["pe"])            # "Open"
    assert [g.record for g in kept] == [1, 2] and report.filtered == {"tournament": 1}
    kept, report = wthor.load_games(tmp_path, exclude_players=["CAROL"])              # black or white
    assert [g.record for g in kept] == [0] and report.filtered == {"player": 2}
    kept, report = wthor.load_games(tmp_path, exclude_players=["bo"], include_tournaments=["cup"])
    assert [g.record for g in kept] == [2] and report.filtered == {"tournament": 1, "player": 1}


def test_read_names_exactly(tmp_path):
    path = tmp_path / "WTH.JOU"
    path.write_bytes(wthor.encode_header(0, 3) + b"A" * 20 + b"Bob".ljust(20, b"\0") + b" Cy \0junk".ljust(20, b"\0"))
    assert wthor.read_names(path, 20) == ["A" * 20, "Bob", "Cy"]      # a full-width name has no NUL
    path.write_bytes(wthor.encode_header(0, 3) + b"A" * 20 + b"Bob".ljust(20, b"\0") + b"Cy")
    with pytest.raises(WorldModelError, match=r"^WTHOR name file .*WTH\.JOU is truncated: header says 3 records of "
                                              r"20 bytes but record 2 ends past the end of the file \(58 bytes\)$"):
        wthor.read_names(path, 20)
    path.write_bytes(wthor.encode_header(0, 1)[:10])
    with pytest.raises(WorldModelError, match=r"^WTHOR file .*WTH\.JOU is truncated: 10 bytes, shorter than the "
                                              r"16-byte header$"):
        wthor.read_names(path, 20)
    path.write_bytes(wthor.encode_header(0, 2))
    with pytest.raises(WorldModelError, match=r"record 0 ends past the end of the file \(16 bytes\)$"):
        wthor.read_names(path, 20)
    with pytest.raises(WorldModelError, match=r"^WTHOR name file .*WTH\.TRN does not exist$"):
        wthor.read_names(tmp_path / "WTH.TRN", 26)


def test_damaged_game_files_are_described_exactly(tmp_path, games):
    records = [wthor.encode_game(g) for g in games[:5]]
    wthor.write_database(tmp_path, {1999: records}, players=PLAYERS, tournaments=TOURNAMENTS)
    path = tmp_path / "WTH_1999.wtb"
    data = path.read_bytes()
    for cut, message in [
        (30, r"header says 5 games, record 4 \(0-based\) is cut off after 38 of 68 bytes$"),
        (68, r"header says 5 games, the file holds 4 \(record 4 onwards missing\)$"),
        (68 * 2 + 1, r"header says 5 games, record 2 \(0-based\) is cut off after 67 of 68 bytes$"),
    ]:
        path.write_bytes(data[:-cut])
        for call in (wthor.read_wtb, wthor.read_wtb_array):
            with pytest.raises(WorldModelError, match=r"^WTHOR game file .*WTH_1999\.wtb is truncated: " + message):
                call(path)
    path.write_bytes(data + bytes(7))
    with pytest.raises(WorldModelError, match=r"^WTHOR game file .*WTH_1999\.wtb: 7 bytes after the 5 records "
                                              r"the header announces$"):
        wthor.read_wtb(path)
    path.write_bytes(data[:15])
    with pytest.raises(WorldModelError, match=r"^WTHOR file .*WTH_1999\.wtb is truncated: 15 bytes, shorter than "):
        wthor.read_wtb_array(path)
    path.write_bytes(data)
    head, table = wthor.read_wtb_array(path)
    assert table.shape == (5, 68) and table.dtype == np.uint8 and bytes(table[3]) == records[3]


def test_load_games_is_quiet_unless_asked(tmp_path, games, capsys):
    wthor.write_database(tmp_path, {1999: [wthor.encode_game(games[0])]}, players=PLAYERS, tournaments=TOURNAMENTS)
    wthor.load_games(tmp_path)
    assert capsys.readouterr().err == ""


def test_name_indices_above_255_and_empty_files_on_the_way(tmp_path, games):
    players = [f"P{i}" for i in range(300)]
    tournaments = [f"T{i}" for i in range(260)]
    records = [wthor.encode_game(games[0], tournament=258, black=257, white=299),
               wthor.encode_game(games[1], tournament=1, black=299, white=256)]
    wthor.write_database(tmp_path, {1998: [], 1999: records, 2000: []}, players=players, tournaments=tournaments)
    kept, report = wthor.load_games(tmp_path, complete_only=False)
    assert [(g.tournament, g.black, g.white) for g in kept] == [("T258", "P257", "P299"), ("T1", "P299", "P256")]
    assert (report.files, report.records, report.kept) == (3, 2, 2)


def test_filter_counts_add_up(tmp_path, games):
    records = [wthor.encode_game(g, tournament=i % 2) for i, g in enumerate(games)]          # 3 "Open", 3 "Cup"
    records.append(wthor.encode_game(games[0][:5]))
    records.append(wthor.encode_game(games[1][:7], tournament=1))
    wthor.write_database(tmp_path, {1999: records}, players=PLAYERS, tournaments=TOURNAMENTS)
    _, report = wthor.load_games(tmp_path, include_tournaments=["cup"], complete_only=False)
    assert report.filtered == {"tournament": 4}
    _, report = wthor.load_games(tmp_path, exclude_tournaments=["cup"], complete_only=False)
    assert report.filtered == {"tournament": 4}
    kept, report = wthor.load_games(tmp_path)
    assert report.filtered == {"incomplete": 2} and len(kept) == 6
