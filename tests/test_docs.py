"""The documentation cannot rot: every command is covered, every shell block is run or marked long,
every figure is one a script makes, every public name is documented.

The site itself is built with ``mkdocs build --strict`` in ``.ci/run`` (broken links and missing
references fail there); these tests check what a build cannot see.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
FENCE = re.compile(r"(?:<!--\s*(?P<mark>runnable|long)\s*-->\s*\n)?```(?P<lang>bash|sh|console)\n(?P<body>.*?)```", re.S)


def _blocks():
    for page in PAGES:
        for m in FENCE.finditer(page.read_text()):
            yield page, m.group("mark"), m.group("body")


def test_there_are_pages():
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert {"index.md", "getting-started.md", "metrics.md", "adding-a-world.md", "api.md"} <= names


def test_every_subcommand_appears_in_the_docs():
    from worldmodel.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    text = "\n".join(p.read_text() for p in PAGES)
    missing = [name for name in sub.choices if not re.search(rf"worldmodel {re.escape(name)}\b", text)]
    assert not missing, f"subcommands with no page mentioning `worldmodel <name>`: {missing}"


def test_every_shell_block_is_marked_runnable_or_long():
    unmarked = [(p.relative_to(ROOT).as_posix(), body.splitlines()[0]) for p, mark, body in _blocks() if mark is None]
    assert not unmarked, f"shell blocks without <!-- runnable --> or <!-- long --> before them: {unmarked}"


RUNNABLE = [(p, body) for p, mark, body in _blocks() if mark == "runnable"]


@pytest.mark.parametrize("page, body", RUNNABLE, ids=[f"{p.stem}:{b.splitlines()[0][:40]}" for p, b in RUNNABLE])
def test_runnable_blocks_run(page, body, tmp_path):
    env = {**os.environ, "WORLDMODEL_DATA": str(tmp_path / "data"), "PYTHONPATH": str(ROOT),
           "OMP_NUM_THREADS": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    script = "set -euo pipefail\n" + body
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page.name} block failed:\n{body}\n--- stderr ---\n{done.stderr[-3000:]}"


def _figures_in_docs() -> set[str]:
    found = set()
    for page in PAGES:
        # images shown (Markdown or HTML), not paths named in commands
        found.update(re.findall(r"(?:\]\(|src=\")(?:\.\./)*figures/([\w.-]+\.png)", page.read_text()))
    return found


def test_every_figure_in_the_docs_is_committed_and_made_by_a_script():
    scripts = "\n".join(p.read_text() for p in (ROOT / "scripts").glob("*.py"))
    for name in sorted(_figures_in_docs()):
        assert (ROOT / "figures" / name).is_file(), f"figures/{name} is shown in the docs but not committed"
        stem = name.removesuffix(".png")
        # scripts name their figures literally or by a pattern ("{task}-metrics.png"): a suffix must match
        tail = re.sub(r"^[a-z0-9]+(-[a-z0-9]+)?-(?=.)", "", stem)
        assert stem in scripts or f"-{tail}" in scripts or f"{tail}." in scripts, \
            f"figures/{name}: no script in scripts/ makes it"


def test_every_public_name_is_documented_and_in_the_api_reference():
    import worldmodel
    import worldmodel.api

    api_page = (DOCS / "api.md").read_text()
    undocumented, unlisted = [], []
    for module in (worldmodel, worldmodel.api):
        for name in module.__all__:
            obj = getattr(module, name)
            home = getattr(obj, "__module__", None) or ""
            if callable(obj) and home.startswith("worldmodel") and not (obj.__doc__ or "").strip():
                undocumented.append(f"{module.__name__}.{name}")
            if callable(obj) and home.startswith("worldmodel") and f"::: {home}" not in api_page:
                unlisted.append(f"{name} ({home})")
    assert not undocumented, f"public names without a docstring: {undocumented}"
    assert not unlisted, f"public names whose module has no `::: module` entry in docs/api.md: {unlisted}"


def test_readme_is_a_landing_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 200, "the README is the landing page: the rest belongs in docs/"
    broken = [link for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
              if not link.startswith(("http://", "https://")) and not (ROOT / link).exists()]
    assert not broken, f"README links to files that do not exist: {broken}"
