"""The true world model: the world itself as a :class:`SequenceModel`."""

from __future__ import annotations

import numpy as np

from ..dfa import REJECT, World, run
from .base import SampleGroup, Scored, SequenceModel, inverse_cdf, sampling_mask


class TrueWorldModel(SequenceModel):
    """The world as a model: uniform over the valid tokens of the current state.

    It satisfies exact next-token prediction (Def. 2.2) by construction, so every
    metric must score it 1.0; that is the engine's own sanity check. After an
    invalid prefix (or at a state with no valid token) it puts no mass anywhere.
    """

    name = "true"

    def __init__(self, world: World):
        self.world = world
        self.tokens = tuple(world.tokens)

    def _dist(self, state) -> np.ndarray:
        p = np.zeros(len(self.tokens))
        if state is REJECT:
            return p
        valid = self.world.valid_tokens(state)
        if valid:
            idx = self.token_index()
            p[[idx[t] for t in valid]] = 1.0 / len(valid)
        return p

    def next_token_probs(self, prefixes):
        return np.stack([self._dist(run(self.world, p)) for p in prefixes]) if prefixes else np.zeros((0, len(self.tokens)))

    def score(self, prefixes, suffixes, acceptance):
        idx = self.token_index()
        out = []
        for prefix, group in zip(prefixes, suffixes):
            base = run(self.world, prefix)
            row = []
            for suffix in group:
                dists = []
                s = base
                for t in suffix:
                    dists.append(self._dist(s))
                    s = self.world.step(s, t) if s is not REJECT else REJECT
                if not dists:
                    row.append(Scored(np.zeros(0), np.zeros(0, dtype=bool)))
                    continue
                d = np.stack(dists)
                cols = np.array([idx.get(t, -1) for t in suffix])
                probs = np.where(cols >= 0, d[np.arange(len(suffix)), np.maximum(cols, 0)], 0.0)
                acc = acceptance.mask_np(d)[np.arange(len(suffix)), np.maximum(cols, 0)] & (cols >= 0)
                row.append(Scored(probs, acc))
            out.append(row)
        return out

    def sample(self, prefixes, uniforms, acceptance, stop_tokens=frozenset(), keep_top=True):
        out = []
        for prefix, u in zip(prefixes, uniforms):
            base = run(self.world, prefix)
            group = SampleGroup()
            for row in np.atleast_2d(u):
                s, toks, kept = base, [], False
                for uj in row:
                    d = self._dist(s)
                    allowed, used = sampling_mask(d, acceptance.mask_np(d), keep_top)
                    kept |= bool(used)
                    j = inverse_cdf(d, allowed, float(uj))
                    if j < 0:
                        break
                    t = self.tokens[j]
                    toks.append(t)
                    if t in stop_tokens:
                        break
                    s = self.world.step(s, t)
                group.append(tuple(toks))
                group.kept_top += kept
            out.append(group)
        return out
