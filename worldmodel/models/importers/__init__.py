"""Checkpoints from elsewhere: read, check against a world, convert, detect.

Formats (``worldmodel import TASK SOURCE --format F``, or detected by
:func:`detect_format` when ``--checkpoint`` names a foreign file):

``paper-nav``
    The paper's navigation transformers (keyonvafa/world-model-evaluation): a PyTorch
    Lightning ``model.ckpt`` whose ``state_dict`` holds a Hugging Face
    ``GPT2LMHeadModel`` under ``model.``, and a pickled ``SimpleTokenizer``
    (``word_to_id``: ``<pad>`` = 0, words from 1; no BOS) in its hyper-parameters or in
    ``tokenizer.pt`` (``--tokenizer``, or beside the checkpoint). The number of heads
    comes from the hyper-parameters (or ``n_head``).
``li-othello``
    Li et al.'s Othello-GPT (likenneth/othello_world): a minGPT state dict
    (``gpt_synthetic.ckpt``, ``gpt_championship.ckpt``; 8 layers, 8 heads, 512 dims)
    over the ``CharDataset`` vocabulary: id 0 is the padding move ``-100``, ids 1..60
    the 60 playable squares in increasing index ``row * 8 + col`` (no BOS). Heads: 8
    unless ``n_head`` says otherwise (a state dict does not record them).
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
import zipfile
from pathlib import Path

import torch

from ...dfa import World
from ...errors import WorldModelError
from ..vocab import Vocabulary
from .common import Imported, _provenance, match_world, sha256  # noqa: F401  (re-exported)
from .gpt2 import build_gpt2, mingpt_to_gpt2, nanogpt_to_gpt2
from .safe_pickle import PlainHolder, load_plain, load_torch

FORMATS = ("paper-nav", "li-othello", "nanogpt", "hf")
EXPECTED = ("a worldmodel checkpoint folder (vocab.json), a Lightning model.ckpt holding a GPT-2 under 'model.' "
            "(paper-nav), a minGPT state dict (li-othello), a nanoGPT ckpt.pt (nanogpt) or a Hugging Face "
            "model folder (hf)")


# ---------------------------------------------------------------------------
# detection
# ---------------------------------------------------------------------------


def _is_torch_zip(path: Path) -> bool:
    return zipfile.is_zipfile(path)


def detect_format(path: str | Path) -> str:
    """``"ours"`` or one of :data:`FORMATS`, from the files themselves; one-line error otherwise."""
    path = Path(path)
    if path.is_dir():
        if (path / Vocabulary.FILE).exists():
            return "ours"
        if (path / "ckpt.pt").exists():
            return "nanogpt"
        if (path / "config.json").exists():
            return "hf"
        raise WorldModelError(f"cannot tell the format of {path}: expected {EXPECTED}")
    if not path.exists():
        raise WorldModelError(f"checkpoint {path} does not exist")
    data = load_torch(path)
    fmt = _format_of(data)
    if fmt is None:
        raise WorldModelError(f"cannot tell the format of {path}: expected {EXPECTED}")
    return fmt


def _format_of(data) -> str | None:
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("state_dict"), dict) and any(str(k).startswith("model.transformer.") for k in data["state_dict"]):
        return "paper-nav"
    if "model_args" in data and isinstance(data.get("model"), dict):
        return "nanogpt"
    if "tok_emb.weight" in data and any(str(k).startswith("blocks.") for k in data):
        return "li-othello"
    return None


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
    if _format_of(data) != "paper-nav":
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


def li_vocabulary(world: World, where: str) -> tuple[dict[str, int], int]:
    """Li et al.'s ``CharDataset`` ids: 0 = padding (-100), squares ``row*8+col`` ascending from 1."""
    index_of = getattr(world, "square_index", None)
    if index_of is None:
        raise WorldModelError(f"{where}: li-othello checkpoints score an Othello world, not {world.name}")
    squares = sorted(index_of(t) for t in world.tokens)
    by_square = {index_of(t): t for t in world.tokens}
    return {by_square[sq]: i + 1 for i, sq in enumerate(squares)}, len(squares) + 1


def import_li_othello(source: Path, world: World, n_head: int | None = None, data=None) -> Imported:
    where = str(source)
    data = load_torch(source) if data is None else data
    if _format_of(data) != "li-othello":
        raise WorldModelError(f"{where}: not a minGPT state dict (expected tok_emb.weight, pos_emb, blocks.N.…)")
    heads = int(n_head or 8)
    model = build_gpt2(mingpt_to_gpt2(data, where), heads, "gelu", tie=False, pad_id=0, where=where)
    ids, size = li_vocabulary(world, where)
    if model.config.vocab_size != size:
        raise WorldModelError(f"{where}: the model has {model.config.vocab_size} ids, Li et al.'s vocabulary for "
                              f"the {world.name} world has {size} (padding + {size - 1} squares)")
    vocab = Vocabulary.from_ids(ids, size, bos_id=None, pad_id=0, world_name=world.name, names={0: "<pad -100>"})
    return Imported(model, vocab, _provenance("li-othello", source, None, {"n_head": heads}))


def import_nanogpt(source: Path, world: World, tokenizer: Path | None = None, bos: str | None = None,
                   data=None) -> Imported:
    if source.is_dir():
        source = source / "ckpt.pt"
    where = str(source)
    data = load_torch(source) if data is None else data
    if _format_of(data) != "nanogpt":
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


def import_checkpoint(source: str | Path, world: World, fmt: str | None = None, tokenizer: str | Path | None = None,
                      n_head: int | None = None, bos: str | None = None) -> Imported:
    """Read a foreign checkpoint in ``fmt`` (detected when None) for ``world``."""
    source = Path(source)
    tok = Path(tokenizer) if tokenizer else None
    if not source.exists():
        raise WorldModelError(f"checkpoint {source} does not exist")
    data = None
    if source.is_file():  # read once: detection and import share it
        data = load_torch(source)
        found = _format_of(data)
        if fmt is None:
            if found is None:
                raise WorldModelError(f"cannot tell the format of {source}: expected {EXPECTED}")
            fmt = found
    elif fmt is None:
        fmt = detect_format(source)
        if fmt == "ours":
            raise WorldModelError(f"{source} is already a worldmodel checkpoint; nothing to import")
    if fmt not in FORMATS:
        raise WorldModelError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if fmt == "paper-nav":
        return import_paper_nav(source, world, tok, n_head, data=data)
    if fmt == "li-othello":
        return import_li_othello(source, world, n_head, data=data)
    if fmt == "nanogpt":
        return import_nanogpt(source, world, tok, bos, data=data)
    from .pieces import import_hf

    return import_hf(source, world, tok, bos)


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
