"""The engine's scores against full forward passes, one sequence at a time (the reference every family meets)."""

from __future__ import annotations

import numpy as np
import torch

from worldmodel.acceptance import Epsilon


def naive_probs(model, prefix, suffix) -> np.ndarray:
    """``m(suffix[j] | prefix + suffix[:j])`` from one full forward pass over ``prefix + suffix``."""
    ids = torch.tensor([model.vocab.encode(list(prefix) + list(suffix))])
    with torch.no_grad():
        p = torch.softmax(model.model(input_ids=ids).logits[0].double(), -1)
    return np.array([float(p[len(prefix) + j, model.vocab.stoi[t]]) for j, t in enumerate(suffix)])


def worst_scoring_gap(model, world, epsilon: float = 0.2, seed: int = 0) -> float:
    """The largest gap between ``model.score`` and :func:`naive_probs` over random prefixes and suffix groups.

    Prefixes of 0–12 tokens, 1–5 suffixes of 1–8 tokens each; every acceptance flag must also
    match the reference's (up to a probability within 1e-5 of ``epsilon``).
    """
    rng = np.random.default_rng(seed)
    toks = world.tokens
    prefixes = [tuple(rng.choice(toks, size=n)) for n in (0, 1, 5, 12, 3)]
    suffixes = [[tuple(rng.choice(toks, size=int(rng.integers(1, 9)))) for _ in range(int(rng.integers(1, 6)))]
                for _ in prefixes]
    worst = 0.0
    for p, group, res in zip(prefixes, suffixes, model.score(prefixes, suffixes, Epsilon(epsilon))):
        for s, sc in zip(group, res):
            ref = naive_probs(model, p, s)
            worst = max(worst, float(np.abs(ref - sc.probs).max()))
            assert sc.accepted.tolist() == (ref > epsilon).tolist() or np.abs(ref - epsilon).min() < 1e-5
    return worst
