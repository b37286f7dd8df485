"""The model as a language acceptor: membership queries answered from a prefix tree of allowed-token sets.

A word is accepted when the model allows every one of its tokens in turn (the acceptance rule says yes and the
model gives the token positive probability). :class:`ModelAcceptor` caches, for every prefix the model has read,
the set of tokens it allows next, and computes the prefixes a whole batch of queries still misses in one batched
:meth:`~worldmodel.models.SequenceModel.prefix_probs` call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..acceptance import AcceptanceRule
from ..dfa import ExplicitDFA, Token

Word = tuple[Token, ...]


class ExtractionStopped(Exception):
    """A bound was reached (query budget, model context, state count); ``reason`` says which."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class QueryStats:
    """What learning cost.

    ``membership``: words whose membership the learner asked (table cells and
    counterexample analysis); ``tests``: words read by conformance testing (each
    also checks all its one-token extensions); ``cached``: membership answers that
    needed no model call; ``nodes``: distinct prefixes whose next-token
    distribution the model computed; ``model_calls``: batched model calls;
    ``sequences``: sequences run in those calls.
    """

    membership: int = 0
    tests: int = 0
    cached: int = 0
    nodes: int = 0
    model_calls: int = 0
    sequences: int = 0

    @property
    def queries(self) -> int:
        return self.membership + self.tests

    def to_dict(self) -> dict:
        return {"membership": self.membership, "tests": self.tests, "queries": self.queries,
                "cached": self.cached, "nodes": self.nodes, "model_calls": self.model_calls,
                "sequences": self.sequences}


class _Node:
    __slots__ = ("mask", "children")

    def __init__(self):
        self.mask: np.ndarray | None = None  # tokens the model allows after this prefix
        self.children: dict[Token, _Node] = {}

    def child(self, token: Token) -> "_Node":
        nxt = self.children.get(token)
        if nxt is None:
            nxt = self.children[token] = _Node()
        return nxt


class ModelAcceptor:
    """A sequence model under an acceptance rule, as a language acceptor with a prefix-tree cache.

    ``accepted(words)`` answers membership queries in a batch; ``first_difference``
    runs conformance tests against a hypothesis. ``max_queries`` bounds membership
    queries plus test words; ``max_word_len`` bounds the length of a query (default:
    :func:`worldmodel.metrics.length_bound`, the longest sequence the model was trained
    on when its checkpoint records it, else its context: a model is never queried where
    it was not trained). Exceeding either raises :class:`ExtractionStopped`.
    ``batch_size`` sequences go to the model per call.
    """

    def __init__(self, model, acceptance: AcceptanceRule, max_queries: int | None = None,
                 max_word_len: int | None = None, batch_size: int = 256, progress=None):
        self.model = model
        self.acceptance = acceptance
        self.tokens: tuple[Token, ...] = tuple(model.tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.max_queries = max_queries
        from ..metrics import length_bound

        bound, source = length_bound(model)
        self.bound_source = source if max_word_len is None else "given"
        self.max_word_len = bound if max_word_len is None else max_word_len
        self.batch_size = int(batch_size)
        self.stats = QueryStats()
        self.root = _Node()
        self.progress = progress  # a tqdm bar (or None) advanced by model nodes computed

    # -- the prefix tree ---------------------------------------------------------
    def _walk(self, word: Word) -> tuple[bool | None, int]:
        """``(verdict, depth)``: True/False when the cached masks decide ``word``; else None
        and the length of the longest prefix whose mask is known and allows the next token."""
        node = self.root
        for i, t in enumerate(word):
            if node.mask is None:
                return None, i
            j = self.index.get(t)
            if j is None or not node.mask[j]:
                return False, i
            if i == len(word) - 1:
                break
            node = node.children.get(t)
            if node is None:
                return None, i + 1
        return True, len(word)

    def _compute(self, paths: Sequence[Word]) -> None:
        """Give a mask to every prefix of every path (paths read by the model in batches)."""
        todo: list[Word] = []
        seen: set[Word] = set()
        for p in sorted(set(paths), key=len, reverse=True):
            if p in seen:
                continue
            node, missing = self.root, self.root.mask is None
            for t in p:
                node = node.children.get(t)
                if node is None or node.mask is None:
                    missing = True
                    break
            if missing:
                todo.append(p)
                for j in range(len(p) + 1):  # a path computes all its prefixes
                    seen.add(p[:j])
        for b in range(0, len(todo), self.batch_size):
            chunk = todo[b:b + self.batch_size]
            probs = self.model.prefix_probs([list(p) for p in chunk])
            self.stats.model_calls += 1
            self.stats.sequences += len(chunk)
            new = 0
            for p, dist in zip(chunk, probs):
                dist = np.asarray(dist)
                masks = self.acceptance.mask_np(dist) & (dist > 0)
                node = self.root
                for j in range(len(p) + 1):
                    if node.mask is None:
                        node.mask = masks[j]
                        new += 1
                    if j < len(p):
                        node = node.child(p[j])
            self.stats.nodes += new
            if self.progress is not None:
                self.progress.update(new)

    def mask(self, word: Word) -> np.ndarray:
        """The tokens the model allows after ``word`` (computed if needed; no query counted)."""
        word = tuple(word)
        self._compute([word])
        node = self.root
        for t in word:
            node = node.children[t]
        return node.mask  # type: ignore[return-value]

    def _charge(self, n: int, words: Sequence[Word]) -> None:
        if self.max_queries is not None and self.stats.queries + n > self.max_queries:
            raise ExtractionStopped(f"query budget of {self.max_queries:,} queries used up")
        if self.max_word_len is not None and words:
            longest = max(len(w) for w in words)
            if longest > self.max_word_len:
                from ..metrics import bound_words

                raise ExtractionStopped(f"a query of {longest} tokens would exceed {bound_words(self.bound_source)} "
                                        f"({self.max_word_len} tokens)")

    # -- membership ----------------------------------------------------------------
    def accepted(self, words: Sequence[Sequence[Token]]) -> list[bool]:
        """Membership of each word in the model's language (batched, cached)."""
        words = [tuple(w) for w in words]
        self._charge(len(words), words)
        self.stats.membership += len(words)
        out: list[bool | None] = []
        need: list[Word] = []
        for w in words:
            v, _ = self._walk(w)
            out.append(v)
            if v is None:
                need.append(w[:-1])  # the masks before the last token decide w
        self.stats.cached += len(words) - len(need)
        if need:
            self._compute(need)
            out = [v if v is not None else self._walk(w)[0] for v, w in zip(out, words)]
        assert all(v is not None for v in out), "prefix tree left a query undecided"
        return [bool(v) for v in out]

    # -- conformance testing -----------------------------------------------------------
    def first_difference(self, paths: Sequence[Sequence[Token]], dfa: ExplicitDFA) -> Word | None:
        """The shortest word on which the model and ``dfa`` disagree, found along ``paths``.

        Each path is read by the model; at every prefix that both accept, the
        model's allowed tokens are compared with the DFA's valid ones, so every
        one-token extension of the path's prefixes is tested. Reading stops where
        both refuse the path's next token. Paths longer than the model's context
        are cut. Returns ``None`` when they agree everywhere tested.
        """
        cut = self.max_word_len if self.max_word_len is not None else None
        paths = [tuple(p)[:cut] if cut is not None else tuple(p) for p in paths]
        self._charge(len(paths), [])
        self.stats.tests += len(paths)
        valid = dfa.delta >= 0
        # read each path only as far as the model and the DFA both accept it
        trimmed = []
        for p in paths:
            q, n = dfa.start, 0
            for t in p:
                j = self.index[t]
                if not valid[q, j]:
                    break
                q, n = int(dfa.delta[q, j]), n + 1
            trimmed.append(p[:n])
        self._compute(trimmed)
        best: Word | None = None
        for p in trimmed:
            node, q = self.root, dfa.start
            for i in range(len(p) + 1):
                if best is not None and i + 1 > len(best):
                    break
                diff = np.flatnonzero(node.mask != valid[q])
                if len(diff):
                    cand = p[:i] + (self.tokens[int(diff[0])],)
                    if best is None or (len(cand), self._key(cand)) < (len(best), self._key(best)):
                        best = cand
                    break
                if i == len(p):
                    break
                j = self.index[p[i]]
                node, q = node.children[p[i]], int(dfa.delta[q, j])
        return best

    def _key(self, word: Word) -> tuple[int, ...]:
        return tuple(self.index[t] for t in word)
