"""The import rule (docs/layout.md): core <- worlds <- commands and scripts; no upward arrow, no cycle.

* core: ``worldmodel/*.py`` and core packages (``worldmodel/api/``, ``worldmodel/models/``,
  ``worldmodel/training/``, ``worldmodel/extract/``) except ``cli.py``; imports no world and no command;
* a world: ``worldmodel/worlds/<w>/`` except its ``cli.py``; imports the core and its own
  modules only, never a command, ``worldmodel.training`` or another world;
* commands: ``worldmodel/cli.py``, ``worldmodel/commands/`` and ``worldmodel/worlds/<w>/cli.py``;
  import anything but ``worldmodel.cli`` (which only assembles them).

Every import counts, also the ones inside functions (a lazy import is still an arrow), and so do
the names a module imports by string: ``importlib.import_module("...")`` with a literal, the
``_EXPORTS`` tables of the lazily exporting packages, and the registry's command modules (an arrow
from :mod:`worldmodel.cli`, which loads them). Imports under ``if TYPE_CHECKING:`` never run and do
not count. The registry's other strings (Domain classes, data sets, metrics, import formats) are
plug-ins looked up by name, the one sanctioned way for the core to reach a world; they are checked
to resolve and to point at worlds or the core, not at commands.
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


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` (imports for annotations only)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (getattr(node.test, "id", None) == "TYPE_CHECKING"
                                         or getattr(node.test, "attr", None) == "TYPE_CHECKING"):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _module_name(module: str, text: str) -> str | None:
    """The project module a string names (``"worldmodel.x"``, ``"worldmodel.x:obj"``, or ``".x"`` relative)."""
    text = text.split(":")[0]
    if text.startswith("."):
        base = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        text = base + text
    while text and text not in MODULES:
        text = text.rpartition(".")[0]
    return text if text.startswith("worldmodel") and text != module else None


def _string_targets(module: str, tree: ast.AST) -> set[str]:
    """Modules named by ``importlib.import_module("literal", ...)`` and by an ``_EXPORTS`` table."""
    out = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(_module_name(module, node.args[0].value))
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict)
                and any(getattr(tg, "id", None) == "_EXPORTS" for tg in (node.targets if isinstance(node, ast.Assign) else [node.target]))):
            out.update(_module_name(module, v.value) for v in node.value.values
                       if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return {m for m in out if m}


def _graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_checking_nodes(tree)
        graph[module] = {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                         and id(node) not in skip for t in _targets(module, node)} | _string_targets(module, tree)
    return graph


def layer(module: str) -> tuple[str, str | None]:
    """``("core", None)``, ``("world", name)`` or ``("command", world name or None)``."""
    parts = module.split(".")
    if parts[-1] == "cli":
        return "command", parts[2] if len(parts) > 3 and parts[1] == "worlds" else None
    if len(parts) > 1 and parts[1] == "commands":
        return "command", None
    if len(parts) > 2 and parts[1] == "worlds":
        return "world", parts[2]
    return "core", None


def _registry_arrows() -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """The registry's command modules as arrows from ``worldmodel.cli``, and its plug-in strings."""
    from worldmodel import registry

    commands = {"worldmodel.cli": {_module_name("worldmodel.registry", c) for c in registry.command_modules()}}
    plugins = [(w.name, w.domain) for w in registry.WORLDS] + [(w.name, w.data_sets) for w in registry.WORLDS
                                                               if w.data_sets]
    plugins += [(m.name, m.run) for m in registry.METRICS if isinstance(m.run, str)]
    plugins += [(f.name, s) for f in registry.FORMATS for s in (f.load, f.detect) if isinstance(s, str)]
    return commands, plugins


GRAPH = _graph()
COMMAND_ARROWS, PLUGINS = _registry_arrows()
for _m, _ts in COMMAND_ARROWS.items():
    GRAPH[_m] = GRAPH[_m] | _ts


def test_the_module_paths_are_classified():
    assert layer("worldmodel.metrics") == ("core", None)
    assert layer("worldmodel.cli") == ("command", None)
    assert layer("worldmodel.worlds.othello.play") == ("world", "othello")
    assert layer("worldmodel.worlds.othello.cli") == ("command", "othello")
    assert layer("worldmodel.commands.common") == ("command", None)
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
            if t in ("worldmodel.cli", "worldmodel.training") or t_kind == "command" or (
                    t_kind == "world" and t_world != world):
                bad.append((m, t))
    assert not bad, f"world modules import upward or sideways: {bad}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
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

    for v in list(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, f"import cycles: {cycles}"


def test_a_loop_through_the_registry_fails_the_check():
    """A world command that imported ``worldmodel.cli`` back would close a loop through the registry's strings."""
    world_cli = next(iter(COMMAND_ARROWS["worldmodel.cli"]))
    looped = {**GRAPH, world_cli: GRAPH[world_cli] | {"worldmodel.cli"}}
    assert any("worldmodel.cli" in c and world_cli in c for c in _cycles(looped))


def test_the_commands_are_on_top():
    """Nothing imports ``worldmodel.cli``; world command modules take their helpers from the commands layer."""
    importers = [m for m, ts in GRAPH.items() if "worldmodel.cli" in ts]
    assert not importers, f"modules import worldmodel.cli: {importers}"
    below = [(m, t) for m, ts in GRAPH.items() if layer(m)[0] != "command" for t in ts if layer(t)[0] == "command"]
    assert not below, f"modules below the commands layer import a command: {below}"


@pytest.mark.parametrize("name, target", PLUGINS, ids=[f"{n}:{t}" for n, t in PLUGINS])
def test_registry_plugins_resolve_to_worlds_or_the_core(name, target):
    from worldmodel import registry

    module = _module_name("worldmodel.registry", target)
    assert module in MODULES and layer(module)[0] != "command"
    assert registry.resolve(target) is not None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    importlib.import_module(module)
