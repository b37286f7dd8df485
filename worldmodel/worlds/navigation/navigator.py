"""Driving on the map: a shortest-route navigator, greedy traversals and what they achieve.

* :class:`ShortestRouteModel` — the world as a greedy-decodable model (the reference
  row of the detour table);
* :func:`reachable_within` — the detour predicate: a direction is allowed when the
  destination stays reachable within the token limit;
* :func:`od_pairs` — random held-out origin–destination pairs;
* :func:`decode_unchecked` and :func:`greedy_traversals` — greedy decoding from OD
  pairs without and with the world (both :func:`worldmodel.decoding.greedy_decode`);
* :func:`capabilities` — the paper's §3.2 shares of valid and shortest traversals.
"""

from __future__ import annotations

import numpy as np

from worldmodel.decoding import greedy_decode
from worldmodel.dfa import run
from worldmodel.errors import WorldModelError
from worldmodel.models import SequenceModel

from .data import Router, iter_od_pairs
from .world import END_TOKEN, NavigationWorld


class ShortestRouteModel(SequenceModel):
    """The navigation world as a greedy-decodable model: shortest-route directions, then ``end``.

    After ``origin destination moves...`` it spreads probability equally over the
    directions that reduce the remaining number of moves by one, or puts it all on
    ``end`` at the destination. Prefixes that are invalid (or unfinished) get no mass.
    (The uniform-over-valid-tokens true model cannot be decoded greedily: its argmax is
    just the first valid token.)
    """

    name = "true"

    def __init__(self, world: NavigationWorld):
        self.world = world
        self.tokens = tuple(world.tokens)

    def next_token_probs(self, prefixes):
        idx = self.token_index()
        out = np.zeros((len(prefixes), len(self.tokens)))
        for i, prefix in enumerate(prefixes):
            state = run(self.world, list(prefix))
            if not isinstance(state, tuple):
                continue
            cur, dest = state
            if cur == dest:
                out[i, idx[END_TOKEN]] = 1.0
                continue
            hops = self.world.hops_to(dest)
            if cur not in hops:
                continue
            good = [d for d, v in self.world.map.neighbours(cur).items() if hops.get(v, -1) == hops[cur] - 1]
            for d in good:
                out[i, idx[d]] = 1.0 / len(good)
        return out

    def score(self, prefixes, suffixes, acceptance):  # pragma: no cover - not used by greedy decoding
        raise WorldModelError("the shortest-route model only serves greedy decoding (detours)")

    def sample(self, prefixes, uniforms, acceptance, stop_tokens=frozenset()):  # pragma: no cover
        raise WorldModelError("the shortest-route model only serves greedy decoding (detours)")


def reachable_within(world: NavigationWorld, max_len: int):
    """Detour predicate: a direction is allowed when the destination stays reachable in time.

    ``allowed((node, dest), token, length)``: ``token`` is a direction with a street at
    ``node``, and after it the fewest moves to ``dest`` plus the final ``end`` keep the
    whole sequence within ``max_len`` tokens.
    """

    def allowed(state, token, length) -> bool:
        if not isinstance(state, tuple) or token == END_TOKEN:
            return False
        cur, dest = state
        nxt = world.map.edges.get((cur, token))
        if nxt is None:
            return False
        h = world.hops_to(dest).get(nxt)
        return h is not None and length + 1 + h + 1 <= max_len

    return allowed


def od_pairs(domain, dataset: str, n: int, seed: int, data_dir=None, max_len: int = 100) -> list[tuple[str, str]]:
    """``n`` distinct random test OD pairs of ``dataset``, reachable within ``max_len``, drawn without replacement.

    Fewer than ``n`` come back when the test split has fewer usable pairs: every one of them
    (callers say so). A pair is never drawn twice, so ``n`` trials are ``n`` independent
    starts, as the standard errors assume.
    """
    world = domain.world
    pairs = [(o, d) for o, d in iter_od_pairs(domain.sequences("test", dataset, data_dir))
             if world.hops_to(d).get(o, max_len) + 3 <= max_len]
    if not pairs:
        raise WorldModelError(f"task {domain.task.name}: the {dataset} test split has no usable origin-destination pair")
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(pairs), size=min(n, len(pairs)), replace=False)
    return [pairs[int(i)] for i in idx]


def decode_unchecked(model, pairs: list[tuple[str, str]], max_tokens: int, batch: int = 256,
                     progress: bool = False) -> list[list[str]]:
    """Greedy traversals that keep going after an invalid move (reconstruction needs the whole ride).

    Each pair is decoded with the model's top-1 token until it emits ``end`` or the
    sequence has ``max_tokens`` tokens; the world is never consulted, so a traversal
    with an impossible turn carries on from wherever the model believes it is.
    """
    return greedy_decode(model, [[o, d] for o, d in pairs], stop={END_TOKEN}, max_len=max_tokens,
                         batch=batch, progress=progress).sequences


def greedy_traversals(world: NavigationWorld, model, pairs: list[tuple[str, str]], batch: int = 256,
                      max_tokens: int = 100, progress: bool = False) -> list[list[str]]:
    """Decode each OD pair greedily (top-1 token each step), ``batch`` pairs at a time.

    A traversal stops after ``end``, after the first token the world rejects (kept, so
    the caller sees it is invalid), or at ``max_tokens`` tokens.
    """
    from tqdm.auto import tqdm

    out: list[list[str]] = []
    for b0 in tqdm(range(0, len(pairs), batch), desc="greedy traversals", disable=not progress, leave=False):
        block = [[o, d] for o, d in pairs[b0:b0 + batch]]
        out.extend(greedy_decode(model, block, stop=world.stop_tokens, max_len=max_tokens, world=world,
                                 batch=batch).sequences)
    return out


def capabilities(world: NavigationWorld, model, pairs: list[tuple[str, str]], batch: int = 256,
                 max_tokens: int = 100, progress: bool = False, noisy: tuple[int, int] | None = None) -> dict:
    """Capabilities of greedy decoding from OD pairs (the paper's §3.2 "valid traversals").

    ``legal_moves``: share of traversals in which the world rejects no token (within
    ``max_tokens``; a model that circles forever is legal but does not arrive);
    ``valid_traversal``: share that are legal and end with ``end`` at the destination;
    ``shortest_path``: share that are also a shortest path (by length, to 1e-6 relative);
    with ``noisy = (seed, n_weightings)``, ``noisy_shortest_path``: share that are a
    shortest path under one of the noisy weightings the noisy-shortest-paths data used
    (the paper's measure for its noisy model). Returns ``{name: MetricResult}``.
    """
    from worldmodel.results import aggregate

    router = Router(world)
    names: tuple[str, ...] = ("legal_moves", "valid_traversal", "shortest_path")
    if noisy is not None:
        # the same weightings as Generator.noisy_shortest_paths draws for this seed
        router.add_noisy_weightings(noisy[1], np.random.default_rng([noisy[0], 3]))
        names += ("noisy_shortest_path",)
    trials: dict[str, list[dict]] = {n: [] for n in names}
    if not pairs:
        for n in names:
            trials[n].append({"status": "skipped", "reason": "no test origin-destination pairs", "key": "-", "pair": "-"})
    for i, seq in enumerate(greedy_traversals(world, model, pairs, batch, max_tokens, progress)):
        o, d = seq[0], seq[1]
        legal = world.path_nodes(seq) is not None
        arrived = legal and seq[-1] == END_TOKEN
        best = router.shortest_length(o, d)
        shortest = arrived and best is not None and world.path_length_m(seq) <= best * (1 + 1e-6) + 1e-6
        values = [legal, arrived, shortest]
        if noisy is not None:
            values.append(arrived and router.is_shortest_under_any(world.path_nodes(seq), range(1, noisy[1] + 1)))
        for n, v in zip(names, values):
            trials[n].append({"status": "ok", "key": f"{o}->{d}", "pair": str(i), "score": float(v)})
    return {n: aggregate(n, trials[n]) for n in names}
