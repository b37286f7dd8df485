"""The shared defences of :mod:`worldmodel.safety`, one by one (fast; the end-to-end cases are in
``tests/test_hostile.py``)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from worldmodel import safety
from worldmodel.errors import WorldModelError


def test_strict_json_reader_units(tmp_path):
    assert safety.loads_json('{"a": {"b": [1, 2]}}', "x") == {"a": {"b": [1, 2]}}
    for text, needle in [('{"a": 1, "a": 1}', "twice"), ('{"x": {"a": 1, "a": 2}}', "twice"),
                         ('[' * 500 + ']' * 500, "nested"), ("{", "not valid JSON")]:
        with pytest.raises(WorldModelError, match=needle):
            safety.loads_json(text, "x")
    big = tmp_path / "big.json"
    big.write_text(" " * 100 + "{}")
    with pytest.raises(WorldModelError, match="more than"):
        safety.read_json(big, limit=64)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(WorldModelError, match="not a regular file"):
        safety.read_json(fifo)                  # never blocks on a pipe


def test_inside_and_path_component_units(tmp_path):
    (tmp_path / "a").mkdir()
    assert safety.inside(tmp_path, "a/b") == tmp_path / "a" / "b"
    for bad in ("../x", "/etc", "a/../../x"):
        with pytest.raises(WorldModelError, match="outside"):
            safety.inside(tmp_path, bad)
    assert safety.path_component("toy-dfa") == "toy-dfa"
    for bad in ("", ".", "..", "a/b", "a\\b", "/x", "x\x00", " x"):
        with pytest.raises(WorldModelError):
            safety.path_component(bad)


@pytest.mark.parametrize("fail", ["write", "rename"])
def test_atomic_write_keeps_the_old_file_when_it_fails(fail, tmp_path, monkeypatch):
    target = tmp_path / "t.json"
    target.write_text("old")
    if fail == "write":
        monkeypatch.setattr(safety.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    else:
        monkeypatch.setattr(safety.os, "replace", lambda a, b: (_ for _ in ()).throw(OSError(errno.EIO, "io")))
    with pytest.raises(WorldModelError, match=f"cannot write .*t.json: "
                                              f"{'no space left' if fail == 'write' else 'input/output'}"):
        safety.atomic_write(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t.json"]


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_swap_folder_and_its_recovery(exchange, tmp_path, monkeypatch):
    final, new = tmp_path / "out", tmp_path / "out.partial"
    final.mkdir()
    (final / "f").write_text("old")
    new.mkdir()
    (new / "f").write_text("new")
    if not exchange:
        monkeypatch.setattr(safety, "_exchange", lambda a, b: False)
    safety.swap_folder(new, final)
    assert (final / "f").read_text() == "new" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # a two-rename swap cut between its renames: the old folder is put back
    old = tmp_path / ".out.old"
    final.rename(old)
    safety.recover_swap(final)
    assert (final / "f").read_text() == "new" and not old.exists()


def test_a_claim_is_reentrant_in_a_process_and_exclusive_across_processes(tmp_path):
    out = tmp_path / "o.json"
    a = safety.claim(out)
    b = safety.claim(tmp_path / "." / "o.json")            # the same path, spelled another way: the same claim
    assert safety.held(out)
    code = ("import sys\nfrom worldmodel.safety import claim\ntry:\n    claim(sys.argv[1])\n"
            "except Exception as e:\n    print(e)\n    sys.exit(3)\n")
    env = {**os.environ, "PYTHONPATH": str(safety.Path(__file__).resolve().parents[1])}
    other = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True)
    assert other.returncode == 3 and f"pid {os.getpid()}" in other.stdout and str(out) in other.stdout
    b.release()
    assert safety.held(out)                                # still held: a is not released
    a.release()
    a.release()                                            # releasing twice is harmless
    assert not safety.held(out)
    assert not safety._lock_file(out).exists()              # the lock file goes with the last claim
    free = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True)
    assert free.returncode == 0, free.stdout


def test_a_claim_waits_when_asked(tmp_path):
    import time

    out = tmp_path / "d"
    env = {**os.environ, "PYTHONPATH": str(safety.Path(__file__).resolve().parents[1])}
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom worldmodel.safety import claim\n"
                               "c = claim(sys.argv[1])\nprint('held', flush=True)\ntime.sleep(1.5)\n", str(out)],
                              env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    t0 = time.perf_counter()
    with safety.claim(out, wait=True):
        waited = time.perf_counter() - t0
    holder.wait()
    assert waited > 0.3


def test_lock_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLDMODEL_LOCKS", str(tmp_path / "locks"))
    assert safety.lock_dir() == tmp_path / "locks"
    with safety.claim(tmp_path / "x"):
        assert len(list((tmp_path / "locks").iterdir())) == 1
        info = json.loads(next((tmp_path / "locks").iterdir()).read_text())
        assert info["pid"] == os.getpid() and info["path"] == str(tmp_path / "x")
    assert list((tmp_path / "locks").iterdir()) == []


def test_os_failures_are_one_line_naming_the_file_and_the_cause(tmp_path):
    e = safety.os_failure(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "f")
    assert str(e) == f"cannot write {tmp_path / 'f'}: no space left on the device (the disk is full)"
    e = safety.os_failure(OSError(errno.EROFS, "Read-only file system", "/ro/x"), doing="write")
    assert str(e) == "cannot write /ro/x: the file system is read-only"
    assert safety.cause(OSError(errno.ECONNREFUSED, "Connection refused")) == "Connection refused"
    with pytest.raises(WorldModelError, match="cannot write .*g: permission denied"):
        with safety.writing(tmp_path / "g"):
            raise PermissionError(errno.EACCES, "Permission denied")
    with pytest.raises(WorldModelError, match="out of memory while writing"):
        with safety.writing(tmp_path / "g"):
            raise MemoryError()
    with pytest.raises(ValueError):                         # anything else is a bug: it keeps its traceback
        with safety.writing(tmp_path / "g"):
            raise ValueError("a bug")
    assert safety.is_allocation_failure(RuntimeError("[enforce fail] DefaultCPUAllocator: can't allocate memory"))
    assert not safety.is_allocation_failure(RuntimeError("shape mismatch"))
    assert str(safety.memory_failure(MemoryError())).startswith("out of memory; ")


def test_atomic_writers_replace_whole_files(tmp_path):
    target = tmp_path / "sub" / "t.txt"
    safety.atomic_write(target, "one")
    safety.atomic_write(target, b"two")
    assert target.read_text() == "two"
    safety.atomic_write(target, (f"{i}\n" for i in range(3)))
    assert target.read_text() == "0\n1\n2\n"
    safety.atomic_json(tmp_path / "j.json", {"a": [1]}, indent=1)
    assert json.loads((tmp_path / "j.json").read_text()) == {"a": [1]}
    safety.rewrite_lines(target, ["x", "y"])
    assert target.read_text() == "x\ny\n"
    png = tmp_path / "fig.png"
    seen = []
    safety.atomic_file(png, lambda tmp: (seen.append(tmp), open(tmp, "wb").write(b"P")))
    assert png.read_bytes() == b"P" and seen[0].endswith(".png") and seen[0] != str(png)
    with pytest.raises(ZeroDivisionError):
        safety.atomic_file(png, lambda tmp: 1 / 0)
    assert png.read_bytes() == b"P" and sorted(p.name for p in tmp_path.iterdir()) == ["fig.png", "j.json", "sub"]
    assert oct(target.stat().st_mode & 0o777) == oct(0o644 & ~safety._umask())


def test_bounded_reads(tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes("héllo".encode())
    assert safety.read_text(f, 64) == "héllo"
    assert safety.read_bytes(f, len("héllo".encode())) == "héllo".encode()
    with pytest.raises(WorldModelError, match="more than the 5 bytes"):
        safety.read_bytes(f, 5)
    f.write_bytes(b"\xff")
    with pytest.raises(WorldModelError, match="not UTF-8 text \\(byte 0"):
        safety.read_text(f)
    with pytest.raises(WorldModelError, match="does not exist"):
        safety.read_bytes(tmp_path / "missing")
    with pytest.raises(WorldModelError, match="is a folder"):
        safety.read_bytes(tmp_path)
    (tmp_path / "z").symlink_to("/dev/zero")
    with pytest.raises(WorldModelError, match="not a regular file"):
        safety.read_bytes(tmp_path / "z")
    (tmp_path / "o.json").write_text("[1]")
    with pytest.raises(WorldModelError, match="not a JSON object"):
        safety.read_json_object(tmp_path / "o.json")
    assert safety.read_json(tmp_path / "o.json") == [1]


def test_save_figure_replaces_a_figure_whole_and_closes_it(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from worldmodel.plotting import save_figure

    path = tmp_path / "deep" / "fig.png"
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert save_figure(fig, path, dpi=50) == path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not plt.fignum_exists(fig.number)
    before = path.read_bytes()
    fig, _ = plt.subplots()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(WorldModelError, match="cannot write figure .*disk full"):   # one line naming the file
        save_figure(fig, path)
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == ["fig.png"]
    assert not plt.fignum_exists(fig.number)
