"""Hostile files, interruptions and shared folders (docs/reliability.md).

One section per promise, each with more cases than the issue listed:

1. nothing the toolkit reads runs code;
2. every file read is bounded in size and validated (sizes, repeated keys, colliding ids);
3. every path read from a file or a task stays inside its folder (``..``, absolute, symlinks);
4. every network answer is bounded in bytes and in total time, Ctrl-C stops a run at once,
   retries stop when the run has failed, answers are cached as they arrive;
5. one output, one writer (a second run stops with one line naming the first);
6. logs are appended, never rewritten in place; every swap is atomic;
7. every failure a user can cause or meet (a full disk, a memory limit, a broken file) is one
   line naming the file and the cause, exit 2, nothing half-written; Ctrl-C exits 130;
8. no quiet wrong answers (detour and reconstruction draws without replacement);
9. the docs and help texts say what the commands need.

Cases go through the real command line (``worldmodel.cli.main``) where a user would meet them;
concurrency and signals use real second processes.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import torch

from worldmodel import safety
from worldmodel.chat import CachedBackend, OpenAIChatBackend, ResponseCache
from worldmodel.cli import main
from worldmodel.errors import WorldModelError
from worldmodel.results import TrialLog

from loopback import LoopbackServer

REPO = Path(__file__).resolve().parents[1]
TOY = (REPO / "tasks" / "toy-dfa.toml").read_text()
#: a toy task small enough to train in a second or two
TINY = (TOY.replace("n_train = 3000", "n_train = 300").replace("n_layer = 2", "n_layer = 1")
        .replace("n_embd = 64", "n_embd = 16").replace("n_head = 4", "n_head = 2"))
ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "OMP_NUM_THREADS": "1"}


def one_line(err: str) -> str:
    """The only stderr line that is not a progress bar; fails unless there is exactly one."""
    lines = [seg for line in err.split("\n") if (seg := line.split("\r")[-1].strip()) and "it/s]" not in seg
             and "%|" not in seg]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


class Marker:
    """A pickle whose loading would create ``path`` (through ``os.system``): proof that nothing ran."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with the tiny toy task, its data and one finished checkpoint (trained once)."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "tiny.toml").write_text(TINY)
    old = os.getcwd()
    os.chdir(root)
    try:
        assert main(["data", "tiny.toml", "--data-dir", "data"]) == 0
        assert main(["train", "tiny.toml", "--out", "ckpt", "--steps", "4", "--data-dir", "data",
                     "--no-progress"]) == 0
    finally:
        os.chdir(old)
    return root


@pytest.fixture(scope="module")
def nav(tmp_path_factory):
    """nav-grid-tiny's data (generated once)."""
    from worldmodel.tasks import load_task

    root = tmp_path_factory.mktemp("nav")
    task = load_task("nav-grid-tiny")
    task.domain.ensure_data("shortest-paths", root)
    return root


def cli(work: Path, capsys, *argv) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(work)
    try:
        code = main([str(a) for a in argv])
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    return code, out, err


def copy_checkpoint(work: Path, name: str) -> Path:
    import shutil

    dst = work / name
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(work / "ckpt", dst)
    return dst


# ---------------------------------------------------------------------------
# 1. nothing read runs code
# ---------------------------------------------------------------------------


def test_no_weights_only_false_anywhere_in_the_code():
    """No code in the repository (package, scripts, tests, CI) loads a pickle with ``weights_only`` off."""
    needle = "weights_only=" + "False"          # spelled apart so that this file does not match itself
    hits = []
    for path in REPO.rglob("*"):
        if path.suffix in (".py", ".sh", ".toml", ".cfg", ".ipynb") and path.is_file() \
                and not {".mutation", "mutants", ".git"} & set(path.parts):
            if needle in path.read_text(errors="replace").replace(" ", ""):
                hits.append(str(path.relative_to(REPO)))
    assert hits == []
    if (REPO / ".git").exists():
        got = subprocess.run(["git", "grep", "-n", "-E", r"weights_only\s*=\s*False", "--", "*.py", "*.sh",
                              "*.toml", ".ci/*"], cwd=REPO, capture_output=True, text=True)
        assert got.stdout == "" and got.returncode == 1


def test_a_planted_resume_file_never_runs(work, capsys):
    """A resume.pt whose pickle would run os.system is refused; training starts afresh and finishes."""
    marker = work / "PWNED-resume"
    partial = work / "planted.partial"
    partial.mkdir()
    with (partial / "resume.pt").open("wb") as f:
        pickle.dump({"fingerprint": "x", "payload": Marker(marker)}, f)
    code, out, err = cli(work, capsys, "train", "tiny.toml", "--out", "planted", "--steps", "2", "--data-dir", "data",
                         "--no-progress")
    assert code == 0, err
    assert not marker.exists()
    assert "resume state is unreadable or not plain data; starting afresh" in out + err
    assert (work / "planted" / "model.safetensors").exists()


@pytest.mark.parametrize("where", ["pytorch_model.bin", "foreign-file"])
def test_a_planted_weights_pickle_never_runs_and_is_one_line(where, work, capsys):
    """A pickle in a checkpoint folder (or given as --checkpoint) is refused in one line; nothing runs."""
    marker = work / f"PWNED-{where}"
    if where == "pytorch_model.bin":
        bad = copy_checkpoint(work, "pickled-ckpt")
        (bad / "model.safetensors").unlink()
        torch.save({"x": Marker(marker)}, bad / "pytorch_model.bin")
    else:
        bad = work / "foreign.ckpt"
        torch.save({"state_dict": Marker(marker)}, bad)
    code, out, err = cli(work, capsys, "evaluate", "tiny.toml", "--checkpoint", bad, "--metrics", "next-token",
                         "--trials", "2", "--data-dir", "data", "--no-progress")
    line = one_line(err)
    assert code == 2 and line.startswith("worldmodel: error: ") and str(bad.name) in line
    assert "refused" in line and "code" in line
    assert not marker.exists()


# ---------------------------------------------------------------------------
# 2. bounded, validated reads
# ---------------------------------------------------------------------------


def _vocab(folder: Path, text: str | None = None, link: str | None = None) -> None:
    path = folder / "vocab.json"
    path.unlink()
    if link:
        path.symlink_to(link)
    else:
        path.write_text(text)


VOCAB_CASES = [
    ("size-1e10", '{"format": 2, "size": 10000000000, "ids": {"t0": 2}, "bos_id": 1, "pad_id": 0}', None, "size"),
    ("size-negative", '{"format": 2, "size": -5, "ids": {"t0": 2}}', None, "size"),
    ("size-a-string", '{"format": 2, "size": "many", "ids": {"t0": 2}}', None, "size"),
    ("dev-zero", None, "/dev/zero", "not a regular file"),
    ("a-folder", None, "/", "folder"),
    ("repeated-key", '{"tokens": ["t0"], "tokens": ["t1"], "specials": []}', None, "twice"),
    ("token-twice", '{"tokens": ["t0", "t0", "t1"], "specials": []}', None, "twice"),
    ("token-named-pad", '{"tokens": ["<pad>", "t1"], "specials": []}', None, "special"),
    ("id-collides-with-bos", '{"format": 2, "size": 8, "ids": {"t0": 1, "t1": 2}, "bos_id": 1, "pad_id": 0}', None,
     "BOS"),
    ("two-tokens-one-id", '{"format": 2, "size": 8, "ids": {"t0": 3, "t1": 3}, "bos_id": 1}', None, "one id"),
    ("id-out-of-range", '{"format": 2, "size": 4, "ids": {"t0": 9}, "bos_id": 1}', None, "outside"),
    ("nested-deep", "[" * 100000 + "]" * 100000, None, "nested"),
    ("not-json", "{tokens: t0}", None, "not valid JSON"),
    ("not-utf8", b"\xff\xfe{}".decode("latin-1"), None, "UTF-8"),
]


@pytest.mark.parametrize("case", VOCAB_CASES, ids=[c[0] for c in VOCAB_CASES])
def test_hostile_vocab_json_is_one_line(case, work, capsys):
    name, text, link, needle = case
    bad = copy_checkpoint(work, f"vocab-{name}")
    if name == "not-utf8":
        (bad / "vocab.json").write_bytes(b"\xff\xfe{}")
    else:
        _vocab(bad, text, link)
    t0 = time.perf_counter()
    code, out, err = cli(work, capsys, "evaluate", "tiny.toml", "--checkpoint", bad, "--metrics", "next-token",
                         "--trials", "2", "--data-dir", "data", "--no-progress")
    line = one_line(err)
    assert code == 2 and needle in line and "vocab.json" in line, line
    assert time.perf_counter() - t0 < 60


def test_config_json_symlinked_to_dev_zero_is_refused(work, capsys):
    bad = copy_checkpoint(work, "config-zero")
    (bad / "config.json").unlink()
    (bad / "config.json").symlink_to("/dev/zero")
    code, _, err = cli(work, capsys, "evaluate", "tiny.toml", "--checkpoint", bad, "--metrics", "next-token",
                       "--trials", "2", "--data-dir", "data", "--no-progress")
    line = one_line(err)
    assert code == 2 and "config.json" in line and "not a regular file" in line


def test_config_declaring_another_vocabulary_size_is_refused_before_loading(work, capsys):
    bad = copy_checkpoint(work, "config-size")
    cfg = json.loads((bad / "config.json").read_text())
    cfg["vocab_size"] = 10 ** 10
    (bad / "config.json").write_text(json.dumps(cfg))
    code, _, err = cli(work, capsys, "evaluate", "tiny.toml", "--checkpoint", bad, "--metrics", "next-token",
                       "--trials", "2", "--data-dir", "data", "--no-progress")
    line = one_line(err)
    assert code == 2 and "10000000000" in line and "vocab.json" in line


@pytest.mark.parametrize("what", ["no-vocab-ours", "config-only"])
def test_a_checkpoint_folder_without_vocab_json_says_so(what, work, capsys):
    bad = copy_checkpoint(work, f"novocab-{what}")
    (bad / "vocab.json").unlink()
    if what == "config-only":
        for f in bad.iterdir():
            if f.name != "config.json" and f.is_file():
                f.unlink()
    code, _, err = cli(work, capsys, "evaluate", "tiny.toml", "--checkpoint", bad, "--metrics", "next-token",
                       "--trials", "2", "--data-dir", "data", "--no-progress")
    line = one_line(err)
    assert code == 2 and "vocab.json" in line and "piece" not in line


@pytest.mark.parametrize("command", ["evaluate", "import"])
@pytest.mark.parametrize("content", [b"hello world\n", b"", b"\x80\x04K\x01.", b"PK\x03\x04 truncated zip"],
                         ids=["text", "empty", "pickled-int", "broken-zip"])
def test_a_file_that_is_not_a_checkpoint_is_one_line(command, content, work, capsys):
    bad = work / "not-a-checkpoint.bin"
    bad.write_bytes(content)
    argv = (["evaluate", "tiny.toml", "--checkpoint", bad, "--metrics", "next-token", "--data-dir", "data",
             "--no-progress"] if command == "evaluate" else ["import", "tiny.toml", bad, "--out", "imported"])
    code, _, err = cli(work, capsys, *argv)
    line = one_line(err)
    assert code == 2 and "not-a-checkpoint.bin" in line
    assert not (work / "imported").exists()


def test_invalid_utf8_in_a_training_file_is_one_line(work, capsys):
    import shutil

    data = work / "bad-utf8"
    shutil.copytree(work / "data", data, dirs_exist_ok=True)
    train = data / "default" / "train.txt"
    train.write_bytes(train.read_bytes()[:200] + b"\xc3\x28 t0\n")
    for command in (["train", "tiny.toml", "--out", "u8", "--steps", "1"],
                    ["evaluate", "tiny.toml", "--model", "true", "--metrics", "next-token", "--dataset", "default"]):
        if command[0] == "evaluate":
            (data / "default" / "test.txt").write_bytes(train.read_bytes())
        code, _, err = cli(work, capsys, *command, "--data-dir", data, "--no-progress")
        line = one_line(err)
        assert code == 2 and "UTF-8" in line and ".txt" in line, line
    assert not (work / "u8").exists() and not (work / "u8.partial").exists()


def test_hostile_trial_logs_are_one_line(work, capsys):
    args = ["evaluate", "tiny.toml", "--model", "true", "--metrics", "compression", "--trials", "3", "--data-dir",
            "data", "--no-progress"]
    code, _, err = cli(work, capsys, *args, "--out", "tl/base.json")
    assert code == 0, err
    good = (work / "tl" / "base.compression.trials.jsonl").read_text().splitlines()
    header, first = good[0], good[1]
    cases = {
        "second-header": [header, first, header],
        "repeated-trial": [header, first, first],
        "repeated-key": [header, first[:-1] + ', "trial": 9}'],
        "not-a-record": [header, "[1, 2, 3]"],
    }
    for name, lines in cases.items():
        log = work / "tl" / f"{name}.compression.trials.jsonl"
        log.write_text("\n".join(lines) + "\n")
        before = log.read_bytes()
        code, _, err = cli(work, capsys, *args, "--out", f"tl/{name}.json")
        line = one_line(err)
        assert code == 2 and f"{name}.compression.trials.jsonl:" in line, (name, line)
        assert log.read_bytes() == before and not (work / "tl" / f"{name}.json").exists()


def test_response_cache_with_two_answers_to_one_prompt_is_refused(tmp_path):
    cache = tmp_path / "cache.jsonl"
    e = {"key": "k", "backend": "b", "model": "m", "prompt": "p", "response": "yes"}
    cache.write_text(json.dumps(e) + "\n" + json.dumps({**e, "response": "no"}) + "\n")
    with pytest.raises(WorldModelError, match="second, different answer"):
        ResponseCache(cache)
    cache.write_text(json.dumps({**e, "response": "x" * (5 << 20)}) + "\n")
    with pytest.raises(WorldModelError, match="more than"):
        ResponseCache(cache)


def test_a_planted_manifest_naming_files_outside_is_not_trusted(tmp_path, monkeypatch):
    from worldmodel import datasets

    monkeypatch.setenv("WORLDMODEL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "data" / "x"
    folder.mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_text("s")
    (folder / "MANIFEST.json").write_text(json.dumps({"files": {"../../../secret": {"sha256": "0"}}}))
    assert not datasets._verify_installed(folder)
    with pytest.raises(WorldModelError, match="cannot be a file or folder name"):
        datasets._manifest(folder)


@pytest.mark.parametrize("case", ["dev-zero", "repeated-key", "not-utf8"])
def test_a_hostile_simulator_spec_or_textworld_game_is_one_error(case, tmp_path):
    from worldmodel.simulator import SimulatorSpec
    from worldmodel.worlds.textworld.house import _sha256

    for name, load, text in (("spec.json", SimulatorSpec.load, '{"module": "a", "module": "b"}'),
                             ("game.json", _sha256, '{"world": [], "world": {}}')):
        path = tmp_path / f"{case}-{name}"
        if case == "dev-zero":
            path.symlink_to("/dev/zero")
        elif case == "not-utf8":
            path.write_bytes(b'{"world": "\xff"}')
        else:
            path.write_text(text)
        needle = {"dev-zero": "not a regular file", "repeated-key": "twice", "not-utf8": "UTF-8"}[case]
        with pytest.raises(WorldModelError, match=needle):
            load(path)


# ---------------------------------------------------------------------------
# 3. paths stay inside their folder
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../escape", "ABSOLUTE", "a/b", "..", ".", "", " padded"])
def test_a_task_name_cannot_write_outside_the_data_folder(name, tmp_path, capsys, monkeypatch):
    if name == "ABSOLUTE":                      # an absolute path of this test's own (nothing shared in /tmp)
        name = str(tmp_path / "abs-escape")
    monkeypatch.setenv("WORLDMODEL_DATA", str(tmp_path / "data" / "inner"))
    (tmp_path / "data" / "inner").mkdir(parents=True)
    task = tmp_path / "evil.toml"
    task.write_text(TINY.replace('name = "toy-dfa"', f"name = {json.dumps(name)}"))
    before = files(tmp_path)
    code, _, err = cli(tmp_path, capsys, "data", task)
    line = one_line(err)
    assert code == 2 and "name" in line
    assert files(tmp_path) == before          # nothing written, under the data folder or beside it


def test_a_symlink_out_of_the_data_folder_is_refused(tmp_path, capsys, monkeypatch):
    root = tmp_path / "data"
    (root).mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "toy-dfa").symlink_to(outside)
    monkeypatch.setenv("WORLDMODEL_DATA", str(root))
    (tmp_path / "t.toml").write_text(TINY)
    code, _, err = cli(tmp_path, capsys, "data", tmp_path / "t.toml")
    line = one_line(err)
    assert code == 2 and "outside" in line
    assert list(outside.iterdir()) == []


def test_shared_paths_stay_in_the_shared_folder(tmp_path, monkeypatch):
    from worldmodel.datasets import resolve_shared

    shared = tmp_path / "shared"
    (shared / "manhattan").mkdir(parents=True)
    (shared / "manhattan" / "link").symlink_to("/etc")
    monkeypatch.setenv("WORLDMODEL_SHARED", str(shared))
    assert resolve_shared("manhattan/nodes.csv") == shared / "manhattan" / "nodes.csv"
    for bad in ("manhattan/../../x", "manhattan/link/passwd", "../x"):
        with pytest.raises(WorldModelError, match="outside|no data folder"):
            resolve_shared(bad)


# ---------------------------------------------------------------------------
# 4. network answers: bounded bytes, bounded time, prompt Ctrl-C, no retry after failure
# ---------------------------------------------------------------------------

OK_BODY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ANSWER: yes"}}]}).encode()


class FaultServer(LoopbackServer):
    """A chat server on 127.0.0.1 that answers each prompt as ``mode(prompt)`` says.

    Modes: ``ok``; ``drip`` (headers at once, then one body byte every ``drip_s``); ``drip-headers``
    (the status line, then a header byte every ``drip_s``); ``429`` (``Retry-After: 60``);
    ``fatal`` (HTTP 401); ``huge`` (a valid body of ``huge`` bytes); ``huge-length`` (a
    ``Content-Length`` of 10 GB and a short body); ``500``.
    """

    def __init__(self, mode, drip_s: float = 0.2, huge: int = 6 << 20):
        self.mode, self.drip_s, self.huge = mode, drip_s, huge
        self.requests: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                with server.lock:
                    server.requests[prompt] = server.requests.get(prompt, 0) + 1
                mode = server.mode(prompt) if callable(server.mode) else server.mode
                try:
                    self._answer(mode)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass

            def _answer(self, mode):
                if mode in ("429", "fatal", "500"):
                    code = {"429": 429, "fatal": 401, "500": 500}[mode]
                    self.send_response(code)
                    if code == 429:
                        self.send_header("Retry-After", "60")
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                    return
                if mode == "drip-headers":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    while not server.stop.wait(server.drip_s):
                        self.wfile.write(b"X")
                        self.wfile.flush()
                    return
                if mode == "huge":
                    text = "x" * server.huge
                    data = json.dumps({"choices": [{"message": {"content": text}}]}).encode()
                elif mode == "huge-length":
                    data = OK_BODY
                else:
                    data = OK_BODY
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(10 ** 10 if mode == "huge-length" else len(data)))
                self.end_headers()
                if mode == "drip":
                    for i in range(len(data)):
                        if server.stop.wait(server.drip_s):
                            return
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                    return
                self.wfile.write(data)

        self._serve(Handler, "/v1")

    def __exit__(self, *exc):
        self.stop.set()
        super().__exit__(*exc)


def chat(url, **kw):
    opts = dict(timeout=1.0, max_retries=1, backoff=0.01, max_backoff=60.0, concurrency=4)
    opts.update(kw)
    return OpenAIChatBackend(url, "m", "", **opts)


@pytest.mark.parametrize("mode", ["drip", "drip-headers"])
def test_a_dripping_server_is_cut_at_the_request_deadline(mode):
    """--timeout bounds the whole request: a server that sends a byte every 0.2 s is cut after 1 s."""
    with FaultServer(mode) as srv:
        b = chat(srv.url, timeout=1.0, max_retries=1)
        t0 = time.perf_counter()
        with pytest.raises(WorldModelError, match="no complete answer within 1 s"):
            b.ask(["q"])
        took = time.perf_counter() - t0
    assert 1.9 < took < 6.0, took         # two attempts of one second each (not forever)
    assert srv.requests == {"q": 2}


def test_retries_stop_as_soon_as_the_run_has_failed():
    """One prompt fails for good while the others wait out a 60 s Retry-After: the run ends at once."""
    with FaultServer(lambda p: "fatal" if p == "bad" else "429") as srv:
        b = chat(srv.url, max_retries=5, concurrency=4)
        t0 = time.perf_counter()
        with pytest.raises(WorldModelError, match="HTTP 401"):
            b.ask(["a", "b", "c", "bad"])
        took = time.perf_counter() - t0
        time.sleep(0.5)
        seen = dict(srv.requests)
    assert took < 5.0, took
    assert seen["bad"] == 1 and all(n == 1 for n in seen.values())      # no retry after the failure
    assert _threads_gone(3.0)                                            # no request left running


def _threads_gone(within: float) -> bool:
    end = time.time() + within
    while time.time() < end:
        if not [t for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor") and t.is_alive()]:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("mode", ["huge", "huge-length"])
def test_an_oversized_answer_is_refused_and_never_cached(mode, tmp_path):
    with FaultServer(mode) as srv:
        cache = ResponseCache(tmp_path / "cache.jsonl")
        b = CachedBackend(chat(srv.url, max_response_bytes=1 << 20), cache, progress=False)
        with pytest.raises(WorldModelError, match="more than 1,048,576 bytes"):
            b.ask(["q"])
        b.close()
    assert not (tmp_path / "cache.jsonl").exists() or (tmp_path / "cache.jsonl").stat().st_size == 0


def test_answers_are_cached_as_they_arrive(tmp_path):
    """20 prompts, one of which always fails: the other 19 answers are in the cache when the run stops."""
    prompts = [f"p{i}" for i in range(20)]
    with FaultServer(lambda p: "500" if p == "p19" else "ok") as srv:
        cache = ResponseCache(tmp_path / "cache.jsonl")
        b = CachedBackend(chat(srv.url, max_retries=2, backoff=0.5, concurrency=4), cache, progress=False)
        with pytest.raises(WorldModelError, match="failed 3 times"):
            b.ask(prompts)
        b.close()
    cached = [json.loads(line)["prompt"] for line in (tmp_path / "cache.jsonl").read_text().splitlines()]
    assert sorted(cached) == sorted(p for p in prompts if p != "p19")
    with FaultServer("ok") as srv:             # the rerun sends only the prompt that failed
        b = CachedBackend(chat(srv.url), ResponseCache(tmp_path / "cache.jsonl"), progress=False)
        assert b.ask(prompts) == ["ANSWER: yes"] * 20
        b.close()
        assert srv.requests == {"p19": 1}


def test_ctrl_c_stops_an_llm_run_at_once(tmp_path):
    """SIGINT while every request drips: the process exits 130 within seconds, with one line."""
    with FaultServer("drip", drip_s=0.5) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "worldmodel.cli", "llm-eval", "seating", "--backend", "openai", "--base-url",
             srv.url, "--model", "m", "--api-key-env", "", "--timeout", "300", "--states", "4", "--out",
             str(tmp_path / "llm"), "--no-progress"],
            env=ENV, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a shell without job control starts background jobs with SIGINT ignored, and children inherit that
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        end = time.time() + 120
        while not srv.requests and time.time() < end and proc.poll() is None:
            time.sleep(0.1)
        assert srv.requests, "the run never reached the server"
        time.sleep(0.5)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("still running 20 s after Ctrl-C")
        took = time.perf_counter() - t0
    assert proc.returncode == 130, err
    assert one_line(err) == "worldmodel: interrupted"
    assert took < 10, took


# ---------------------------------------------------------------------------
# 5. one output, one writer
# ---------------------------------------------------------------------------

HOLD = """
import sys, time
from worldmodel.safety import claim
c = claim(sys.argv[1], "--out")
print("held", flush=True)
time.sleep(120)
"""


class Holder:
    """A second process that claims ``path`` (as a run writing it would) until stopped."""

    def __init__(self, path):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], env=ENV, stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout.readline().strip() == "held"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


@pytest.mark.parametrize("command", ["evaluate", "train", "detours", "reconstruct", "import", "llm-eval"])
def test_a_second_run_on_the_same_out_stops_with_one_line_naming_the_first(command, work, capsys):
    out = work / f"busy-{command}" / ("out.json" if command in ("evaluate", "detours") else "o")
    argv = {
        "evaluate": ["evaluate", "tiny.toml", "--model", "true", "--trials", "2", "--metrics", "compression",
                     "--data-dir", "data", "--no-progress"],
        "train": ["train", "tiny.toml", "--steps", "1", "--data-dir", "data", "--no-progress"],
        "detours": ["detours", "nav-grid-tiny", "--model", "true", "--data-dir", "nav", "--no-progress"],
        "reconstruct": ["reconstruct", "nav-grid-tiny", "--model", "true", "--data-dir", "nav", "--no-progress"],
        "import": ["import", "tiny.toml", "ckpt"],
        "llm-eval": ["llm-eval", "seating", "--backend", "true", "--states", "2", "--no-progress"],
    }[command]
    with Holder(out) as h:
        code, _, err = cli(work, capsys, *argv, "--out", out)
        line = one_line(err)
    assert code == 2 and str(out) in line and f"pid {h.proc.pid}" in line, line
    assert not out.exists() and not out.parent.exists()


@pytest.mark.slow
def test_two_real_evaluate_runs_on_one_out(work):
    """The issue's case with two real processes started together: one writes, the other stops in one line;
    every trial is logged once and the log reads back."""
    cmd = [sys.executable, "-m", "worldmodel.cli", "evaluate", "tiny.toml", "--model", "true", "--metrics",
           "compression", "--trials", "300", "--data-dir", "data", "--out", "race/r.json", "--no-progress"]
    lock = safety._lock_file(work / "race" / "r.json")
    first = subprocess.Popen(cmd, cwd=work, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.time() + 120
    while not lock.exists() and first.poll() is None and time.time() < end:   # the first run has claimed --out
        time.sleep(0.02)
    second = subprocess.Popen(cmd, cwd=work, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in (first, second)]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 2], results
    loser = next(r for r in results if r[0] == 2)
    assert f"is being written by another run (pid {first.pid}" in one_line(loser[2])
    lines = (work / "race" / "r.compression.trials.jsonl").read_text().splitlines()
    trials = [json.loads(x)["trial"] for x in lines[1:]]
    assert sorted(trials) == list(range(300))


def test_trial_logs_and_caches_are_claimed_too(tmp_path):
    log = tmp_path / "x.trials.jsonl"
    with Holder(log) as h:
        with pytest.raises(WorldModelError, match=f"trial log .* another run \\(pid {h.proc.pid}"):
            TrialLog(log, {"a": 1})
    cache = tmp_path / "c.jsonl"
    with Holder(cache):
        with pytest.raises(WorldModelError, match="response cache"):
            ResponseCache(cache)
    TrialLog(log, {"a": 1}).close()             # released when the holder dies
    ResponseCache(cache).close()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    out = tmp_path / "o.json"
    h = Holder(out)
    h.proc.send_signal(signal.SIGKILL)
    h.proc.wait()
    with safety.claim(out):
        pass
    assert list(safety.lock_dir().glob(safety._lock_file(out).name)) == []


# ---------------------------------------------------------------------------
# 6. append-only logs, atomic writes and swaps
# ---------------------------------------------------------------------------


def test_a_torn_trial_log_is_repaired_by_a_new_file_and_a_cut_repair_loses_nothing(tmp_path, monkeypatch):
    log = tmp_path / "l.jsonl"
    header = json.dumps({"settings": {"a": 1}})
    trials = [json.dumps({"trial": i, "status": "ok", "score": 1.0}) for i in range(63)]
    log.write_text("\n".join([header, *trials]) + '\n{"trial": 63, "sta')
    whole = log.read_bytes()
    inode = log.stat().st_ino

    def cut(*args):
        raise KeyboardInterrupt              # the kill arrives while the repaired copy is being put in place

    monkeypatch.setattr(safety.os, "replace", cut)
    with pytest.raises(KeyboardInterrupt):
        TrialLog(log, {"a": 1})
    assert log.read_bytes() == whole                    # the 63 finished trials are all still there
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.jsonl"]    # and no temporary file is left
    monkeypatch.undo()
    t = TrialLog(log, {"a": 1})
    assert sorted(t.done) == list(range(63))
    t.close()
    assert log.stat().st_ino != inode                   # a new file, renamed over the old one
    assert log.read_text() == "\n".join([header, *trials]) + "\n"


def _steps(folder: Path) -> list[int]:
    return [json.loads(x)["step"] for x in (folder / "train_log.jsonl").read_text().splitlines()]


def test_a_kill_at_the_final_swap_keeps_the_old_out_and_the_rerun_does_not_retrain(work, capsys, monkeypatch):
    from worldmodel.training import loop

    out = work / "swap-out"
    code, _, err = cli(work, capsys, "train", "tiny.toml", "--out", out, "--steps", "2", "--data-dir", "data",
                       "--no-progress")
    assert code == 0, err
    old_weights = (out / "model.safetensors").read_bytes()
    real = loop.swap_folder

    def killed(new, final):
        raise KeyboardInterrupt                      # kill -9 just before the finished folder is swapped in

    monkeypatch.setattr(loop, "swap_folder", killed)
    code, _, err = cli(work, capsys, "train", "tiny.toml", "--out", out, "--steps", "6", "--data-dir", "data",
                       "--no-progress", "--seed", "1")
    assert code == 130
    assert (out / "model.safetensors").read_bytes() == old_weights      # the old --out is intact
    partial = work / "swap-out.partial"
    assert (partial / "training.json").exists()
    monkeypatch.setattr(loop, "swap_folder", real)
    drawn = {"n": 0}
    real_next = loop.FileBatches.next

    def counting(self):
        drawn["n"] += 1
        return real_next(self)

    monkeypatch.setattr(loop.FileBatches, "next", counting)
    code, out_text, err = cli(work, capsys, "train", "tiny.toml", "--out", out, "--steps", "6", "--data-dir", "data",
                              "--no-progress", "--seed", "1")
    assert code == 0, err
    assert drawn["n"] == 0 and "finished checkpoint" in out_text + err     # the complete .partial was kept
    assert not partial.exists() and _steps(out)[-1] == 6
    assert json.loads((out / "training.json").read_text())["steps"] == 6


def test_sigint_exits_130_and_sigint_after_the_last_step_redoes_nothing(work, capsys, monkeypatch):
    from worldmodel.training import loop, state

    real = loop.FileBatches.next
    calls = {"n": 0}

    def interrupt_at_3(self):
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return real(self)

    monkeypatch.setattr(loop.FileBatches, "next", interrupt_at_3)
    code, _, err = cli(work, capsys, "train", "tiny.toml", "--out", "sig", "--steps", "6", "--data-dir", "data",
                       "--no-progress")
    assert code == 130
    assert one_line(err).startswith("worldmodel: interrupted at step 3; rerun the same command")
    monkeypatch.setattr(loop.FileBatches, "next", real)
    # Ctrl-C while the finished run writes its files: the run completes; no step is lost or redone
    real_save = state.save_model

    def interrupted_save(model, folder):
        os.kill(os.getpid(), signal.SIGINT)
        return real_save(model, folder)

    monkeypatch.setattr(loop, "save_model", interrupted_save)
    code, _, err = cli(work, capsys, "train", "tiny.toml", "--out", "sig", "--steps", "6", "--data-dir", "data",
                       "--no-progress")
    assert code == 0, err
    assert _steps(work / "sig")[-1] == 6 and not (work / "sig.partial").exists()


# ---------------------------------------------------------------------------
# 7. a full disk, a memory limit: one line, exit 2, nothing half-written
# ---------------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path):
    """A tmpfs of 256 KiB filled to a few KiB free (root and mount needed; skipped otherwise)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        (mnt / "ballast").write_bytes(b"\0" * (free - 12 * 1024))
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_disk_during_evaluate_train_and_fetch_is_one_line(full_disk, work, capsys, monkeypatch):
    cases = [
        ["evaluate", "tiny.toml", "--model", "true", "--metrics", "compression,distinction", "--trials", "60",
         "--data-dir", "data", "--no-progress", "--out", full_disk / "e.json"],
        ["train", "tiny.toml", "--steps", "2", "--data-dir", "data", "--no-progress", "--out", full_disk / "ck"],
    ]
    from worldmodel.results import read_trial_log

    for argv in cases:
        code, _, err = cli(work, capsys, *argv)
        line = one_line(err)
        assert code == 2 and "no space left on the device (the disk is full)" in line and str(full_disk) in line, line
        # no summary, no checkpoint, no temporary file; what is left is whole and resumable
        assert not (full_disk / "e.json").exists() and not (full_disk / "ck").exists()
        assert not [f for f in files(full_disk) if f.endswith(".tmp") or "/." in "/" + f]
    for log in full_disk.glob("e.*.trials.jsonl"):
        done, good, total = read_trial_log(log, json.loads(log.read_text().splitlines()[0])["settings"])
        assert len(good) == total and log.read_bytes().endswith(b"\n")     # no torn line
    # fetch from a local mirror into a cache on the full disk
    from worldmodel import datasets

    mirror = REPO / "tests" / "fixtures" / "data"
    monkeypatch.setenv("WORLDMODEL_CACHE", str(full_disk / "cache"))
    code, _, err = cli(work, capsys, "fetch", "wthor", "--from", mirror, "--no-progress")
    if code == 0:
        pytest.skip("the fixtures' WTHOR files fit on the disk")       # pragma: no cover
    line = one_line(err)
    assert code == 2 and "no space left" in line and "cache" in line, line
    assert not (full_disk / "cache" / "data" / "othello").exists()
    assert datasets.installed(datasets.dataset("wthor")) is None
    assert not [f for f in files(full_disk) if f.startswith("cache/data/.")]       # no staging folder left


def test_enospc_anywhere_in_a_command_is_one_line(work, capsys, monkeypatch):
    """Without a tmpfs: the summary write raises ENOSPC; the CLI says which file and why, exit 2."""
    from worldmodel import results

    def full(path, data, what=""):
        raise safety.os_failure(OSError(errno.ENOSPC, "No space left on device"), path)

    monkeypatch.setattr(results, "atomic_write", full)
    code, _, err = cli(work, capsys, "evaluate", "tiny.toml", "--model", "true", "--metrics", "compression",
                       "--trials", "2", "--data-dir", "data", "--no-progress", "--out", "enospc/e.json")
    line = one_line(err)
    assert code == 2 and "enospc/e." in line and "disk is full" in line
    assert not (work / "enospc" / "e.json").exists()
    # and an OSError raised outside our writers (no file named by the system) is still one line
    monkeypatch.setattr("worldmodel.commands.core.cmd_data",
                        lambda args: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
    code, _, err = cli(work, capsys, "data", "tiny.toml", "--data-dir", "data")
    assert code == 2 and "disk is full" in one_line(err)


MEMORY = """
import resource, sys
sys.argv = ["worldmodel"] + sys.argv[1:]
import torch, transformers  # loaded before the limit
from worldmodel.cli import main
with open("/proc/self/status") as f:
    vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + (700 << 20), vm + (700 << 20)))
sys.exit(main(sys.argv[1:]))
"""


def test_a_memory_limit_is_one_line(tmp_path):
    """A model far larger than the memory limit: the failed allocation is one line, exit 2."""
    big = TINY.replace("n_layer = 1", "n_layer = 4").replace("n_embd = 16", "n_embd = 8192")
    (tmp_path / "big.toml").write_text(big.replace("n_head = 2", "n_head = 8"))
    proc = subprocess.run([sys.executable, "-c", MEMORY, "evaluate", "big.toml", "--model", "untrained",
                           "--metrics", "next-token", "--trials", "2", "--no-progress", "--out", "m.json"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = one_line(proc.stderr)
    assert line.startswith("worldmodel: error: out of memory")
    assert not (tmp_path / "m.json").exists()


# ---------------------------------------------------------------------------
# 8. no quiet wrong answers
# ---------------------------------------------------------------------------


def test_detours_draw_distinct_starts_and_say_when_there_are_fewer(tmp_path, capsys, nav):
    from worldmodel.tasks import load_task
    from worldmodel.worlds.navigation.data import iter_od_pairs

    code, out, err = cli(tmp_path, capsys, "detours", "nav-grid-tiny", "--model", "true", "--trials", "100000",
                         "--p", "0", "--data-dir", nav, "--out", "d.json", "--no-progress")
    assert code == 0, err
    data = json.loads((tmp_path / "d.json").read_text())
    starts = [tuple(t["tokens"][:2]) for t in data["trials"]]
    task = load_task("nav-grid-tiny")
    distinct = set(iter_od_pairs(task.domain.sequences("test", "shortest-paths", nav)))
    assert len(starts) == len(set(starts)) == data["n_starts"] < 100000
    assert set(starts) <= distinct and data["n_asked"] == 100000
    assert "note: the shortest-paths test split has only" in out
    assert data["results"][0]["n"] == data["n_starts"]          # the standard error counts what was run


def test_reconstruct_draws_without_replacement_and_refuses_a_file_of_no_rides(tmp_path, capsys, nav):
    code, out, err = cli(tmp_path, capsys, "reconstruct", "nav-grid-tiny", "--model", "true", "--n-sequences",
                         "100000", "--data-dir", nav, "--out", "rec", "--no-progress")
    assert code == 0, err
    stats = json.loads((tmp_path / "rec" / "stats.json").read_text())
    assert "note: the shortest-paths test split has only" in out
    assert stats["input_sequences"] < 100000
    junk = tmp_path / "junk.txt"
    junk.write_text("hello world\nfoo bar baz qux\n\n")
    code, out, err = cli(tmp_path, capsys, "reconstruct", "nav-grid-tiny", "--sequences", junk, "--data-dir", nav,
                         "--out", "rec2", "--no-progress")
    line = one_line(err)
    assert code == 2 and "junk.txt" in line and "nothing to reconstruct" in line
    assert not (tmp_path / "rec2").exists()


@pytest.mark.parametrize("case", ["not-utf8", "dev-zero", "a-folder"])
def test_a_hostile_sequence_file_for_reconstruct_is_one_line(case, tmp_path, capsys, nav):
    seqs = tmp_path / "seqs.txt"
    if case == "not-utf8":
        seqs.write_bytes(b"n0 \xc3\x28 n1\n")
    elif case == "dev-zero":
        seqs.symlink_to("/dev/zero")
    else:
        seqs.mkdir()
    code, _, err = cli(tmp_path, capsys, "reconstruct", "nav-grid-tiny", "--sequences", seqs, "--data-dir", nav,
                       "--out", "rec3", "--no-progress")
    line = one_line(err)
    assert code == 2 and "seqs.txt" in line, line
    assert not (tmp_path / "rec3").exists()


def test_a_hostile_training_record_is_never_taken(work, capsys):
    """training.json (which names the data set a checkpoint was trained on) symlinked to /dev/zero, or with a
    key twice: it is not read past its bound, not taken, and a checkpoint folder with it is not reused."""
    from worldmodel import checkpoints
    from worldmodel.tasks import load_task

    task = load_task(str(work / "tiny.toml"))
    for name, text in (("dev-zero", None), ("repeated-key", '{"dataset": "default", "dataset": "other"}')):
        bad = copy_checkpoint(work, f"record-{name}")
        record = bad / "training.json"
        record.unlink()
        if text is None:
            record.symlink_to("/dev/zero")
        else:
            record.write_text(text)
        t0 = time.perf_counter()
        assert checkpoints.trained_dataset(bad) is None
        assert checkpoints.choose_dataset(["default", "other"], checkpoint=bad) == "default"
        why = checkpoints.mismatch(bad, task, "default", 4)
        assert why.startswith("unreadable training record") and ("twice" in why or "regular file" in why), why
        assert time.perf_counter() - t0 < 5


# ---------------------------------------------------------------------------
# 9. help texts and the README's commands
# ---------------------------------------------------------------------------


def test_every_option_of_every_command_has_a_help_text():
    import argparse

    from worldmodel.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = {name: [a.dest for a in p._actions if not a.help] for name, p in sub.choices.items()}
    assert {k: v for k, v in missing.items() if v} == {}
    rec = sub.choices["reconstruct"]
    assert "default 500" in next(a.help for a in rec._actions if a.dest == "n_sequences")
    kind = next(a.help for a in sub.choices["detours"]._actions if a.dest == "kind")
    assert "random,adversarial" in kind and "or adversarial" in kind


def test_readme_commands_name_what_they_need():
    """The command summary (docs/commands.md) names what detours and reconstruct require."""
    commands = (REPO / "docs" / "commands.md").read_text()
    assert "worldmodel detours TASK (--checkpoint DIR | --model true)" in commands
    line = next(x for x in commands.splitlines() if x.startswith("worldmodel detours TASK"))
    assert "--out FILE" in line
    line = next(x for x in commands.splitlines() if x.startswith("worldmodel reconstruct TASK"))
    assert "--out DIR" in line and "--n-sequences" in line
    readme = (REPO / "README.md").read_text()
    assert "runs/toy-dfa/seed-0/checkpoint" in readme and "docs/reliability.md" in readme
    assert "## The promises" in (REPO / "docs" / "reliability.md").read_text()


def readme_snippets() -> list[str]:
    """The ```python blocks of the README's landing page, then those of docs/library.md, in order."""
    blocks = []
    for page in (REPO / "README.md", REPO / "docs" / "library.md"):
        blocks += [b.split("```", 1)[0] for b in page.read_text().split("```python\n")[1:]]
    return blocks


def test_the_readme_library_snippet_runs_as_written(work, tmp_path, monkeypatch, capsys):
    """The first snippet, character for character, on the checkpoint path the toy script writes."""
    import shutil

    snippet = readme_snippets()[0]
    assert 'checkpoint="runs/toy-dfa/seed-0/checkpoint"' in snippet
    shutil.copytree(work / "ckpt", tmp_path / "runs" / "toy-dfa" / "seed-0" / "checkpoint")
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "compression_precision" in printed and "distinction_precision" in printed


@pytest.mark.slow
def test_the_readme_custom_world_snippet_runs_as_written(tmp_path, monkeypatch, capsys):
    snippet = next(b for b in readme_snippets() if "wm.ExplicitDFA.from_dict" in b)
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "compression_precision" in printed and (tmp_path / "runs" / "counter" / "vocab.json").exists()
