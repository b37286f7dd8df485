"""A model whose vocabulary lacks some world tokens, scored with those tokens at probability 0.

A checkpoint trained elsewhere may lack world tokens that never occur in its training
data (a navigation tokenizer built from one variant of the graph, a character set
without ``#``). By default such a checkpoint is refused (``--missing-tokens error``);
with ``--missing-tokens zero`` it is wrapped in :class:`MissingTokens`, which offers the
world's whole alphabet with the missing tokens at probability 0 everywhere:

* distributions (``next_token_probs``, ``prefix_probs``): the missing columns are 0, the
  others are the inner model's, unchanged (its mass on them is not renormalised);
* scoring a suffix: up to its first missing token the inner model's scores; the missing
  token has probability 0 and is refused, and so is every later position (never
  reached: a suffix is allowed only when all its tokens are), so every verdict
  (allowed, first refusal) is the one a model that gives the token probability 0
  would get;
* sampling: the inner model's samples (a token of probability 0 is never drawn).

What the wrapper cannot do is *read* a missing token: a prefix that holds one has no
input ids. The metrics therefore skip compression and distinction trials whose
prefixes hold a missing token (recorded as skipped, with the reason), score
next-token positions only up to the first missing token of a held-out sequence, and
the probe reads positions only up to there; detours never force a missing token.
:func:`readable_length` is the rule they share. Every result names the missing tokens
(``missing_tokens`` in the run header and the summary).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..dfa import Token
from ..errors import WorldModelError
from .base import SampleGroup, Scored, SequenceModel


def readable_length(model, seq: Sequence[Token]) -> int:
    """How many leading tokens of ``seq`` the model can read: up to its first missing token (all of
    it for a model that lacks none)."""
    missing = model.missing_tokens
    if not missing:
        return len(seq)
    for i, t in enumerate(seq):
        if t in missing:
            return i
    return len(seq)


class MissingTokens(SequenceModel):
    """``inner`` (over a subset of ``world_tokens``) as a model over all of them; the rest at probability 0."""

    def __init__(self, inner: SequenceModel, world_tokens: Sequence[Token]):
        self.inner = inner
        self.tokens = tuple(world_tokens)
        have = set(inner.tokens)
        unknown = sorted(have - set(self.tokens))
        if unknown:
            raise WorldModelError(f"the model's tokens {unknown[:5]} are not world tokens")
        self.missing_tokens = frozenset(t for t in self.tokens if t not in have)
        index = self.token_index()
        self._cols = np.array([index[t] for t in inner.tokens], dtype=np.int64)
        self.name = getattr(inner, "name", "model")

    def __getattr__(self, name):  # context, wave size, device, max_positions ... of the inner model
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _check(self, prefixes) -> None:
        for p in prefixes:
            n = readable_length(self, p)
            if n < len(p):
                raise WorldModelError(f"prefix holds {p[n]!r}, a world token the {self.name} model lacks "
                                      "(it can score it at probability 0 but not read it)")

    def _full(self, probs: np.ndarray) -> np.ndarray:
        out = np.zeros((probs.shape[0], len(self.tokens)), dtype=probs.dtype)
        out[:, self._cols] = probs
        return out

    def next_token_probs(self, prefixes):
        self._check(prefixes)
        return self._full(np.asarray(self.inner.next_token_probs(prefixes)))

    def prefix_probs(self, sequences):
        """Rows ``j`` up to the first missing token of each sequence; NaN rows after it (unreadable)."""
        cut = [list(s[:readable_length(self, s)]) for s in sequences]
        out = []
        for s, c, rows in zip(sequences, cut, self.inner.prefix_probs(cut)):
            full = self._full(np.asarray(rows))
            if len(s) > len(c):
                full = np.concatenate([full, np.full((len(s) - len(c), len(self.tokens)), np.nan)])
            out.append(full)
        return out

    def score(self, prefixes, suffixes, acceptance):
        self._check(prefixes)
        cut = [[list(x[:readable_length(self, x)]) for x in group] for group in suffixes]
        scored = self.inner.score(prefixes, cut, acceptance)
        out = []
        for group, cgroup, sgroup in zip(suffixes, cut, scored):
            row = []
            for x, c, sc in zip(group, cgroup, sgroup):
                pad = len(x) - len(c)
                row.append(Scored(np.concatenate([sc.probs, np.zeros(pad)]),
                                  np.concatenate([sc.accepted, np.zeros(pad, dtype=bool)])))
            out.append(row)
        return out

    def sample(self, prefixes, uniforms, acceptance, stop_tokens=frozenset(), keep_top=True):
        self._check(prefixes)
        return [SampleGroup(g, g.kept_top) for g in
                self.inner.sample(prefixes, uniforms, acceptance, stop_tokens, keep_top=keep_top)]

    def sample_contrast(self, prefixes, check_prefixes, uniforms, acceptance, stop_tokens=frozenset(),
                        halt_on_reject=False, keep_top=True):
        self._check(prefixes)
        self._check(check_prefixes)
        return self.inner.sample_contrast(prefixes, check_prefixes, uniforms, acceptance, stop_tokens,
                                          halt_on_reject=halt_on_reject, keep_top=keep_top)

    @property
    def has_hidden_states(self) -> bool:
        return self.inner.has_hidden_states

    def hidden_states(self, sequences):
        """The inner model's rows up to the first missing token of each sequence, NaN rows after it."""
        cut = [list(s[:readable_length(self, s)]) for s in sequences]
        out = []
        for s, c, h in zip(sequences, cut, self.inner.hidden_states(cut)):
            if len(s) > len(c):
                h = np.concatenate([h, np.full((len(s) - len(c), h.shape[1]), np.nan, dtype=h.dtype)])
            out.append(h)
        return out
