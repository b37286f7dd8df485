"""The Manhattan navigation world (Vafa et al. 2024, §3): taxi-ride directions on a street map.

Modules: ``streetmap`` and ``sources`` (street maps and where they come from), ``world``
(the DFA), ``data`` (the three training sets), ``sampler`` (prefix pairs for the metrics),
``domain`` (the task glue and greedy-decoding capabilities), ``navigator`` (the shortest-route
model and capabilities), ``geometry``, ``reconstruct`` and ``reconstruct_paper`` (map
reconstruction), ``draw`` (maps), ``data_sets`` (``worldmodel fetch manhattan-paper``).
"""
