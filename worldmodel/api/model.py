"""The model contract: :class:`SequenceModel`, the interface every metric talks to.

Its batched primitives are all the paper's tests need:

* :meth:`~SequenceModel.next_token_probs` — ``m(· | s)`` for many prefixes;
* :meth:`~SequenceModel.score` — for each of several prefixes and each of many
  suffixes after it, the probability of every suffix token and whether the
  acceptance rule allows it (``x ∈ L^m(s)`` is "every token allowed");
* :meth:`~SequenceModel.sample` — continuations drawn token by token from the model
  restricted to allowed tokens (the paper samples only tokens above ε);
* :meth:`~SequenceModel.sample_contrast` — sampling after one prefix while checking
  every sampled token after another: what compression and distinction precision ask.

Sampling is driven by uniforms the caller supplies (inverse-CDF sampling), so a
trial's samples depend only on that trial's seed, never on how trials were batched.
Implementations: :mod:`worldmodel.models` (Hugging Face causal LMs, the true world
model, imported checkpoints).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import WorldModelError
from .world import Token

if TYPE_CHECKING:
    from ..acceptance import AcceptanceRule

Prefix = Sequence[Token]


@dataclass
class Scored:
    """One suffix scored after one prefix.

    ``probs[j]`` is ``m(x_j | s x_1..x_{j-1})``; ``accepted[j]`` whether the acceptance
    rule allows that token there.
    """

    probs: np.ndarray
    accepted: np.ndarray

    def all_accepted(self) -> bool:
        return bool(self.accepted.all())

    def first_rejected(self) -> int | None:
        bad = np.flatnonzero(~self.accepted)
        return int(bad[0]) if len(bad) else None


class SampleGroup(list):
    """The samples drawn after one prefix (a list), and how many of them used ``keep_top``.

    ``kept_top`` counts the samples in which, at some step, the acceptance rule
    allowed no token and the most likely token was drawn instead (see
    :meth:`SequenceModel.sample`).
    """

    kept_top: int = 0

    def __init__(self, items=(), kept_top: int = 0):
        super().__init__(items)
        self.kept_top = int(kept_top)

    @staticmethod
    def kept_top_of(group) -> int:
        """``group.kept_top`` for a :class:`SampleGroup`; 0 for a plain list of samples."""
        return group.kept_top if isinstance(group, SampleGroup) else 0


class SequenceModel(ABC):
    """A generative model ``m: Σ* → Δ(Σ)`` over a world's tokens (batched).

    Three methods are required (:meth:`next_token_probs`, :meth:`score`, :meth:`sample`);
    :meth:`sample_contrast`, :meth:`prefix_probs` and :meth:`hidden_states` have generic
    versions a model may override for speed (with the same results). The attributes
    below are every property of a model the engine reads; each has its default here.
    """

    #: Domain tokens, the columns of every distribution this model returns.
    tokens: tuple[Token, ...] = ()
    #: A short name for messages.
    name: str = "model"
    #: What results and tables call the model (a checkpoint path, a label); ``None``: :attr:`name`.
    source: str | None = None
    #: World tokens the model lacks: probability 0 everywhere, and it cannot read them in a
    #: prefix (:class:`~worldmodel.models.missing.MissingTokens`; empty for every other model).
    missing_tokens: frozenset[Token] = frozenset()
    #: The longest sequence (in model positions, a BOS included) the model can read; ``None``: unbounded.
    #: Sampled continuations are cut to fit (:func:`worldmodel.metrics.context_room`).
    max_positions: int | None = None
    #: 1 when the model reads the first world token as context and never predicts it (no BOS: the
    #: paper's and Li et al.'s checkpoints), else 0. The next-token test and the probe skip that position.
    context_tokens: int = 0
    #: The longest sequence (world tokens) the model was trained on, when known (``training.json``
    #: of a checkpoint written by ``worldmodel train``); the metrics never read it past that
    #: (:func:`worldmodel.metrics.length_bound`). ``None``: only :attr:`max_positions` bounds it.
    trained_len: int | None = None
    #: What identifies the weights (a checkpoint's weight files' SHA-256, :func:`worldmodel.checkpoints.load`),
    #: when known: part of every trial log's header, so a retrained model never resumes another's trials.
    fingerprint: str | None = None
    #: How many trials the engine may join into one model call (0: one logged batch at a time).
    wave_trials: int = 0
    #: Where the model's tensors live (``"cpu"``, ``"cuda:0"``); the probe trains there.
    device: Any = "cpu"

    @property
    def label(self) -> str:
        """What results call this model: :attr:`source`, else :attr:`name`."""
        return self.source or self.name

    @abstractmethod
    def next_token_probs(self, prefixes: Sequence[Prefix]) -> np.ndarray:
        """``m(· | s)`` for each prefix: float array ``(len(prefixes), len(tokens))``."""

    @abstractmethod
    def score(
        self,
        prefixes: Sequence[Prefix],
        suffixes: Sequence[Sequence[Sequence[Token]]],
        acceptance: AcceptanceRule,
    ) -> list[list[Scored]]:
        """Score ``suffixes[i][j]`` after ``prefixes[i]``; returns the same nesting."""

    @abstractmethod
    def sample(
        self,
        prefixes: Sequence[Prefix],
        uniforms: Sequence[np.ndarray],
        acceptance: AcceptanceRule,
        stop_tokens: frozenset[Token] = frozenset(),
        keep_top: bool = True,
    ) -> list[SampleGroup]:
        """Continuations of each prefix; ``uniforms[i]`` is ``(n_samples, max_len)`` in [0, 1).

        At each step the model's distribution is restricted to allowed tokens of
        positive probability and renormalised; the token is the inverse CDF at the
        step's uniform. Where the rule allows no token, ``keep_top`` (the default,
        as the authors' sampler) draws the most likely token; without it the
        continuation ends there. A continuation also ends after ``max_len`` tokens,
        after a stop token, or where every token has probability 0. Each group
        records in :attr:`SampleGroup.kept_top` how many of its samples used the
        fallback.
        """

    def sample_contrast(
        self,
        prefixes: Sequence[Prefix],
        check_prefixes: Sequence[Prefix],
        uniforms: Sequence[np.ndarray],
        acceptance: AcceptanceRule,
        stop_tokens: frozenset[Token] = frozenset(),
        halt_on_reject: bool = False,
        keep_top: bool = True,
    ) -> list[SampleGroup]:
        """Sample after ``prefixes[i]`` and check every token after ``check_prefixes[i]``.

        Returns, per sample, ``(tokens, j)``: ``j`` is the index of the first sampled
        token not allowed after the check prefix (the sample is cut after it: the cut
        sample is an element of the model's boundary ``MNB^m(s1, s2)``), or ``None``
        when the whole sample is allowed there. With ``halt_on_reject`` the other
        samples of a group may be cut short once one is rejected (compression needs
        only to know whether any is). Same samples as :meth:`sample` with the same
        uniforms (``keep_top`` as there; the check after ``check_prefixes`` always
        applies the rule itself, as the authors' code does); this default samples,
        then scores.
        """
        samples = self.sample(prefixes, uniforms, acceptance, stop_tokens, keep_top=keep_top)
        scored = self.score(check_prefixes, samples, acceptance)
        out = []
        for group, res in zip(samples, scored):
            row = SampleGroup(kept_top=SampleGroup.kept_top_of(group))
            for x, sc in zip(group, res):
                j = sc.first_rejected()
                row.append((tuple(x[: j + 1]) if j is not None else tuple(x), j))
            out.append(row)
        return out

    def prefix_probs(self, sequences: Sequence[Prefix]) -> list[np.ndarray]:
        """``out[i][j] = m(· | sequences[i][:j])`` for ``j = 0..len``: every prefix of every sequence."""
        flat = [tuple(s[:j]) for s in sequences for j in range(len(s) + 1)]
        probs = self.next_token_probs(flat)
        out, r = [], 0
        for s in sequences:
            out.append(probs[r:r + len(s) + 1])
            r += len(s) + 1
        return out

    def hidden_states(self, sequences: Sequence[Prefix]) -> list[np.ndarray]:
        """Last-layer states: ``out[i][j]`` is the state after reading ``sequences[i][:j]``."""
        raise WorldModelError(f"the {self.name} model has no hidden states to probe")

    @property
    def has_hidden_states(self) -> bool:
        return False

    _tok_index: dict[Token, int] | None = None

    def token_index(self) -> dict[Token, int]:
        """Token -> column of :attr:`tokens`."""
        if self._tok_index is None or len(self._tok_index) != len(self.tokens):
            self._tok_index = {t: i for i, t in enumerate(self.tokens)}
        return self._tok_index
