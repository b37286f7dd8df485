"""The import rule (README "Layout"): core <- worlds <- commands and scripts; no upward arrow, no cycle.

* core: ``worldmodel/*.py`` and core packages (``worldmodel/models/``) except ``cli.py``;
  imports no world and no command;
* a world: ``worldmodel/worlds/<w>/`` except its ``cli.py``; imports the core and its own
  modules only, never ``worldmodel.cli``, ``worldmodel.train`` or another world;
* commands: ``worldmodel/cli.py`` and ``worldmodel/worlds/<w>/cli.py``; import anything.

Every import counts, also the ones inside functions (a lazy import is still an arrow).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "worldmodel"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _targets(module: str, node: ast.AST) -> list[str]:
    """The project modules an import statement in ``module`` refers to."""
    names = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            base = module.split(".")
            if MODULES[module].name != "__init__.py":
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("worldmodel") and name != module:
            out.append(name)
    return out


def _graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        graph[module] = {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                         for t in _targets(module, node)}
    return graph


def layer(module: str) -> tuple[str, str | None]:
    """``("core", None)``, ``("world", name)`` or ``("command", world name or None)``."""
    parts = module.split(".")
    if parts[-1] == "cli":
        return "command", parts[2] if len(parts) > 3 and parts[1] == "worlds" else None
    if len(parts) > 2 and parts[1] == "worlds":
        return "world", parts[2]
    return "core", None


GRAPH = _graph()


def test_the_module_paths_are_classified():
    assert layer("worldmodel.metrics") == ("core", None)
    assert layer("worldmodel.cli") == ("command", None)
    assert layer("worldmodel.worlds.othello.play") == ("world", "othello")
    assert layer("worldmodel.worlds.othello.cli") == ("command", "othello")
    assert {"worldmodel.evaluator", "worldmodel.checkpoints", "worldmodel.decoding"} <= set(GRAPH)


def test_the_checker_sees_lazy_and_relative_imports():
    """A function-level ``from ...cli import x`` in a world would be caught (the old Othello cycle)."""
    tree = ast.parse("def f():\n    from ...cli import build_model\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert _targets("worldmodel.worlds.othello.play", node) == ["worldmodel.cli"]


def test_core_imports_no_world_and_no_command():
    bad = [(m, t) for m, ts in GRAPH.items() if layer(m)[0] == "core" for t in ts if layer(t)[0] != "core"]
    assert not bad, f"core modules import upward: {bad}"


def test_worlds_import_only_the_core_and_themselves():
    bad = []
    for m, ts in GRAPH.items():
        kind, world = layer(m)
        if kind != "world":
            continue
        for t in ts:
            t_kind, t_world = layer(t)
            if t in ("worldmodel.cli", "worldmodel.train") or t_kind == "command" or (
                    t_kind == "world" and t_world != world):
                bad.append((m, t))
    assert not bad, f"world modules import upward or sideways: {bad}"


def test_no_import_cycles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    importlib.import_module(module)
