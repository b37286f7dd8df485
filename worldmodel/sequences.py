"""Sequence files: one sequence per line, space-separated tokens (``train.txt``, ``val.txt``, ``test.txt``)."""

from __future__ import annotations

from pathlib import Path

from .dfa import World, is_valid
from .errors import WorldModelError

#: The splits of every data set, in the order they are generated and written.
SPLITS = ("train", "val", "test")


def read_sequences(path: Path, world: World | None = None, check: bool = True) -> list[list[str]]:
    """Read one sequence per line, space-separated tokens; blank lines are skipped.

    With a world, unknown tokens raise :class:`WorldModelError` naming the file and
    line; with ``check`` every sequence must also be valid in the world.
    """
    if not path.exists():
        raise WorldModelError(f"sequence file {path} does not exist (run `worldmodel data TASK` first?)")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorldModelError(f"sequence file {path} is not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    if "\x00" in text:
        raise WorldModelError(f"sequence file {path} is not a text file (it holds NUL bytes)")
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        toks = line.split()
        if not toks:
            continue
        if world is not None:
            world.check_tokens(toks, what=f"{path}:{lineno}")
            if check and not is_valid(world, toks):
                raise WorldModelError(f"{path}:{lineno}: sequence is not valid in the {world.name} world")
        out.append(toks)
    return out


def write_sequences(path: Path, sequences) -> None:
    """Write sequences atomically (to a temporary file, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as f:
        for seq in sequences:
            f.write(" ".join(seq) + "\n")
    tmp.replace(path)
