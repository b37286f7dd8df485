"""The defences every reader and writer shares: bounded reads, strict JSON, contained paths,
one writer per output, atomic writes and swaps, and failures that are one line.

The promises (docs/reliability.md) and where each is kept:

* **Every file read is bounded and validated.** :func:`read_bytes` / :func:`read_text` /
  :func:`read_json` refuse anything that is not a regular file (a folder, a device such as
  ``/dev/zero`` behind a symlink, a pipe), anything larger than the limit given for that kind of
  file, and text that is not UTF-8. :func:`loads_json` refuses a JSON object that holds the same
  key twice (``json.loads`` silently keeps the last) and nesting deep enough to exhaust the stack.
* **Every path read from a file or a task stays inside its folder.** :func:`path_component`
  (a name that becomes one folder or file name: no ``/``, no ``..``, not absolute) and
  :func:`inside` (a path whose resolved form, symlinks followed, lies under the resolved base).
* **One output, one writer.** :func:`claim` takes an advisory lock (``flock``) for an output
  path; a second run that asks for the same path stops with one line naming the first (its
  process id, command line and start time). The kernel releases the lock when a process dies, so
  a ``kill -9`` leaves no stale lock. Locks live in a per-user folder keyed by the resolved
  output path (``$WORLDMODEL_LOCKS``, else ``<tmp>/worldmodel-locks-<uid>``), so claiming an
  output creates nothing beside it and works before its folder exists. Claims are re-entrant
  within a process (the command line claims ``--out`` and the library claims it again).
* **Logs are appended, never rewritten in place; every swap is atomic.** :func:`atomic_write`
  writes a unique temporary file beside the target, flushes it to disk and renames it over the
  target (a failure removes the temporary file and leaves the target as it was);
  :func:`swap_folder` puts a finished folder in place of an old one with one
  ``renameat2(RENAME_EXCHANGE)`` where the system has it (else two renames, recoverable by
  :func:`recover_swap`), so the old result stays until the new one is complete.
* **A failure a user can meet is one line.** :func:`os_failure` turns an ``OSError`` (a full
  disk, a read-only or missing folder) into a :class:`~worldmodel.errors.WorldModelError` naming
  the file and the cause; :func:`writing` wraps a write in it; :func:`memory_failure` says the
  same of an allocation that failed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import WorldModelError

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

#: Size limits by kind of file (bytes). Metadata is small; sequence files may be large.
LIMITS = {
    "json": 64 * MiB,          # vocab.json, config.json, training.json, provenance.json, manifests
    "tokenizer": 256 * MiB,    # a Hugging Face tokenizer.json
    "sequences": 16 * GiB,     # train/val/test.txt
    "log": 16 * GiB,           # trial logs, response caches, training logs
    "task": 4 * MiB,           # task files (TOML)
}
#: The most ids a model vocabulary may declare (the largest public vocabularies hold ~256k).
MAX_VOCAB_IDS = 1 << 24
#: JSON nesting deeper than this is refused (Python's parser would exhaust the stack).
MAX_JSON_DEPTH = 200


# ---------------------------------------------------------------------------
# failures as one line
# ---------------------------------------------------------------------------

_CAUSES = {
    errno.ENOSPC: "no space left on the device (the disk is full)",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder",
    errno.EIO: "input/output error",
    errno.EMFILE: "too many open files",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EFBIG: "the file is too large for the file system",
}


def cause(exc: BaseException) -> str:
    """The cause of an ``OSError`` in words (``errno``'s name and text)."""
    if isinstance(exc, OSError) and exc.errno in _CAUSES:
        return _CAUSES[exc.errno]
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def os_failure(exc: OSError, path: str | Path | None = None, doing: str = "write") -> WorldModelError:
    """One line for ``exc``: ``cannot write <file>: <cause>`` (the file from ``path`` or the exception)."""
    name = path if path is not None else (exc.filename or "a file")
    return WorldModelError(f"cannot {doing} {name}: {cause(exc)}")


def memory_failure(exc: BaseException | None = None, what: str = "") -> WorldModelError:
    """One line for an allocation that failed (``MemoryError``, PyTorch's ``can't allocate memory``)."""
    detail = ""
    if exc is not None and str(exc).strip():
        first = str(exc).strip().splitlines()[-1].strip()
        detail = f" ({first[:200]})"
    return WorldModelError(f"out of memory{' ' + what if what else ''}{detail}; free memory or ask for less "
                           "(fewer trials per wave, a smaller batch)")


def is_allocation_failure(exc: BaseException) -> bool:
    """An out-of-memory error from Python or from PyTorch's allocators (CPU or CUDA)."""
    if isinstance(exc, MemoryError):
        return True
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "CUDA out of memory" in text
                                              or "DefaultCPUAllocator" in text)


def _disk_full(path: Path) -> bool:
    try:
        near = path
        while not near.exists() and near != near.parent:
            near = near.parent
        return shutil.disk_usage(near).free < (1 << 20)     # a failed write with under 1 MiB free
    except OSError:
        return False


@contextlib.contextmanager
def writing(path: str | Path, what: str = "") -> Iterator[None]:
    """Run a write of ``path``; an ``OSError`` (or a library's write failure) becomes one line naming it.

    Libraries that write through their own code (PyTorch's zip writer, safetensors) report a full
    disk as a ``RuntimeError`` without the cause; a failed write is then checked against the free
    space of the disk it was on.
    """
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    try:
        yield
    except WorldModelError:
        raise
    except OSError as exc:
        raise os_failure(exc, label) from None
    except Exception as exc:
        if is_allocation_failure(exc):
            raise memory_failure(exc, f"while writing {label}") from None
        text = str(exc)
        if "write" in text.lower() or "No space" in text or type(exc).__name__ == "SafetensorError":
            why = _CAUSES[errno.ENOSPC] if _disk_full(path) else (text.strip().splitlines() or [type(exc).__name__])[0]
            raise WorldModelError(f"cannot write {label}: {why}") from None
        raise


# ---------------------------------------------------------------------------
# bounded reads, strict JSON
# ---------------------------------------------------------------------------


def _limit(kind: str | int) -> int:
    return int(kind) if isinstance(kind, int) else LIMITS[kind]


def _size(n: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def regular_file(path: str | Path, what: str = "file") -> os.stat_result:
    """``stat`` of ``path`` (symlinks followed); an error unless it is a regular file."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise WorldModelError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise os_failure(exc, f"{what} {path}", "read") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a device, pipe or socket, not a regular file"
        raise WorldModelError(f"{what} {path} is {kind}")
    return st


def read_bytes(path: str | Path, limit: str | int = "json", what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (a kind of :data:`LIMITS`, or a number)."""
    path = Path(path)
    cap = _limit(limit)
    st = regular_file(path, what)
    if st.st_size > cap:
        raise WorldModelError(f"{what} {path} is {_size(st.st_size)}, more than the {_size(cap)} such a file may be")
    try:
        with path.open("rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):   # swapped for something else meanwhile
                raise WorldModelError(f"{what} {path} is not a regular file")
            data = f.read(cap + 1)
    except OSError as exc:
        raise os_failure(exc, f"{what} {path}", "read") from None
    except MemoryError:
        raise memory_failure(None, f"reading {what} {path}") from None
    if len(data) > cap:
        raise WorldModelError(f"{what} {path} is more than the {_size(cap)} such a file may be")
    return data


def decode_utf8(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text; an error naming ``where`` and the offending byte offset otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorldModelError(f"{where} is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") from None


def read_text(path: str | Path, limit: str | int = "json", what: str = "file") -> str:
    """A bounded regular file (:func:`read_bytes`) as UTF-8 text."""
    return decode_utf8(read_bytes(path, limit, what), f"{what} {path}")


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _depth_ok(text: str) -> bool:
    """Whether ``text``'s bracket nesting (outside strings) stays within :data:`MAX_JSON_DEPTH`."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return True
    depth, in_str, escape = 0, False, False
    for ch in text:
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def loads_json(text: str | bytes, where: str) -> Any:
    """Parse JSON strictly: a repeated key in an object, or nesting past :data:`MAX_JSON_DEPTH`, is an error."""
    if isinstance(text, bytes):
        text = decode_utf8(text, where)
    if not _depth_ok(text):
        raise WorldModelError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise WorldModelError(f"{where} holds the key {exc.args[0]!r} twice in one object") from None
    except json.JSONDecodeError as exc:
        raise WorldModelError(f"{where} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise WorldModelError(f"{where} is nested too deeply") from None


def read_json(path: str | Path, limit: str | int = "json", what: str = "file") -> Any:
    """A bounded regular file (:func:`read_bytes`) parsed by :func:`loads_json`."""
    path = Path(path)
    return loads_json(read_text(path, limit, what), f"{what} {path}")


def read_json_object(path: str | Path, limit: str | int = "json", what: str = "file") -> dict:
    """:func:`read_json` that must give a JSON object."""
    data = read_json(path, limit, what)
    if not isinstance(data, dict):
        raise WorldModelError(f"{what} {path} is not a JSON object")
    return data


# ---------------------------------------------------------------------------
# paths that stay inside their folder
# ---------------------------------------------------------------------------


def path_component(name: str, what: str = "name") -> str:
    """``name`` if it can be one file or folder name: not empty, no ``/`` or ``\\``, not ``.``/``..``."""
    text = str(name)
    bad = (not text or text in (".", "..") or "/" in text or "\\" in text or "\x00" in text
           or text != text.strip() or os.path.isabs(text))
    if bad:
        raise WorldModelError(f"{what} {text!r} cannot be a file or folder name (no '/', '\\', '..', or "
                              "leading/trailing spaces)")
    return text


def inside(base: str | Path, path: str | Path, what: str = "path") -> Path:
    """``base / path``, which must resolve (symlinks and ``..`` followed) to a place under ``base``."""
    base = Path(base)
    full = base / path
    root = base.resolve()
    resolved = full.resolve()
    if resolved != root and root not in resolved.parents:
        raise WorldModelError(f"{what} {path} leads outside {base} (to {resolved})")
    return full


# ---------------------------------------------------------------------------
# one writer per output
# ---------------------------------------------------------------------------


def lock_dir() -> Path:
    """Where claims keep their lock files: ``$WORLDMODEL_LOCKS``, else ``<tmp>/worldmodel-locks-<uid>``."""
    env = os.environ.get("WORLDMODEL_LOCKS")
    if env:
        return Path(env)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"worldmodel-locks-{uid}"


def _lock_file(path: Path) -> Path:
    import hashlib

    key = str(path.expanduser().resolve())
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return lock_dir() / f"{digest}.lock"


_HELD: dict[str, list] = {}            # lock file -> [fd, count]
_HELD_LOCK = threading.Lock()


class Busy(WorldModelError):
    """Another run holds the output."""


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 64 * KiB).decode("utf-8", "replace") or "{}")
    except (OSError, ValueError):
        return "another run"
    parts = [f"pid {info.get('pid')}" + (f" on {info['host']}" if info.get("host") else "")]
    if info.get("command"):
        parts.append(f"`{info['command']}`")
    if info.get("since"):
        parts.append(f"since {info['since']}")
    return "another run (" + ", ".join(parts) + ")"


class Claim:
    """An exclusive claim on an output path (see :func:`claim`); ``release()`` or ``with`` ends it."""

    def __init__(self, path: str | Path, what: str = "output", wait: bool = False):
        self.path = Path(path)
        self.what = what
        self.key = str(_lock_file(self.path))
        self._released = False
        with _HELD_LOCK:
            held = _HELD.get(self.key)
            if held is not None:
                held[1] += 1
                return
        fd = self._acquire(wait)
        with _HELD_LOCK:
            _HELD[self.key] = [fd, 1]

    def _acquire(self, wait: bool) -> int:
        folder = lock_dir()
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise os_failure(exc, folder, "create the lock folder") from None
        while True:
            try:
                fd = os.open(self.key, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise os_failure(exc, self.key, "create the lock file") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                who = _holder(fd)
                os.close(fd)
                if wait:
                    continue
                raise Busy(f"{self.what} {self.path} is being written by {who}; wait for it to finish "
                           f"or choose another {self.what}") from None
            except OSError as exc:
                os.close(fd)
                raise os_failure(exc, self.key, "lock") from None
            # the file may have been unlinked by its previous holder between open and flock: retry
            try:
                same = os.fstat(fd).st_ino == os.stat(self.key).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            info = {"pid": os.getpid(), "host": socket.gethostname(), "path": str(self.path),
                    "command": " ".join(["worldmodel", *sys.argv[1:]]) if sys.argv and "worldmodel" in sys.argv[0]
                    else " ".join(sys.argv), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
            try:
                os.ftruncate(fd, 0)
                os.write(fd, json.dumps(info).encode())
            except OSError:
                pass      # a full disk: the lock holds all the same, only the description is missing
            return fd

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _HELD_LOCK:
            held = _HELD.get(self.key)
            if held is None:
                return
            held[1] -= 1
            if held[1] > 0:
                return
            del _HELD[self.key]
        with contextlib.suppress(OSError):
            os.unlink(self.key)          # unlinked while locked: a waiter notices (inode check) and retries
        with contextlib.suppress(OSError):
            os.close(held[0])

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):
        with contextlib.suppress(Exception):
            self.release()


def claim(path: str | Path, what: str = "--out", wait: bool = False) -> Claim:
    """Claim ``path`` for this process: a second claim from another process stops with one line naming this one.

    ``wait=True`` blocks until the other run is done instead (for shared caches that many runs fill).
    """
    return Claim(path, what, wait)


def held(path: str | Path) -> bool:
    """Whether this process holds a claim on ``path``."""
    with _HELD_LOCK:
        return str(_lock_file(Path(path))) in _HELD


# ---------------------------------------------------------------------------
# atomic writes and swaps
# ---------------------------------------------------------------------------


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _replacing(path: Path, prefix: str, suffix: str):
    """A fresh temporary file beside ``path`` (its descriptor and name) for the block to fill.

    When the block ends it is made readable (0644 less the umask) and renamed over ``path``;
    if the block fails it is removed and ``path`` keeps its old content.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    try:
        yield fd, tmp
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | Path, data: str | bytes | Iterable[str], what: str = "") -> Path:
    """Write ``data`` (text, bytes, or an iterable of text chunks) to ``path`` all or nothing.

    A unique temporary file beside ``path`` is written, flushed to disk and renamed over
    ``path``; on any failure it is removed and ``path`` keeps its old content. Errors are one
    line naming ``path`` and the cause (a full disk, a read-only folder).
    """
    path = Path(path)
    with writing(path, what), _replacing(path, f".{path.name}.", ".tmp") as (fd, _tmp):
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, bytes):
                f.write(data)
            elif isinstance(data, str):
                f.write(data.encode("utf-8"))
            else:
                for chunk in data:
                    f.write(chunk.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
    _fsync_dir(path.parent)
    return path


def atomic_file(path: str | Path, write, what: str = "") -> Path:
    """``write(tmp)`` for a unique temporary path beside ``path`` (same suffix), then renamed over ``path``.

    For writers that take a file name (matplotlib's ``savefig``, ``torch.save``); a failure
    removes the temporary file and leaves ``path`` as it was.
    """
    path = Path(path)
    with writing(path, what), _replacing(path, f".{path.stem}.", path.suffix) as (fd, tmp):
        os.close(fd)
        write(tmp)
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_json(path: str | Path, data: Any, what: str = "", **dump) -> Path:
    """:func:`atomic_write` of ``json.dumps(data, **dump)``."""
    return atomic_write(path, json.dumps(data, **dump), what)


def rewrite_lines(path: str | Path, lines: list[str], what: str = "") -> None:
    """Replace a line file by ``lines`` through a new file and a rename (never rewritten in place)."""
    atomic_write(path, (line + "\n" for line in lines), what)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP if hasattr(errno, "ENOTSUP") else errno.EINVAL):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _old_name(final: Path) -> Path:
    return final.with_name(f".{final.name}.old")


def swap_folder(new: str | Path, final: str | Path) -> None:
    """Put the finished folder ``new`` in place of ``final`` (which may exist); the old one is then deleted.

    Atomic where the system can exchange two names in one step (Linux ``renameat2``): at every
    moment ``final`` is either the old folder or the new one. Elsewhere the old folder is first
    renamed aside (``.<name>.old``); :func:`recover_swap` finishes or undoes a swap that was cut
    between the two renames.
    """
    new, final = Path(new), Path(final)
    with writing(final):
        if not final.exists():
            os.rename(new, final)
            _fsync_dir(final.parent)
            return
        if _exchange(new, final):
            _fsync_dir(final.parent)
            shutil.rmtree(new, ignore_errors=True)     # now holds the old folder
            return
        old = _old_name(final)
        if old.exists():
            shutil.rmtree(old)
        os.rename(final, old)
        os.rename(new, final)
        _fsync_dir(final.parent)
        shutil.rmtree(old, ignore_errors=True)


def recover_swap(final: str | Path) -> None:
    """After a swap cut between its two renames: put the old folder back if ``final`` is missing, else drop it."""
    final = Path(final)
    old = _old_name(final)
    if not old.exists():
        return
    with writing(final):
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(old, final)
