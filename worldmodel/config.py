"""Checked configuration: every key of a task file is known and of the right type.

A *schema* maps each allowed key of a TOML table to its type: ``int``, ``float``
(an integer is accepted), ``str``, ``bool``, ``list``, a tuple of those (any of them),
or a nested schema (a sub-table, such as ``[data.random-walks]``). :func:`check_table`
raises one :class:`~worldmodel.errors.WorldModelError` line for the first problem,
naming the file, the section and the key, with the closest known key when a key is
misspelt::

    task tasks/toy-dfa.toml: [model] unknown key 'n_layers' (did you mean 'n_layer'?)
"""

from __future__ import annotations

import difflib
from typing import Any, Mapping, Union

from .errors import WorldModelError

Schema = Mapping[str, Union[type, tuple, "Schema"]]

_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "an array"}


def _type_ok(value: Any, kind) -> bool:
    if isinstance(kind, tuple):
        return any(_type_ok(value, k) for k in kind)
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):  # true/false is not a number
        return False
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def _type_name(kind) -> str:
    if isinstance(kind, tuple):
        return " or ".join(_type_name(k) for k in kind)
    return _NAMES.get(kind, kind.__name__)


def suggest(key: str, known) -> str:
    """`` (did you mean 'x'?)`` for the closest known key, else `` (known: a, b, c)``."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(sorted(known))})" if known else " (this section takes no keys)"


def check_table(where: str, section: str, table: Any, schema: Schema) -> None:
    """Check one table against its schema; ``where`` names the file (``task tasks/x.toml``)."""
    if not isinstance(table, dict):
        raise WorldModelError(f"{where}: [{section}] must be a table")
    for key, value in table.items():
        if key not in schema:
            raise WorldModelError(f"{where}: [{section}] unknown key {key!r}{suggest(key, schema)}")
        kind = schema[key]
        if isinstance(kind, Mapping):
            check_table(where, f"{section}.{key}", value, kind)
        elif not _type_ok(value, kind):
            raise WorldModelError(f"{where}: [{section}] {key} must be {_type_name(kind)}, got {value!r}")
