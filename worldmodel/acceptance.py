"""Acceptance rules: what "the model allows token a after prefix s" means.

The paper writes ``m(a | s) > 0`` and in practice uses a threshold ``ε = 0.01``: a
token is allowed when its probability exceeds ε. Its appendix also tries top-k and
top-p. A rule is one object passed everywhere (sampling, suffix scoring, detours);
it never travels as a bare float.

Every rule maps a tensor of next-token distributions (last dimension = vocabulary)
to a boolean mask of the same shape. No rule ever allows a token of probability 0
(``m(a | s) > 0`` is the paper's definition of "allowed"), and top-k and top-p keep
every token tied with the last one they keep, so the true world model (uniform over
the valid tokens) is allowed exactly its valid tokens under ε and under top-k / top-p
whenever k or p reaches the last valid token, and scores 1.0 under every rule.

What happens when a rule allows *no* token while sampling (an untrained model over a
large vocabulary has no token above ε) is the sampler's business, not the rule's:
see ``keep_top`` in :meth:`worldmodel.models.SequenceModel.sample`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import torch

from .errors import WorldModelError


class AcceptanceRule(ABC):
    """Maps next-token distributions to the set of tokens the model allows."""

    @abstractmethod
    def mask(self, probs: torch.Tensor) -> torch.Tensor:
        """Boolean mask over the last dimension of ``probs``."""

    def mask_np(self, probs: np.ndarray) -> np.ndarray:
        return self.mask(torch.as_tensor(np.asarray(probs))).numpy()

    @abstractmethod
    def spec(self) -> str:
        """A string that :func:`parse_acceptance` turns back into this rule."""

    def __str__(self) -> str:
        return self.spec()


@dataclass(frozen=True)
class Epsilon(AcceptanceRule):
    """Allowed when ``m(a | s) > epsilon`` (the paper's default, ε = 0.01)."""

    epsilon: float = 0.01

    def __post_init__(self):
        if not 0 <= self.epsilon < 1:
            raise WorldModelError(f"epsilon must be in [0, 1), got {self.epsilon}")

    def mask(self, probs):
        return probs > self.epsilon

    def spec(self):
        return f"epsilon:{self.epsilon:g}"


@dataclass(frozen=True)
class TopK(AcceptanceRule):
    """Allowed when among the ``k`` most probable tokens, ties with the ``k``-th included; never at probability 0."""

    k: int

    def __post_init__(self):
        if self.k < 1:
            raise WorldModelError(f"top-k needs k >= 1, got {self.k}")

    def mask(self, probs):
        k = min(self.k, probs.shape[-1])
        kth = torch.topk(probs, k, dim=-1).values[..., -1:]
        return (probs >= kth) & (probs > 0)

    def spec(self):
        return f"top-k:{self.k}"


@dataclass(frozen=True)
class TopP(AcceptanceRule):
    """Allowed when in the smallest set of top tokens whose total probability exceeds ``p``.

    Tokens tied with the least probable member of that set are allowed too, and a
    token of probability 0 never is.
    """

    p: float

    def __post_init__(self):
        if not 0 < self.p <= 1:
            raise WorldModelError(f"top-p needs 0 < p <= 1, got {self.p}")

    def mask(self, probs):
        sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # mass strictly above each token
        keep_sorted = before <= self.p
        keep_sorted[..., 0] = True
        # the least probability in the set (sorted descending: the last kept entry)
        last = keep_sorted.sum(-1, keepdim=True) - 1
        floor = torch.gather(sorted_p, -1, last)
        return (probs >= floor) & (probs > 0)

    def spec(self):
        return f"top-p:{self.p:g}"


def parse_acceptance(spec: str | float | AcceptanceRule | None) -> AcceptanceRule:
    """``"epsilon:0.01"``, ``"top-k:3"``, ``"top-p:0.9"``, a bare float (ε) or a rule."""
    if spec is None:
        return Epsilon()
    if isinstance(spec, AcceptanceRule):
        return spec
    if isinstance(spec, (int, float)):
        return Epsilon(float(spec))
    text = str(spec).strip()
    kind, _, value = text.partition(":")
    try:
        if not value:
            return Epsilon(float(kind))
        if kind in ("epsilon", "eps"):
            return Epsilon(float(value))
        if kind in ("top-k", "topk"):
            return TopK(int(value))
        if kind in ("top-p", "topp"):
            return TopP(float(value))
    except ValueError:
        pass
    raise WorldModelError(f"acceptance rule {text!r} not understood (use epsilon:E, top-k:K or top-p:P)")
