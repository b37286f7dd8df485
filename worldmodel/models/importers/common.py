"""What every importer returns and records: :class:`Imported`, provenance, token matching."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...dfa import World
from ...errors import WorldModelError
from ..vocab import Vocabulary


@dataclass(frozen=True)
class ImportOptions:
    """What ``worldmodel import`` passes every format's loader (each uses the options it needs)."""

    tokenizer: Path | None = None   #: tokenizer file or folder (default: beside the source)
    n_head: int | None = None       #: attention heads, where the checkpoint does not record them
    bos: str | None = None          #: a model token fed before every sequence


@dataclass
class Imported:
    """A foreign checkpoint converted: an HF causal LM, its vocabulary, where it came from."""

    model: Any
    vocab: Vocabulary  #: or a pieces vocabulary (format hf)
    provenance: dict
    notes: list[str] = field(default_factory=list)
    tokenizer: Any = None  #: the HF tokenizer (format ``hf``), saved beside the weights


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _provenance(fmt: str, source: Path, tokenizer: Path | None, extra: dict | None = None) -> dict:
    out = {"format": fmt, "source": str(source.resolve())}
    if source.is_file():
        out["sha256"] = sha256(source)
    if tokenizer is not None and tokenizer != source:
        out["tokenizer"] = str(tokenizer.resolve())
        if tokenizer.is_file():
            out["tokenizer_sha256"] = sha256(tokenizer)
    out.update(extra or {})
    return out


def match_world(model_ids: dict[str, int], world: World, where: str, ignore=()) -> tuple[dict[str, int], list[str]]:
    """The world's tokens -> model ids; an error naming the world tokens the model lacks.

    Returns the map (in the world's token order) and notes naming the model tokens the
    world cannot name (other than ``ignore``: padding and the like).
    """
    missing = [t for t in world.tokens if t not in model_ids]
    if missing:
        raise WorldModelError(
            f"{where}: the model's vocabulary lacks {len(missing)} of the {world.name} world's tokens, "
            f"e.g. {missing[:8]}")
    known = set(world.tokens)
    extra = sorted(str(t) for t in model_ids if t not in known and t not in ignore)
    notes = []
    if extra:
        notes.append(f"{len(extra)} model token(s) the {world.name} world cannot name (never scored): "
                     f"{extra[:8]}{' …' if len(extra) > 8 else ''}")
    return {t: int(model_ids[t]) for t in world.tokens}, notes
