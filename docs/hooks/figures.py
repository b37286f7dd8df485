"""MkDocs hook: publish the repository's figures with the site.

The figures are made by the scripts in ``scripts/`` (and by commands such as ``worldmodel
extract``) and committed under ``figures/`` and ``results/`` at the top of the repository;
the pages refer to them by those paths relative to the site root, so this hook adds those
image files to the build instead of keeping copies under ``docs/``.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]


def on_files(files, config):
    for pattern in ("figures/*.png", "results/**/*.png"):
        for path in sorted(ROOT.glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            files.append(File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files
