"""A restricted unpickler for data files from elsewhere (plain containers only).

``pickle.load`` runs whatever a file asks it to: any importable callable. Data sets
downloaded from other projects (the paper's graph pickles) are read with
:func:`load` instead, which allows only plain values: ``dict``, ``list``, ``tuple``,
``set``, ``frozenset``, numbers, strings, bytes, ``None``, and
``collections.defaultdict`` / ``OrderedDict`` whose default factory is one of those
containers. Anything else stops with :class:`~worldmodel.errors.WorldModelError`
naming the file and the refused global.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

from .errors import WorldModelError

#: (module, name) pairs a data pickle may refer to.
ALLOWED_GLOBALS = frozenset({
    ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "int"), ("builtins", "float"), ("builtins", "str"),
    ("builtins", "bytes"), ("builtins", "bool"), ("builtins", "complex"),
    ("collections", "defaultdict"), ("collections", "OrderedDict"),
})


class _Restricted(pickle.Unpickler):
    def __init__(self, file, where: str):
        super().__init__(file)
        self._where = where

    def find_class(self, module: str, name: str):
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise WorldModelError(f"{self._where}: refusing to unpickle {module}.{name} "
                              "(only plain containers, numbers and strings are read)")

    def persistent_load(self, pid):
        raise WorldModelError(f"{self._where}: refusing a pickle with persistent ids")


def loads(data: bytes, where: str = "pickle data"):
    """Unpickle ``data`` allowing only plain values; ``where`` names the source in errors."""
    try:
        return _Restricted(io.BytesIO(data), where).load()
    except WorldModelError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, MemoryError, OverflowError, UnicodeDecodeError) as exc:
        raise WorldModelError(f"{where} is not a readable pickle ({type(exc).__name__}: {exc})") from None


def load(path: str | Path):
    """Unpickle the file at ``path`` allowing only plain values."""
    path = Path(path)
    return loads(path.read_bytes(), str(path))
