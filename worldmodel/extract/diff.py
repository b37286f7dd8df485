"""Diff a learned DFA against the world's minimal DFA, and measure how well it describes the model."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..dfa import ExplicitDFA, counterexample, is_valid
from ..errors import WorldModelError
from .acceptor import ModelAcceptor, Word


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
                valid_after = 0 if is_valid(_with_start(true, ts[a]), s) else 1
                merges.append(Merge((ts[a], ts[b]), l, (p1, p2), s, valid_after, (None, None)))
    splits: list[Split] = []
    split_sizes = {t: len(ls) for t, ls in by_true.items() if len(ls) > 1}
    for t, ls in by_true.items():  # one witness per split true state (its two shortest-reached learned states)
        if len(ls) < 2 or len(splits) >= max(witnesses, true.n_states):
            continue
        p1, p2 = word_to((ls[0], t)), word_to((ls[1], t))
        s = separating_suffix(learned, ls[0], ls[1])
        allowed_after = 0 if is_valid(_with_start(learned, ls[0]), s) else 1
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
