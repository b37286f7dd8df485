"""The ``eight`` data set: the three arcs of "8" (alvations/melon-eight at a pinned commit, Apache-2.0).

``worldmodel fetch eight`` downloads ``data/arcs/*.json`` and the repository's
``LICENSE`` and ``NOTICE`` from GitHub at :data:`COMMIT`, checks each against its
SHA-256, and installs them as ``<cache>/data/eight/{arcs/*.json,LICENSE,NOTICE}``;
``--from DIR`` copies them from a mirror laid out like ``shared/data`` (``DIR/eight/...``).
Tasks name the folder ``shared:eight/arcs``.
"""

from __future__ import annotations

from ...datasets import DataSet, Remote

REPO = "alvations/melon-eight"
COMMIT = "6caf3d089a50a51fdc3ff3f69505c86fcf24587d"
_FILES = (  # (installed name, path in the repository, sha256, bytes)
    ("arcs/hallway-eight.json", "data/arcs/hallway-eight.json",
     "9cb97fda8d01a2f8db367ac6d8a88231e40b3a09e3fc204aab88bc9233468e1c", 16030),
    ("arcs/stairway8.json", "data/arcs/stairway8.json",
     "3cdb07494128bf68cf9731c3f8602c880aa8dece5c534f2fc63341b1049b2919", 18086),
    ("arcs/coach8.json", "data/arcs/coach8.json",
     "865f96b0ea3dab94745fa64a8da9e154a648c5d43a335da77b61987204093c6c", 17177),
    ("LICENSE", "LICENSE", "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4", 11357),
    ("NOTICE", "NOTICE", "add1fcb8b36e11ede7c34a55220ae8cabb5b0d8c2a7cad0034c08573cfd87623", 407),
)

EIGHT = DataSet(
    name="eight",
    folder="eight",
    description='the arcs of "8", the loop memory game (hallway-eight, stairway8, coach8: properties, values, '
                "sentence pools)",
    files={name: sha for name, _, sha, _ in _FILES},
    remotes=tuple(Remote(name, sha, size, (f"https://raw.githubusercontent.com/{REPO}/{COMMIT}/{path}",))
                  for name, path, sha, size in _FILES),
    licence="Apache License 2.0, Copyright 2026 alvations (Melon Lab); see LICENSE and NOTICE",
)

DATA_SETS = (EIGHT,)
