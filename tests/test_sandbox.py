"""The untrusted-code sandbox: a simulator that hangs, eats memory, runs programs, writes outside its
scratch folder or opens a socket is one recorded failure, and the side effect does not happen."""

from __future__ import annotations

import os
import socket
import textwrap
from pathlib import Path

import pytest

from worldmodel import sandbox
from worldmodel.sandbox import Limits, SandboxUnavailable, Worker, WorkerFailed
from worldmodel.simulator import Simulator, SimulatorFailed, crawl

FIXTURES = Path(__file__).parent / "fixtures" / "simulators"
FAST = Limits(call_s=3.0, start_s=10.0, memory_mb=512)

# A minimal TextGame whose one action "go" runs BODY (the rest is the convention's plumbing).
GAME = '''
import os, random, socket
class TextGame:
    def __init__(self, randomSeed):
        self.gameOver = False
        self.gameWon = False
        self.n = 0
        INIT
    def generatePossibleActions(self):
        self.possibleActions = {"go": ["go"], "wait": ["wait"]}
        return self.possibleActions
    def step(self, action):
        if action == "go":
            BODY
        self.n = (self.n + 1) % 3
        return ("", 0, 0, False, False)
'''


def game(tmp_path: Path, body: str = "pass", init: str = "pass", name: str = "game.py") -> Path:
    src = GAME.replace("BODY", textwrap.indent(textwrap.dedent(body), " " * 12).strip()).replace("INIT", init)
    path = tmp_path / name
    path.write_text(src)
    return path


def go(path: Path, limits: Limits = FAST) -> dict:
    """The crawl's record of stepping ``go`` from the start."""
    c = crawl(path, limits=limits, max_states=20)
    return {"errors": c.errors, "failure": c.failure, "closed": c.closed, "states": c.n_states}


def test_the_sandbox_is_available_here():
    """CI installs bubblewrap (.ci/run); without it every other test here would be meaningless."""
    sandbox.check_sandbox()


def test_a_well_behaved_game_runs(tmp_path):
    rec = go(game(tmp_path))
    assert rec["failure"] is None and rec["closed"] and not rec["errors"]


def test_a_game_that_loops_forever_is_a_recorded_timeout(tmp_path):
    rec = go(game(tmp_path, "while True:\n    pass"))
    assert rec["failure"] is not None and rec["failure"].startswith("timeout")
    assert not rec["closed"]


def test_a_game_that_hangs_while_loading_is_a_recorded_failure(tmp_path):
    rec = go(game(tmp_path, init="while True: pass"), Limits(call_s=3, start_s=3, memory_mb=512))
    assert rec["failure"] is not None and "timeout" in rec["failure"] and rec["states"] == 0


def test_a_game_that_allocates_without_bound_is_a_recorded_failure(tmp_path):
    rec = go(game(tmp_path, "x = []\nwhile True:\n    x.append(bytearray(1 << 24))"),
             Limits(call_s=30, memory_mb=256))
    # the address-space limit turns the allocation into a MemoryError the worker records, or kills it
    assert rec["errors"] or rec["failure"]
    msgs = " ".join(list(rec["errors"].values()) + [rec["failure"] or ""])
    assert "MemoryError" in msgs or "crashed" in msgs or "memory" in msgs


def test_os_system_does_not_run(tmp_path):
    marker = tmp_path / "pwned-by-os-system"
    rec = go(game(tmp_path, f"r = os.system('touch {marker}')\nif r != 0:\n    raise RuntimeError('os.system refused: %d' % r)"))
    assert not marker.exists()
    assert any("os.system refused" in e or "PermissionError" in e for e in rec["errors"].values()), rec


def test_subprocess_and_fork_do_not_run(tmp_path):
    marker = tmp_path / "pwned-by-subprocess"
    rec = go(game(tmp_path, f"import subprocess\nsubprocess.run(['touch', '{marker}'])"))
    assert not marker.exists()
    assert any("PermissionError" in e for e in rec["errors"].values()), rec
    rec = go(game(tmp_path, "os.fork()", name="fork.py"))
    assert any("PermissionError" in e for e in rec["errors"].values()), rec


def test_writing_outside_the_scratch_folder_fails(tmp_path):
    target = tmp_path / "written-by-the-game.txt"
    rec = go(game(tmp_path, f"open('{target}', 'w').write('x')"))
    assert not target.exists()
    assert rec["errors"], rec
    # nor may it overwrite its own file, or write at the root
    own = game(tmp_path, "open(__file__, 'w').write('gone')", name="own.py")
    before = own.read_text()
    rec = go(own)
    assert own.read_text() == before and rec["errors"]


def test_the_scratch_folder_is_writable(tmp_path):
    rec = go(game(tmp_path, "open('/scratch/notes.txt', 'w').write('ok')\nassert open('notes.txt').read() == 'ok'"))
    assert not rec["errors"] and rec["failure"] is None


def test_a_socket_reaches_nothing(tmp_path):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    try:
        rec = go(game(tmp_path, f"s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ns.sendall(b'hi')"))
        with pytest.raises(OSError):  # nothing ever connected
            server.accept()
    finally:
        server.close()
    assert any("PermissionError" in e or "OSError" in e or "refused" in e.lower() for e in rec["errors"].values()), rec


def test_the_host_is_invisible(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host data")
    rec = go(game(tmp_path, f"open('{secret}').read()"))
    assert any("FileNotFoundError" in e for e in rec["errors"].values()), rec


def test_a_crash_of_the_interpreter_is_a_recorded_failure(tmp_path):
    rec = go(game(tmp_path, "os._exit(3)"))
    assert rec["failure"] is not None and "crashed" in rec["failure"] and "status 3" in rec["failure"]


def test_printing_and_input_do_not_break_the_protocol(tmp_path):
    rec = go(game(tmp_path, "print('noise\\n' * 1000)\nos.write(1, b'raw noise\\n')\ninput('> ')"))
    # input() sees end of file: one recorded error, and the worker keeps answering
    assert any("EOFError" in e for e in rec["errors"].values()) and rec["failure"] is None


def test_import_errors_are_recorded_not_raised(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    c = crawl(bad, limits=FAST)
    assert c.failure and "SyntaxError" in c.failure and c.n_states == 0
    with pytest.raises(SimulatorFailed) as info:
        Simulator(bad, limits=FAST)
    assert info.value.stage == "import"


def test_without_bubblewrap_the_toolkit_refuses(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "_bwrap", lambda: None)
    monkeypatch.setattr(sandbox, "_probed", False)
    monkeypatch.setattr(sandbox, "_probe_result", None)
    with pytest.raises(SandboxUnavailable) as info:
        Worker(sandbox.__file__)
    msg = str(info.value)
    assert "refusing to run untrusted code" in msg and "bubblewrap" in msg and "--unsafe-no-sandbox" in msg
    assert "\n" not in msg


def test_the_explicit_opt_out_runs_unconfined(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "_bwrap", lambda: None)
    monkeypatch.setattr(sandbox, "_probed", False)
    monkeypatch.setattr(sandbox, "_probe_result", None)
    c = crawl(FIXTURES / "box_key.py", limits=FAST, unsafe=True)
    assert c.closed and c.failure is None
    # the time limit still holds without the OS boundary
    rec = crawl(game(tmp_path, "while True:\n    pass"), limits=FAST, unsafe=True)
    assert rec.failure and rec.failure.startswith("timeout")


def test_a_worker_request_after_death_fails_cleanly(tmp_path):
    w = Worker(Path(sandbox.__file__).with_name("simworker.py"), {"sim.py": game(tmp_path)}, limits=FAST)
    w.close()
    with pytest.raises(WorkerFailed):
        w.call({"op": "stats"})
