"""Helpers every model adapter shares: the sampling mask and the inverse-CDF draw.

The contract itself (:class:`~worldmodel.api.SequenceModel`, :class:`~worldmodel.api.Scored`,
:class:`~worldmodel.api.SampleGroup`) is in :mod:`worldmodel.api.model`; it is re-exported here
for the adapters.
"""

from __future__ import annotations

import numpy as np
import torch

from ..api.model import Prefix, SampleGroup, Scored, SequenceModel

__all__ = ["Prefix", "SampleGroup", "Scored", "SequenceModel", "inverse_cdf", "sampling_mask"]


def sampling_mask(probs, allowed, keep_top: bool):
    """The tokens a sampler may draw: ``allowed`` and of positive probability.

    With ``keep_top``, a row where no token is left keeps its most likely token (if
    that has positive probability): the authors' sampler (Hugging Face
    ``generate(epsilon_cutoff=ε)``) always keeps at least one token. Works on torch
    tensors and numpy arrays of shape ``(..., V)``; returns ``(mask, used)`` where
    ``used`` marks the rows that fell back on their top token.
    """
    if isinstance(probs, np.ndarray):
        mask, used = sampling_mask(torch.as_tensor(probs), torch.as_tensor(np.asarray(allowed, dtype=bool)), keep_top)
        return mask.numpy(), used.numpy()
    mask = allowed & (probs > 0)
    if not keep_top:
        return mask, torch.zeros(mask.shape[:-1], dtype=torch.bool, device=mask.device)
    used = ~mask.any(-1) & (probs.amax(-1) > 0)
    if bool(used.any()):
        top = probs.argmax(-1, keepdim=True)
        mask = mask.scatter(-1, top, torch.gather(mask, -1, top) | used[..., None])
    return mask, used


def inverse_cdf(probs: np.ndarray, allowed: np.ndarray, u: float) -> int:
    """Index drawn from ``probs`` restricted to ``allowed`` at uniform ``u``; -1 if none allowed."""
    w = np.where(allowed, probs, 0.0)
    total = w.sum()
    if total <= 0:
        return -1
    cdf = np.cumsum(w) / total
    return int(min(np.searchsorted(cdf, u, side="right"), len(w) - 1))
