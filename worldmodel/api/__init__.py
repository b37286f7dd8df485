"""The extension contracts: what a world, a state sampler, a domain, a model or a metric implements.

Everything the engine and the commands read from an extension is declared here, with its
default, on one of these classes:

* :class:`World` (:mod:`.world`) — a deterministic automaton over a finite token alphabet;
* :class:`StateSampler` and :class:`PrefixPair` (:mod:`.sampler`) — how compression and
  distinction draw prefixes and the states they reach;
* :class:`Domain` (:mod:`.domain`) — one family of worlds behind the tasks that use it: the
  world, its data sets, its sampler, and optional hooks (boundary kind, detours, extras);
* :class:`SequenceModel`, :class:`Scored`, :class:`SampleGroup` (:mod:`.model`) — a model's
  batched next-token probabilities, suffix scoring and sampling;
* :class:`MetricSpec` and :class:`MetricContext` (:mod:`.metric`) — a metric the evaluator runs.

Extensions are registered in :mod:`worldmodel.registry` (worlds, metrics, import formats), by
a task's ``domain = "module:Class"``, or by an installed package's entry points. The guide is
``docs/adding-a-world.md``. Names are imported on first use.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "REJECT": ".world", "Token": ".world", "Suffix": ".world", "World": ".world",
    "PrefixPair": ".sampler", "StateSampler": ".sampler",
    "Domain": ".domain",
    "SequenceModel": ".model", "Scored": ".model", "SampleGroup": ".model", "Prefix": ".model",
    "MetricSpec": ".metric", "MetricContext": ".metric",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'worldmodel.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
