"""Every ``worldmodel`` name the scripts import exists (lazy imports inside functions included).

A script imports the library inside the functions it runs; a module renamed or moved in the
library (``worldmodel.train`` became ``worldmodel.training``) would otherwise be found only
when someone runs the reproduction.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parent.parent / "scripts").glob("*.py"))


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "worldmodel" \
                and node.level == 0:
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "worldmodel":
                    yield a.name, []


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_the_scripts_worldmodel_imports_resolve(script):
    missing = []
    for module, names in _imports(script):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{module} ({exc})")
            continue
        for name in names:
            if name != "*" and not hasattr(mod, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"{module}.{name}")
    assert not missing, f"{script.name} imports names that do not exist: {missing}"
