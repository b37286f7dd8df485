"""worldmodel: has a generative sequence model recovered the world (a DFA) it was trained on?

The public API, for use as a library::

    import worldmodel as wm

    task = wm.load_task("toy-dfa")               # or wm.Task.from_world(my_dfa), a Domain class, a file
    model = wm.build_model(task, checkpoint="runs/toy-dfa/seed-0/checkpoint")   # or model="true"
    summary = wm.evaluate(task, model, ["compression", "distinction"], wm.settings_for(task, trials=50))

``wm.train(task, out)`` trains a checkpoint, ``wm.extract_automaton(task, model)`` learns the
automaton a model implies. The extension contracts (``World``, ``StateSampler``, ``PrefixPair``,
``Domain``, ``SequenceModel``, ``MetricSpec``) are in :mod:`worldmodel.api`; registries in
:mod:`worldmodel.registry`. Names are imported on first use, so ``import worldmodel`` stays
light (no torch, transformers, osmnx or matplotlib until a name that needs them is touched).
"""

from __future__ import annotations

import importlib

#: public name -> the module that defines it
_EXPORTS = {
    "load_task": "worldmodel.tasks",
    "Task": "worldmodel.tasks",
    "evaluate": "worldmodel.evaluator",
    "build_model": "worldmodel.evaluator",
    "settings_for": "worldmodel.evaluator",
    "train": "worldmodel.training",
    "TrainConfig": "worldmodel.training",
    "extract_automaton": "worldmodel.extract.report",
    "Settings": "worldmodel.settings",
    "World": "worldmodel.api",
    "REJECT": "worldmodel.api",
    "StateSampler": "worldmodel.api",
    "PrefixPair": "worldmodel.api",
    "Domain": "worldmodel.api",
    "SequenceModel": "worldmodel.api",
    "MetricSpec": "worldmodel.api",
    "MetricContext": "worldmodel.api",
    "ExplicitDFA": "worldmodel.dfa",
    "ExplicitDFASampler": "worldmodel.sampling",
    "WorldDomain": "worldmodel.custom",
    "HFModel": "worldmodel.models",
    "TrueWorldModel": "worldmodel.models",
    "Vocabulary": "worldmodel.models",
    "register_world": "worldmodel.registry",
    "register_metric": "worldmodel.registry",
    "register_format": "worldmodel.registry",
    "WorldModelError": "worldmodel.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'worldmodel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
