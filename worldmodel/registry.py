"""The one list of worlds: adding a world is one folder under ``worldmodel/worlds/`` plus one line here.

Each entry names the world's :class:`~worldmodel.tasks.Domain` class (what a task's
``domain = "..."`` key selects) and, optionally, the module whose
``register(subparsers)`` adds the world's own commands to ``worldmodel``. Both are
strings, imported only when used, so a world's heavy dependencies (an Othello engine,
osmnx, an LLM client) load only for the tasks and commands that need them, and the
core never imports a world.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple


class WorldEntry(NamedTuple):
    name: str  #: the ``domain`` key of task files
    domain: str  #: ``"module:Class"`` of its Domain
    commands: str | None = None  #: module with ``register(subparsers)``, if the world adds commands


WORLDS: tuple[WorldEntry, ...] = (
    WorldEntry("toy", "worldmodel.worlds.toy:ToyDomain"),
    WorldEntry("navigation", "worldmodel.worlds.navigation.domain:NavigationDomain", "worldmodel.worlds.navigation.cli"),
    WorldEntry("othello", "worldmodel.worlds.othello.domain:OthelloDomain", "worldmodel.worlds.othello.cli"),
    WorldEntry("seating", "worldmodel.worlds.seating.domain:SeatingDomain", "worldmodel.worlds.seating.cli"),
    WorldEntry("textworld", "worldmodel.worlds.textworld.domain:TextWorldDomain", "worldmodel.worlds.textworld.cli"),
)


def names() -> list[str]:
    """The registered world names, sorted."""
    return sorted(w.name for w in WORLDS)


def entry(name: str) -> WorldEntry | None:
    return next((w for w in WORLDS if w.name == name), None)


def domain_class(name: str):
    """The Domain class registered as ``name`` (its module imported now); ``None`` if unknown."""
    found = entry(name)
    if found is None:
        return None
    module_name, cls_name = found.domain.split(":")
    return getattr(importlib.import_module(module_name), cls_name)


def command_modules() -> list[str]:
    """Modules that add subcommands, in registry order."""
    return [w.commands for w in WORLDS if w.commands]
