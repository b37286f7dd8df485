"""Checkpoints from elsewhere: read, check against a world, convert, detect.

Formats are registered in :data:`worldmodel.registry.FORMATS` (``worldmodel import TASK SOURCE
--format F``, or detected by :func:`detect_format` when ``--checkpoint`` names a foreign file);
each entry names its loader and its detector. Shipped:

``paper-nav``
    The paper's navigation transformers (keyonvafa/world-model-evaluation): a PyTorch
    Lightning ``model.ckpt`` whose ``state_dict`` holds a Hugging Face
    ``GPT2LMHeadModel`` under ``model.``, and a pickled ``SimpleTokenizer``
    (``word_to_id``: ``<pad>`` = 0, words from 1; no BOS) in its hyper-parameters or in
    ``tokenizer.pt`` (``--tokenizer``, or beside the checkpoint). The number of heads
    comes from the hyper-parameters (or ``n_head``).
``li-othello``
    Li et al.'s Othello-GPT, in the Othello world (:mod:`worldmodel.worlds.othello.li_import`).
``nanogpt``
    nanoGPT's ``ckpt.pt`` (``model_args`` + ``model``, ``_orig_mod.`` prefixes allowed)
    with ``meta.pkl`` (``stoi``/``itos``) beside it or given as ``--tokenizer``; every
    world token must be one entry of ``stoi``. No BOS unless ``bos`` names an entry.
``hf``
    A Hugging Face causal LM folder with its own tokenizer (local files only). A world
    token may be several pieces; see :mod:`.pieces`.

Every import returns an :class:`Imported` (a model, its :class:`~..vocab.Vocabulary`,
provenance, notes). :func:`write_imported` saves it as a standard checkpoint folder
(safetensors weights, ``vocab.json``, ``provenance.json``); :func:`load_checkpoint`
loads a standard folder or imports a foreign file on the fly.

Foreign pickles are read by :mod:`.safe_pickle`: plain data only, nothing runs.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import torch

from ...dfa import World
from ...errors import WorldModelError
from ..vocab import Vocabulary
from ... import registry
from .common import Imported, ImportOptions, _provenance, match_world, sha256  # noqa: F401  (re-exported)
from .gpt2 import build_gpt2, nanogpt_to_gpt2
from .safe_pickle import PlainHolder, load_plain, load_torch


def _expected() -> str:
    return "a worldmodel checkpoint folder (vocab.json), or " + "; ".join(
        f"{f.help} ({f.name})" for f in registry.formats())


# ---------------------------------------------------------------------------
# detection
# ---------------------------------------------------------------------------


def detect_format(path: str | Path) -> str:
    """``"ours"`` or a registered format's name, from the files themselves; one-line error otherwise."""
    path = Path(path)
    if path.is_dir():
        if (path / Vocabulary.FILE).exists():
            return "ours"
        fmt = _format_of(path, None)
    elif not path.exists():
        raise WorldModelError(f"checkpoint {path} does not exist")
    else:
        fmt = _format_of(path, load_torch(path))
    if fmt is None:
        raise WorldModelError(f"cannot tell the format of {path}: expected {_expected()}")
    return fmt


def _format_of(source: Path, data) -> str | None:
    """The first registered format whose detector recognises ``source`` (``data``: a file's contents)."""
    for fmt in registry.formats():
        if registry.resolve(fmt.detect)(source, data):
            return fmt.name
    return None


def is_paper_nav(source: Path, data) -> bool:
    """A Lightning checkpoint whose ``state_dict`` holds a GPT-2 under ``model.``."""
    return (isinstance(data, dict) and isinstance(data.get("state_dict"), dict)
            and any(str(k).startswith("model.transformer.") for k in data["state_dict"]))


def is_nanogpt(source: Path, data) -> bool:
    """nanoGPT's ``ckpt.pt`` (``model_args`` and ``model``), or a folder holding one."""
    if data is None:
        return (source / "ckpt.pt").exists()
    return isinstance(data, dict) and "model_args" in data and isinstance(data.get("model"), dict)


# ---------------------------------------------------------------------------
# the formats
# ---------------------------------------------------------------------------


def _tokenizer_words(tok, where: str) -> dict[str, int]:
    if isinstance(tok, PlainHolder):
        tok = tok.__dict__
    if not isinstance(tok, dict) or not isinstance(tok.get("word_to_id"), dict):
        raise WorldModelError(f"{where}: expected a tokenizer with a word_to_id dict")
    return {str(w): int(i) for w, i in tok["word_to_id"].items()}


def import_paper_nav(source: Path, world: World, tokenizer: Path | None = None, n_head: int | None = None,
                     data=None) -> Imported:
    where = str(source)
    data = load_torch(source) if data is None else data
    if not is_paper_nav(source, data):
        raise WorldModelError(f"{where}: not a paper-nav checkpoint (expected a Lightning dict whose state_dict "
                              "holds a GPT-2 under 'model.')")
    hp = data.get("hyper_parameters") or {}
    tok_obj = None
    if tokenizer is None and hp.get("tokenizer") is not None:
        tok_obj = hp["tokenizer"]
    else:
        tokenizer = tokenizer or source.with_name("tokenizer.pt")
        if not tokenizer.exists():
            raise WorldModelError(f"{where}: no tokenizer in the checkpoint and no {tokenizer}; give --tokenizer")
        tok_obj = load_torch(tokenizer)
    words = _tokenizer_words(tok_obj, str(tokenizer or where))
    heads = n_head or hp.get("n_head")
    if not heads:
        raise WorldModelError(f"{where}: the checkpoint does not record its number of attention heads; give --n-head")
    sd = {k[len("model."):]: v for k, v in data["state_dict"].items() if k.startswith("model.")}
    pad = words.get("<pad>", 0)
    model = build_gpt2(sd, int(heads), "gelu_new", pad_id=pad, where=where)
    ids, notes = match_world(words, world, where, ignore=("<pad>",))
    vocab = Vocabulary.from_ids(ids, model.config.vocab_size, bos_id=None, pad_id=pad, world_name=world.name,
                                names={pad: "<pad>"})
    prov = _provenance("paper-nav", source, tokenizer, {"n_head": int(heads)})
    return Imported(model, vocab, prov, notes)


def import_nanogpt(source: Path, world: World, tokenizer: Path | None = None, bos: str | None = None,
                   data=None) -> Imported:
    if source.is_dir():
        source = source / "ckpt.pt"
    where = str(source)
    data = load_torch(source) if data is None else data
    if not is_nanogpt(source, data):
        raise WorldModelError(f"{where}: not a nanoGPT ckpt.pt (expected 'model_args' and 'model')")
    margs = data["model_args"]
    tokenizer = tokenizer or source.with_name("meta.pkl")
    if not tokenizer.exists():
        raise WorldModelError(f"{where}: no {tokenizer} (nanoGPT's stoi/itos); give --tokenizer")
    meta = load_plain(tokenizer)
    if not isinstance(meta, dict) or not isinstance(meta.get("stoi"), dict):
        raise WorldModelError(f"{tokenizer}: expected a dict with 'stoi'")
    stoi = {str(k): int(v) for k, v in meta["stoi"].items()}
    sd = nanogpt_to_gpt2(data["model"], where)
    model = build_gpt2(sd, int(margs["n_head"]), "gelu", where=where)
    bos_id = None
    if bos is not None:
        if bos not in stoi:
            raise WorldModelError(f"{tokenizer}: the BOS token {bos!r} is not in stoi")
        bos_id = stoi[bos]
    ids, notes = match_world(stoi, world, where, ignore=(bos,) if bos else ())
    vocab = Vocabulary.from_ids(ids, model.config.vocab_size, bos_id=bos_id, world_name=world.name,
                                names={} if bos_id is None else {bos_id: bos})
    return Imported(model, vocab, _provenance("nanogpt", source, tokenizer, {"bos": bos}), notes)


def load_paper_nav(source: Path, world: World, options: ImportOptions, data=None) -> Imported:
    """Format ``paper-nav`` (the registry's loader)."""
    return import_paper_nav(source, world, options.tokenizer, options.n_head, data=data)


def load_nanogpt(source: Path, world: World, options: ImportOptions, data=None) -> Imported:
    """Format ``nanogpt`` (the registry's loader)."""
    return import_nanogpt(source, world, options.tokenizer, options.bos, data=data)


def import_checkpoint(source: str | Path, world: World, fmt: str | None = None, tokenizer: str | Path | None = None,
                      n_head: int | None = None, bos: str | None = None) -> Imported:
    """Read a foreign checkpoint in ``fmt`` (a registered format; detected when None) for ``world``."""
    source = Path(source)
    options = ImportOptions(Path(tokenizer) if tokenizer else None, n_head, bos)
    if not source.exists():
        raise WorldModelError(f"checkpoint {source} does not exist")
    data = None
    if source.is_file():  # read once: detection and import share it
        data = load_torch(source)
        if fmt is None:
            fmt = _format_of(source, data)
            if fmt is None:
                raise WorldModelError(f"cannot tell the format of {source}: expected {_expected()}")
    elif fmt is None:
        fmt = detect_format(source)
        if fmt == "ours":
            raise WorldModelError(f"{source} is already a worldmodel checkpoint; nothing to import")
    spec = registry.import_format(fmt) if fmt in registry.format_names() else None
    if spec is None:
        raise WorldModelError(f"unknown format {fmt!r}; choose from {', '.join(registry.format_names())}")
    return registry.resolve(spec.load)(source, world, options, data)


def write_imported(imp: Imported, out: str | Path) -> Path:
    """Save as a standard checkpoint folder: weights (safetensors), ``vocab.json``, ``provenance.json``.

    Written to a temporary folder and moved into place, so a failure leaves nothing.
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise WorldModelError(f"{out} exists and is not empty")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".import-", dir=out.parent))
    try:
        imp.model.save_pretrained(tmp, safe_serialization=True)
        if imp.tokenizer is not None:
            imp.tokenizer.save_pretrained(tmp)
        imp.vocab.save(tmp)
        (tmp / "provenance.json").write_text(json.dumps(imp.provenance, indent=1))
        if out.exists():
            out.rmdir()
        tmp.replace(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def load_checkpoint(path: str | Path, world: World | None = None, device: str | torch.device = "cpu",
                    name: str | None = None):
    """An :class:`~..hf.HFModel` from our folder or from a foreign checkpoint (format detected)."""
    from ..hf import HFModel

    from .pieces import PieceModel, PieceVocabulary

    path = Path(path)
    if path.is_dir() and detect_format(path) == "ours":
        if PieceVocabulary.is_pieces_folder(path):
            return PieceModel.from_pretrained(path, world, device=device, name=name)
        return HFModel.from_pretrained(path, world, device=device, name=name)
    if not path.exists():
        raise WorldModelError(f"checkpoint {path} does not exist")
    if world is None:
        raise WorldModelError(f"{path} is a foreign checkpoint: importing it needs the task's world")
    imp = import_checkpoint(path, world)
    if isinstance(imp.vocab, PieceVocabulary):
        return PieceModel(imp.model, imp.vocab, name=name or path.name, device=device)
    return HFModel(imp.model, imp.vocab, name=name or path.stem, device=device)
