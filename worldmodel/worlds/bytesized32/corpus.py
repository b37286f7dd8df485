"""The ByteSized32 corpus on disk: its games, specifications and released labels.

The corpus folder (``worldmodel fetch bytesized32``, or ``shared:bytesized32``) holds
``data/programs/*.py`` (the 32 reference games), ``data/test_prompts/test_N.py`` (the 16 test
specifications), ``data/test_eval.csv`` (the object, action and distractor each test asks for),
``results/GPT-4-32k/generated_games`` (GPT-4's 96 games: 3 experiments x 16 specifications x a
similar ("p") or dissimilar ("n") in-context reference game), ``revised_games`` (``_v0`` is the
generated game, ``_vN`` its N-th reflection; a game that passed stops there) and the compliance
labels ``compliance_evaluation_{object,action,distractor}.csv`` (GPT-4's and two human raters'
votes and a winnability label, for the 16 x 2 x 3 games before reflection... as released).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ...datasets import resolve_shared
from ...errors import WorldModelError

FOLDER = "bytesized32"
GPT4 = Path("results") / "GPT-4-32k"
NAME = re.compile(r"^(?P<date>\d+)_(?P<experiment>object|action|distractor)_test_(?P<test>\d+)_(?P<fold>[pn])_"
                  r"(?P<model>gpt-4-32k)_(?P<prompt>[a-z0-9-]+)_generation(?:_v(?P<version>\d))?(?:_final)?\.py$")
REFLECTIONS = (0, 1, 2, 3)


def corpus_root(root: str | Path | None = None) -> Path:
    """The corpus folder: ``root`` when given, else ``shared:bytesized32`` (the fetch cache, the mirror)."""
    path = Path(root) if root is not None else resolve_shared(FOLDER)
    if not (path / "data" / "programs").is_dir():
        raise WorldModelError(f"{path} is not the ByteSized32 corpus (no data/programs/); run "
                              "`worldmodel fetch bytesized32`")
    return path


@dataclass(frozen=True)
class GameName:
    """What a generated game's file name says."""

    experiment: str   # object, action, distractor
    test: int         # the specification, 1..16
    fold: str         # p: a similar reference game as the example, n: a dissimilar one
    prompt: str       # the reference game shown as the example
    version: int | None

    @property
    def game(self) -> str:
        """The game's name without its version: ``action_test_1_p_make-ice-cubes``."""
        return f"{self.experiment}_test_{self.test}_{self.fold}_{self.prompt}"


def parse_name(filename: str) -> GameName:
    m = NAME.match(Path(filename).name)
    if m is None:
        raise WorldModelError(f"{filename} is not a ByteSized32 GPT-4 game file name")
    v = m.group("version")
    return GameName(m.group("experiment"), int(m.group("test")), m.group("fold"), m.group("prompt"),
                    int(v) if v is not None else None)


def reference_games(root: Path) -> list[Path]:
    return sorted((root / "data" / "programs").glob("*.py"))


def revised_games(root: Path) -> dict[str, dict[int, Path]]:
    """``game -> {version: file}`` for the 96 GPT-4 games (``_v0`` is the generated game)."""
    out: dict[str, dict[int, Path]] = {}
    for p in sorted((root / GPT4 / "revised_games").glob("*.py")):
        n = parse_name(p.name)
        out.setdefault(n.game, {})[int(n.version or 0)] = p
    return out


def table2_versions(versions: dict[int, Path]) -> dict[int, Path]:
    """The file standing for each reflection round 0..3 (the corpus's ``make_table2.py`` rule: a
    missing round means the previous one passed, so it carries over)."""
    out: dict[int, Path] = {}
    for r in REFLECTIONS:
        out[r] = versions[r] if r in versions else out[r - 1]
    return out


def compliance_labels(root: Path) -> list[dict]:
    """The released specification-compliance labels, one dict per game and experiment."""
    rows = []
    for exp in ("object", "action", "distractor"):
        path = root / GPT4 / f"compliance_evaluation_{exp}.csv"
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                if not r.get("FileName"):
                    continue
                n = parse_name(r["FileName"])
                rows.append({"experiment": exp, "file": r["FileName"], "game": n.game, "test": n.test,
                             "fold": n.fold, **{k: _int(r[k]) for k in r if k != "FileName"}})
    return rows


def _int(x: str) -> int | None:
    x = (x or "").strip()
    return int(x) if x.lstrip("-").isdigit() else None


def test_eval(root: Path) -> dict[int, dict]:
    """``test -> {object, action, distractor}`` from ``data/test_eval.csv``."""
    with (root / "data" / "test_eval.csv").open(newline="") as f:
        return {int(r["test"].split("_")[1]): {"object": r["object"], "action": r["action"],
                                               "distractor": r["distractor"]} for r in csv.DictReader(f)}


def specification(root: Path, test: int) -> str:
    return (root / "data" / "test_prompts" / f"test_{test}.py").read_text()
