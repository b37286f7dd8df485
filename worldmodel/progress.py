"""One switch for the progress bars a command did not ask for by name.

Most long work takes ``progress=`` from its caller (``--no-progress`` reaches it). Data
generation inside a domain decides for itself (a bar for a large data set), so it asks
:func:`wanted`: a command run with ``--no-progress`` calls :func:`silence` first (the CLI
and the reproduction scripts do), and ``WORLDMODEL_NO_PROGRESS=1`` does the same for a
whole session (CI logs, batch jobs).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

_silenced = False


def silence(on: bool = True) -> None:
    """Turn off (``on=True``) or back on the bars that :func:`wanted` gates."""
    global _silenced
    _silenced = bool(on)


def wanted(default: bool = True) -> bool:
    """Whether a bar the code would show (``default``) is shown: not after :func:`silence`, not with the variable set."""
    return bool(default) and not _silenced and os.environ.get("WORLDMODEL_NO_PROGRESS", "") in ("", "0")


@contextmanager
def silenced(on: bool = True):
    """:func:`silence` for the length of a ``with`` block (``on=False``: no change), then as before."""
    global _silenced
    before = _silenced
    _silenced = before or bool(on)
    try:
        yield
    finally:
        _silenced = before
