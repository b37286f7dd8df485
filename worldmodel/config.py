"""Checked configuration: every key of a task file is known and of the right type.

A *schema* maps each allowed key of a TOML table to its type: ``int``, ``float``
(an integer is accepted), ``str``, ``bool``, ``list``, a tuple of those (any of them),
or a nested schema (a sub-table, such as ``[data.random-walks]``). :func:`check_table`
raises one :class:`~worldmodel.errors.WorldModelError` line for the first problem,
naming the file, the section and the key, with the closest known key when a key is
misspelt::

    task tasks/toy-dfa.toml: [model] unknown key 'n_layers' (did you mean 'n_layer'?)

A section held by a settings dataclass (``[evaluate]``: :class:`worldmodel.settings.Settings`;
``[train]``: :class:`worldmodel.training.TrainConfig`) declares each key once, as a field made by
:func:`option`; its schema (:func:`schema_of`), its command-line flags (:func:`add_arguments`) and
the overrides a parsed command line gives (:func:`overrides_from`) are derived from the fields.
"""

from __future__ import annotations

import argparse
import difflib
import types
import typing
from dataclasses import field, fields
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


# ---------------------------------------------------------------------------
# Settings dataclasses: schema and command-line flags from the fields
# ---------------------------------------------------------------------------


def option(default, help: str | None = None, *, flag: str | None = None, choices=None, metavar: str | None = None,
           cli: bool = True, schema=None):
    """A settings field with its command-line form: ``help``, ``flag`` (default ``--field-name``), ``choices``.

    ``cli=False`` keeps the field off the command line (task file only). A bool field whose default is
    true is set off by its flag (``--no-…``); one whose default is false is set on.
    """
    meta = {"help": help, "flag": flag, "choices": choices, "metavar": metavar, "cli": cli}
    if schema is not None:
        meta["schema"] = schema
    return field(default=default, metadata=meta)


def _schema_type(hint):
    """The task-file type of a field annotation: ``int | None`` -> ``int``."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else tuple(args)
    return hint


def schema_of(cls, exclude=()) -> dict:
    """``{key: type}`` of a settings dataclass's fields (a field's ``metadata["schema"]`` wins; ``None`` drops it)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in fields(cls):
        if f.name in exclude:
            continue
        kind = f.metadata["schema"] if "schema" in f.metadata else _schema_type(hints[f.name])
        if kind is not None:
            out[f.name] = kind
    return out


def cli_fields(cls) -> list:
    """The fields of a settings dataclass that are command-line flags."""
    return [f for f in fields(cls) if f.metadata.get("cli", True) and "help" in f.metadata]


def flag_of(f) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser, cls, only=None) -> None:
    """Add one flag per command-line field of ``cls`` (those in ``only``, when given), defaults ``None``."""
    hints = typing.get_type_hints(cls)
    for f in cli_fields(cls):
        if only is not None and f.name not in only:
            continue
        kind = _schema_type(hints[f.name])
        kw: dict[str, Any] = {"dest": f.name, "help": f.metadata.get("help")}
        if kind is bool:
            kw.update(action="store_const", const=not f.default, default=None)
        else:
            kw.update(type=kind, default=None)
            if f.metadata.get("choices"):
                kw["choices"] = list(f.metadata["choices"])
            if f.metadata.get("metavar"):
                kw["metavar"] = f.metadata["metavar"]
        parser.add_argument(flag_of(f), **kw)


def overrides_from(args: argparse.Namespace, cls, only=None) -> dict:
    """``{field: value}`` for every command-line field of ``cls`` the parsed ``args`` set."""
    return {f.name: getattr(args, f.name) for f in cli_fields(cls)
            if (only is None or f.name in only) and getattr(args, f.name, None) is not None}
