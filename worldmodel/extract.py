"""Extract the automaton a model implies (Angluin's L*), and diff it against the world.

The metrics say *how much* a model's implied world differs from the true one;
this module says *where*. A :class:`~worldmodel.models.SequenceModel` under an
:class:`~worldmodel.acceptance.AcceptanceRule` is a language acceptor: a word is
accepted when the model allows every one of its tokens in turn (the rule says yes
and the model gives the token positive probability). That language is
prefix-closed, like the world's valid sequences, so it has a minimal DFA whose
missing transitions go to a reject state, the shape of
:class:`~worldmodel.dfa.ExplicitDFA`. :func:`extract` learns it:

* **membership queries** (:class:`ModelAcceptor`) are answered from a prefix tree
  that stores, for every prefix the model has read, the set of tokens it allows
  next. One node answers the membership of all its one-token extensions, a word
  with a refused prefix is refused without a model call, and the nodes still
  missing for a whole batch of queries are computed in one batched
  :meth:`~worldmodel.models.SequenceModel.prefix_probs` call (one forward pass per
  sequence gives the distribution after every one of its prefixes);
* the **learner** (:func:`lstar`) is L* with an observation table over access
  words ``S`` and suffixes ``E``, filled a whole table extension at a time, with
  Rivest–Schapire counterexample analysis (one new suffix per counterexample, so
  the rows of ``S`` stay distinct and the table never needs a consistency check);
* **equivalence queries** are conformance tests against the model
  (:class:`WMethodTester`, :class:`RandomWalkTester`): each test word is read by
  the model once and, at every prefix, the model's whole allowed set is compared
  with the hypothesis's valid tokens, which checks every one-token extension too.

Learning is bounded by ``max_states`` (live states of a hypothesis) and
``max_queries`` (membership queries plus test words); when a bound stops it, the
last hypothesis is returned, marked incomplete, with the reason. A neural model
need not be a finite automaton at all (its behaviour can depend on position), so
the result is always "the smallest DFA consistent with every query asked"; how
far it was tested is part of the result (:class:`QueryStats`, ``rounds``).

Why not AALpy: its L* asks membership queries one word at a time from inside its
observation table (so a neural model would be run once per word, never in a
batch), its step-by-step systems under learning do not fit a model that reads a
whole sequence at once, and it has no state or query budget. This module keeps
its split (system under learning, equivalence oracle, algorithm) in a form that
batches.

:func:`diff` compares the learned DFA with the world's minimal DFA through their
product: *merged* true states (two true states that one learned state covers,
with a shortest suffix the world tells them apart by), *split* true states (one
true state covered by two learned states, with a suffix the model answers
differently), and the language difference (shortest words accepted by exactly one
of them). Every witness is checked against the model itself.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Hashable, Sequence

import numpy as np

from .acceptance import AcceptanceRule
from .dfa import REJECT, ExplicitDFA, Token, World, counterexample
from .errors import WorldModelError

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
    queries plus test words; ``max_word_len`` (default: the model's context less
    the BOS position, when it has one) bounds the length of a query. Exceeding
    either raises :class:`ExtractionStopped`. ``batch_size`` sequences go to the
    model per call.
    """

    def __init__(self, model, acceptance: AcceptanceRule, max_queries: int | None = None,
                 max_word_len: int | None = None, batch_size: int = 256, progress=None):
        self.model = model
        self.acceptance = acceptance
        self.tokens: tuple[Token, ...] = tuple(model.tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.max_queries = max_queries
        if max_word_len is None:
            ctx = getattr(model, "max_positions", None)
            max_word_len = int(ctx) - 1 if ctx else None
        self.max_word_len = max_word_len
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
                raise ExtractionStopped(
                    f"a query of {longest} tokens would exceed the model's context ({self.max_word_len} tokens)")

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


# ---------------------------------------------------------------------------
# Equivalence oracles: conformance testing against the model
# ---------------------------------------------------------------------------


@dataclass
class Hypothesis:
    """A learner's conjecture: the DFA, one access word per state, and the suffixes that tell its states apart."""

    dfa: ExplicitDFA
    access: list[Word]
    suffixes: list[Word]


class RandomWalkTester:
    """``walks`` random walks of 1..``max_len`` tokens through the hypothesis (uniform over its valid tokens).

    Walking only where the hypothesis accepts still catches every disagreement on
    the way: at each step the model's whole allowed set is compared with the
    hypothesis's. A fresh batch of walks is drawn per equivalence query (seeded).
    """

    def __init__(self, walks: int = 1000, max_len: int = 20, seed: int = 0):
        self.walks, self.max_len = int(walks), int(max_len)
        self.rng = np.random.default_rng(seed)

    def find_counterexample(self, hyp: Hypothesis, acceptor: ModelAcceptor) -> Word | None:
        if self.walks <= 0 or self.max_len <= 0:
            return None
        dfa = hyp.dfa
        paths = []
        for _ in range(self.walks):
            q, walk = dfa.start, []
            for _ in range(int(self.rng.integers(1, self.max_len + 1))):
                ok = np.flatnonzero(dfa.delta[q] >= 0)
                if not len(ok):
                    break
                j = int(ok[self.rng.integers(len(ok))])
                walk.append(dfa.tokens[j])
                q = int(dfa.delta[q, j])
            paths.append(tuple(walk))
        return acceptor.first_difference(paths, dfa)


class WMethodTester:
    """The W-method: ``access · middle · suffix`` for every state, every hypothesis path ``middle``
    of at most ``depth`` tokens, and every suffix of the characterisation set.

    Access words times one-token middles is the transition cover, so this is
    the W-method's test suite for a model automaton with at most ``depth - 1``
    states more than the hypothesis (``depth = 1``: as many states), which it
    then cannot miss; on top, every prefix's whole allowed set is compared, so
    every one-token extension of every test word is tested as well.
    """

    def __init__(self, depth: int = 1):
        self.depth = int(depth)

    def find_counterexample(self, hyp: Hypothesis, acceptor: ModelAcceptor) -> Word | None:
        if self.depth < 0:
            return None
        dfa = hyp.dfa
        words: set[Word] = set()
        for q, u in enumerate(hyp.access):
            frontier: list[tuple[int, Word]] = [(q, u)]
            for d in range(self.depth + 1):
                for r, w in frontier:
                    words.update(w + e for e in hyp.suffixes)
                if d == self.depth:
                    break
                frontier = [(int(dfa.delta[r, j]), w + (dfa.tokens[int(j)],))
                            for r, w in frontier for j in np.flatnonzero(dfa.delta[r] >= 0)]
        words = sorted(words, key=lambda w: (len(w), acceptor._key(w)))
        return acceptor.first_difference(words, dfa)


class Conformance:
    """Run several testers in order; the first counterexample wins."""

    def __init__(self, *testers):
        self.testers = testers

    def find_counterexample(self, hyp: Hypothesis, acceptor: ModelAcceptor) -> Word | None:
        for t in self.testers:
            cex = t.find_counterexample(hyp, acceptor)
            if cex is not None:
                return cex
        return None


# ---------------------------------------------------------------------------
# L*
# ---------------------------------------------------------------------------


@dataclass
class Extraction:
    """What :func:`lstar` learned.

    ``dfa`` is the minimal learned DFA (states numbered breadth-first from the
    start, as :meth:`ExplicitDFA.minimise` numbers them), ``access[q]`` a shortest
    word reaching state ``q``; ``complete`` is False when a bound stopped learning
    (``stopped`` says which) and ``dfa`` is then the last hypothesis.
    """

    dfa: ExplicitDFA
    access: list[Word]
    complete: bool
    stopped: str | None
    rounds: int
    counterexamples: list[Word]
    suffixes: list[Word]
    stats: QueryStats
    seconds: float
    sizes: list[int] = field(default_factory=list)  # live states of the hypothesis tested in each round
    #: when learning stopped while processing a counterexample to ``dfa``: that word (the model and ``dfa``
    #: disagree on it)
    refuted_by: Word | None = None

    def summary(self) -> dict:
        return {"states": self.dfa.n_states, "complete": self.complete, "stopped": self.stopped,
                "rounds": self.rounds, "counterexamples": len(self.counterexamples),
                "suffixes": len(self.suffixes), "seconds": round(self.seconds, 2), "sizes": list(self.sizes),
                "refuted_by": list(self.refuted_by) if self.refuted_by is not None else None,
                **self.stats.to_dict()}


def shortest_access(dfa: ExplicitDFA) -> list[Word]:
    """A shortest word to each state (breadth-first, tokens in alphabet order)."""
    access: list[Word | None] = [None] * dfa.n_states
    access[dfa.start] = ()
    queue = deque([dfa.start])
    while queue:
        q = queue.popleft()
        for j, nq in enumerate(dfa.delta[q]):
            if nq >= 0 and access[nq] is None:
                access[nq] = access[q] + (dfa.tokens[j],)  # type: ignore[operator]
                queue.append(int(nq))
    return [a if a is not None else () for a in access]


def lstar(acceptor: ModelAcceptor, equivalence, max_states: int = 200, name: str = "learned") -> Extraction:
    """Learn the model's DFA with L* (Rivest–Schapire counterexamples); see the module docstring.

    ``equivalence`` has ``find_counterexample(hypothesis, acceptor) -> word | None``
    (e.g. ``Conformance(WMethodTester(1), RandomWalkTester())``). Stops when it
    finds no counterexample, or when a hypothesis would have more than
    ``max_states`` live states, the query budget is used up or a query would not
    fit the model's context; then the last hypothesis is returned, incomplete.
    """
    t0 = time.perf_counter()
    A = acceptor.tokens
    order = acceptor._key
    S: list[Word] = [()]
    E: list[Word] = [()]
    rows: dict[Word, list[bool]] = {}

    def add_rows(words):
        words = [w for w in dict.fromkeys(words) if w not in rows]
        ans = acceptor.accepted([w + e for w in words for e in E])
        for i, w in enumerate(words):
            rows[w] = ans[i * len(E):(i + 1) * len(E)]

    def add_suffix(e: Word):
        E.append(e)
        ws = list(rows)
        ans = acceptor.accepted([w + e for w in ws])
        for w, v in zip(ws, ans):
            rows[w].append(v)

    def build() -> tuple[Hypothesis, dict[tuple, int], list[Word]]:
        rep: dict[tuple, int] = {}
        reps: list[Word] = []
        for s in S:
            r = tuple(rows[s])
            if r not in rep:
                rep[r] = len(reps)
                reps.append(s)
        live = [i for i, s in enumerate(reps) if rows[s][0]]
        ids = {i: k for k, i in enumerate(live)}
        delta = np.full((len(live), len(A)), -1, dtype=np.int64)
        for i in live:
            for j, a in enumerate(A):
                target = rep[tuple(rows[reps[i] + (a,)])]
                delta[ids[i], j] = ids.get(target, -1)
        dfa = ExplicitDFA(delta, A, ids[rep[tuple(rows[()])]], name=name)
        return Hypothesis(dfa, [reps[i] for i in live], list(E)), rep, reps

    def live_count() -> int:
        return len({tuple(rows[s]) for s in S if rows[s][0]})

    def hyp_state_word(rep, reps, word: Word) -> Word:
        """Access word of the state the table reaches on ``word`` (the dead row included)."""
        s: Word = ()
        for a in word:
            s = reps[rep[tuple(rows[s + (a,)])]]
        return s

    hyp: Hypothesis | None = None
    cexs: list[Word] = []
    rounds, stopped, pending = 0, None, None
    sizes: list[int] = []
    try:
        add_rows([()] + [(a,) for a in A])
        while True:
            # close the table: every one-token extension's row must be some access word's row
            while True:
                known = {tuple(rows[s]) for s in S}
                new, seen = [], set()
                for u in sorted((s + (a,) for s in S for a in A), key=lambda w: (len(w), order(w))):
                    r = tuple(rows[u])
                    if r not in known and r not in seen:
                        new.append(u)
                        seen.add(r)
                if not new:
                    break
                S.extend(new)
                if live_count() > max_states:
                    raise ExtractionStopped(f"a hypothesis would have more than {max_states} states (--max-states)")
                add_rows([u + (a,) for u in new for a in A])
            hyp, rep, reps = build()
            if pending is not None:
                # a counterexample may need more than one suffix before the hypothesis gets it right
                if _dfa_accepts(hyp.dfa, pending) != acceptor.accepted([pending])[0]:
                    _rivest_schapire(acceptor, pending, lambda w: hyp_state_word(rep, reps, w), E, add_suffix)
                    continue
                pending = None
            rounds += 1
            sizes.append(hyp.dfa.n_states)
            cex = equivalence.find_counterexample(hyp, acceptor)
            if cex is None:
                break
            cexs.append(cex)
            pending = cex
            _rivest_schapire(acceptor, cex, lambda w: hyp_state_word(rep, reps, w), E, add_suffix)
    except ExtractionStopped as stop:
        stopped = stop.reason
        if hyp is None:
            raise WorldModelError(f"extraction stopped before a first hypothesis: {stop.reason}") from None
    refuted = None
    if pending is not None:  # stopped while learning from a counterexample to the last hypothesis
        model_says, _ = acceptor._walk(pending)
        if model_says is not None and model_says != _dfa_accepts(hyp.dfa, pending):
            refuted = pending
    minimal, _ = hyp.dfa.minimise()
    return Extraction(minimal, shortest_access(minimal), stopped is None, stopped, rounds, cexs, list(E),
                      replace(acceptor.stats), time.perf_counter() - t0, sizes, refuted)


def _dfa_accepts(dfa: ExplicitDFA, word: Sequence[Token]) -> bool:
    q = dfa.initial_state()
    for t in word:
        q = dfa.step(q, t)
        if q is REJECT:
            return False
    return True


def _rivest_schapire(acceptor: ModelAcceptor, cex: Word, access_of, E: list[Word], add_suffix) -> None:
    """Add the one suffix of ``cex`` that exposes a new state (binary search, Rivest and Schapire 1993).

    ``α(i)`` = membership of ``access(state after cex[:i]) · cex[i:]``; ``α(0)`` is the
    model's verdict on ``cex`` and ``α(len)`` the hypothesis's, which differ, so
    some ``i`` has ``α(i) ≠ α(i+1)``, and ``cex[i+1:]`` separates two rows that the
    hypothesis merged.
    """

    def alpha(i: int) -> bool:
        return acceptor.accepted([access_of(cex[:i]) + cex[i:]])[0]

    lo, hi = 0, len(cex)
    a_lo = alpha(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if alpha(mid) == a_lo:
            lo = mid
        else:
            hi = mid
    suffix = cex[hi:]
    if suffix in E:  # cannot happen with a consistent table; guard against an endless loop
        raise ExtractionStopped(f"counterexample {' '.join(cex)} gave no new suffix")
    add_suffix(suffix)


def extract(model, acceptance: AcceptanceRule, max_states: int = 200, max_queries: int | None = 1_000_000,
            walks: int = 1000, walk_len: int = 20, depth: int = 1, seed: int = 0, batch_size: int = 256,
            progress=None, name: str = "learned") -> tuple[Extraction, ModelAcceptor]:
    """Learn the DFA of ``model`` under ``acceptance``: membership by the batched scorer,
    equivalence by the W-method of ``depth``, then ``walks`` random walks of up to
    ``walk_len`` tokens. Returns the extraction and the acceptor (whose cache
    :func:`diff` reuses to check its witnesses against the model)."""
    acceptor = ModelAcceptor(model, acceptance, max_queries=max_queries, batch_size=batch_size, progress=progress)
    oracle = Conformance(WMethodTester(depth), RandomWalkTester(walks, walk_len, seed))
    return lstar(acceptor, oracle, max_states=max_states, name=name), acceptor


# ---------------------------------------------------------------------------
# The world as an explicit minimal DFA
# ---------------------------------------------------------------------------


def explicit_world(world: World, max_states: int = 5000) -> tuple[ExplicitDFA, list[str]]:
    """The world's minimal DFA by breadth-first enumeration, with a name per state.

    An :class:`ExplicitDFA` world is minimised directly. An implicit world is
    enumerated from its start state; more than ``max_states`` reachable states
    raises :class:`WorldModelError` (the whole true automaton is out of reach).
    Returns ``(minimal, labels)``; ``labels[q]`` is ``world.state_key`` of a state
    in class ``q`` (for an explicit DFA, its original state numbers).
    """
    if isinstance(world, ExplicitDFA):
        minimal, class_of = world.minimise()
        labels = [",".join(str(s) for s in np.flatnonzero(class_of == q)) for q in range(minimal.n_states)]
        return minimal, labels
    start = world.initial_state()
    ids: dict[Hashable, int] = {start: 0}
    states = [start]
    rows: list[list[int]] = []
    queue = deque([start])
    while queue:
        s = queue.popleft()
        row = []
        for t in world.tokens:
            nxt = world.step(s, t)
            if nxt is REJECT:
                row.append(-1)
                continue
            if nxt not in ids:
                if len(states) >= max_states:
                    raise WorldModelError(
                        f"the {world.name} world has more than {max_states:,} reachable states: its whole automaton "
                        f"is out of reach for extraction, which compares against every true state")
                ids[nxt] = len(states)
                states.append(nxt)
                queue.append(nxt)
            row.append(ids[nxt])
        rows.append(row)
    dfa = ExplicitDFA(np.array(rows, dtype=np.int64).reshape(len(states), len(world.tokens)), world.tokens,
                      name=world.name)
    minimal, class_of = dfa.minimise()
    labels = [""] * minimal.n_states
    for old, q in enumerate(class_of):
        if q >= 0 and not labels[q]:
            labels[q] = world.state_key(states[old])
    return minimal, labels


# ---------------------------------------------------------------------------
# Diff: learned against true
# ---------------------------------------------------------------------------


@dataclass
class Merge:
    """True states ``true`` (a pair) that learned state ``learned`` covers; ``suffix`` is valid after
    ``prefixes[valid_after]`` only (in the world). ``model`` is the model's own verdict on
    ``prefixes[i] + suffix`` (alike when the merge is confirmed)."""

    true: tuple[int, int]
    learned: int
    prefixes: tuple[Word, Word]
    suffix: Word
    valid_after: int
    model: tuple[bool, bool]

    @property
    def confirmed(self) -> bool:
        return self.model[0] == self.model[1]


@dataclass
class Split:
    """True state ``true`` covered by learned states ``learned`` (a pair): the world treats
    ``prefixes`` alike, the learned DFA accepts ``suffix`` after ``prefixes[allowed_after]`` only;
    ``model`` is the model's own verdict (different when confirmed)."""

    true: int
    learned: tuple[int, int]
    prefixes: tuple[Word, Word]
    suffix: Word
    allowed_after: int
    model: tuple[bool, bool]

    @property
    def confirmed(self) -> bool:
        return self.model[0] != self.model[1]


@dataclass
class Diff:
    """Learned DFA against the world's minimal DFA (see :func:`diff`)."""

    equivalent: bool
    n_learned: int
    n_true: int
    pairs: int                      # reachable (learned, true) pairs on words both accept
    merges: list[Merge]             # one per merged pair of true states
    splits: list[Split]             # one witness per split true state
    split_sizes: dict[int, int]     # split true state -> how many learned states cover it
    extra: list[Word]               # shortest words the model accepts and the world rejects
    missing: list[Word]             # shortest words the world accepts and the model rejects
    n_extra: int                    # (reachable pair, token) transitions of each kind
    n_missing: int
    overlap: np.ndarray             # [learned, true]: expected visits of world random walks
    unmatched: list[int] = field(default_factory=list)  # learned states no world-valid word reaches

    @property
    def merged_true_states(self) -> list[int]:
        return sorted({q for m in self.merges for q in m.true})

    @property
    def split_true_states(self) -> list[int]:
        return sorted(self.split_sizes)

    def dominant(self) -> list[tuple[int | None, float]]:
        """Per learned state: the true state it overlaps most and that share of its visits."""
        out = []
        for row in self.overlap:
            total = row.sum()
            if total <= 0:
                out.append((None, 0.0))
            else:
                q = int(np.argmax(row))
                out.append((q, float(row[q] / total)))
        return out


def _with_start(dfa: ExplicitDFA, q: int) -> ExplicitDFA:
    return ExplicitDFA(dfa.delta, dfa.tokens, q, name=dfa.name)


def separating_suffix(dfa: ExplicitDFA, q1: int, q2: int) -> Word | None:
    """A shortest word valid from exactly one of two states of ``dfa`` (None if equivalent)."""
    return counterexample(_with_start(dfa, q1), _with_start(dfa, q2))


def diff(learned: ExplicitDFA, true: ExplicitDFA, acceptor: ModelAcceptor | None = None, witnesses: int = 10,
         horizon: int = 24) -> Diff:
    """Compare a learned DFA with the world's minimal DFA through their product.

    Walks the product breadth-first over words both accept. A learned state
    reached together with two true states merges them (witness: a shortest suffix
    that separates the true states); a true state reached together with two
    learned states is split (witness: a shortest suffix that separates the
    learned states). One-sided transitions give the language difference, shortest
    words first (at most ``witnesses`` of each kind). With ``acceptor``, the model
    itself answers every witness (``Merge.model``, ``Split.model``).
    ``overlap[l, t]`` is the expected number of visits to ``(l, t)`` in the first
    ``horizon`` steps of a world random walk (uniform over valid tokens, the
    training data's distribution for the toy and seating tasks).
    """
    if tuple(learned.tokens) != tuple(true.tokens):
        if set(learned.tokens) != set(true.tokens):
            raise WorldModelError("learned and true automata have different alphabets")
        perm = [learned.tokens.index(t) for t in true.tokens]
        learned = ExplicitDFA(learned.delta[:, perm], true.tokens, learned.start, name=learned.name)
    V = len(true.tokens)
    start = (learned.start, true.start)
    parent: dict[tuple[int, int], tuple | None] = {start: None}
    queue = deque([start])
    extra, missing = [], []
    n_extra = n_missing = 0

    def word_to(pair) -> Word:
        out = []
        while parent[pair] is not None:
            pair, tok = parent[pair]
            out.append(tok)
        return tuple(reversed(out))

    while queue:
        pair = queue.popleft()
        l, t = pair
        for j in range(V):
            nl, nt = int(learned.delta[l, j]), int(true.delta[t, j])
            if nl >= 0 and nt >= 0:
                if (nl, nt) not in parent:
                    parent[(nl, nt)] = (pair, true.tokens[j])
                    queue.append((nl, nt))
            elif nl >= 0:
                n_extra += 1
                if len(extra) < witnesses:
                    extra.append(word_to(pair) + (true.tokens[j],))
            elif nt >= 0:
                n_missing += 1
                if len(missing) < witnesses:
                    missing.append(word_to(pair) + (true.tokens[j],))
    order = list(parent)  # breadth-first: shortest words first
    by_learned: dict[int, list[int]] = {}
    by_true: dict[int, list[int]] = {}
    for l, t in order:
        by_learned.setdefault(l, []).append(t)
        by_true.setdefault(t, []).append(l)

    merges: list[Merge] = []
    seen_true: set[tuple[int, int]] = set()
    for l, ts in by_learned.items():
        for a in range(len(ts)):
            for b in range(a + 1, len(ts)):
                key = (min(ts[a], ts[b]), max(ts[a], ts[b]))
                if key in seen_true:
                    continue
                seen_true.add(key)
                p1, p2 = word_to((l, ts[a])), word_to((l, ts[b]))
                s = separating_suffix(true, ts[a], ts[b])
                valid_after = 0 if _dfa_accepts(_with_start(true, ts[a]), s) else 1
                merges.append(Merge((ts[a], ts[b]), l, (p1, p2), s, valid_after, (None, None)))
    splits: list[Split] = []
    split_sizes = {t: len(ls) for t, ls in by_true.items() if len(ls) > 1}
    for t, ls in by_true.items():  # one witness per split true state (its two shortest-reached learned states)
        if len(ls) < 2 or len(splits) >= max(witnesses, true.n_states):
            continue
        p1, p2 = word_to((ls[0], t)), word_to((ls[1], t))
        s = separating_suffix(learned, ls[0], ls[1])
        allowed_after = 0 if _dfa_accepts(_with_start(learned, ls[0]), s) else 1
        splits.append(Split(t, (ls[0], ls[1]), (p1, p2), s, allowed_after, (None, None)))
    if acceptor is not None:
        items = merges + splits
        verdicts = acceptor.accepted([p + x.suffix for x in items for p in x.prefixes])
        for i, x in enumerate(items):
            x.model = (verdicts[2 * i], verdicts[2 * i + 1])

    # expected visits of world random walks to each product pair
    overlap = np.zeros((learned.n_states, true.n_states))
    mass = {start: 1.0}
    for _ in range(horizon + 1):
        nxt: dict[tuple[int, int], float] = {}
        for (l, t), m in mass.items():
            overlap[l, t] += m
            valid = np.flatnonzero(true.delta[t] >= 0)
            for j in valid:
                nl = int(learned.delta[l, j])
                if nl >= 0:
                    key = (nl, int(true.delta[t, j]))
                    nxt[key] = nxt.get(key, 0.0) + m / len(valid)
        mass = nxt
    unmatched = [l for l in range(learned.n_states) if l not in by_learned]
    return Diff(counterexample(learned, true) is None, learned.n_states, true.n_states, len(parent), merges,
                splits, split_sizes, extra, missing, n_extra, n_missing, overlap, unmatched)


def agreement(acceptor: ModelAcceptor, learned: ExplicitDFA, world: ExplicitDFA, walks: int = 1000,
              max_len: int = 20, seed: int = 1) -> dict:
    """How well the learned DFA describes the model on fresh world random walks.

    Draws ``walks`` uniform random valid walks of 1..``max_len`` tokens in the
    world (``world`` is its minimal DFA); at every prefix the learned DFA also
    accepts, compares the model's allowed tokens with the learned DFA's valid
    tokens (``learned``) and with the world's (``world``). Returns the shares of
    such positions where the sets are equal, and the number of positions. These
    model calls are not charged to the query budget.
    """
    rng = np.random.default_rng(seed)
    perm = [learned.tokens.index(t) for t in acceptor.tokens]
    lv = (learned.delta >= 0)[:, perm]
    ld = learned.delta[:, perm]
    wperm = [world.tokens.index(t) for t in acceptor.tokens]
    wv = (world.delta >= 0)[:, wperm]
    wd = world.delta[:, wperm]
    paths = []
    for _ in range(walks):
        q, walk = world.start, []
        for _ in range(int(rng.integers(1, max_len + 1))):
            ok = np.flatnonzero(wv[q])
            if not len(ok):
                break
            j = int(ok[rng.integers(len(ok))])
            walk.append(acceptor.tokens[j])
            q = int(wd[q, j])
        paths.append(tuple(walk))
    if acceptor.max_word_len is not None:
        paths = [p[:acceptor.max_word_len] for p in paths]
    acceptor._compute(paths)
    same_learned = same_world = n = 0
    for p in paths:
        node, l, t = acceptor.root, learned.start, world.start
        for i in range(len(p) + 1):
            n += 1
            same_learned += bool((node.mask == lv[l]).all())
            same_world += bool((node.mask == wv[t]).all())
            if i == len(p):
                break
            j = acceptor.index[p[i]]
            if ld[l, j] < 0:
                break
            node, l, t = node.children[p[i]], int(ld[l, j]), int(wd[t, j])
    return {"positions": n, "learned": same_learned / max(n, 1), "world": same_world / max(n, 1),
            "walks": walks, "max_len": max_len, "seed": seed}
