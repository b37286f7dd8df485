"""Benchmark map reconstruction (both algorithms) against plain implementations.

The paper-size job: 6,400 traversals on the full 4,580-node Manhattan graph
(``world_model_edges.json`` from the shared data). By default they are drawn from the
true world: random origin–destination pairs whose shortest path has fewer than 100
moves, each walked by a random valid route that reaches the destination within 100
moves; then a share of them is corrupted (one direction re-labelled, see
``reconstruct.corrupt``). With ``--sequences FILE`` they are read from a file instead,
one per line: e.g. the authors' published traversals (``mapping/sequences/<model>/
samples.txt`` in keyonvafa/world-model-evaluation; use ``--variant random`` for the
random and traffic ones, whose graph is the ``random`` variant).

Each algorithm runs in its indexed library version and in a plain version written in
this script (linear scan of every node for candidates, dictionaries, a fresh copy of
the walk state per candidate); their outputs (every new edge, every sequence's status,
the set of used true edges) are asserted identical, and the time ratio is printed.
``--expected FILE`` (JSON with ``"new": [[u, direction, v], ...]``, e.g. the new edges
the authors' code produced from the same file) is compared with the paper algorithm's
new-edge set (Jaccard index printed; equal sets asserted).

    OMP_NUM_THREADS=1 python scripts/bench_reconstruct.py                      # both, paper size
    OMP_NUM_THREADS=1 python scripts/bench_reconstruct.py --algorithm paper --n-sequences 800
    OMP_NUM_THREADS=1 python scripts/bench_reconstruct.py --algorithm paper --sequences samples.txt
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worldmodel.errors import WorldModelError  # noqa: E402
from worldmodel.worlds.navigation.geometry import DIRECTIONS, MILE_M, haversine_m  # noqa: E402
from worldmodel.worlds.navigation.reconstruct import corrupt, reconstruct  # noqa: E402
from worldmodel.worlds.navigation.geometry import haversine_miles  # noqa: E402


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


def plain_paper_reconstruct(sequences, street_map, max_degree: int = 4, max_miles: float = 0.5):
    """The paper's Algorithm 1 written plainly (rules in ``reconstruct_paper``).

    Returns ``(new edges as (u, d, v, sequence index), used true edges, statuses)`` in the
    library's conventions. Candidates: a scan of every node; each candidate's walk gets
    its own fresh record of tentatively taken edges.
    """
    nodes = list(street_map.nodes)
    true = dict(street_map.edges)  # (u, d) -> v
    state = {key: "unused" for key in true}  # unused / used / shadowed (a new edge took its place)
    new: dict[tuple[str, str], str] = {}  # (u, d) -> v
    new_list: list[tuple[str, str, str, int]] = []
    degree = {x: 0 for x in nodes}  # used true edges + new edges

    def following(u, d):
        """The used or new edge ``u --d-->``, if any."""
        if (u, d) in new:
            return new[(u, d)]
        if state.get((u, d)) == "used":
            return true[(u, d)]
        return None

    def room(u, d, taken):
        mine = [e for e in taken if e[0] == u]
        return degree[u] + len(mine) < max_degree and following(u, d) is None and (u, d) not in taken

    def walk(start, moves, dest, block=None):
        """(length, edges walked): every move to ``dest``, else the longest prefix ending with room."""
        taken = [] if block is None else [block]  # edges counted as used by this walk
        pos, path, best = start, [], 0
        for i, d in enumerate(moves):
            nxt = following(pos, d)
            if nxt is None:
                if state.get((pos, d)) != "unused" or (pos, d) == block:
                    break
                if (pos, d) not in taken:
                    if degree[pos] + len([e for e in taken if e[0] == pos]) >= max_degree:
                        break
                    taken.append((pos, d))
                nxt = true[(pos, d)]
            path.append((pos, d))
            pos = nxt
            if i + 1 == len(moves):
                if pos == dest:
                    return len(moves), path
                break
            if room(pos, moves[i + 1], taken):
                best = i + 1
        return best, path[:best]

    def use(path):
        for u, d in path:
            if (u, d) not in new and state.get((u, d)) == "unused":
                state[(u, d)] = "used"
                degree[u] += 1

    def add(u, d, v, idx):
        new[(u, d)] = v
        new_list.append((u, d, v, idx))
        degree[u] += 1
        if state.get((u, d)) == "unused":
            state[(u, d)] = "shadowed"

    def in_range(u, v):
        return haversine_miles(street_map.coords[u], street_map.coords[v]) <= max_miles

    status: list[str] = []
    for idx, seq in enumerate(sequences):
        if (len(seq) < 3 or seq[-1] != "end" or seq[0] not in degree or seq[1] not in degree
                or any(t not in DIRECTIONS for t in seq[2:-1])):
            status.append("malformed")
            continue
        origin, dest, moves = seq[0], seq[1], list(seq[2:-1])
        ok_true = walk_true(street_map, seq)
        fail = None
        if not moves:
            fail = None if origin == dest else "walk ends away from the destination"
        else:
            k, path = walk(origin, moves, dest)
            use(path)
            pos = following(*path[-1]) if path else origin
            if k == 0 and (degree[origin] >= max_degree or following(origin, moves[0]) is not None):
                fail = "no room at the origin"
            while fail is None and k < len(moves):
                d = moves[k]
                if k == len(moves) - 1:
                    if in_range(pos, dest):
                        add(pos, d, dest, idx)
                        k += 1
                    else:
                        fail = "destination out of range"
                    break
                best, best_path, best_len = None, [], 0
                for c in nodes:  # every node, in node order
                    if not in_range(pos, c):
                        continue
                    length, cpath = walk(c, moves[k + 1:], dest, block=(pos, d))
                    if length > best_len:
                        best, best_path, best_len = c, cpath, length
                if best is None:
                    fail = "no candidate continues"
                    break
                add(pos, d, best, idx)
                use(best_path)
                pos = following(*best_path[-1])
                k += 1 + best_len
        if fail is not None:
            status.append("failed: " + fail)
        else:
            status.append("valid" if ok_true else "used")
    used = {key for key, st in state.items() if st == "used"}
    return new_list, used, status


def walk_true(street_map, seq) -> bool:
    cur = seq[0]
    for t in seq[2:-1]:
        cur = street_map.edges.get((cur, t))
        if cur is None:
            return False
    return cur == seq[1]


def _timed(fn, *args):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithm", choices=["paper", "strict", "both"], default="both")
    ap.add_argument("--n-sequences", type=int, default=6400)
    ap.add_argument("--corrupt", type=float, default=0.25, help="share of sequences with one step re-labelled")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sequences", help="read the sequences from this file (one per line) instead of drawing them")
    ap.add_argument("--variant", default="shortest", help="which edge set of the paper graph (shortest or random)")
    ap.add_argument("--expected", help="JSON with the expected paper-algorithm new edges: {\"new\": [[u, d, v], ...]}")
    ap.add_argument("--max-degree", type=int, default=4)
    ap.add_argument("--max-distance-miles", type=float, default=0.5)
    ap.add_argument("--shared", default=None, help="shared data folder (default: $WORLDMODEL_SHARED or ../shared/data)")
    ap.add_argument("--skip-naive", action="store_true", help="time only the indexed implementations")
    args = ap.parse_args(argv)

    from worldmodel.worlds.navigation.sources import load_paper_graph, shared_data_dir

    base = Path(args.shared) if args.shared else shared_data_dir()
    folder = base / "manhattan"
    if not (folder / "world_model_edges.json").is_file():
        raise WorldModelError(f"{folder / 'world_model_edges.json'} not found (set --shared or WORLDMODEL_SHARED)")
    m = load_paper_graph(folder / "world_model_edges.json", folder / "nodes.csv", folder / "edges.csv",
                         variant=args.variant)
    print(f"map: {len(m.nodes)} nodes, {len(m.edges)} edges ({args.variant})")
    t0 = time.perf_counter()
    if args.sequences:
        path = Path(args.sequences)
        if not path.is_file():
            raise WorldModelError(f"sequence file {path} does not exist")
        seqs = [line.split() for line in path.read_text().splitlines() if line.strip()]
        print(f"sequences: {len(seqs)} from {path}")
    else:
        seqs = random_traversals(m, args.n_sequences, args.seed)
        seqs, corrupted = corrupt(seqs, m, args.corrupt, seed=args.seed + 1)
        print(f"sequences: {len(seqs)} ({len(corrupted)} corrupted), drawn in {time.perf_counter() - t0:.1f}s")
    max_m = args.max_distance_miles * MILE_M

    import scipy.spatial  # noqa: F401  (import time is not part of the algorithm)

    algorithms = ["paper", "strict"] if args.algorithm == "both" else [args.algorithm]
    for algo in algorithms:
        fast, t_fast, c_fast = _timed(reconstruct, seqs, m, args.max_degree, max_m, False, algo)
        s = fast.stats()
        print(f"{algo} indexed: {t_fast:8.2f} s ({c_fast:.2f} s CPU)   valid on the true map "
              f"{s['valid_on_true_map']}  consistent {s['used']}  failed {s['failed']}  new edges {s['new_edges']}")
        if algo == "paper" and args.expected:
            want = {tuple(e) for e in json.loads(Path(args.expected).read_text())["new"]}
            got = {(e.u, e.direction, e.v) for e in fast.new_edges}
            jac = len(want & got) / len(want | got) if want | got else 1.0
            print(f"paper vs {args.expected}: {len(got)} vs {len(want)} new edges, {len(want & got)} in common, "
                  f"Jaccard {jac:.4f}")
            assert want == got, "new-edge set differs from the expected one"
        if args.skip_naive:
            continue
        if algo == "paper":
            (edges, used_true, status), t_naive, c_naive = _timed(
                plain_paper_reconstruct, seqs, m, args.max_degree, max_m / MILE_M)
        else:
            (edges, used_true, status), t_naive, c_naive = _timed(
                naive_reconstruct, seqs, m, args.max_degree, max_m)
        print(f"{algo} plain:   {t_naive:8.2f} s ({c_naive:.2f} s CPU)")
        assert [(e.u, e.direction, e.v, e.sequence) for e in fast.new_edges] == edges, "new edges differ"
        assert fast.true_used == used_true, "used true edges differ"
        assert [x.split(":")[0] if x.startswith("malformed") else x for x in fast.status] == status, \
            "statuses differ"
        print(f"{algo}: outputs identical; speed-up {t_naive / t_fast:.1f}x (CPU {c_naive / c_fast:.1f}x)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WorldModelError as exc:
        print(f"bench_reconstruct: error: {exc}", file=sys.stderr)
        sys.exit(2)
