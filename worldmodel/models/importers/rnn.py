"""Foreign recurrent checkpoints (LSTM, GRU) as plain torch state dicts with their configuration.

The ``torch-rnn`` format (``worldmodel import TASK FILE --format torch-rnn
--tokenizer VOCAB``) reads a state dict of an embedding → ``nn.LSTM`` / ``nn.GRU`` →
linear-head language model, in any of three layouts:

=====================================  =============================  =========================
layout (where it comes from)           embedding / recurrence / head  configuration
=====================================  =============================  =========================
keyonvafa/inductive-bias-probes        ``embedding``, ``core``,        ``model_args`` in the same
(``ckpt.pt``: ``model``, ``model_args``) ``output_head``               file (``model_type``, ``n_layer``, ``n_embd``)
pytorch/examples word_language_model   ``encoder``, ``rnn``,           ``config.json`` beside it
(``model.state_dict()`` saved alone)   ``decoder``
this project (:class:`~..recurrent.RecurrentLM`)  ``embed``, ``rnn``, ``head``  ``config.json`` beside it
=====================================  =============================  =========================

The file is read with ``torch.load(weights_only=True)`` (paths pickled inside
``model_args`` come back as text; anything else that is not plain data is refused).
The shapes come from the tensors themselves (the cell from the gate count: four
blocks for an LSTM, three for a GRU; a plain ``nn.RNN`` is refused); the
configuration, where there is one, must agree with them (``model_type``, the number
of layers, the widths). ``config.json`` is plain JSON: ``model_type`` (lstm or gru)
and optionally ``num_layers``/``n_layer``, ``hidden_size``, ``embedding_size``/``n_embd``.

The vocabulary is a JSON file (``--tokenizer``): ``{"stoi": {token: id}}`` or a plain
``{token: id}`` map, optionally with ``"bos"`` naming the BOS entry (or ``--bos``).
Without BOS the model reads the first token as context, as the authors' do.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ...dfa import World
from ...errors import WorldModelError
from ..recurrent import RNN_TYPES, RecurrentConfig, RecurrentLM
from ..vocab import Vocabulary
from .common import Imported, _provenance, match_with_bos, with_missing
from .safe_pickle import load_plain, load_torch

#: (embedding, recurrence, head) prefixes of each layout
LAYOUTS = {"inductive-bias-probes": ("embedding", "core", "output_head"),
           "word_language_model": ("encoder", "rnn", "decoder"),
           "worldmodel": ("embed", "rnn", "head")}


def rnn_layout(sd) -> str | None:
    """The layout of a state dict (see :data:`LAYOUTS`), or None."""
    if not isinstance(sd, dict):
        return None
    for name, (emb, rnn, head) in LAYOUTS.items():
        if f"{emb}.weight" in sd and f"{rnn}.weight_ih_l0" in sd and f"{head}.weight" in sd:
            return name
    return None


def state_dict_of(data) -> tuple[dict, dict | None]:
    """(state dict, ``model_args`` or None) of a loaded file: an inductive-bias-probes dict or a bare state dict."""
    if isinstance(data, dict) and isinstance(data.get("model"), dict) and rnn_layout(
            {k.removeprefix("_orig_mod."): v for k, v in data["model"].items()}):
        args = data.get("model_args")
        return {k.removeprefix("_orig_mod."): v for k, v in data["model"].items()}, args if isinstance(args, dict) else None
    if rnn_layout(data):
        return data, None
    raise WorldModelError("not a recurrent state dict (expected embedding/core/output_head, encoder/rnn/decoder "
                          "or embed/rnn/head weights with an nn.LSTM or nn.GRU's weight_ih_l0 …)")


def _read_vocab(path: Path | None, where: str) -> tuple[dict[str, int], str | None]:
    if path is None:
        raise WorldModelError(f"{where}: a torch-rnn checkpoint needs its vocabulary: give --tokenizer FILE "
                              "(JSON {\"stoi\": {token: id}} or {token: id})")
    if path.suffix == ".pkl":
        data = load_plain(path)
    else:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise WorldModelError(f"{path}: not a readable JSON vocabulary ({exc})") from None
    if not isinstance(data, dict):
        raise WorldModelError(f"{path}: expected a JSON object")
    stoi = data.get("stoi", data)
    bos = data.get("bos") if isinstance(data.get("bos"), str) else None
    try:
        return {str(k): int(v) for k, v in stoi.items() if k not in ("bos",)}, bos
    except (TypeError, ValueError, AttributeError):
        raise WorldModelError(f"{path}: vocabulary ids must be integers") from None


def import_torch_rnn(source: Path, world: World, tokenizer: Path | None = None, bos: str | None = None,
                     data=None, missing: str = "error") -> Imported:
    """A recurrent LM state dict (and its configuration) for ``world``."""
    where = str(source)
    data = load_torch(source) if data is None else data
    try:
        sd, args = state_dict_of(data)
    except WorldModelError as exc:
        raise WorldModelError(f"{where}: {exc}") from None
    layout = rnn_layout(sd)
    emb, rnn, head = LAYOUTS[layout]
    cfg_file = source.with_name("config.json")
    if args is None and cfg_file.is_file():
        try:
            args = json.loads(cfg_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise WorldModelError(f"{cfg_file}: not readable JSON ({exc})") from None
    V, E = (int(x) for x in sd[f"{emb}.weight"].shape)
    H = int(sd[f"{rnn}.weight_hh_l0"].shape[1])
    gates = int(sd[f"{rnn}.weight_ih_l0"].shape[0]) // H
    kind = {4: "lstm", 3: "gru"}.get(gates)
    if kind is None:
        raise WorldModelError(f"{where}: a recurrence with {gates} gate block(s) is neither an LSTM nor a GRU "
                              "(a plain nn.RNN is not supported)")
    layers = 1 + max(int(k.rsplit("_l", 1)[1]) for k in sd if k.startswith(f"{rnn}.weight_ih_l"))
    if any(k.endswith("_reverse") for k in sd):
        raise WorldModelError(f"{where}: a bidirectional recurrence is not a causal language model")
    if args is not None:
        want = {"model_type": args.get("model_type"), "layers": args.get("num_layers", args.get("n_layer")),
                "hidden": args.get("hidden_size"), "embd": args.get("embedding_size", args.get("n_embd"))}
        have = {"model_type": kind, "layers": layers, "hidden": H, "embd": E}
        bad = [f"{k} {want[k]!r} (the weights say {have[k]!r})" for k in want
               if want[k] is not None and want[k] != have[k]]
        if bad:
            raise WorldModelError(f"{where}: the configuration disagrees with the weights: {', '.join(bad)}")
    words, file_bos = _read_vocab(tokenizer, where)
    bos = bos or file_bos
    ids, notes, bos_id = match_with_bos(words, world, where, bos, tokenizer, missing)
    head_w = sd[f"{head}.weight"]
    if tuple(head_w.shape) != (V, H):
        raise WorldModelError(f"{where}: the head maps {tuple(head_w.shape)}, expected ({V}, {H}): "
                              "input and output vocabularies must be the same ids")
    cfg = RecurrentConfig(model_type=kind, vocab_size=V, embedding_size=E, hidden_size=H, num_layers=layers,
                          bos_token_id=bos_id, pad_token_id=None)
    model = RecurrentLM(cfg)
    ours = {"embed.weight": sd[f"{emb}.weight"], "head.weight": head_w,
            "head.bias": sd.get(f"{head}.bias", torch.zeros(V))}
    ours.update({f"rnn.{k[len(rnn) + 1:]}": v for k, v in sd.items() if k.startswith(f"{rnn}.")})
    model.load_weights({k: torch.as_tensor(v) for k, v in ours.items()}, where)
    vocab = Vocabulary.from_ids(ids, V, bos_id=bos_id, world_name=world.name,
                                names={} if bos_id is None else {bos_id: bos})
    prov = _provenance("torch-rnn", source, tokenizer, {"layout": layout, "cell": kind, "bos": bos})
    if cfg_file.is_file() and layout != "inductive-bias-probes":
        prov["config"] = str(cfg_file.resolve())
    return with_missing(Imported(model.eval(), vocab, prov, notes), world, missing)


def is_torch_rnn(source: Path, data) -> bool:
    """A file holding an LSTM/GRU language model's state dict (bare, or inductive-bias-probes' ``model``)."""
    if data is None:
        return False
    try:
        state_dict_of(data)
    except WorldModelError:
        return False
    return True


def load_torch_rnn(source: Path, world: World, options, data=None) -> Imported:
    """Format ``torch-rnn`` (the registry's loader)."""
    if source.is_dir():
        raise WorldModelError(f"{source}: a torch-rnn checkpoint is a file (a state dict)")
    return import_torch_rnn(source, world, options.tokenizer, options.bos, data=data, missing=options.missing)


__all__ = ["RNN_TYPES", "import_torch_rnn", "is_torch_rnn", "load_torch_rnn", "rnn_layout", "state_dict_of"]
