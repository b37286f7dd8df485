"""``worldmodel fetch`` and the data cache: a local HTTP server on 127.0.0.1, local mirrors,
checksums, interrupted downloads, and where ``shared:`` paths resolve."""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
from collections import defaultdict
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from worldmodel import datasets as D
from worldmodel.worlds.navigation import data_sets as N
from worldmodel import safe_pickle
from worldmodel.cli import main
from worldmodel.errors import WorldModelError

from datahelp import FIXTURES, full_data, needs_full
from loopback import LoopbackServer


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- a loopback HTTP server --------------------------------------------------------------------


class Server(LoopbackServer):
    """Serves ``files`` (path -> bytes) on 127.0.0.1, with ``Range`` support.

    ``cut[path] = n`` makes the next ``n`` responses for ``path`` stop halfway through the
    body (the connection is closed after half the promised bytes). Every request's path and
    ``Range`` header is recorded in ``log``.
    """

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.cut: dict[str, int] = {}
        self.log: list[tuple[str, str | None]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                server.log.append((self.path, rng))
                if len(server.log) > 200:  # a runaway client loop
                    self.send_error(500)
                    return
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                start = int(rng.split("=")[1].split("-")[0]) if rng else 0
                if start >= len(body) and rng:
                    self.send_error(416)
                    return
                part = body[start:]
                self.send_response(206 if rng else 200)
                self.send_header("Content-Length", str(len(part)))
                self.end_headers()
                if server.cut.get(self.path, 0) > 0:
                    server.cut[self.path] -= 1
                    self.wfile.write(part[: len(part) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(part)

        self._serve(Handler)

    def gets(self, path: str) -> list[str | None]:
        return [r for p, r in self.log if p == path]


@pytest.fixture
def server():
    with Server() as s:
        yield s


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLDMODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WORLDMODEL_SHARED", raising=False)
    monkeypatch.setattr(D, "BESIDE", tmp_path / "no-shared-here")
    return tmp_path / "cache"


WTHOR_FIXTURE = {name: (FIXTURES / "othello" / name).read_bytes() for name in ("WTH.JOU", "WTH.TRN", "WTH_1990.wtb")}


def fixture_wthor(urls) -> D.DataSet:
    """A data set of the committed WTHOR cut; ``urls(name)`` gives each file's source URLs."""
    return D.DataSet(name="wthor-fixture", folder="othello", description="test", licence="FFO",
                     files={n: sha(b) for n, b in WTHOR_FIXTURE.items()},
                     remotes=tuple(D.Remote(n, sha(b), len(b), tuple(urls(n))) for n, b in WTHOR_FIXTURE.items()))


def entry(cache: Path) -> Path:
    return cache / "data" / "othello"


def assert_no_half_entry(cache: Path):
    data = cache / "data"
    left = sorted(p.name for p in data.iterdir()) if data.exists() else []
    assert left == [], f"cache holds {left} after a failed fetch"


# -- downloads ---------------------------------------------------------------------------------


def test_download_installs_verified_files(server, cache):
    server.files = {f"/{n}": b for n, b in WTHOR_FIXTURE.items()}
    report = D.fetch(fixture_wthor(lambda n: [f"{server.url}/{n}"]), progress=False)
    assert report.status == "installed"
    for n, b in WTHOR_FIXTURE.items():
        assert (entry(cache) / n).read_bytes() == b
    manifest = json.loads((entry(cache) / D.MANIFEST).read_text())
    assert all(f["verified"] for f in manifest["files"].values())
    # installed and intact: a second fetch downloads nothing
    n = len(server.log)
    assert D.fetch(fixture_wthor(lambda n: [f"{server.url}/{n}"]), progress=False).status == "up to date"
    assert len(server.log) == n
    # the games load through shared: resolution from the cache
    from worldmodel.worlds.othello import wthor

    games, rep = wthor.load_games("shared:othello")
    assert rep.kept == 300 and games[0].moves[0] == "f5"


def test_checksum_mismatch_is_one_line_and_leaves_no_entry(server, cache):
    server.files = {f"/{n}": b for n, b in WTHOR_FIXTURE.items()}
    server.files["/WTH_1990.wtb"] = WTHOR_FIXTURE["WTH_1990.wtb"][:-1] + b"\x01"
    with pytest.raises(D.FetchError) as err:
        D.fetch(fixture_wthor(lambda n: [f"{server.url}/{n}"]), progress=False)
    msg = str(err.value)
    assert "checksum mismatch for WTH_1990.wtb" in msg and "\n" not in msg
    assert_no_half_entry(cache)
    assert not list((cache / "downloads").rglob("*WTH_1990*"))  # the bad bytes are not kept


def test_a_newer_release_falls_back_to_the_pinned_copy(server, cache):
    server.files = {f"/ffo/{n}": b + b"newer" for n, b in WTHOR_FIXTURE.items()}
    server.files.update({f"/pinned/{n}": b for n, b in WTHOR_FIXTURE.items()})
    D.fetch(fixture_wthor(lambda n: [f"{server.url}/ffo/{n}", f"{server.url}/pinned/{n}"]), progress=False)
    assert (entry(cache) / "WTH.JOU").read_bytes() == WTHOR_FIXTURE["WTH.JOU"]
    assert server.gets("/ffo/WTH.JOU") and server.gets("/pinned/WTH.JOU")


def test_interrupted_download_resumes_in_the_same_run(server, cache):
    server.files = {f"/{n}": b for n, b in WTHOR_FIXTURE.items()}
    server.cut["/WTH.JOU"] = 1
    D.fetch(fixture_wthor(lambda n: [f"{server.url}/{n}"]), progress=False)
    half = len(WTHOR_FIXTURE["WTH.JOU"]) // 2
    assert server.gets("/WTH.JOU") == [None, f"bytes={half}-"]
    assert (entry(cache) / "WTH.JOU").read_bytes() == WTHOR_FIXTURE["WTH.JOU"]


def test_truncated_download_fails_cleanly_then_a_rerun_resumes(server, cache):
    server.files = {f"/{n}": b for n, b in WTHOR_FIXTURE.items()}
    server.cut["/WTH.TRN"] = 3  # every one of the three attempts stops early
    spec = fixture_wthor(lambda n: [f"{server.url}/{n}"])
    with pytest.raises(D.FetchError) as err:
        D.fetch(spec, progress=False)
    msg = str(err.value)
    assert "interrupted" in msg and "rerun" in msg and "\n" not in msg
    assert len(server.gets("/WTH.TRN")) == D.ATTEMPTS  # bounded
    assert_no_half_entry(cache)
    kept = list((cache / "downloads").rglob("*WTH.TRN.part"))
    assert len(kept) == 1 and 0 < kept[0].stat().st_size < len(WTHOR_FIXTURE["WTH.TRN"])
    # the network is back: the rerun asks only for the missing bytes and ends correct
    have = kept[0].stat().st_size
    D.fetch(spec, progress=False)
    assert server.gets("/WTH.TRN")[-1] == f"bytes={have}-"
    assert (entry(cache) / "WTH.TRN").read_bytes() == WTHOR_FIXTURE["WTH.TRN"]
    assert not (cache / "downloads" / "othello").exists()  # cleaned after the install


def test_offline_is_one_line(cache):
    import socket

    with socket.socket() as s:  # a loopback port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(D.FetchError) as err:
        D.fetch(fixture_wthor(lambda n: [f"http://127.0.0.1:{port}/{n}"]), progress=False, timeout=5)
    msg = str(err.value)
    assert msg.startswith("cannot reach http://127.0.0.1") and "--from DIR" in msg and "\n" not in msg
    assert_no_half_entry(cache)


def test_a_failed_refetch_keeps_the_installed_copy(server, cache):
    server.files = {f"/{n}": b for n, b in WTHOR_FIXTURE.items()}
    spec = fixture_wthor(lambda n: [f"{server.url}/{n}"])
    D.fetch(spec, progress=False)
    before = {p.name: p.read_bytes() for p in entry(cache).iterdir()}
    server.files["/WTH.TRN"] = b"broken"
    with pytest.raises(D.FetchError, match="checksum mismatch"):
        D.fetch(spec, force=True, progress=False)
    assert {p.name: p.read_bytes() for p in entry(cache).iterdir()} == before
    assert sorted(p.name for p in (cache / "data").iterdir()) == ["othello"]


# -- the paper graph: pickles in, the exact JSON out ------------------------------------------------


def _fixture_pickles() -> dict[str, bytes]:
    """The fixture cut as the authors' pickles would hold it (tuple keys, defaultdict turns)."""
    data = json.loads((FIXTURES / "manhattan" / "world_model_edges.json").read_text())
    out = {}
    for name, v in data["variants"].items():
        edges = v["edges"] if "edges" in v else data["variants"][v["edges_same_as"]]["edges"]
        turns = defaultdict(list)
        for k, t in v["valid_turns"].items():
            turns[int(k)] = t
        out[f"{name}-node_and_direction_to_neighbor.pkl"] = pickle.dumps({(u, d): w for u, d, w in reversed(edges)})
        out[f"{name}-valid_turns.pkl"] = pickle.dumps(turns)
    return out


def test_paper_pickles_convert_to_the_exact_json(server, cache, monkeypatch):
    pickles = _fixture_pickles()
    server.files = {f"/{n}": b for n, b in pickles.items()}
    target = FIXTURES / "manhattan"
    spec = D.DataSet(name="manhattan-fixture", folder="manhattan", description="test",
                     files={n: sha((target / n).read_bytes()) for n in ("world_model_edges.json", "nodes.csv", "edges.csv")},
                     remotes=tuple(D.Remote(n, sha(b), len(b), (f"{server.url}/{n}",)) for n, b in pickles.items()),
                     build=N.build_manhattan)
    import networkx as nx

    g = nx.MultiDiGraph()
    g.add_node(42423020, x=-73.98, y=40.75)
    g.add_node(42434965, x=-73.97, y=40.76)
    g.add_node(7, x=0.0, y=0.0)                       # not in the graph: left out
    g.add_edge(42423020, 42434965, length=120.0)
    g.add_edge(42423020, 42434965, length=80.5)       # parallel edges: the shortest
    monkeypatch.setattr(N, "osmnx_coordinates", functools.partial(N.osmnx_coordinates, graph=g))
    report = D.fetch(spec, progress=False)
    got = cache / "data" / "manhattan"
    assert (got / "world_model_edges.json").read_bytes() == (target / "world_model_edges.json").read_bytes()
    assert report.files["world_model_edges.json"]["verified"]
    assert not report.files["nodes.csv"]["verified"] and "not checksummed" in report.line()
    nodes = (got / "nodes.csv").read_text().splitlines()
    assert nodes[0] == "osm_id,lat,lon,src" and [r.split(",")[0] for r in nodes[1:]] == ["42423020", "42434965"]
    assert (got / "edges.csv").read_text().splitlines()[1:] == ["42423020,42434965,80.500"]


def test_the_real_converter_matches_the_recorded_checksum_format():
    # The full graph's JSON is pinned by checksum; the converter's layout must not drift:
    # converting the fixture's own tables reproduces the fixture byte for byte.
    data = json.loads((FIXTURES / "manhattan" / "world_model_edges.json").read_text())
    variants = {}
    for name, v in data["variants"].items():
        edges = v["edges"] if "edges" in v else data["variants"][v["edges_same_as"]]["edges"]
        variants[name] = ({(u, d): w for u, d, w in edges}, v["valid_turns"])
    assert N.paper_graph_json(variants) == (FIXTURES / "manhattan" / "world_model_edges.json").read_bytes()


def test_restricted_unpickler_refuses_code(tmp_path):
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo owned",))

    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps({"a": Evil()}))
    with pytest.raises(WorldModelError, match=r"refusing to unpickle (posix|os|nt)\.system"):
        safe_pickle.load(path)
    path.write_bytes(b"\x80\x04junk")
    with pytest.raises(WorldModelError, match="not a readable pickle"):
        safe_pickle.load(path)
    ok = defaultdict(list, {1: ["N"], (2, "S"): [3.5, None, b"x", frozenset({1})]})
    assert safe_pickle.loads(pickle.dumps(ok)) == ok


# -- mirrors -------------------------------------------------------------------------------------


def test_copy_from_a_mirror_and_a_bad_mirror_file(tmp_path, cache):
    mirror = tmp_path / "mirror"
    (mirror / "othello").mkdir(parents=True)
    for n, b in WTHOR_FIXTURE.items():
        (mirror / "othello" / n).write_bytes(b)
    spec = fixture_wthor(lambda n: ["http://127.0.0.1:9/unused"])
    assert D.fetch(spec, mirror=mirror, progress=False).status == "installed"
    manifest = json.loads((entry(cache) / D.MANIFEST).read_text())
    assert manifest["files"]["WTH.JOU"]["source"] == str((mirror / "othello" / "WTH.JOU").resolve())

    bad = tmp_path / "bad"
    (bad / "othello").mkdir(parents=True)
    for n, b in WTHOR_FIXTURE.items():
        (bad / "othello" / n).write_bytes(b if n != "WTH.TRN" else b[:100])
    with pytest.raises(D.FetchError, match=r"checksum mismatch for .*WTH\.TRN"):
        D.fetch(spec, mirror=bad, force=True, progress=False)
    assert (entry(cache) / "WTH.TRN").read_bytes() == WTHOR_FIXTURE["WTH.TRN"]  # the good copy stays
    (bad / "othello" / "WTH.TRN").unlink()
    with pytest.raises(D.FetchError, match=r"mirror .* has no othello/WTH\.TRN"):
        D.fetch(spec, mirror=bad, force=True, progress=False)


def test_cli_fetch_errors_are_one_line(tmp_path, cache, capsys):
    assert main(["fetch", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["worldmodel: error: unknown data set 'nope' (known: manhattan-paper, wthor, eight, bytesized32)"]
    assert main(["fetch", "wthor", "--from", str(tmp_path / "missing"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("worldmodel: error: mirror folder") and "missing" in err[0]
    assert_no_half_entry(cache)
    assert main(["fetch"]) == 0
    out = capsys.readouterr().out
    assert "manhattan-paper  missing" in out and "wthor            missing" in out


FULL_OTHELLO = full_data("othello")


@pytest.mark.slow
@needs_full("othello", "wthor")
def test_fetch_all_from_the_full_mirror_matches_the_pinned_checksums(cache, capsys):
    mirror = FULL_OTHELLO.parent
    assert main(["fetch", "--all", "--from", str(mirror), "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [f"manhattan-paper: installed in {cache / 'data' / 'manhattan'} (3 files)",
                     f"wthor: installed in {cache / 'data' / 'othello'} (51 files)"]


# -- where shared: paths resolve ----------------------------------------------------------------------


def test_resolution_order_and_the_missing_message(tmp_path, cache, monkeypatch):
    with pytest.raises(WorldModelError) as err:
        D.resolve_shared("manhattan/nodes.csv")
    msg = str(err.value)
    assert "data set manhattan-paper" in msg and msg.endswith("run `worldmodel fetch manhattan-paper`")
    beside = tmp_path / "beside"
    (beside / "manhattan").mkdir(parents=True)
    monkeypatch.setattr(D, "BESIDE", beside)
    assert D.resolve_shared("manhattan/nodes.csv") == beside / "manhattan" / "nodes.csv"
    D.fetch(D.DataSet("m", "manhattan", "test", {"nodes.csv": sha((FIXTURES / "manhattan" / "nodes.csv").read_bytes())}, ()),
            mirror=FIXTURES, progress=False)
    assert D.resolve_shared("manhattan/nodes.csv") == cache / "data" / "manhattan" / "nodes.csv"
    monkeypatch.setenv("WORLDMODEL_SHARED", str(FIXTURES))
    assert D.resolve_shared("manhattan/nodes.csv") == FIXTURES / "manhattan" / "nodes.csv"
    monkeypatch.setenv("WORLDMODEL_SHARED", str(tmp_path / "empty"))  # set, but without the folder
    assert D.resolve_shared("manhattan/nodes.csv") == cache / "data" / "manhattan" / "nodes.csv"


def test_a_task_without_its_data_names_the_fetch_command(cache, capsys):
    assert main(["data", "nav-manhattan-region"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("worldmodel: error: data set manhattan-paper")
    assert err[0].endswith("run `worldmodel fetch manhattan-paper`")
    assert main(["evaluate", "othello-championship", "--model", "true", "--metrics", "next-token",
                 "--trials", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("run `worldmodel fetch wthor`")
