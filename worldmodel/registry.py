"""The one list of names: worlds, metrics and checkpoint import formats.

Everything here is a table of strings (``"module:object"``), imported only when used, so a world's
heavy dependencies (an Othello engine, osmnx, an LLM client) load only for the tasks and commands
that need them, and the core never imports a world at import time. An entry is the only place its
names are written: the task files' ``domain`` key, ``worldmodel fetch`` names, ``--metrics`` and its
help, the result keys and table columns, ``--format`` of ``worldmodel import`` all come from here.

Three ways to add to it:

* a line in a table below (worlds and formats shipped with the package);
* at run time, :func:`register_world`, :func:`register_metric`, :func:`register_format`;
* from an installed package, entry points in the groups ``worldmodel.worlds`` (name -> a Domain
  class), ``worldmodel.metrics`` (name -> a :class:`~worldmodel.api.MetricSpec`) and
  ``worldmodel.formats`` (name -> an :class:`ImportFormat`), read on first use.

A task file may also name a Domain class directly: ``domain = "my_package.my_module:MyDomain"``.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Callable, NamedTuple

from .api.metric import MetricSpec


class WorldEntry(NamedTuple):
    name: str  #: the ``domain`` key of task files
    domain: str  #: ``"module:Class"`` of its Domain
    commands: str | None = None  #: module with ``register(subparsers)``, if the world adds commands
    data_sets: str | None = None  #: ``"module:NAME"`` of a tuple of :class:`worldmodel.datasets.DataSet`


class ImportFormat(NamedTuple):
    """A foreign checkpoint format: ``load(source, world, options, data) -> Imported``.

    ``detect(source, data)`` says whether a file's plain-data contents (``data``, ``None`` for a
    folder) or a folder is in this format; formats are tried in table order.
    """

    name: str
    load: str | Callable
    detect: str | Callable
    help: str


WORLDS: list[WorldEntry] = [
    WorldEntry("toy", "worldmodel.worlds.toy:ToyDomain"),
    WorldEntry("navigation", "worldmodel.worlds.navigation.domain:NavigationDomain", "worldmodel.worlds.navigation.cli",
               "worldmodel.worlds.navigation.data_sets:DATA_SETS"),
    WorldEntry("othello", "worldmodel.worlds.othello.domain:OthelloDomain", "worldmodel.worlds.othello.cli",
               "worldmodel.worlds.othello.data_sets:DATA_SETS"),
    WorldEntry("seating", "worldmodel.worlds.seating.domain:SeatingDomain", "worldmodel.worlds.seating.cli"),
    WorldEntry("chess", "worldmodel.worlds.chess.domain:ChessDomain", "worldmodel.worlds.chess.cli"),
    WorldEntry("textworld", "worldmodel.worlds.textworld.domain:TextWorldDomain", "worldmodel.worlds.textworld.cli"),
    WorldEntry("blockdrop", "worldmodel.worlds.blockdrop.domain:BlockDropDomain", "worldmodel.worlds.blockdrop.cli"),
    WorldEntry("eight", "worldmodel.worlds.eight.domain:EightDomain", "worldmodel.worlds.eight.cli",
               "worldmodel.worlds.eight.data_sets:DATA_SETS"),
    WorldEntry("bytesized32", "worldmodel.worlds.bytesized32.domain:ByteSized32Domain",
               "worldmodel.worlds.bytesized32.cli", "worldmodel.worlds.bytesized32.data_sets:DATA_SETS"),
    WorldEntry("groups", "worldmodel.worlds.groups.domain:GroupDomain"),
]

METRICS: list[MetricSpec] = [
    MetricSpec("compression", "worldmodel.metrics:run_compression", (("compression_precision", "Compr. P"),),
               help="sequence compression precision: prefix pairs reaching one state", table_rank=2),
    MetricSpec("distinction", "worldmodel.metrics:run_distinction",
               (("distinction_precision", "Dist. P"), ("distinction_recall", "Dist. R")),
               help="sequence distinction precision and recall: prefix pairs reaching two states", table_rank=3),
    MetricSpec("next-token", "worldmodel.metrics:run_next_token", (("next_token", "Next-token"),), data="test",
               help="share of held-out positions whose top-1 token is valid", table_rank=0),
    MetricSpec("probe", "worldmodel.metrics:run_probe", (("probe", "Probe"),), data="train", trials=False,
               help="linear probe of the current state from the last hidden layer", table_rank=1),
    MetricSpec("inductive-bias", "worldmodel.inductive_bias:run_inductive_bias",
               (("inductive_bias_r", "R-IB"), ("inductive_bias_d", "D-IB"),
                ("inductive_bias_d_same_pseudo", "D-IB same pseudo-state"),
                ("inductive_bias_d_diff_pseudo", "D-IB other pseudo-state"), ("ib_fit", "IB fit"),
                ("ib_coverage", "IB coverage")),
               help="the inductive-bias probe (Vafa et al. 2025): white-noise tasks of the true state, "
                    "run only when named", table_rank=4, default=False,
               settings={"ib_tasks": (int, 20, "white-noise tasks (100 in the paper)"),
                         "ib_classes": (int, 2, "labels of a white-noise task"),
                         "ib_train": (int, 100, "training sequences per task, one labelled position each"),
                         "ib_examples": (int, 2000, "held-out positions the extrapolations are compared on"),
                         "ib_steps": (int, 100, "full-batch adaptation steps"),
                         "ib_lr": (float, 6e-4, "adaptation learning rate (AdamW)"),
                         "ib_finetune": (str, "full", "'full' (the whole network and a fresh head) or 'head' "
                                                      "(the head alone)")}),
]

FORMATS: list[ImportFormat] = [
    ImportFormat("paper-nav", "worldmodel.models.importers:load_paper_nav", "worldmodel.models.importers:is_paper_nav",
                 "the paper's navigation transformers: a Lightning model.ckpt holding a GPT-2 under 'model.' "
                 "and tokenizer.pt"),
    ImportFormat("li-othello", "worldmodel.worlds.othello.li_import:load", "worldmodel.worlds.othello.li_import:detect",
                 "Li et al.'s Othello-GPT: a minGPT state dict (gpt_synthetic.ckpt, gpt_championship.ckpt)"),
    ImportFormat("torch-rnn", "worldmodel.models.importers.rnn:load_torch_rnn",
                 "worldmodel.models.importers.rnn:is_torch_rnn",
                 "an LSTM/GRU state dict: inductive-bias-probes' ckpt.pt (model + model_args), or a bare state "
                 "dict with config.json beside it; the vocabulary from --tokenizer (JSON)"),
    ImportFormat("nanogpt", "worldmodel.models.importers:load_nanogpt", "worldmodel.models.importers:is_nanogpt",
                 "nanoGPT's ckpt.pt with meta.pkl (stoi/itos; character-level models with --template)"),
    ImportFormat("hf", "worldmodel.models.importers.pieces:load_hf", "worldmodel.models.importers.pieces:is_hf",
                 "a Hugging Face causal LM folder with its own tokenizer (local files only)"),
]

_loaded: set[str] = set()


def resolve(target: str | Any) -> Any:
    """``"module:object"`` imported now (anything else is returned as is)."""
    if not isinstance(target, str):
        return target
    module, _, name = target.partition(":")
    obj = importlib.import_module(module)
    for part in name.split(".") if name else ():
        obj = getattr(obj, part)
    return obj


def _entry_points(group: str):
    if group in _loaded:
        return []
    _loaded.add(group)
    return list(entry_points(group=group))


# -- worlds ------------------------------------------------------------------------------


def _worlds() -> list[WorldEntry]:
    for ep in _entry_points("worldmodel.worlds"):
        if entry(ep.name) is None:
            WORLDS.append(WorldEntry(ep.name, ep.value))
    return WORLDS


def register_world(name: str, domain: str | type, commands: str | None = None, data_sets: str | None = None) -> None:
    """Add a world (its Domain class or ``"module:Class"``) under the task files' ``domain`` name ``name``."""
    if any(w.name == name for w in WORLDS):
        raise ValueError(f"a world called {name!r} is already registered")
    WORLDS.append(WorldEntry(name, domain, commands, data_sets))


def names() -> list[str]:
    """The registered world names, sorted."""
    return sorted(w.name for w in _worlds())


def entry(name: str) -> WorldEntry | None:
    return next((w for w in WORLDS if w.name == name), None)


def domain_class(name: str):
    """The Domain class registered as ``name``, or named ``"module:Class"``; ``None`` if there is none.

    A ``"module:Class"`` name that cannot be imported raises :class:`ImportError` (the caller says
    which task named it).
    """
    if ":" in name:
        cls = resolve(name)
        return cls if isinstance(cls, type) else None
    _worlds()
    found = entry(name)
    return None if found is None else resolve(found.domain)


def command_modules() -> list[str]:
    """Modules that add subcommands, in registry order."""
    return [w.commands for w in _worlds() if w.commands]


def data_sets() -> list:
    """Every world's :class:`~worldmodel.datasets.DataSet` entries, in registry order."""
    out = []
    for w in _worlds():
        if w.data_sets:
            out.extend(resolve(w.data_sets))
    return out


# -- metrics -----------------------------------------------------------------------------


def metrics() -> list[MetricSpec]:
    """Every registered metric, in the order the evaluator runs them."""
    for ep in _entry_points("worldmodel.metrics"):
        if metric(ep.name) is None:
            register_metric(ep.load())
    return METRICS


def register_metric(spec: MetricSpec) -> None:
    """Add a metric; its name, result keys and settings must be new."""
    if not isinstance(spec, MetricSpec):
        raise TypeError(f"register_metric() takes a MetricSpec, not {type(spec).__name__}")
    for other in METRICS:
        if other.name == spec.name or set(other.keys) & set(spec.keys) or set(other.settings) & set(spec.settings):
            raise ValueError(f"metric {spec.name!r} clashes with the registered metric {other.name!r}")
    METRICS.append(spec)


def metric(name: str) -> MetricSpec | None:
    return next((m for m in METRICS if m.name == name), None)


def metric_names(default_only: bool = False) -> list[str]:
    """``--metrics`` names in evaluation order (with ``default_only``, those run when none are named)."""
    return [m.name for m in metrics() if m.default or not default_only]


# -- import formats ----------------------------------------------------------------------


def formats() -> list[ImportFormat]:
    for ep in _entry_points("worldmodel.formats"):
        if import_format(ep.name) is None:
            register_format(ep.load())
    return FORMATS


def register_format(fmt: ImportFormat) -> None:
    """Add a checkpoint import format (``worldmodel import --format NAME``); its name must be new."""
    if import_format(fmt.name) is not None:
        raise ValueError(f"an import format called {fmt.name!r} is already registered")
    FORMATS.append(fmt)


def import_format(name: str) -> ImportFormat | None:
    return next((f for f in FORMATS if f.name == name), None)


def format_names() -> list[str]:
    return [f.name for f in formats()]
