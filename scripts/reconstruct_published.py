#!/usr/bin/env python
"""Map reconstruction from the authors' published traversals (the paper's Figure 3 inputs).

    OMP_NUM_THREADS=1 python scripts/reconstruct_published.py SEQUENCES_DIR
        [--expected DIR] [--results results/nav-manhattan] [--figures figures]

``SEQUENCES_DIR`` is the ``mapping/sequences`` folder of keyonvafa/world-model-evaluation:
``shortest/``, ``random/`` and ``traffic/``, each with the ``samples.txt`` the paper's
transformers produced (6,400 traversals each; not part of this repository). Each set is
reconstructed on the paper's graph from the shared data (``world_model_edges.json``:
variant ``shortest`` for the shortest-paths model, ``random`` for the random-walks and
traffic (noisy) models, as in the authors' folders) with both algorithms, degree 4 and
half a mile by default. Writes ``<results>/reconstruction-published.md`` + ``.json``
and, per set, ``<figures>/nav-manhattan-published-<set>.png`` (paper algorithm), plus
``<figures>/nav-manhattan-published-shortest-strict.png`` for comparison.

``--expected DIR`` (files ``<set>.json`` with ``"new": [[u, direction, v], ...]`` and
optionally ``"seconds"``) adds the Jaccard index of the paper algorithm's new-edge set
against those edges, e.g. the ones the authors' own code produced from the same file.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from worldmodel.errors import WorldModelError  # noqa: E402

SETS = {"shortest": ("Shortest paths", "shortest"), "random": ("Random walks", "random"),
        "traffic": ("Noisy shortest paths (traffic)", "random")}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sequences", help="the authors' mapping/sequences folder (shortest/, random/, traffic/)")
    ap.add_argument("--expected", help="folder of <set>.json new-edge sets to compare with (Jaccard)")
    ap.add_argument("--results", default="results/nav-manhattan")
    ap.add_argument("--figures", default="figures")
    ap.add_argument("--shared", help="shared data folder (default: $WORLDMODEL_SHARED or ../shared/data)")
    ap.add_argument("--max-degree", type=int, default=4)
    ap.add_argument("--max-distance-miles", type=float, default=0.5)
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    from worldmodel.progress import silence

    silence(args.no_progress)    # data generation's own bars too
    try:
        return run(args, argv)
    except WorldModelError as exc:
        print(f"reconstruct_published: error: {exc}", file=sys.stderr)
        return 2


def run(args, argv) -> int:
    from worldmodel.worlds.navigation.draw import draw_reconstruction
    from worldmodel.worlds.navigation.sources import load_paper_graph, shared_data_dir
    from worldmodel.worlds.navigation.reconstruct import MILE_M, Reconstructor

    folder = Path(args.sequences)
    missing = [s for s in SETS if not (folder / s / "samples.txt").is_file()]
    if missing:
        raise WorldModelError(f"{folder}: no {missing[0]}/samples.txt (want the authors' mapping/sequences folder)")
    base = (Path(args.shared) if args.shared else shared_data_dir()) / "manhattan"
    if not (base / "world_model_edges.json").is_file():
        raise WorldModelError(f"{base / 'world_model_edges.json'} not found (set --shared or WORLDMODEL_SHARED)")
    expected = Path(args.expected) if args.expected else None
    if expected is not None and not expected.is_dir():
        raise WorldModelError(f"--expected {expected} is not a folder")
    results, figures = Path(args.results), Path(args.figures)
    command = "OMP_NUM_THREADS=1 python scripts/reconstruct_published.py " + shlex.join(argv)
    max_m = args.max_distance_miles * MILE_M
    import scipy.spatial  # noqa: F401  (import time is not part of the algorithm)

    out: dict[str, dict] = {}
    maps = {}
    for name, (title, variant) in SETS.items():
        if variant not in maps:
            maps[variant] = load_paper_graph(base / "world_model_edges.json", base / "nodes.csv",
                                             base / "edges.csv", variant=variant)
        m = maps[variant]
        seqs = [line.split() for line in (folder / name / "samples.txt").read_text().splitlines() if line.strip()]
        row: dict[str, dict] = {}
        for algo in ("paper", "strict"):
            t0 = time.perf_counter()
            rec = Reconstructor(m, args.max_degree, max_m, algo).run(seqs, progress=not args.no_progress)
            seconds = time.perf_counter() - t0
            stats = {**rec.stats(), "seconds": seconds, "variant": variant}
            if algo == "paper" and expected is not None and (expected / f"{name}.json").is_file():
                ref = json.loads((expected / f"{name}.json").read_text())
                want = {tuple(e) for e in ref["new"]}
                got = {(e.u, e.direction, e.v) for e in rec.new_edges}
                stats["expected_new_edges"] = len(want)
                stats["jaccard_vs_expected"] = len(want & got) / len(want | got) if want | got else 1.0
                stats["expected_seconds"] = ref.get("seconds")
            if algo == "paper" or name == "shortest":
                fig = figures / f"nav-manhattan-published-{name}{'' if algo == 'paper' else '-strict'}.png"
                draw_reconstruction(rec, m, fig, title=(
                    f"The authors' {title.lower()} traversals\n{algo} algorithm: {stats['new_edges']} new edges,\n"
                    f"{stats['failed']} of {stats['sequences']} failed (degree {args.max_degree}, "
                    f"≤ {args.max_distance_miles:g} mi)"))
                stats["figure"] = str(fig)
            row[algo] = stats
            print(f"{name:8s} {algo:6s} {seconds:6.2f} s  new edges {stats['new_edges']:5d}  "
                  f"failed {stats['failed']:5d}  valid on the true map {stats['valid_on_true_map']}"
                  + (f"  Jaccard {stats['jaccard_vs_expected']:.4f}" if "jaccard_vs_expected" in stats else ""))
        out[name] = row
    results.mkdir(parents=True, exist_ok=True)
    (results / "reconstruction-published.json").write_text(json.dumps({"command": command, "sets": out}, indent=1))
    write_markdown(results / "reconstruction-published.md", out, args, command, expected is not None)
    print(f"wrote {results / 'reconstruction-published.md'}")
    return 0


def write_markdown(path: Path, out: dict, args, command: str, with_expected: bool) -> None:
    from worldmodel.worlds.navigation.geometry import DIRECTIONS

    head = ("| Traversals | algorithm | well-formed | valid on true map | consistent | failed | new edges | "
            "new-edge length median / max (m) | seconds |" + (" Jaccard vs expected |" if with_expected else ""))
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    dirs = ["| Traversals | algorithm | " + " | ".join(DIRECTIONS) + " |", "|---|---|" + "---|" * len(DIRECTIONS)]
    fails = []
    for name, row in out.items():
        for algo, s in row.items():
            ls = s["new_edge_length_m"] or {"median": 0, "max": 0}
            cell = ""
            if with_expected:
                cell = (f" {s['jaccard_vs_expected']:.4f} ({s['expected_new_edges']} edges) |"
                        if "jaccard_vs_expected" in s else " — |")
            rows.append(f"| {SETS[name][0]} | {algo} | {s['well_formed']} | {s['valid_on_true_map']} "
                        f"({100 * s['valid_share']:.1f}%) | {s['used']} | {s['failed']} | {s['new_edges']} | "
                        f"{ls['median']:.0f} / {ls['max']:.0f} | {s['seconds']:.1f} |{cell}")
            dirs.append(f"| {SETS[name][0]} | {algo} | "
                        + " | ".join(str(s["new_edges_by_direction"][d]) for d in DIRECTIONS) + " |")
            fails.append(f"- {SETS[name][0]}, {algo}: " + (", ".join(
                f"{n} {r}" for r, n in sorted(s["failed_by_reason"].items())) or "none")
                + (f"; malformed (skipped): {s['malformed']}" if s["malformed"] else ""))
    figs = [f"`{Path(s['figure']).as_posix()}`" for row in out.values() for s in row.values() if "figure" in s]
    expected_note = ""
    if with_expected:
        timing = [f"{SETS[n][0].lower()} {row['paper']['expected_seconds']:.0f} s"
                  for n, row in out.items() if row["paper"].get("expected_seconds")]
        expected_note = (
            "\n\"Jaccard vs expected\" compares the paper algorithm's new-edge set with the one in "
            f"`--expected` ({args.expected}). The expected sets were made by the authors' own "
            "`mapping/reconstruction.py` (`reconstruct_graph`, degree 4, 0.5 mile), run on a networkx "
            "graph of the same shared paper graph (same node order, edges in the file's order, the same "
            "coordinates) with the same well-formed traversals in file order; it took "
            + ", ".join(timing) + " on the same (shared, busy) machine.\n")
    text = f"""# Map reconstruction from the authors' published traversals

Made by `{command}`.

The paper's Figure 3 reconstructs Manhattan from 6,400 traversals of each of its transformers
(the authors publish them as `mapping/sequences/<set>/samples.txt` in
keyonvafa/world-model-evaluation). Here each set is reconstructed on the paper's graph
(`world_model_edges.json` from the shared data: 4,580 nodes, 9,705 edges; variant `shortest`
for the shortest-paths set, `random` for the other two) with max degree {args.max_degree} and new
edges ≤ {args.max_distance_miles:g} mile, by both algorithms of `worldmodel reconstruct`:
`paper` (the authors' Algorithm 1 as their code runs it, the default) and `strict` (degree
counts every true street, new edges only where the true map has none in that direction,
failed traversals rolled back). "valid on true map": well-formed traversals valid on the
true map (the paper reports 65–80% for its models); "consistent": traversals the
reconstructed map makes valid. Traversals holding a token that is neither a node nor a
direction where a move should be are malformed and skipped (the authors' code would add an
edge labelled with that token).
{expected_note}
{chr(10).join(rows)}

New edges by direction:

{chr(10).join(dirs)}

Failed traversals by reason:

{chr(10).join(fails)}

Figures: {", ".join(figs)}.
"""
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
