"""Compare two simulators: the candidate scored as a model of the reference world.

``compare(reference, candidate)`` crawls both (:mod:`worldmodel.simulator`), puts them on
one alphabet (the union of their valid actions; an action one of them never lists is
invalid there), and then asks the toolkit's usual questions with the reference as the
world and the candidate as the model: the candidate's *true world model*
(:class:`~worldmodel.models.TrueWorldModel`, uniform over its valid actions, accepted where
its probability is above 0, so exactly its valid actions) is scored with sequence
compression precision, distinction precision and recall, and the next-token test over the
reference's states. Beside the metrics:

* the **shortest history on which they disagree** (the first action one accepts and the
  other refuses, breadth first over the product of the two), with both simulators'
  observations along it;
* the **action vocabularies**: shared, reference only, candidate only;
* **merged and split states** with witnesses, from the automaton diff of
  :func:`worldmodel.extract.diff` (the candidate in the learned automaton's place): a merge is
  two reference states the candidate treats alike (with a suffix that tells them apart in
  the reference), a split one reference state the candidate tells apart (with the suffix
  it answers differently), and the language difference (histories only one accepts).

Both crawls closed: everything is exact (minimal automata). A crawl that did not close: the
metrics run on the simulator worlds themselves (states beyond the crawl expanded on demand),
prefixes drawn by :class:`WalkSampler`, the true boundary sampled; the disagreement search
is bounded (``max_pairs``) and the automaton diff is not computed (it needs the whole
automata). ``compare(X, X)`` is 1.0 on every metric with no disagreement.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Hashable

import numpy as np

from .acceptance import Epsilon
from .dfa import REJECT, ExplicitDFA, Token, World, random_walk
from .errors import TrialSkipped, WorldModelError
from .extract import diff as automaton_diff
from .metrics import Settings, compression, distinction, next_token
from .models import TrueWorldModel
from .results import MetricResult
from .sampling import ExplicitDFASampler, StateSampler
from .sandbox import Limits
from .simulator import END, Crawl, SimulatorSpec, SimulatorWorld, cached_crawl, crawl


class WalkSampler(StateSampler):
    """Prefix pairs for any world from uniform random walks from the start (for worlds not enumerated).

    Draws ``walks`` walks of 1..``max_len`` tokens once (seeded) and records, for every
    prefix, the state it reaches. Compression: a state reached by two different prefixes
    of one length, uniformly among such states; distinction: two prefixes of one length
    reaching different states.
    """

    def __init__(self, world: World, walks: int = 300, max_len: int = 12, seed: int = 0):
        super().__init__(world)
        rng = np.random.default_rng(seed)
        by_state: dict[Hashable, set] = {}
        by_len: dict[int, dict] = {}
        for _ in range(walks):
            walk = random_walk(world, world.initial_state(), int(rng.integers(1, max_len + 1)), rng)
            s = world.initial_state()
            for j, t in enumerate(walk):
                s = world.step(s, t)
                if s is REJECT:
                    break
                p = tuple(walk[: j + 1])
                by_state.setdefault(s, set()).add(p)
                by_len.setdefault(len(p), {}).setdefault(s, set()).add(p)
        self._multi = sorted(((s, sorted(ps)) for s, ps in by_state.items()
                              if any(len([q for q in ps if len(q) == n]) >= 2 for n in {len(q) for q in ps})),
                             key=lambda x: world.state_key(x[0]))
        self._lengths = {n: sorted(((s, sorted(ps)) for s, ps in d.items()), key=lambda x: world.state_key(x[0]))
                         for n, d in by_len.items() if len(d) >= 2}

    def compression_pair(self, rng):
        if not self._multi:
            raise TrialSkipped("no state was reached by two different walks of one length")
        s, prefixes = self._multi[int(rng.integers(len(self._multi)))]
        by_n: dict[int, list] = {}
        for p in prefixes:
            by_n.setdefault(len(p), []).append(p)
        options = sorted(n for n, ps in by_n.items() if len(ps) >= 2)
        ps = by_n[options[int(rng.integers(len(options)))]]
        i, j = rng.choice(len(ps), size=2, replace=False)
        return self.make_pair(self.world.state_key(s), ps[int(i)], ps[int(j)])

    def distinction_pair(self, rng):
        if not self._lengths:
            raise TrialSkipped("no two walks of one length reached different states")
        lengths = sorted(self._lengths)
        states = self._lengths[lengths[int(rng.integers(len(lengths)))]]
        a, b = rng.choice(len(states), size=2, replace=False)
        (s1, p1), (s2, p2) = states[int(a)], states[int(b)]
        pre1 = p1[int(rng.integers(len(p1)))]
        pre2 = p2[int(rng.integers(len(p2)))]
        return self.make_pair(f"{self.world.state_key(s1)}|{self.world.state_key(s2)}", pre1, pre2)


@dataclass
class Disagreement:
    """The first history on which two worlds disagree: ``history`` + ``token`` is valid in one only."""

    history: list[Token]
    token: Token
    valid_in: str                   # "reference" or "candidate"
    observations: dict = field(default_factory=dict)

    def words(self, text=lambda t: t) -> str:
        return " → ".join(text(t) for t in self.history + [self.token])


def first_disagreement(ref: World, cand: World, max_pairs: int | None = 200000) -> Disagreement | None | str:
    """Breadth first over the product of two worlds (on their common tokens): the shortest
    history after which one world allows a token the other refuses. ``None`` when they agree
    everywhere (the product was exhausted); ``"bound"`` when ``max_pairs`` pairs were seen first,
    or when the search met a state a world has not expanded (``is_expanded``, a crawl without
    its simulator) and found nothing before: only expanded pairs are compared."""
    start = (ref.initial_state(), cand.initial_state())
    parent: dict[tuple, tuple | None] = {start: None}
    queue = deque([start])

    def history(pair) -> list[Token]:
        out = []
        while parent[pair] is not None:
            pair, t = parent[pair]
            out.append(t)
        return list(reversed(out))

    frontier = False
    known_a = getattr(ref, "is_expanded", lambda s: True)
    known_b = getattr(cand, "is_expanded", lambda s: True)
    while queue:
        pair = queue.popleft()
        a, b = pair
        if not (known_a(a) and known_b(b)):
            frontier = True
            continue
        va, vb = set(ref.valid_tokens(a)), set(cand.valid_tokens(b))
        if va != vb:
            only = sorted(va ^ vb, key=lambda t: (t not in va, t))
            t = only[0]
            return Disagreement(history(pair), t, "reference" if t in va else "candidate")
        for t in sorted(va):
            nxt = (ref.step(a, t), cand.step(b, t))
            if nxt not in parent:
                if max_pairs is not None and len(parent) >= max_pairs:
                    return "bound"
                parent[nxt] = (pair, t)
                queue.append(nxt)
    return "bound" if frontier else None


@dataclass
class Comparison:
    """The result of :func:`compare`; :meth:`to_json` is what ``worldmodel compare --out`` writes."""

    reference: dict
    candidate: dict
    vocabulary: dict
    exact: bool
    disagreement: Disagreement | None | str
    metrics: dict[str, MetricResult]
    diff: dict | None
    settings: dict
    states: dict = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        return self.disagreement is None

    def to_json(self) -> dict:
        d = self.disagreement
        return {"reference": self.reference, "candidate": self.candidate, "vocabulary": self.vocabulary,
                "exact": self.exact, "states": self.states,
                "disagreement": (None if d is None else d if isinstance(d, str) else
                                 {"history": d.history, "token": d.token, "valid_in": d.valid_in,
                                  "observations": d.observations}),
                "metrics": {k: v.to_dict() for k, v in self.metrics.items()}, "diff": self.diff,
                "settings": self.settings}


def _union(a: tuple[Token, ...], b: tuple[Token, ...]) -> tuple[Token, ...]:
    return tuple(sorted(set(a) | set(b) - {END}))


def _diff_json(d, ref_text) -> dict:
    def words(w):
        return [ref_text(t) for t in w]

    return {"equivalent": d.equivalent, "reference_states": d.n_true, "candidate_states": d.n_learned,
            "merged_pairs": len(d.merges), "split_states": len(d.split_sizes),
            "n_extra": d.n_extra, "n_missing": d.n_missing,
            "merges": [{"states": list(m.true), "prefixes": [words(p) for p in m.prefixes], "suffix": words(m.suffix),
                        "valid_after": m.valid_after} for m in d.merges[:10]],
            "splits": [{"state": s.true, "prefixes": [words(p) for p in s.prefixes], "suffix": words(s.suffix),
                        "candidate_allows_after": s.allowed_after} for s in d.splits[:10]],
            "extra": [words(w) for w in d.extra], "missing": [words(w) for w in d.missing]}


def _empty_world(tokens) -> ExplicitDFA:
    return ExplicitDFA(np.full((1, len(tokens)), -1, dtype=np.int64), tokens, 0, name="failed")


def compare(reference: str | Path, candidate: str | Path, spec: SimulatorSpec | None = None,
            candidate_spec: SimulatorSpec | None = None, max_states: int = 20000, max_depth: int | None = None,
            per_verb: int | None = None, settings: Settings | None = None, trials: int = 100, M: int = 30,
            sample_len: int = 10, boundary_len: int = 5, prefix_len: int = 8, walks: int = 300, limits: Limits | None = None, unsafe: bool = False,
            cache: str | Path | None = None, progress: bool = False, max_pairs: int = 200000,
            budget_s: float | None = None, open_metrics: bool = True) -> Comparison:
    """Score the simulator in ``candidate`` against the one in ``reference`` (see the module docstring).

    ``settings`` default: ε = 0 (exact acceptance of the uniform candidate), ``M`` continuations
    of up to ``sample_len`` actions sampled per prefix, a true boundary sampled from ``M`` random
    continuations of up to ``boundary_len`` actions (the branching of text games makes the exact
    one too large), ``trials`` prefix pairs per metric (and held-out walks for the next-token
    test), prefixes of up to ``prefix_len`` actions. A reference that cannot be loaded stops with :class:`WorldModelError`; a
    candidate that cannot be loaded (or crashes) is a world with no valid action, recorded.
    ``budget_s`` bounds each crawl's wall clock; with ``open_metrics=False`` the metrics are
    computed only when both crawls closed (an open comparison then reports the bounded
    disagreement search alone; the metrics of an open world expand states on demand, slowly).
    """
    spec = spec or SimulatorSpec()
    candidate_spec = candidate_spec or spec
    settings = settings or Settings(acceptance=Epsilon(0.0), M=M, trials=trials, boundary="sampled",
                                    boundary_len=boundary_len, max_sample_len=sample_len, k=boundary_len)
    bounds = {"max_states": max_states, "max_depth": max_depth, "per_verb": per_verb, "budget_s": budget_s}
    live = []

    def get(path, sp):
        if cache is not None:
            c = cached_crawl(path, sp, cache, **bounds, limits=limits, unsafe=unsafe, progress=progress)
            if c.closed or c.failure or not open_metrics:
                return c, None
        if not open_metrics:
            return crawl(path, sp, **bounds, limits=limits, unsafe=unsafe, progress=progress), None
        c, sim = crawl(path, sp, **bounds, limits=limits, unsafe=unsafe, progress=progress, keep_open=True)
        if sim is not None:
            if c.closed or c.failure:
                sim.close()
                sim = None
            else:
                live.append(sim)
        return c, sim

    try:
        ref, ref_sim = get(reference, spec)
        if ref.failure and ref.n_states == 0:
            raise WorldModelError(f"reference simulator {reference} could not be run: {ref.failure}")
        cand, cand_sim = get(candidate, candidate_spec)
        return _compare(ref, cand, ref_sim, cand_sim, settings, prefix_len, walks, max_pairs, max_states, progress,
                        open_metrics)
    finally:
        for sim in live:
            sim.close()


def _compare(ref: Crawl, cand: Crawl, ref_sim, cand_sim, settings: Settings, prefix_len: int, walks: int,
             max_pairs: int, max_states: int, progress: bool, open_metrics: bool = True) -> Comparison:
    tokens = _union(ref.alphabet, cand.alphabet)
    ref_vocab, cand_vocab = set(ref.alphabet) - {END}, set(cand.alphabet) - {END}
    vocab = {"shared": len(ref_vocab & cand_vocab), "reference_only": sorted(ref_vocab - cand_vocab),
             "candidate_only": sorted(cand_vocab - ref_vocab)}
    vocab["overlap"] = vocab["shared"] / max(1, len(ref_vocab | cand_vocab))
    exact = ref.closed and (cand.closed or cand.n_states == 0 or bool(cand.failure))
    text = {**cand.actions, **ref.actions}

    def ref_text(t):
        return text.get(t, t)

    states = {}
    diff_json = None
    if exact:
        world, _ = ref.dfa(tokens, name="reference").minimise()
        model_world = _empty_world(tokens) if cand.n_states == 0 else cand.dfa(tokens, name="candidate").minimise()[0]
        d = automaton_diff(model_world, world)
        diff_json = _diff_json(d, ref_text)
        sampler = ExplicitDFASampler(world, min_len=1, max_len=prefix_len)
        states = {"reference_minimal": world.n_states, "candidate_minimal": model_world.n_states}
    else:
        live = open_metrics  # without the metrics, compare the crawled parts only (no expansion on demand)
        world = SimulatorWorld(ref, tokens, ref_sim if live else None, name="reference")
        model_world = (_empty_world(tokens) if cand.n_states == 0 else
                       SimulatorWorld(cand, tokens, cand_sim if live else None, name="candidate"))
        sampler = WalkSampler(world, walks=walks, max_len=prefix_len, seed=settings.seed) if live else None
    found = first_disagreement(world, model_world, None if exact else max_pairs)
    if isinstance(found, Disagreement):
        found.history = list(found.history)
        found.observations = {}
    model = TrueWorldModel(model_world)
    metrics: dict[str, MetricResult] = {}
    if not exact and not open_metrics:
        return Comparison(ref.summary(), cand.summary(), vocab, exact, found, metrics, diff_json,
                          {"max_states": max_states, "max_pairs": max_pairs}, states)
    metrics["compression_precision"] = compression(world, model, sampler, settings, progress=progress)
    metrics.update(distinction(world, model, sampler, settings, progress=progress))
    rng = np.random.default_rng(settings.seed + 1)
    seqs = [list(random_walk(world, world.initial_state(), int(rng.integers(1, 2 * prefix_len + 1)), rng))
            for _ in range(settings.trials)]
    seqs = [s for s in seqs if s]
    if seqs:
        metrics["next_token"] = next_token(world, model, seqs, settings, progress=progress)
    else:  # the reference allows no action from its start: nothing to predict, recorded as not run
        metrics["next_token"] = MetricResult("next_token", float("nan"), float("nan"), 0, settings.trials, 0,
                                             {"the reference allows no action from its start": settings.trials})
    return Comparison(ref.summary(), cand.summary(), vocab, exact, found, metrics, diff_json,
                      {"acceptance": settings.acceptance.spec(), "M": settings.M, "trials": settings.trials,
                       "boundary": settings.boundary, "boundary_len": settings.boundary_len,
                       "sample_len": settings.max_sample_len,
                       "prefix_len": prefix_len, "seed": settings.seed, "max_states": max_states}, states)


def comparison_markdown(c: Comparison) -> str:
    """A short report of a comparison (what ``worldmodel compare`` prints)."""
    r, k = c.reference, c.candidate

    def who(x):
        state = "closed" if x["closed"] else f"open ({x['stop'] or 'not crawled'})"
        fail = f"; failed: {x['failure']}" if x.get("failure") else ""
        return f"{x['states']:,} states crawled, {state}, {x['tokens']} valid actions, {x['errors']} actions raised{fail}"

    lines = [f"reference: {r['source']}: {who(r)}", f"candidate: {k['source']}: {who(k)}"]
    if c.states:
        lines.append(f"minimal automata: reference {c.states['reference_minimal']} states, candidate "
                     f"{c.states['candidate_minimal']} (with the end state)")
    v = c.vocabulary
    lines.append(f"actions: {v['shared']} shared, {len(v['reference_only'])} only in the reference, "
                 f"{len(v['candidate_only'])} only in the candidate (overlap {v['overlap']:.2f})")
    d = c.disagreement
    if d is None:
        lines.append("no disagreement: every history the one allows, the other allows")
    elif isinstance(d, str):
        lines.append("no disagreement found within the search bound")
    else:
        hist = " → ".join(d.history) or "(the start)"
        lines.append(f"first disagreement: after {hist}, `{d.token}` is valid only in the {d.valid_in}")
    if c.diff:
        x = c.diff
        lines.append(f"automaton diff: {x['merged_pairs']} merged pairs of reference states, {x['split_states']} split "
                     f"states, {x['n_extra']} transitions only the candidate has, {x['n_missing']} only the reference")
    lines += ["", "| metric | mean | stderr | n |", "|---|---|---|---|"]
    for name, m in c.metrics.items():
        lines.append(f"| {name} | {m.mean:.3f} | {m.stderr:.3f} | {m.n} |")
    return "\n".join(lines)
