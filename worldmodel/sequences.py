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
    from .safety import decode_utf8, read_bytes

    if not path.exists():
        raise WorldModelError(f"sequence file {path} does not exist (run `worldmodel data TASK` first?)")
    text = decode_utf8(read_bytes(path, "sequences", "sequence file"), f"sequence file {path}")
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
    """Write sequences atomically (a unique temporary file, then renamed; a failure leaves nothing)."""
    from .safety import atomic_write

    atomic_write(path, (" ".join(seq) + "\n" for seq in sequences), "sequence file")
