"""Angluin's L* with Rivest–Schapire counterexample analysis, over a batched :class:`ModelAcceptor`."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, replace

import numpy as np

from ..acceptance import AcceptanceRule
from ..dfa import ExplicitDFA, is_valid
from ..errors import WorldModelError
from .acceptor import ExtractionStopped, ModelAcceptor, QueryStats, Word
from .oracles import Conformance, Hypothesis, RandomWalkTester, WMethodTester


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
                if is_valid(hyp.dfa, pending) != acceptor.accepted([pending])[0]:
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
        if model_says is not None and model_says != is_valid(hyp.dfa, pending):
            refuted = pending
    minimal, _ = hyp.dfa.minimise()
    return Extraction(minimal, shortest_access(minimal), stopped is None, stopped, rounds, cexs, list(E),
                      replace(acceptor.stats), time.perf_counter() - t0, sizes, refuted)


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
