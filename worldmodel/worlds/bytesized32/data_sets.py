"""The ``bytesized32`` data set: the corpus of cognitiveailab/BYTESIZED32 at a pinned commit.

648 files (11 MB): the 32 reference games and their playthroughs, the 16 test specifications
and the experiment tables, GPT-4's generated games, their reflections and final versions, the
compliance labels, the repository's README and LICENSE (Apache-2.0). ``manifest.json`` beside
this module records each file's SHA-256 and size; ``worldmodel fetch bytesized32`` downloads
every file from the repository at the commit and checks it (``--from DIR`` copies them from a
mirror laid out like ``shared/data``, checked the same way).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...datasets import DataSet, Remote

_MANIFEST = json.loads((Path(__file__).with_name("manifest.json")).read_text())
REPOSITORY = _MANIFEST["repository"]
COMMIT = _MANIFEST["commit"]
RAW = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}"

BYTESIZED32 = DataSet(
    name="bytesized32",
    folder="bytesized32",
    description=f"ByteSized32 text-game corpus ({REPOSITORY} at {COMMIT[:7]}; {len(_MANIFEST['files'])} files, 11 MB)",
    files={path: sha for path, (sha, _size) in sorted(_MANIFEST["files"].items())},
    remotes=tuple(Remote(path, sha, size, (f"{RAW}/{path}",)) for path, (sha, size) in sorted(_MANIFEST["files"].items())),
    licence="Apache-2.0 (ByteSized32, Wang et al. 2023)",
)

DATA_SETS = (BYTESIZED32,)
