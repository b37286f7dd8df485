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
    with ``meta.pkl`` (``stoi``/``itos``) beside it or given as ``--tokenizer``. When every
    world token is one entry of ``stoi``: one id per token, no BOS unless ``bos`` names an
    entry. Character-level models (a world token spelled by several entries, as in
    Karvonen's chess models) need the layout of their training text, a
    :class:`~.template.Template` (``template``; else the world's own
    :attr:`~worldmodel.api.World.text_layout`, ``pgn`` for chess in SAN): each token is
    its entries plus the template's terminator, scored by the chain rule in
    :mod:`.pieces`, with the template's start, separators and move numbers as context.
    ``floor`` prunes the piece trie (default: 0 up to 2,000 world tokens, else 0.01).
``hf``
    A Hugging Face causal LM folder with its own tokenizer (local files only). A world
    token may be several pieces; see :mod:`.pieces`. A recurrent network in that layout
    (a ``MambaForCausalLM``, or an LSTM / GRU whose ``config.json`` has ``model_type``
    lstm or gru, :class:`~..recurrent.RecurrentConfig`) needs every world token to be
    one piece, and then decodes on its recurrent state.
``torch-rnn``
    A plain torch state dict of an LSTM or GRU language model with its configuration:
    keyonvafa/inductive-bias-probes' ``ckpt.pt`` (``model`` + ``model_args``), or a bare
    state dict (pytorch/examples word_language_model's names, or ours) with
    ``config.json`` beside it; the vocabulary from ``--tokenizer`` (JSON). See :mod:`.rnn`.

Every import returns an :class:`Imported` (a model, its :class:`~..vocab.Vocabulary`,
provenance, notes). World tokens the model cannot emit stop the import
(``missing="error"``, the default) or are recorded and scored at probability 0
(``missing="zero"``; :mod:`..missing`), in the notes and in ``provenance.json``.
:func:`write_imported` saves it as a standard checkpoint folder
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
from .common import (Imported, ImportOptions, _provenance, check_missing, match_with_bos, match_world, sha256,  # noqa: F401
                     with_missing)
from .gpt2 import build_gpt2, nanogpt_to_gpt2
from .pieces import PieceVocabulary
from .template import Template
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
        if (path / Vocabulary.FILE).exists() or (path / Vocabulary.FILE).is_symlink():
            return "ours"
        ours = [f for f in ("training.json", "provenance.json") if (path / f).exists()]
        if ours:
            raise WorldModelError(f"checkpoint {path} has {ours[0]} (a worldmodel checkpoint) but no "
                                  f"{Vocabulary.FILE}: the folder is incomplete")
        fmt = _format_of(path, None)
        if fmt is None and (path / "config.json").exists():
            raise WorldModelError(f"checkpoint {path} has a config.json but neither our {Vocabulary.FILE} nor a "
                                  "tokenizer of its own (tokenizer.json, vocab.txt, ...): it is not a worldmodel "
                                  "checkpoint, and as a Hugging Face folder it lacks its tokenizer")
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
                     data=None, missing: str = "error") -> Imported:
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
    ids, notes = match_world(words, world, where, ignore=("<pad>",), missing=missing)
    vocab = Vocabulary.from_ids(ids, model.config.vocab_size, bos_id=None, pad_id=pad, world_name=world.name,
                                names={pad: "<pad>"})
    prov = _provenance("paper-nav", source, tokenizer, {"n_head": int(heads)})
    return with_missing(Imported(model, vocab, prov, notes), world, missing)


#: worlds with more tokens than this get a pruning floor of 0.01 by default (character-level import)
FLOOR_ABOVE_TOKENS = 2000
DEFAULT_FLOOR = 0.01


def spell(token: str, stoi: dict[str, int]) -> list[int] | None:
    """A token's ids: its own ``stoi`` entry, else one entry per character; None if a character is missing."""
    if token in stoi:
        return [stoi[token]]
    try:
        return [stoi[c] for c in token]
    except KeyError:
        return None


def import_nanogpt(source: Path, world: World, tokenizer: Path | None = None, bos: str | None = None,
                   data=None, template: str | None = None, missing: str = "error",
                   floor: float | None = None) -> Imported:
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
    whole = all(t in stoi for t in world.tokens)
    layout = template or (None if whole else getattr(world, "text_layout", None))
    if layout is None:
        if not whole and missing == "error" and any(spell(t, stoi) for t in world.tokens if t not in stoi):
            raise WorldModelError(f"{where}: world tokens are spelled by several stoi entries (a character-level "
                                  "model): give --template, the layout of its training text (e.g. pgn, or "
                                  "';1.{move} {move} 2.{move}')")
        return _nanogpt_whole(model, stoi, source, tokenizer, world, where, bos, missing)
    if bos is not None:
        raise WorldModelError("--bos and --template exclude each other: the template's start is what the model "
                              "reads before the first token")
    tpl = Template.parse(layout)
    chars = set(tpl.start) | {c for b in tpl.between for c in b.replace("{n}", "")}
    if any("{n}" in b for b in tpl.between):
        chars |= set("0123456789")
    lacking = sorted(c for c in chars if c not in stoi)
    if lacking:
        raise WorldModelError(f"{tokenizer}: the template {tpl.spec()!r} writes {lacking}, which stoi lacks")
    if any(tpl.terminator in t for t in world.tokens):
        raise WorldModelError(f"the template's terminator {tpl.terminator!r} occurs in world tokens: it cannot end one")
    spelled = {t: spell(t, stoi) for t in world.tokens}
    notes = check_missing([t for t, p in spelled.items() if p is None], world, where, missing)
    pieces = {t: p + [stoi[tpl.terminator]] for t, p in spelled.items() if p is not None}
    if floor is None:
        floor = DEFAULT_FLOOR if len(world.tokens) > FLOOR_ABOVE_TOKENS else 0.0
    vocab = PieceVocabulary(pieces, model.config.vocab_size, None, None, world_name=world.name, template=tpl,
                            text_ids={c: stoi[c] for c in chars}, floor=floor)
    longest = max(len(p) for p in pieces.values())
    notes.append(f"character-level: world tokens are spelled by up to {longest} stoi entries (terminator "
                 f"{tpl.terminator!r} included), laid out as {tpl.spec()!r}; probabilities by the chain rule"
                 + (f", pruned below {floor:g}" if floor else ""))
    prov = _provenance("nanogpt", source, tokenizer, {"template": tpl.spec(), "floor": floor})
    return with_missing(Imported(model, vocab, prov, notes), world, missing)


def _nanogpt_whole(model, stoi, source, tokenizer, world, where, bos, missing) -> Imported:
    """Every (present) world token is one stoi entry: a plain vocabulary."""
    ids, notes, bos_id = match_with_bos(stoi, world, where, bos, tokenizer, missing)
    vocab = Vocabulary.from_ids(ids, model.config.vocab_size, bos_id=bos_id, world_name=world.name,
                                names={} if bos_id is None else {bos_id: bos})
    return with_missing(Imported(model, vocab, _provenance("nanogpt", source, tokenizer, {"bos": bos}), notes),
                         world, missing)


def load_paper_nav(source: Path, world: World, options: ImportOptions, data=None) -> Imported:
    """Format ``paper-nav`` (the registry's loader)."""
    return import_paper_nav(source, world, options.tokenizer, options.n_head, data=data, missing=options.missing)


def load_nanogpt(source: Path, world: World, options: ImportOptions, data=None) -> Imported:
    """Format ``nanogpt`` (the registry's loader)."""
    return import_nanogpt(source, world, options.tokenizer, options.bos, data=data, template=options.template,
                          missing=options.missing, floor=options.floor)


def import_checkpoint(source: str | Path, world: World, fmt: str | None = None, tokenizer: str | Path | None = None,
                      n_head: int | None = None, bos: str | None = None, template: str | None = None,
                      missing: str = "error", floor: float | None = None) -> Imported:
    """Read a foreign checkpoint in ``fmt`` (a registered format; detected when None) for ``world``.

    ``template`` and ``floor`` apply to character-level nanoGPT models (and ``floor`` to
    ``hf``); ``missing`` (``"error"`` or ``"zero"``) to the formats that name tokens.
    """
    source = Path(source)
    check_missing([], world, str(source), missing)  # checks the policy's name
    if template is not None and fmt not in (None, "nanogpt"):
        raise WorldModelError("--template applies to nanogpt checkpoints only")
    options = ImportOptions(Path(tokenizer) if tokenizer else None, n_head, bos, template, missing, floor)
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
    from ...safety import writing

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise WorldModelError(f"{out} exists and is not empty")
    with writing(out, "--out"):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".import-", dir=out.parent))
    try:
        with writing(out, "--out"):
            imp.model.save_pretrained(tmp, safe_serialization=True)
            if imp.tokenizer is not None:
                imp.tokenizer.save_pretrained(tmp)
            imp.vocab.save(tmp)
            (tmp / "provenance.json").write_text(json.dumps(imp.provenance, indent=1))
        with writing(out, "--out"):
            if out.exists():
                out.rmdir()
            tmp.replace(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def load_checkpoint(path: str | Path, world: World | None = None, device: str | torch.device = "cpu",
                    name: str | None = None, missing: str = "error"):
    """A model from our folder or from a foreign checkpoint (format detected).

    An :class:`~..hf.HFModel` (one id per world token) or a :class:`~.pieces.PieceModel`;
    with ``missing="zero"`` a vocabulary lacking world tokens is accepted and the model
    wrapped in :class:`~..missing.MissingTokens` (those tokens at probability 0).
    """
    from ..hf import HFModel
    from ..missing import MissingTokens

    from .pieces import PieceModel

    check_missing([], world, str(path), missing)
    path = Path(path)
    if path.is_dir() and detect_format(path) == "ours":
        if PieceVocabulary.is_pieces_folder(path):
            model = PieceModel.from_pretrained(path, world, device=device, name=name, missing=missing)
        else:
            model = HFModel.from_pretrained(path, world, device=device, name=name, missing=missing)
    else:
        if not path.exists():
            raise WorldModelError(f"checkpoint {path} does not exist")
        if world is None:
            raise WorldModelError(f"{path} is a foreign checkpoint: importing it needs the task's world")
        imp = import_checkpoint(path, world, missing=missing)
        if isinstance(imp.vocab, PieceVocabulary):
            model = PieceModel(imp.model, imp.vocab, name=name or path.name, device=device)
        else:
            model = HFModel(imp.model, imp.vocab, name=name or path.stem, device=device)
    if world is not None and len(model.tokens) < len(world.tokens):
        return MissingTokens(model, world.tokens)
    return model
