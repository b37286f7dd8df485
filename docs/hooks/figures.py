"""MkDocs hook: publish the repository's ``figures/`` with the site.

The figures are made by the scripts in ``scripts/`` and committed under ``figures/`` at the
top of the repository (the README shows them from there too); the pages refer to them as
``figures/<name>.png`` relative to the site root, so this hook adds every file of that folder
to the build instead of keeping a copy under ``docs/``.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

FIGURES = Path(__file__).resolve().parents[2] / "figures"


def on_files(files, config):
    for path in sorted(FIGURES.glob("*.png")):
        files.append(File(f"figures/{path.name}", str(FIGURES.parent), config["site_dir"], config["use_directory_urls"]))
    return files
