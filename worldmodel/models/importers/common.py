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
    template: str | None = None     #: character-level nanoGPT: the layout of the training text (see .template)
    missing: str = "error"          #: world tokens the model lacks: "error" (refuse) or "zero" (probability 0)
    floor: float | None = None      #: pruning floor of the piece trie (None: the format's default)


@dataclass
class Imported:
    """A foreign checkpoint converted: an HF causal LM, its vocabulary, where it came from."""

    model: Any
    vocab: Vocabulary  #: or a pieces vocabulary (format hf)
    provenance: dict
    notes: list[str] = field(default_factory=list)
    tokenizer: Any = None  #: the HF tokenizer (format ``hf``), saved beside the weights
    missing: list = field(default_factory=list)  #: world tokens the model cannot emit (``missing="zero"``)


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


MISSING_POLICIES = ("error", "zero")


def check_missing(missing: list[str], world: World, where: str, policy: str = "error") -> list[str]:
    """World tokens a model lacks: an error naming them (``policy="error"``), or the notes saying they
    will have probability 0 (``"zero"``)."""
    if policy not in MISSING_POLICIES:
        raise WorldModelError(f"--missing-tokens must be one of {', '.join(MISSING_POLICIES)}, not {policy!r}")
    if not missing:
        return []
    if policy == "error":
        raise WorldModelError(
            f"{where}: the model's vocabulary lacks {len(missing)} of the {world.name} world's tokens, "
            f"e.g. {missing[:8]} (--missing-tokens zero scores them at probability 0)")
    return [f"{len(missing)} world token(s) the model lacks get probability 0: "
            f"{missing[:20]}{' …' if len(missing) > 20 else ''}"]


def match_with_bos(model_ids: dict[str, int], world: World, where: str, bos: str | None, vocab_file,
                   missing: str = "error") -> tuple[dict[str, int], list[str], int | None]:
    """:func:`match_world` for a model whose vocabulary may hold a BOS entry named ``bos``.

    Returns ``(ids, notes, bos_id)``: the BOS entry, when named, must be in ``model_ids``
    (else an error naming ``vocab_file``) and is no world token; ``bos_id`` is ``None``
    without one (the model then reads the first token as context).
    """
    bos_id = None
    if bos is not None:
        if bos not in model_ids:
            raise WorldModelError(f"{vocab_file}: the BOS token {bos!r} is not in the vocabulary")
        bos_id = model_ids[bos]
    ids, notes = match_world(model_ids, world, where, ignore=(bos,) if bos else (), missing=missing)
    return ids, notes, bos_id


def match_world(model_ids: dict[str, int], world: World, where: str, ignore=(),
                missing: str = "error") -> tuple[dict[str, int], list[str]]:
    """The world's tokens -> model ids; an error naming the world tokens the model lacks.

    Returns the map (in the world's token order) and notes naming the model tokens the
    world cannot name (other than ``ignore``: padding and the like). With
    ``missing="zero"`` world tokens the model lacks are left out of the map (and named
    in the notes) instead of stopping.
    """
    lacking = [t for t in world.tokens if t not in model_ids]
    notes = check_missing(lacking, world, where, missing)
    known = set(world.tokens)
    extra = sorted(str(t) for t in model_ids if t not in known and t not in ignore)
    if extra:
        notes.append(f"{len(extra)} model token(s) the {world.name} world cannot name (never scored): "
                     f"{extra[:8]}{' …' if len(extra) > 8 else ''}")
    return {t: int(model_ids[t]) for t in world.tokens if t in model_ids}, notes


def with_missing(imp: Imported, world: World, missing: str) -> Imported:
    """Record the world tokens the imported vocabulary lacks (already accepted by ``missing``)."""
    have = set(imp.vocab.tokens)
    imp.missing = [t for t in world.tokens if t not in have]
    if imp.missing:
        imp.provenance["missing_tokens_policy"] = missing
        imp.provenance["missing_tokens"] = imp.missing
    return imp
