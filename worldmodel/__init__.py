"""worldmodel: has a generative sequence model recovered the world (a DFA) it was trained on?

The public API, for use as a library::

    import worldmodel as wm

    task = wm.load_task("toy-dfa")
    model = wm.build_model(task, checkpoint="runs/toy-dfa/checkpoint")   # or model="true"
    summary = wm.evaluate(task, model, ["compression", "distinction"], wm.settings_for(task, trials=50))

Names are imported on first use, so ``import worldmodel`` stays light (no torch,
transformers, osmnx or matplotlib until a name that needs them is touched).
"""

from __future__ import annotations

import importlib

#: public name -> the module that defines it
_EXPORTS = {
    "load_task": "worldmodel.tasks",
    "Task": "worldmodel.tasks",
    "Domain": "worldmodel.tasks",
    "evaluate": "worldmodel.evaluator",
    "build_model": "worldmodel.evaluator",
    "settings_for": "worldmodel.evaluator",
    "Settings": "worldmodel.metrics",
    "World": "worldmodel.dfa",
    "ExplicitDFA": "worldmodel.dfa",
    "SequenceModel": "worldmodel.models",
    "HFModel": "worldmodel.models",
    "TrueWorldModel": "worldmodel.models",
    "Vocabulary": "worldmodel.models",
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
