"""Run a repository script in a fresh interpreter where some packages cannot be imported.

The GPU machine and other bare environments lack osmnx, folium and friends; a script
meant to run there is tested by blocking those modules (``sys.modules[name] = None``
makes ``import name`` raise ImportError) and running it as ``__main__``.
"""

from __future__ import annotations

import sys

_RUNNER = """
import runpy, sys
for name in {blocked!r}:
    sys.modules[name] = None          # importing it now raises ImportError
sys.argv = [{script!r}] + sys.argv[1:]
runpy.run_path({script!r}, run_name="__main__")
"""


def command(script: str, blocked, *args: str) -> list[str]:
    """The argv that runs ``script`` (a path relative to the repository root) with ``blocked`` unimportable."""
    return [sys.executable, "-c", _RUNNER.format(blocked=tuple(blocked), script=script), *args]
