"""Declarative experiment specs (``tasks/*.toml``), and tasks built in Python.

A task is one TOML file::

    name = "toy-dfa"
    domain = "toy"            # a registered world (worldmodel/registry.py), or "my_package.my_module:MyDomain"
    seed = 0
    [world]    ...            # domain-specific world settings
    [data]     ...            # how many sequences, of which kinds
    [model]    n_layer = 2, n_embd = 64, n_head = 4, n_positions = 64
    [train]    steps = 600, batch_size = 32, lr = 3e-3, ...
    [evaluate] epsilon = 0.01, M = 30, k = 5, trials = 100, ...

``TASK`` on the command line is a name in ``tasks/`` or a path to a TOML file. A
:class:`~worldmodel.api.Domain` turns a task into what the core needs: the world, data files,
the state sampler and the held-out sequences. A task can also be built in Python with no file
at all: :meth:`Task.from_world` (a :class:`~worldmodel.api.World` object, e.g. an
:class:`~worldmodel.dfa.ExplicitDFA`) or :meth:`Task.from_domain` (a Domain class).

Every table is checked when the task is loaded (:mod:`worldmodel.config`): the sections the
core reads have schemas derived from the dataclasses that hold them (:data:`MODEL`,
``TRAIN`` from :class:`~worldmodel.training.TrainConfig`, ``EVALUATE`` from
:class:`~worldmodel.settings.Settings` and the registered metrics' own keys); a domain
declares its own sections in :attr:`~worldmodel.api.Domain.schema`. An unknown key or a value
of the wrong type is a one-line error naming the file, the section and the key.
"""

from __future__ import annotations

import os
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any

from . import registry
from .api.domain import Domain
from .api.world import World
from .config import Schema, check_table, suggest
from .errors import WorldModelError


#: ``[model]``: the network trained from scratch, of the ``family`` it names (default ``"gpt2"``;
#: :mod:`worldmodel.models.families`). Each family takes the keys :data:`MODEL_FAMILIES` lists.
MODEL: Schema = {"family": str, "n_layer": int, "n_embd": int, "n_head": int, "n_positions": int, "dropout": float,
                 "n_hidden": int, "d_state": int, "d_conv": int, "expand": int}
#: ``[model]`` keys of each family (besides ``family``): GPT-2, LSTM and GRU (torch), Mamba (transformers)
MODEL_FAMILIES: dict[str, tuple[str, ...]] = {
    "gpt2": ("n_layer", "n_embd", "n_head", "n_positions", "dropout"),
    "lstm": ("n_layer", "n_embd", "n_hidden", "dropout"),
    "gru": ("n_layer", "n_embd", "n_hidden", "dropout"),
    "mamba": ("n_layer", "n_embd", "d_state", "d_conv", "expand"),
}
#: Top-level keys of every task file (sections apart).
TOP: Schema = {"name": str, "domain": str, "seed": int}

REPO_ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = Path(os.environ.get("WORLDMODEL_TASKS", REPO_ROOT / "tasks"))


def core_sections() -> dict[str, Schema]:
    """The schemas of the sections the core reads: ``[model]``, ``[train]``, ``[evaluate]``."""
    from .settings import evaluate_schema, schema_of
    from .training.config import TrainConfig

    return {"model": MODEL, "train": schema_of(TrainConfig, exclude=("seed",)), "evaluate": evaluate_schema()}


def __getattr__(name: str):
    # TRAIN and EVALUATE are derived from their dataclasses (and the registered metrics) when asked for
    if name in ("TRAIN", "EVALUATE"):
        return core_sections()[name.lower()]
    raise AttributeError(f"module 'worldmodel.tasks' has no attribute {name!r}")


class Task:
    """A task: its name, its file (``None`` for a task built in Python) and its configuration.

    ``config`` is the TOML as a dict. The domain is built on first use, from the ``domain`` key
    (a registered world, or ``"module:Class"``), or by the factory a Python-built task was given.
    """

    def __init__(self, name: str, path: Path | None, config: dict[str, Any], domain_factory=None):
        self.name = name
        self.path = path
        self.config = config
        self._domain_factory = domain_factory

    @property
    def where(self) -> str:
        """How messages name the task: its file, or its name for a task built in Python."""
        return str(self.path) if self.path is not None else f"{self.name} (built in Python)"

    def section(self, key: str) -> dict[str, Any]:
        value = self.config.get(key, {})
        if not isinstance(value, dict):
            raise WorldModelError(f"task {self.where}: [{key}] must be a table")
        return value

    @property
    def seed(self) -> int:
        return int(self.config.get("seed", 0))

    @cached_property
    def domain(self) -> Domain:
        if self._domain_factory is not None:
            return self._domain_factory(self)
        return domain_class(self.where, self.config.get("domain"))(self)

    @property
    def world(self) -> World:
        return self.domain.world

    def data_dir(self, override: str | Path | None = None) -> Path:
        """Where generated sequences live: ``--data-dir``, ``$WORLDMODEL_DATA/<task>`` or ``data/<task>``.

        The task's name is one folder name (checked when the task is loaded), and the folder must
        resolve inside ``$WORLDMODEL_DATA`` (or ``data/``), symlinks followed: a task never writes
        outside the data folder.
        """
        from .safety import inside, path_component

        if override is not None:
            return Path(override)
        base = os.environ.get("WORLDMODEL_DATA")
        root = Path(base) if base else Path("data")
        return inside(root, path_component(self.name, "task name"), f"the data folder of task {self.where}:")

    def toml(self) -> str:
        """The task as TOML text (what a checkpoint saves as ``task.toml``): the file itself when there is one."""
        if self.path is not None:
            return self.path.read_text()
        return dump_toml(self.config)

    # -- tasks built in Python ----------------------------------------------------------
    @classmethod
    def from_world(cls, world: World, sampler=None, data=None, name: str | None = None, seed: int = 0,
                   config: dict[str, dict] | None = None) -> "Task":
        """A task for a world built in Python: no TOML file, no registration.

        ``sampler``: a :class:`~worldmodel.api.StateSampler`, or a callable ``world -> sampler``
        (default for an :class:`~worldmodel.dfa.ExplicitDFA`: uniform prefixes of 1 to half of
        ``[data] max_len`` tokens). ``data``: ``{"train": [...], "val": [...], "test": [...]}``
        sequences, or a callable ``task -> that dict`` (default: uniform random valid walks, sized
        by ``config["data"]``: ``n_train``, ``n_val``, ``n_test``, ``min_len``, ``max_len``).
        ``config`` holds the other sections (``model``, ``train``, ``evaluate``), checked like a
        task file's.
        """
        from .custom import WorldDomain

        if not isinstance(world, World):
            raise WorldModelError(f"Task.from_world() needs a World, not {type(world).__name__}")
        full = {"name": name or world.name, "domain": "python", "seed": int(seed), **(config or {})}
        check_config(f"{full['name']} (built in Python)", full, WorldDomain)
        return cls(full["name"], None, full, lambda task: WorldDomain(task, world=world, sampler=sampler, data=data))

    @classmethod
    def from_domain(cls, domain: type[Domain], name: str | None = None, seed: int = 0,
                    config: dict[str, dict] | None = None) -> "Task":
        """A task for a Domain class defined in Python (its sections in ``config``, checked)."""
        if not (isinstance(domain, type) and issubclass(domain, Domain)):
            raise WorldModelError(f"Task.from_domain() needs a Domain subclass, not {domain!r}")
        full = {"name": name or domain.__name__, "domain": f"{domain.__module__}:{domain.__qualname__}",
                "seed": int(seed), **(config or {})}
        check_config(f"{full['name']} (built in Python)", full, domain)
        return cls(full["name"], None, full, domain)


def load_task(spec) -> Task:
    """A task: by name (``tasks/<name>.toml``), by path, or built from a Python object.

    ``spec`` may also be a :class:`Task` (returned as it is), a :class:`~worldmodel.api.World`
    (:meth:`Task.from_world`), a :class:`~worldmodel.api.Domain` instance (its task) or a Domain
    subclass (:meth:`Task.from_domain`).
    """
    if isinstance(spec, Task):
        return spec
    if isinstance(spec, World):
        return Task.from_world(spec)
    if isinstance(spec, Domain):
        return spec.task
    if isinstance(spec, type) and issubclass(spec, Domain):
        return Task.from_domain(spec)
    spec = str(spec)
    path = Path(spec)
    if not (path.suffix == ".toml" and path.exists()):
        path = TASKS_DIR / f"{spec}.toml"
    if not path.exists():
        names = sorted(p.stem for p in TASKS_DIR.glob("*.toml"))
        raise WorldModelError(f"unknown task {spec!r} (known: {', '.join(names)}; or give a path to a .toml file)")
    from .safety import read_text

    try:
        config = tomllib.loads(read_text(path, "task", "task file"))
    except tomllib.TOMLDecodeError as exc:
        raise WorldModelError(f"task file {path} is not valid TOML: {exc}") from None
    if "domain" not in config:
        raise WorldModelError(f"task file {path} has no 'domain' key")
    check_config(path, config)
    return Task(str(config.get("name", path.stem)), path, config)


def domain_class(where, name) -> type[Domain]:
    """The Domain class a task names: a registered world, or ``"module:Class"``; else one line naming the task."""
    try:
        cls = registry.domain_class(name) if isinstance(name, str) else None
    except (ImportError, AttributeError) as exc:
        raise WorldModelError(f"task {where}: cannot import domain {name!r} ({type(exc).__name__}: {exc})") from None
    if cls is None:
        raise WorldModelError(f"task {where}: unknown domain {name!r}{suggest(str(name), registry.names())}")
    if not (isinstance(cls, type) and issubclass(cls, Domain)):
        raise WorldModelError(f"task {where}: domain {name!r} is not a worldmodel.api.Domain subclass")
    return cls


def check_config(path, config: dict, cls: type[Domain] | None = None) -> None:
    """Check every key of a parsed task file (top level, core sections, the domain's sections)."""
    where = f"task {path}"
    if "name" in config:
        if not isinstance(config["name"], str):
            raise WorldModelError(f"{where}: name must be a string, got {config['name']!r}")
        from .safety import path_component

        path_component(config["name"], f"{where}: name")
    cls = cls or domain_class(path, config.get("domain"))
    sections = {**core_sections(), **cls.schema}
    for key, value in config.items():
        if key in cls.schema and not cls.schema[key] and isinstance(value, dict) and value:
            # a world that reads keys here but has not declared them: say where they go
            raise WorldModelError(f"{where}: [{key}] unknown key {next(iter(value))!r} "
                                  f"({cls.__module__}.{cls.__name__}.schema declares no [{key}] keys)")
        if key in sections:
            check_table(where, key, value, sections[key])
            if key == "model":
                check_model_family(where, value)
        elif key in TOP:
            check_table(where, "top level", {key: value}, TOP)
        else:
            raise WorldModelError(f"{where}: unknown top-level key or section {key!r}{suggest(key, [*TOP, *sections])}")


def check_model_family(where: str, table: dict) -> None:
    """``[model] family`` is known and every other key is one that family takes."""
    family = table.get("family", "gpt2")
    if family not in MODEL_FAMILIES:
        raise WorldModelError(f"{where}: [model] family must be one of {', '.join(MODEL_FAMILIES)}, got {family!r}")
    allowed = MODEL_FAMILIES[family]
    for key in table:
        if key != "family" and key not in allowed:
            raise WorldModelError(f"{where}: [model] key {key!r} does not apply to the {family} family "
                                  f"(it takes {', '.join(allowed)})")


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise WorldModelError(f"cannot write {v!r} ({type(v).__name__}) to a task file")


def dump_toml(config: dict, prefix: str = "") -> str:
    """A task configuration (plain values and tables) as TOML text that :func:`tomllib.loads` reads back."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in config.items() if not isinstance(v, dict)]
    for k, v in config.items():
        if isinstance(v, dict):
            lines += ["", f"[{prefix}{k}]", dump_toml(v, f"{prefix}{k}.").rstrip()]
    return "\n".join(line for line in lines) + "\n"
