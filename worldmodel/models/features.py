"""A model's network as a trainable feature extractor: what fine-tuning metrics need.

:class:`FeatureNet` wraps the torch network of a model adapter (any family: GPT-2,
LSTM, GRU, Mamba) with its vocabulary: :meth:`~FeatureNet.batch` turns world
sequences into right-padded model ids and says which column holds "the state
after reading ``seq[:j]``" (column ``j`` with a BOS, ``j - 1`` without one), and
:meth:`~FeatureNet.features` runs a network (the original or a fine-tuned copy)
to its last hidden layer, ``[B, T, H]``. The inductive-bias probe
(:mod:`worldmodel.inductive_bias`) fine-tunes copies of :attr:`FeatureNet.network`.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .vocab import Vocabulary


class FeatureNet:
    """The network of a model, its vocabulary and device; features are its last hidden layer."""

    def __init__(self, network: torch.nn.Module, vocab: Vocabulary, device: torch.device | str = "cpu"):
        self.network = network
        self.vocab = vocab
        self.device = torch.device(device)

    @property
    def offset(self) -> int:
        """Column of position ``j`` is ``j - offset`` (1 without BOS: the first token is context)."""
        return 0 if self.vocab.has_bos else 1

    def batch(self, sequences: Sequence[Sequence[str]]) -> torch.Tensor:
        """Right-padded ids ``[B, T]`` (BOS first where the vocabulary has one)."""
        ids = [self.vocab.encode(s) for s in sequences]
        T = max(1, max(len(x) for x in ids))
        out = torch.full((len(ids), T), self.vocab.pad_id, dtype=torch.long)
        for r, x in enumerate(ids):
            out[r, :len(x)] = torch.tensor(x, dtype=torch.long)
        return out.to(self.device)

    def features(self, network: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
        """Last-layer hidden states ``[B, T, H]`` of ``network`` (this one or a copy) on ``ids``."""
        out = network(input_ids=ids, output_hidden_states=True)
        return out.hidden_states[-1].float()

    def width(self) -> int:
        with torch.no_grad():
            return int(self.features(self.network, self.batch([[]] if self.vocab.has_bos else [[self.vocab.tokens[0]]])).shape[-1])
