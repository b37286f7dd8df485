"""Model families: build a network from a task's ``[model]``, load one from a folder.

``[model] family`` picks the architecture trained from scratch (default ``"gpt2"``):

=========  =====================================================  ==============================
family     network                                                 ``[model]`` keys
=========  =====================================================  ==============================
``gpt2``   ``transformers.GPT2LMHeadModel`` (:func:`gpt2_config`)  n_layer, n_embd, n_head, n_positions, dropout
``lstm``   :class:`~.recurrent.RecurrentLM` over ``nn.LSTM``         n_layer, n_embd, n_hidden, dropout
``gru``    :class:`~.recurrent.RecurrentLM` over ``nn.GRU``          n_layer, n_embd, n_hidden, dropout
``mamba``  ``transformers.MambaForCausalLM`` (:func:`~.mamba.mamba_config`)  n_layer, n_embd, d_state, d_conv, expand
=========  =====================================================  ==============================

The keys each family takes are :data:`worldmodel.tasks.MODEL_FAMILIES` (checked when
a task is loaded: a key of another family is an error). Every family's network is
called the same way (``model(input_ids=…).logits``) and saves with
``save_pretrained``, so the training loop needs only :func:`build_network`, and
every command loads a folder through :func:`load_network`. The metric engine
(:class:`~.hf.HFModel`) decodes GPT-2 on its lean forward and the recurrent
families on their recurrent state (:mod:`.recurrent`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import WorldModelError
from .vocab import Vocabulary

FAMILIES = ("gpt2", "lstm", "gru", "mamba")


def quiet_transformers() -> None:
    """Silence transformers' per-call progress bars and info chatter (our own bars remain)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def gpt2_config(vocab: Vocabulary, n_layer=2, n_embd=64, n_head=4, n_positions=128, dropout=0.0):
    """A GPT-2 configuration for a vocabulary (plain values, nanoGPT style).

    The activation is PyTorch's fused tanh-approximate GELU: the same function as
    GPT-2's original ``gelu_new``, computed in one kernel instead of eight
    elementwise operations (it dominated CPU time for small models). The keyword
    arguments are the ``[model]`` keys of a task file (checked when it is loaded); any
    other key is a ``TypeError``, never silently dropped.
    """
    from transformers import GPT2Config

    return GPT2Config(
        vocab_size=len(vocab), n_positions=int(n_positions), n_embd=int(n_embd), n_layer=int(n_layer),
        n_head=int(n_head), resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout,
        bos_token_id=vocab.bos_id, eos_token_id=vocab.bos_id, pad_token_id=vocab.pad_id,
        activation_function="gelu_pytorch_tanh",
    )


def family_of_config(model_cfg: dict) -> str:
    """The family a ``[model]`` table names (``"gpt2"`` when it names none)."""
    fam = model_cfg.get("family", "gpt2")
    if fam not in FAMILIES:
        raise WorldModelError(f"[model] family must be one of {', '.join(FAMILIES)}, not {fam!r}")
    return fam


def _keys(model_cfg: dict) -> dict:
    return {k: v for k, v in model_cfg.items() if k != "family"}


def build_network(vocab: Vocabulary, model_cfg: dict):
    """A randomly initialised network of ``model_cfg``'s family over ``vocab`` (seed the caller's)."""
    fam = family_of_config(model_cfg)
    cfg = _keys(model_cfg)
    quiet_transformers()
    if fam == "gpt2":
        from transformers import GPT2LMHeadModel

        return GPT2LMHeadModel(gpt2_config(vocab, **cfg))
    if fam in ("lstm", "gru"):
        from .recurrent import RecurrentConfig, RecurrentLM

        unknown = set(cfg) - {"n_layer", "n_embd", "n_hidden", "dropout"}
        if unknown:
            raise TypeError(f"[model] keys {sorted(unknown)} do not apply to the {fam} family")
        n_embd = int(cfg.get("n_embd", 64))
        return RecurrentLM(RecurrentConfig(
            model_type=fam, vocab_size=len(vocab), embedding_size=n_embd,
            hidden_size=int(cfg.get("n_hidden", n_embd)), num_layers=int(cfg.get("n_layer", 1)),
            dropout=float(cfg.get("dropout", 0.0)), bos_token_id=vocab.bos_id, pad_token_id=vocab.pad_id))
    from .mamba import mamba_lm_class, mamba_config

    return mamba_lm_class()(mamba_config(vocab, **cfg))


def context_limit(network) -> int | None:
    """Positions the network can read (GPT-2's ``n_positions``); ``None`` when unbounded (recurrent)."""
    cfg = getattr(network, "config", None)
    n = getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None)
    return int(n) if n else None


def network_family(network) -> str:
    """``"gpt2"``, ``"lstm"``, ``"gru"``, ``"mamba"``, or the model type of any other network."""
    from .recurrent import RecurrentLM

    if isinstance(network, RecurrentLM):
        return network.config.model_type
    mt = getattr(getattr(network, "config", None), "model_type", None)
    return str(mt) if mt else type(network).__name__


def load_network(folder: str | Path):
    """The network saved in ``folder`` (local files only): a recurrent one (``config.json`` with
    ``model_type`` lstm or gru) or any Hugging Face causal LM. One-line error when unreadable
    (:func:`~.loading.load_pretrained`: a weights file that asks to run code is refused)."""
    from .loading import load_pretrained
    from .recurrent import RecurrentConfig, RecurrentLM

    folder = Path(folder)
    if RecurrentConfig.is_recurrent_folder(folder):
        return RecurrentLM.from_pretrained(folder)
    from transformers import AutoModelForCausalLM

    quiet_transformers()
    if _model_type(folder) == "mamba":  # the same weights, the training-friendly forward (mamba.MambaLM)
        from .mamba import mamba_lm_class

        return load_pretrained(mamba_lm_class(), folder, local_files_only=True)
    return load_pretrained(AutoModelForCausalLM, folder, local_files_only=True)


def _model_type(folder: Path) -> str | None:
    try:
        return json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return None


def parameter_count(vocab_size: int, model_cfg: dict) -> int:
    """Parameters a ``[model]`` table gives for ``vocab_size`` model ids, without building the network."""
    from .mamba import mamba_param_count
    from .recurrent import rnn_param_count

    fam = family_of_config(model_cfg)
    c = _keys(model_cfg)
    L, E = int(c.get("n_layer", 2 if fam in ("gpt2", "mamba") else 1)), int(c.get("n_embd", 64))
    if fam == "gpt2":
        P = int(c.get("n_positions", 128))
        return vocab_size * E + P * E + L * (12 * E * E + 13 * E) + 2 * E
    if fam in ("lstm", "gru"):
        return rnn_param_count(fam, vocab_size, E, int(c.get("n_hidden", E)), L)
    return mamba_param_count(vocab_size, L, E, int(c.get("d_state", 16)), int(c.get("d_conv", 4)), int(c.get("expand", 2)))
