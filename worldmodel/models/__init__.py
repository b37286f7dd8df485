"""Sequence models over domain tokens, and their adapters.

* :mod:`.base` — the sampling helpers every adapter shares, and the contract
  (:class:`SequenceModel`, defined in :mod:`worldmodel.api.model`) with
  :class:`Scored`;
* :mod:`.true` — :class:`TrueWorldModel`, the world itself (uniform over valid tokens);
* :mod:`.vocab` — :class:`Vocabulary`, domain tokens <-> model ids (``vocab.json``);
* :mod:`.hf` — :class:`HFModel`, any Hugging Face causal LM with a saved vocabulary;
* :mod:`.lean` — the engine's own forward pass for GPT-2-shaped checkpoints and
  the decoding states :class:`HFModel` runs on (shared prefix keys and values);
* :mod:`.families` — the ``[model] family`` a task trains (GPT-2, LSTM, GRU, Mamba):
  :func:`~.families.build_network`, :func:`~.families.load_network`;
* :mod:`.recurrent` — :class:`~.recurrent.RecurrentLM` (LSTM, GRU) and the decoding
  state of every recurrent network (the recurrent state is the cache);
* :mod:`.mamba` — Mamba through ``transformers``: its configuration, a training-friendly
  forward (:class:`~.mamba.MambaLM`) and its recurrent form (:class:`~.mamba.LeanMamba`);
* :mod:`.features` — a model's network as a trainable feature extractor (the
  inductive-bias probe fine-tunes copies of it);
* :mod:`.importers` — checkpoints from elsewhere (the paper's, Li et al.'s minGPT,
  nanoGPT, Hugging Face models with their own tokenizer): detection, safe reading,
  conversion (``worldmodel import``) and :func:`~.importers.load_checkpoint`.
"""

from .base import Prefix, SampleGroup, Scored, SequenceModel, inverse_cdf
from .hf import HFModel, gpt2_config, quiet_transformers
from .true import TrueWorldModel
from .vocab import Vocabulary

__all__ = [
    "HFModel", "Prefix", "SampleGroup", "Scored", "SequenceModel", "TrueWorldModel", "Vocabulary",
    "gpt2_config", "inverse_cdf", "quiet_transformers",
]
