"""Resumable training state: the resume file, interrupts, and the swap of the finished folder into place.

The resume file holds plain data only (tensors, numbers, strings, lists and dicts) and is read with
``torch.load(weights_only=True)``: a planted file cannot run code, and one that is not such a file is
ignored (training starts afresh). It is written to a unique temporary file and renamed, so a kill
or a full disk mid-write leaves the previous one intact.

A finished run is marked by ``training.json`` (written last, atomically, with the resume
fingerprint) in ``<out>.partial``; the folder is then swapped into place
(:func:`worldmodel.safety.swap_folder`). A rerun that finds a complete ``.partial`` of the same
command finishes the swap instead of training again (:func:`complete_partial`).
"""

from __future__ import annotations

import os
import pickle
import signal
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path

import torch

from ..errors import WorldModelError
from ..safety import atomic_file, loads_json, read_bytes, regular_file, writing

RESUME_FILE = "resume.pt"


class StopFlag:
    """Ctrl-C / SIGTERM ask the loop to stop at the next step boundary (a second Ctrl-C kills)."""

    def __init__(self):
        self.set = False
        self.signum = signal.SIGINT
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
        self.signum = signum

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def save_state(obj, path: Path) -> None:
    """``torch.save`` to a unique temporary file, renamed over ``path``; a failure leaves the old file."""
    atomic_file(path, lambda tmp: torch.save(obj, tmp), "resume state")


def save_model(model, folder: Path) -> None:
    """``save_pretrained`` into ``folder`` without ever leaving a half-written weights file there.

    The files are written to a temporary folder beside them and renamed into place one by one
    (each rename atomic), so a kill or a full disk mid-write keeps the previous model.
    """
    folder = Path(folder)
    with writing(folder, "checkpoint"):
        tmp = Path(tempfile.mkdtemp(prefix=".save-", dir=folder))
        try:
            model.save_pretrained(tmp)
            for f in sorted(tmp.iterdir()):
                os.replace(f, folder / f.name)
        finally:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


def complete_partial(partial: Path, fingerprint: str) -> dict | None:
    """The summary of a finished run of this command left in ``partial`` (``None`` if there is none).

    ``training.json`` is written last, with the resume fingerprint, so its presence with the
    right fingerprint means every other file of the checkpoint is complete.
    """
    path = Path(partial) / "training.json"
    if not path.is_file():
        return None
    try:
        info = loads_json(read_bytes(path, "json", "training record"), str(path))
    except WorldModelError:
        return None
    if not isinstance(info, dict) or info.get("resume_fingerprint") != fingerprint:
        return None
    return info


def load_state(path: Path, fingerprint: str) -> tuple[dict | None, str | None]:
    """The resume state at ``path`` if it is one and belongs to the command with ``fingerprint``.

    Returns ``(state, None)``, or ``(None, why)`` where ``why`` says why there is none
    (``None`` when there is no file at all). The file is read as plain data
    (``weights_only=True``): anything else in it is refused before it can run.
    """
    if not path.exists():
        return None, None
    try:
        regular_file(path, "resume state")
    except WorldModelError:
        return None, "resume state is not a regular file"
    try:
        with warnings.catch_warnings():   # a foreign pickle's protocol is not worth a warning: it is refused anyway
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile):
        return None, "resume state is unreadable or not plain data"
    if not isinstance(state, dict) or state.get("fingerprint") != fingerprint:
        return None, "resume state is from a different command"
    return state, None
