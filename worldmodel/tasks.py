"""Declarative experiment specs (``tasks/*.toml``) and the domain registry.

A task is one TOML file::

    name = "toy-dfa"
    domain = "toy"            # which Domain builds the world (see worldmodel/registry.py)
    seed = 0
    [world]    ...            # domain-specific world settings
    [data]     ...            # how many sequences, of which kinds
    [model]    n_layer = 2, n_embd = 64, n_head = 4, n_positions = 64
    [train]    steps = 600, batch_size = 32, lr = 3e-3, ...
    [evaluate] epsilon = 0.01, M = 30, k = 5, trials = 100, ...

``TASK`` on the command line is a name in ``tasks/`` or a path to a TOML file.
A :class:`Domain` turns a task into what the core needs: the world, data files,
the state sampler and the held-out sequences. Domains are looked up by name in
:mod:`worldmodel.registry`, and their modules are imported only when a task uses them.

Every table is checked when the task is loaded (:mod:`worldmodel.config`): the
sections the core reads have their schemas here (:data:`MODEL`, :data:`TRAIN`,
:data:`EVALUATE`); a domain declares its own sections in :attr:`Domain.schema`.
An unknown key or a value of the wrong type is a one-line error naming the file,
the section and the key.
"""

from __future__ import annotations

import os
import tomllib
from abc import ABC, abstractmethod
from functools import cached_property
from pathlib import Path
from typing import Any

from . import registry
from .config import Schema, check_table, suggest
from .dfa import World, is_valid
from .errors import WorldModelError
from .sampling import StateSampler

#: ``[model]``: the GPT-2 trained from scratch (:func:`worldmodel.models.gpt2_config`).
MODEL: Schema = {"n_layer": int, "n_embd": int, "n_head": int, "n_positions": int, "dropout": float}
#: ``[train]``: the training loop (:func:`worldmodel.train.train`).
TRAIN: Schema = {"steps": int, "batch_size": int, "lr": float, "weight_decay": float, "warmup": int,
                 "eval_every": int, "log_every": int, "keep": str, "data": str, "precision": str,
                 "grad_accum": int, "compile": bool, "time_budget": float, "save_every": int,
                 "data_workers": int, "peak_flops": float, "cpu_threads": int}
#: ``[evaluate]``: :class:`worldmodel.metrics.Settings` fields, plus ``epsilon``.
EVALUATE: Schema = {"epsilon": float, "acceptance": str, "M": int, "k": int, "trials": int, "max_sample_len": int,
                    "boundary": str, "boundary_len": int, "max_boundary": int, "batch_trials": int, "seed": int,
                    "probe_sequences": int, "probe_epochs": int, "probe_lr": float, "probe_batch": int,
                    "keep_top": bool, "next_token_positions": str, "next_token_pooling": str}
#: Top-level keys of every task file (sections apart).
TOP: Schema = {"name": str, "domain": str, "seed": int}
CORE_SECTIONS: dict[str, Schema] = {"model": MODEL, "train": TRAIN, "evaluate": EVALUATE}

REPO_ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = Path(os.environ.get("WORLDMODEL_TASKS", REPO_ROOT / "tasks"))
SPLITS = ("train", "val", "test")


class Task:
    """A parsed task file. ``config`` is the TOML as a dict."""

    def __init__(self, name: str, path: Path, config: dict[str, Any]):
        self.name = name
        self.path = path
        self.config = config

    def section(self, key: str) -> dict[str, Any]:
        value = self.config.get(key, {})
        if not isinstance(value, dict):
            raise WorldModelError(f"task {self.path}: [{key}] must be a table")
        return value

    @property
    def seed(self) -> int:
        return int(self.config.get("seed", 0))

    @cached_property
    def domain(self) -> "Domain":
        return domain_class(self.path, self.config.get("domain"))(self)

    @property
    def world(self) -> World:
        return self.domain.world

    def data_dir(self, override: str | Path | None = None) -> Path:
        """Where generated sequences live: ``--data-dir``, ``$WORLDMODEL_DATA/<task>`` or ``data/<task>``."""
        if override is not None:
            return Path(override)
        base = os.environ.get("WORLDMODEL_DATA")
        return Path(base) / self.name if base else Path("data") / self.name


def load_task(spec: str | Path) -> Task:
    """Load a task by name (``tasks/<name>.toml``) or by path."""
    spec = str(spec)
    path = Path(spec)
    if not (path.suffix == ".toml" and path.exists()):
        path = TASKS_DIR / f"{spec}.toml"
    if not path.exists():
        names = sorted(p.stem for p in TASKS_DIR.glob("*.toml"))
        raise WorldModelError(f"unknown task {spec!r} (known: {', '.join(names)}; or give a path to a .toml file)")
    try:
        config = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise WorldModelError(f"task file {path} is not valid TOML: {exc}") from None
    if "domain" not in config:
        raise WorldModelError(f"task file {path} has no 'domain' key")
    check_config(path, config)
    return Task(str(config.get("name", path.stem)), path, config)


def domain_class(path, name) -> type["Domain"]:
    """The registered Domain class called ``name``; an unknown name is an error naming the task file."""
    cls = registry.domain_class(name) if isinstance(name, str) else None
    if cls is None:
        raise WorldModelError(f"task {path}: unknown domain {name!r}{suggest(str(name), registry.names())}")
    return cls


def check_config(path, config: dict) -> None:
    """Check every key of a parsed task file (top level, core sections, the domain's sections)."""
    where = f"task {path}"
    cls = domain_class(path, config.get("domain"))
    sections = {**CORE_SECTIONS, **cls.schema}
    for key, value in config.items():
        if key in cls.schema and not cls.schema[key] and isinstance(value, dict) and value:
            # a world that reads keys here but has not declared them: say where they go
            raise WorldModelError(f"{where}: [{key}] unknown key {next(iter(value))!r} "
                                  f"({cls.__module__}.{cls.__name__}.schema declares no [{key}] keys)")
        if key in sections:
            check_table(where, key, value, sections[key])
        elif key in TOP:
            check_table(where, "top level", {key: value}, TOP)
        else:
            raise WorldModelError(f"{where}: unknown top-level key or section {key!r}{suggest(key, [*TOP, *sections])}")


def read_sequences(path: Path, world: World | None = None, check: bool = True) -> list[list[str]]:
    """Read one sequence per line, space-separated tokens; blank lines are skipped.

    With a world, unknown tokens raise :class:`WorldModelError` naming the file and
    line; with ``check`` every sequence must also be valid in the world.
    """
    if not path.exists():
        raise WorldModelError(f"sequence file {path} does not exist (run `worldmodel data TASK` first?)")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorldModelError(f"sequence file {path} is not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    if "\x00" in text:
        raise WorldModelError(f"sequence file {path} is not a text file (it holds NUL bytes)")
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        toks = line.split()
        if not toks:
            continue
        if world is not None:
            world.check_tokens(toks, what=f"{path}:{lineno}")
            if check and not is_valid(world, toks):
                raise WorldModelError(f"{path}:{lineno}: sequence is not valid in the {world.name} world")
        out.append(toks)
    return out


def write_sequences(path: Path, sequences) -> None:
    """Write sequences atomically (to a temporary file, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as f:
        for seq in sequences:
            f.write(" ".join(seq) + "\n")
    tmp.replace(path)


class Domain(ABC):
    """One family of worlds. Subclasses build the world, its data and its sampler.

    Data layout: ``<data_dir>/<dataset>/{train,val,test}.txt``, one sequence per
    line. Most domains have a single dataset called ``"default"``; navigation has
    one per training distribution (shortest paths, noisy shortest paths, random
    walks), each trained into its own model.
    """

    #: The domain's own sections and their keys (checked when a task is loaded):
    #: section name -> schema (see :mod:`worldmodel.config`).
    schema: dict[str, Schema] = {"world": {}, "data": {}}

    def __init__(self, task: Task):
        self.task = task
        self.cfg = task.config

    # -- the world -----------------------------------------------------------
    @abstractmethod
    def build_world(self) -> World:
        """Construct the world from ``self.task.section('world')``."""

    @cached_property
    def world(self) -> World:
        return self.build_world()

    @abstractmethod
    def sampler(self) -> StateSampler:
        """The state sampler used by compression and distinction."""

    # -- data ----------------------------------------------------------------
    def datasets(self) -> list[str]:
        """Names of the training distributions this domain can generate."""
        return ["default"]

    @abstractmethod
    def generate(self, dataset: str) -> dict[str, list[list[str]]]:
        """Generate ``{"train": [...], "val": [...], "test": [...]}`` for one dataset, seeded."""

    def stream(self, dataset: str):
        """A seeded :class:`~worldmodel.datastream.SequenceStream` of fresh training sequences
        of ``dataset``, or None when the dataset exists only as files (the default)."""
        return None

    def ensure_data(self, dataset: str | None = None, data_dir: str | Path | None = None,
                    force: bool = False) -> Path:
        """Generate a dataset's files unless they already exist; return its folder."""
        dataset = dataset or self.datasets()[0]
        if dataset not in self.datasets():
            raise WorldModelError(
                f"task {self.task.name}: unknown dataset {dataset!r} (known: {', '.join(self.datasets())})"
            )
        folder = self.task.data_dir(data_dir) / dataset
        if force or not all((folder / f"{s}.txt").exists() for s in SPLITS):
            splits = self.generate(dataset)
            for split in SPLITS:
                write_sequences(folder / f"{split}.txt", splits[split])
        return folder

    def sequences(self, split: str, dataset: str | None = None,
                  data_dir: str | Path | None = None) -> list[list[str]]:
        folder = self.ensure_data(dataset, data_dir)
        return read_sequences(folder / f"{split}.txt", self.world, check=False)

    # -- extras --------------------------------------------------------------
    def detour_plan(self, dataset: str, trials: int, seed: int = 0, data_dir: str | Path | None = None):
        """``worldmodel detours`` for this world: a :class:`~worldmodel.detours.DetourPlan` of
        ``trials`` starts drawn with ``seed`` from ``dataset``'s held-out data, or ``None``
        when the world has no detour test (the default)."""
        return None

    def extra_metrics(self, model, dataset: str | None = None, data_dir: str | Path | None = None,
                      progress: bool = False) -> dict:
        """Domain-specific evaluations (e.g. navigation capabilities) on ``dataset``: name -> MetricResult."""
        return {}
