"""Where the tests find data: the committed fixtures, and the full data sets when present.

Fast tests use :data:`FIXTURES` (small cuts committed under ``tests/fixtures/data``, laid out
like ``shared/data``), so none skips on a fresh clone. Tests of the full data sets are
marked slow and use :func:`full_data`, which resolves like the tasks do
(``$WORLDMODEL_SHARED``, the ``worldmodel fetch`` cache, ``../shared/data``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from worldmodel.datasets import resolve_shared
from worldmodel.errors import WorldModelError

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "data"


def full_data(folder: str) -> Path | None:
    """The full data set folder (``manhattan``, ``othello``) if it is available, else None."""
    try:
        path = resolve_shared(folder)
    except WorldModelError:
        return None
    return path if path.is_dir() else None


def needs_full(folder: str, dataset: str):
    """Skip marker for slow tests of a full data set (names the fetch command)."""
    return pytest.mark.skipif(full_data(folder) is None,
                              reason=f"full {folder} data not available: run `worldmodel fetch {dataset}`")
