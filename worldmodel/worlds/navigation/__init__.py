"""The Manhattan navigation world (Vafa et al. 2024, §3): taxi-ride directions on a street map.

Modules: ``graph`` (street maps and their sources), ``world`` (the DFA), ``data`` (the
three training sets), ``sampler`` (prefix pairs for the metrics), ``domain`` (the task
glue and greedy-decoding capabilities).
"""
