"""Resumable training state: the resume file, interrupts, and the swap of the finished folder into place.

The resume file holds plain data only (tensors, numbers, strings, lists and dicts) and is read with
``torch.load(weights_only=True)``: a planted file cannot run code, and one that is not such a file is
ignored (training starts afresh).
"""

from __future__ import annotations

import pickle
import signal
import threading
import zipfile
from pathlib import Path

import torch

RESUME_FILE = "resume.pt"


class StopFlag:
    """Ctrl-C / SIGTERM ask the loop to stop at the next step boundary (a second Ctrl-C kills)."""

    def __init__(self):
        self.set = False
        self._old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.getsignal(sig)
                signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.set and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.set = True

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def save_state(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    tmp.replace(path)


def load_state(path: Path, fingerprint: str) -> tuple[dict | None, str | None]:
    """The resume state at ``path`` if it is one and belongs to the command with ``fingerprint``.

    Returns ``(state, None)``, or ``(None, why)`` where ``why`` says why there is none
    (``None`` when there is no file at all). The file is read as plain data
    (``weights_only=True``): anything else in it is refused before it can run.
    """
    if not path.exists():
        return None, None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile):
        return None, "resume state is unreadable or not plain data"
    if not isinstance(state, dict) or state.get("fingerprint") != fingerprint:
        return None, "resume state is from a different command"
    return state, None
