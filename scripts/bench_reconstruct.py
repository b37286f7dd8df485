"""Benchmark map reconstruction against a straightforward implementation.

The paper-size job: 6,400 traversals on the full 4,580-node Manhattan graph
(``world_model_edges.json`` from the shared data), drawn from the true world: random
origin–destination pairs whose shortest path has fewer than 100 moves, each walked by
a random valid route that reaches the destination within 100 moves; then a share of
them is corrupted (one direction re-labelled, see ``reconstruct.corrupt``).

Both implementations run on the same sequences; their outputs (every new edge, every
sequence's status, the set of used true edges) are asserted identical, and the time
ratio is printed.

    OMP_NUM_THREADS=1 python scripts/bench_reconstruct.py                  # paper size
    OMP_NUM_THREADS=1 python scripts/bench_reconstruct.py --n-sequences 800
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worldmodel.errors import WorldModelError  # noqa: E402
from worldmodel.worlds.navigation.geometry import DIRECTIONS, MILE_M, haversine_m  # noqa: E402
from worldmodel.worlds.navigation.reconstruct import corrupt, reconstruct  # noqa: E402


def hops_to(street_map, dest: str) -> dict[str, int]:
    """Breadth-first hop counts to ``dest`` on the reversed graph."""
    rev: dict[str, list[str]] = {}
    for (u, _), v in street_map.edges.items():
        rev.setdefault(v, []).append(u)
    dist = {dest: 0}
    q = deque([dest])
    while q:
        x = q.popleft()
        for u in rev.get(x, ()):
            if u not in dist:
                dist[u] = dist[x] + 1
                q.append(u)
    return dist


def random_traversals(street_map, n: int, seed: int, max_moves: int = 99) -> list[list[str]]:
    """``n`` valid traversals between random OD pairs (shortest path < 100 moves).

    Each step picks uniformly among the directions from which the destination is still
    reachable within ``max_moves`` moves in total, and a shortest-path direction with
    probability 1/2, so routes wander but always arrive.
    """
    rng = np.random.default_rng(seed)
    nodes = street_map.nodes
    out_edges: dict[str, list[tuple[str, str]]] = {}
    for (u, d), v in street_map.edges.items():
        out_edges.setdefault(u, []).append((d, v))
    for u in out_edges:
        out_edges[u].sort(key=lambda dv: DIRECTIONS.index(dv[0]))
    seqs: list[list[str]] = []
    cache: dict[str, dict[str, int]] = {}
    while len(seqs) < n:
        o, t = nodes[int(rng.integers(len(nodes)))], nodes[int(rng.integers(len(nodes)))]
        if o == t:
            continue
        h = cache.get(t)
        if h is None:
            h = cache[t] = hops_to(street_map, t)
        if o not in h or h[o] >= max_moves:
            continue
        cur, moves = o, []
        while cur != t:
            opts = out_edges[cur]
            left = max_moves - len(moves) - 1
            ok = [(d, v) for d, v in opts if v in h and h[v] <= left]
            if rng.random() < 0.5:
                ok = [(d, v) for d, v in ok if h[v] == h[cur] - 1]
            d, v = ok[int(rng.integers(len(ok)))]
            moves.append(d)
            cur = v
        seqs.append([o, t, *moves, "end"])
    return seqs


# ---------------------------------------------------------------------------
# The straightforward implementation (same semantics, no index, copies everywhere)
# ---------------------------------------------------------------------------


def naive_reconstruct(sequences, street_map, max_degree: int = 4, max_distance_m: float = 0.5 * MILE_M):
    """Algorithm 1 written plainly: linear scan for candidates, a copied graph per candidate."""
    nodes = list(street_map.nodes)
    order = {x: i for i, x in enumerate(nodes)}
    graph = dict(street_map.edges)
    true = set(street_map.edges)
    degree = {x: 0 for x in nodes}
    for (u, _) in street_map.edges:
        degree[u] += 1
    new_edges: dict[tuple[str, str], tuple[str, int]] = {}
    used_true: set[tuple[str, str]] = set()
    status: list[str] = []
    for idx, seq in enumerate(sequences):
        if (len(seq) < 3 or seq[-1] != "end" or seq[0] not in order or seq[1] not in order
                or any(t not in DIRECTIONS for t in seq[2:-1])):
            status.append("malformed")
            continue
        cur, dest, dirs = seq[0], seq[1], list(seq[2:-1])
        added, used, fail = [], [], None
        for j, d in enumerate(dirs):
            if (cur, d) in graph:
                used.append((cur, d))
                cur = graph[(cur, d)]
                continue
            if degree[cur] >= max_degree:
                fail = "degree limit"
                break
            cands = []
            if cur in street_map.coords:
                for v in nodes:  # linear scan of every node
                    if v == cur or v not in street_map.coords:
                        continue
                    dist = round(haversine_m(street_map.coords[cur], street_map.coords[v]) * 1000) / 1000  # mm, as the library
                    if dist <= max_distance_m:
                        cands.append((dist, order[v], v))
            cands.sort()
            if not cands:
                fail = "no candidate in range"
                break
            best, best_score = None, -1
            for _, _, v in cands:
                trial = dict(graph)  # a copy of the whole map per candidate
                trial[(cur, d)] = v
                rest = list(dirs[j + 1:])
                pos, score = v, 0
                for dk in rest:
                    if (pos, dk) not in trial:
                        break
                    pos = trial[(pos, dk)]
                    score += 1
                else:
                    if pos == dest:
                        score += 1
                if score > best_score:
                    best, best_score = v, score
            graph[(cur, d)] = best
            degree[cur] += 1
            added.append((cur, d))
            new_edges[(cur, d)] = (best, idx)
            cur = best
        if fail is None and cur != dest:
            fail = "walk ends away from the destination"
        if fail is not None:
            for key in added:
                del graph[key]
                degree[key[0]] -= 1
                del new_edges[key]
            status.append("failed: " + fail)
            continue
        used_true.update(e for e in used if e in true)
        status.append("used" if (added or any(e not in true for e in used)) else "valid")
    edges = sorted(((u, d, v, i) for (u, d), (v, i) in new_edges.items()), key=lambda e: e[3])
    return edges, used_true, status


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sequences", type=int, default=6400)
    ap.add_argument("--corrupt", type=float, default=0.25, help="share of sequences with one step re-labelled")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-degree", type=int, default=4)
    ap.add_argument("--max-distance-miles", type=float, default=0.5)
    ap.add_argument("--shared", default=None, help="shared data folder (default: $WORLDMODEL_SHARED or ../shared/data)")
    ap.add_argument("--skip-naive", action="store_true", help="time only the indexed implementation")
    args = ap.parse_args(argv)

    from worldmodel.worlds.navigation.sources import load_paper_graph, shared_data_dir

    base = Path(args.shared) if args.shared else shared_data_dir()
    folder = base / "manhattan"
    if not (folder / "world_model_edges.json").is_file():
        raise WorldModelError(f"{folder / 'world_model_edges.json'} not found (set --shared or WORLDMODEL_SHARED)")
    m = load_paper_graph(folder / "world_model_edges.json", folder / "nodes.csv", folder / "edges.csv")
    print(f"map: {len(m.nodes)} nodes, {len(m.edges)} edges")
    t0 = time.perf_counter()
    seqs = random_traversals(m, args.n_sequences, args.seed)
    seqs, corrupted = corrupt(seqs, m, args.corrupt, seed=args.seed + 1)
    print(f"sequences: {len(seqs)} ({len(corrupted)} corrupted), drawn in {time.perf_counter() - t0:.1f}s")
    max_m = args.max_distance_miles * MILE_M

    import scipy.spatial  # noqa: F401  (import time is not part of the algorithm)

    t0 = time.perf_counter()
    fast = reconstruct(seqs, m, args.max_degree, max_m)
    t_fast = time.perf_counter() - t0
    s = fast.stats()
    print(f"indexed:  {t_fast:8.2f} s   used {s['used']}  failed {s['failed']}  new edges {s['new_edges']}")
    if args.skip_naive:
        return 0
    t0 = time.perf_counter()
    edges, used_true, status = naive_reconstruct(seqs, m, args.max_degree, max_m)
    t_naive = time.perf_counter() - t0
    print(f"naive:    {t_naive:8.2f} s")
    assert [(e.u, e.direction, e.v, e.sequence) for e in fast.new_edges] == edges, "new edges differ"
    assert fast.true_used == used_true, "used true edges differ"
    assert [x.split(":")[0] if x.startswith("malformed") else x for x in fast.status] == status, "statuses differ"
    print(f"outputs identical; speed-up {t_naive / t_fast:.1f}x")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WorldModelError as exc:
        print(f"bench_reconstruct: error: {exc}", file=sys.stderr)
        sys.exit(2)
