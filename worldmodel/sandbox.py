"""Run untrusted Python (an LLM-written simulator) behind an operating-system boundary.

A :class:`Worker` is one Python process, started under **bubblewrap** (``bwrap``, Debian's
``bubblewrap`` package) with a **seccomp** filter and resource limits, that speaks JSON lines
over its standard input and output. What the code inside can and cannot do:

* **filesystem** (mount namespace): the root is an empty, read-only tmpfs; the Python
  installation and ``/usr`` are bound read-only; the files a caller hands over
  (``files=``) are bound read-only under ``/sim``; the only writable place is the scratch
  folder ``/scratch`` (a fresh tmpfs of ``scratch_mb``, gone when the process ends, also the
  working directory, ``$HOME`` and ``$TMPDIR``). Nothing of the host's ``/work``, ``/home``,
  ``/root`` or ``/tmp`` is visible.
* **network** (network namespace): none; only a loopback device nobody listens on. The
  filter also refuses ``socket()`` for every family but ``AF_UNIX``.
* **processes** (PID namespace, seccomp): the worker cannot see the host's processes and
  cannot start programs or child processes: ``execve``/``execveat``, ``fork``/``vfork``
  and ``clone`` without ``CLONE_THREAD`` fail with ``EPERM`` (so ``os.system`` and
  ``subprocess`` fail), threads still work. ``ptrace``, ``mount``, ``unshare``, ``setns``,
  ``bpf``, ``keyctl`` and ``perf_event_open`` are refused too. All capabilities are
  dropped and the code runs as ``nobody`` in a fresh user namespace; ``--new-session``
  keeps it off the caller's terminal; ``--die-with-parent`` ends it with the caller.
* **resources** (rlimits, and the caller's clock): address space ``memory_mb``, CPU time
  ``cpu_s`` over the process's life, files written at most ``file_mb``, no core dumps, at
  most 256 open files; every request has a wall-clock limit ``call_s`` (default
  :attr:`Limits.call_s`); a reply is at most ``reply_bytes``. What the code prints goes to
  a bounded buffer inside the worker, never to the protocol channel.

Any breach ends the process, and the caller gets one :class:`WorkerFailed` (``kind``:
``timeout``, ``crashed``, ``reply``, ``protocol``) naming what happened; the caller's run
goes on (a crash or hang is a recorded failure, never a crashed run).

Why bubblewrap and seccomp, not a Python audit hook or ``RestrictedPython``: those live in
the same interpreter as the code they police, and Python offers many ways around them
(``ctypes``, ``gc.get_objects``, frame objects). Namespaces and a kernel syscall filter are
enforced by the kernel, outside the process, and bubblewrap is the small, audited setuid-free
tool Flatpak uses for exactly this. The filter is compiled on the caller's side with
``pyseccomp`` (libseccomp) and handed to the worker as raw BPF, which it loads with
``prctl(PR_SET_SECCOMP)`` (after ``PR_SET_NO_NEW_PRIVS``) before it reads any untrusted code.

When the sandbox cannot be set up (no ``bwrap``, user namespaces disabled, no libseccomp),
:func:`check_sandbox` raises :class:`SandboxUnavailable` with one line saying so; nothing
runs untrusted code then unless the caller passes ``unsafe=True`` (the command line's
``--unsafe-no-sandbox``), which keeps the subprocess, the rlimits and the time limits but
drops the OS boundary: for code the user trusts.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import WorldModelError

#: syscalls the filter refuses with EPERM outright
DENIED = ("execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "mount",
          "umount2", "unshare", "setns", "pivot_root", "chroot", "bpf", "keyctl", "add_key", "request_key",
          "perf_event_open", "userfaultfd", "kexec_load", "init_module", "finit_module", "delete_module",
          "reboot", "swapon", "swapoff")
CLONE_THREAD = 0x00010000
SANDBOX_ROOT = "/sim"       #: where handed-over files appear inside
SCRATCH = "/scratch"        #: the one writable folder inside


class SandboxUnavailable(WorldModelError):
    """The OS sandbox cannot be set up here; untrusted code is refused."""


class WorkerFailed(Exception):
    """The worker process died, hung, or broke the protocol; it has been ended.

    ``kind`` is ``timeout``, ``crashed``, ``reply`` (reply too large) or ``protocol``;
    ``detail`` is one line for the record (exit status, signal, the last output).
    """

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Limits:
    """Resource limits of one worker (see the module docstring)."""

    call_s: float = 60.0       #: wall clock per request, seconds
    start_s: float = 30.0      #: wall clock for the worker to start and load, seconds
    cpu_s: int = 3600          #: CPU seconds over the worker's life
    memory_mb: int = 2048      #: address space, MiB
    file_mb: int = 16          #: largest file the code may write, MiB
    scratch_mb: int = 64       #: size of the scratch tmpfs, MiB
    reply_bytes: int = 64 << 20  #: largest reply line, bytes


def _bwrap() -> str | None:
    return shutil.which("bwrap")


_filter_cache: bytes | None = None


def seccomp_filter() -> bytes:
    """The worker's seccomp filter as raw BPF (``struct sock_filter`` array), compiled by libseccomp."""
    global _filter_cache
    if _filter_cache is not None:
        return _filter_cache
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as exc:
        raise SandboxUnavailable(f"the untrusted-code sandbox needs libseccomp and pyseccomp ({exc}); install "
                                 "them (`apt-get install libseccomp2`, `pip install pyseccomp`) or pass "
                                 "--unsafe-no-sandbox to run the code unconfined") from None
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED:
        try:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except (RuntimeError, OSError, ValueError):  # a syscall this architecture lacks
            continue
    f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # its flags live in memory; glibc falls back to clone
    f.add_rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))
    with tempfile.TemporaryFile() as fh:
        f.export_bpf(fh)
        fh.seek(0)
        _filter_cache = fh.read()
    return _filter_cache


_probe_result: str | None = None
_probed = False


def _python_roots() -> list[str]:
    """Folders the sandboxed interpreter needs read-only (its executable and standard library)."""
    exe = os.path.realpath(sys.executable)
    roots = {os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(exe))}
    return sorted(r for r in roots if not r.startswith("/usr"))


def _interpreter() -> str:
    return os.path.realpath(sys.executable)


def bwrap_argv(files: dict[str, str], limits: Limits) -> list[str]:
    """The bubblewrap command line (before the program) for ``files`` (name inside -> host path)."""
    bw = _bwrap()
    if bw is None:
        raise SandboxUnavailable("the untrusted-code sandbox needs bubblewrap (`apt-get install bubblewrap`), "
                                 "which is not installed; pass --unsafe-no-sandbox to run the code unconfined")
    argv = [bw, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--uid", "65534", "--gid", "65534", "--hostname", "sandbox",
            "--ro-bind", "/usr", "/usr"]
    for link in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink(f"/{link}"):
            argv += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
        elif os.path.isdir(f"/{link}"):
            argv += ["--ro-bind", f"/{link}", f"/{link}"]
    for root in _python_roots():
        argv += ["--ro-bind", root, root]
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(limits.scratch_mb << 20), "--tmpfs", SCRATCH]
    for name, host in sorted(files.items()):
        argv += ["--ro-bind", host, f"{SANDBOX_ROOT}/{name}"]
    argv += ["--remount-ro", "/", "--chdir", SCRATCH, "--clearenv",
             "--setenv", "HOME", SCRATCH, "--setenv", "TMPDIR", SCRATCH, "--setenv", "PATH", "/usr/bin:/bin",
             "--setenv", "PYTHONHASHSEED", "0", "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--"]
    return argv


def check_sandbox() -> None:
    """Raise :class:`SandboxUnavailable` (one line) unless the OS sandbox works on this machine.

    Probes once per process: compiles the filter and starts ``bwrap`` with the worker's own
    options on ``/bin/true``-like Python (user namespaces disabled or a missing binary show here).
    """
    global _probe_result, _probed
    if not _probed:
        _probed = True
        try:
            seccomp_filter()
            argv = bwrap_argv({}, Limits()) + [_interpreter(), "-I", "-S", "-c", "pass"]
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
            if done.returncode != 0:
                why = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
                _probe_result = (f"bubblewrap cannot create its sandbox here ({why}); user namespaces may be "
                                 "disabled; pass --unsafe-no-sandbox to run the code unconfined")
        except SandboxUnavailable as exc:
            _probe_result = str(exc)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _probe_result = f"bubblewrap could not be started ({exc}); pass --unsafe-no-sandbox to run unconfined"
    if _probe_result is not None:
        raise SandboxUnavailable(f"refusing to run untrusted code: {_probe_result}")


def _limits_preexec(limits: Limits):
    def apply():
        os.setsid()
        mem = limits.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20, limits.file_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    return apply


class Worker:
    """A sandboxed Python process running ``script`` that answers JSON requests, one per line.

    ``files`` maps names to host paths; each is visible read-only inside as ``/sim/<name>``
    (the script itself is ``/sim/worker.py``; the seccomp filter ``/sim/filter.bpf``). The
    script is started as ``python -I -S /sim/worker.py /sim/filter.bpf`` (isolated mode, no
    site packages: only the standard library is importable inside) and must load the filter
    before touching untrusted code (:mod:`worldmodel.simworker` does). With ``unsafe`` it
    runs without bubblewrap and seccomp (files read from where they are), rlimits and time
    limits kept.
    """

    def __init__(self, script: str | Path, files: dict[str, str | Path] | None = None,
                 limits: Limits | None = None, unsafe: bool = False):
        self.limits = limits or Limits()
        self.unsafe = bool(unsafe)
        self._tmp = tempfile.TemporaryDirectory(prefix="wm-sandbox-")
        files = {k: os.path.realpath(str(v)) for k, v in (files or {}).items()}
        for name, path in files.items():
            if "/" in name or not os.path.isfile(path):
                raise WorldModelError(f"sandbox: {path} is not a file (as {name})")
        files["worker.py"] = os.path.realpath(str(script))
        if self.unsafe:
            self.paths = dict(files)
            argv = [_interpreter(), "-I", "-S", files["worker.py"], ""]
            cwd = self._tmp.name
        else:
            check_sandbox()
            bpf = Path(self._tmp.name) / "filter.bpf"
            bpf.write_bytes(seccomp_filter())
            files["filter.bpf"] = str(bpf)
            self.paths = {k: f"{SANDBOX_ROOT}/{k}" for k in files}
            argv = bwrap_argv(files, self.limits) + [_interpreter(), "-I", "-S", self.paths["worker.py"],
                                                      self.paths["filter.bpf"]]
            cwd = None
        env = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
               "HOME": self._tmp.name, "TMPDIR": self._tmp.name}
        self._buf = b""
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=cwd, env=env, preexec_fn=_limits_preexec(self.limits), close_fds=True)
        self.closed = False

    # -- protocol -------------------------------------------------------------------
    def call(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one request, wait for its reply (a dict). Raises :class:`WorkerFailed` and ends
        the process on a timeout, a crash, an oversized or malformed reply."""
        if self.closed:
            raise WorkerFailed("crashed", "the worker was already ended")
        limit = self.limits.call_s if timeout is None else timeout
        line = (json.dumps(request, separators=(",", ":")) + "\n").encode()
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._fail("crashed", self._death())
        raw = self._read_line(limit)
        try:
            reply = json.loads(raw)
        except ValueError:
            self._fail("protocol", f"reply is not JSON: {raw[:120]!r}")
        if not isinstance(reply, dict):
            self._fail("protocol", "reply is not an object")
        return reply

    def _read_line(self, limit: float) -> bytes:
        import time

        deadline = time.monotonic() + limit
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail("timeout", f"no reply within {limit:g} s (the code hangs or runs too long)")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self._fail("crashed", self._death())
            self._buf += chunk
            if len(self._buf) > self.limits.reply_bytes and b"\n" not in self._buf:
                self._fail("reply", f"reply larger than {self.limits.reply_bytes:,} bytes")
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "the worker stopped answering"
        err = b""
        try:
            err = self.proc.stderr.read(1 << 16) or b""
        except (OSError, ValueError):
            pass
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            what = {"SIGXCPU": "CPU time limit", "SIGKILL": "killed (memory or time limit)",
                    "SIGXFSZ": "file size limit", "SIGSYS": "forbidden system call"}.get(name, "")
            return f"worker died of {name}" + (f" ({what})" if what else "") + (f": {tail[0]}" if tail[0] else "")
        return f"worker exited with status {code}" + (f": {tail[0][:300]}" if tail[0] else "")

    def _fail(self, kind: str, detail: str):
        self.close()
        raise WorkerFailed(kind, detail)

    def close(self) -> None:
        """End the process (and everything it started) and remove the host-side temporary folder."""
        if self.closed:
            return
        self.closed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        self._tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
