"""Navigation subcommand: ``worldmodel reconstruct`` (``worldmodel detours`` is generic: :mod:`worldmodel.cli`).

    worldmodel reconstruct TASK (--checkpoint DIR | --model true | --sequences FILE) [--n-sequences 500]
                                [--dataset NAME] [--algorithm paper|strict]
                                [--max-degree 4] [--max-distance-miles 0.5] [--corrupt RATE] [--seed S]
                                [--color-by length|direction] [--html [--open]] --out DIR

Where sequences come from (reconstruct):

* ``--checkpoint DIR [--n-sequences N]``: the model decodes greedily from ``N`` (default 500)
  distinct random origin–destination pairs of the task's test split (``--dataset``; default the
  checkpoint's dataset), up to ``end`` or the task's token limit, invalid moves included
  (:func:`~worldmodel.worlds.navigation.navigator.decode_unchecked`);
* ``--model true [--n-sequences N]``: ``N`` distinct random test sequences themselves (all valid);
  with ``--corrupt RATE`` this is the paper's corruption control;
* ``--sequences FILE``: one sequence per line.

``worldmodel detours`` on a navigation task starts from random test origin–destination
pairs (:meth:`~worldmodel.worlds.navigation.domain.NavigationDomain.detour_plan`);
its ``--model true`` is the world's own navigator
(:class:`~worldmodel.worlds.navigation.navigator.ShortestRouteModel`): at each step it
puts equal probability on the directions that lie on a shortest route (fewest moves) to
the destination and all mass on ``end`` at the destination.

This module only parses arguments and prints; the algorithms live in
:mod:`~worldmodel.worlds.navigation.navigator` and :mod:`~worldmodel.worlds.navigation.reconstruct`.

``--algorithm paper`` (the default) is the authors' Algorithm 1 as their code runs it;
``--algorithm strict`` is the order-independent variant with rollback (both described
in :mod:`.reconstruct`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from worldmodel import checkpoints, safety
from worldmodel.errors import WorldModelError

from .navigator import ShortestRouteModel, decode_unchecked, od_pairs
from .reconstruct import ALGORITHMS, MILE_M, Reconstructor, corrupt, format_stats


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _model(task, args):
    from worldmodel.commands.common import one_model

    one_model(args, "true")
    if args.checkpoint:
        return checkpoints.load(args.checkpoint, task.domain.world, device=args.device)
    return ShortestRouteModel(task.domain.world)


# ---------------------------------------------------------------------------
# reconstruct
# ---------------------------------------------------------------------------


def cmd_reconstruct(args) -> int:
    from worldmodel.commands.common import load_domain_task

    from .draw import draw_reconstruction, write_html

    task = load_domain_task(args.task, "navigation", ("reconstruct",))
    domain = task.domain
    world = domain.world
    m = world.map
    if args.max_degree < 1:
        raise WorldModelError(f"--max-degree must be at least 1, got {args.max_degree}")
    if not args.max_distance_miles > 0:
        raise WorldModelError(f"--max-distance-miles must be positive, got {args.max_distance_miles}")
    if args.corrupt is not None and not 0 <= args.corrupt <= 1:
        raise WorldModelError(f"--corrupt must be a share in [0, 1], got {args.corrupt}")
    sources = sum(bool(x) for x in (args.sequences, args.checkpoint, args.model))
    if sources != 1:
        raise WorldModelError("give exactly one of --sequences FILE, --checkpoint DIR or --model true")
    progress = not args.no_progress
    dataset = checkpoints.choose_dataset(domain.datasets(), args.dataset, args.checkpoint)
    if args.sequences:
        path = Path(args.sequences)
        if not path.is_file():
            raise WorldModelError(f"sequence file {path} does not exist")
        seqs = [line.split() for line in safety.read_text(path, "sequences", "sequence file").splitlines()
                if line.strip()]
        source = str(path)
    else:
        if args.n_sequences < 1:
            raise WorldModelError(f"--n-sequences must be at least 1, got {args.n_sequences}")
        if args.checkpoint:
            model = _model(task, args)
            pairs = od_pairs(domain, dataset, args.n_sequences, args.seed, args.data_dir, domain.max_tokens())
            if len(pairs) < args.n_sequences:
                print(f"note: the {dataset} test split has only {len(pairs)} distinct usable origin-destination "
                      f"pairs; decoding all {len(pairs)}, not the {args.n_sequences} asked")
            seqs = decode_unchecked(model, pairs, domain.max_tokens(), progress=progress)
            source = f"greedy decoding of {args.checkpoint} from {len(pairs)} {dataset} test pairs"
        else:
            test = domain.sequences("test", dataset, args.data_dir)
            rng = np.random.default_rng(args.seed)
            idx = rng.choice(len(test), size=min(args.n_sequences, len(test)), replace=False)
            if len(idx) < args.n_sequences:
                print(f"note: the {dataset} test split has only {len(test)} sequences; using all {len(test)}, "
                      f"not the {args.n_sequences} asked")
            seqs = [test[int(i)] for i in idx]
            source = f"{len(seqs)} {dataset} test sequences"
    if not seqs:
        raise WorldModelError("no sequences to reconstruct from")
    n_in = len(seqs)
    corrupted = None
    if args.corrupt is not None:
        seqs, chosen = corrupt(seqs, m, args.corrupt, seed=args.seed)
        corrupted = len(chosen)
        source += f"; valid ones only ({len(seqs)} of {n_in}), {corrupted} corrupted (rate {args.corrupt:g})"

    rec = Reconstructor(m, args.max_degree, args.max_distance_miles * MILE_M, args.algorithm).run(
        seqs, progress=progress)
    stats = {"task": task.name, "dataset": dataset, "source": source, "input_sequences": n_in,
             "corrupted": corrupted, **rec.stats()}
    if stats["well_formed"] == 0:
        reasons = "; ".join(f"{why} ×{n}" for why, n in sorted(stats["malformed_by_reason"].items()))
        if args.sequences:   # the input is not rides at all: an empty map would say nothing; stop, write nothing
            raise WorldModelError(f"sequence file {args.sequences}: none of its {stats['sequences']} sequences is a "
                                  f"well-formed ride on the {task.name} map ({reasons}); nothing to reconstruct")
        # a model whose every traversal is malformed: that is its result, said out loud
        print(f"note: none of the {stats['sequences']} traversals is a well-formed ride ({reasons}); "
              "the reconstructed map holds no new street")
    title = (f"{task.name}: {stats['used']} of {stats['sequences']} sequences consistent, "
             f"{stats['new_edges']} new edges\n({args.algorithm} algorithm, max degree {args.max_degree}, "
             f"{args.max_distance_miles:g} mi)")

    from worldmodel.safety import atomic_json

    out = Path(args.out)
    graph = {"task": task.name, "nodes": len(m.nodes), "edges": rec.edge_list()}
    atomic_json(out / "graph.json", graph, "reconstructed graph", indent=1)
    atomic_json(out / "stats.json", stats, "reconstruction statistics", indent=1)
    png = draw_reconstruction(rec, m, out / "reconstruction.png", color_by=args.color_by, title=title)
    print(f"{task.name}: {source}")
    print(format_stats(stats))
    written = [out / "graph.json", out / "stats.json", png]
    if args.html:
        written.append(write_html(rec, m, out / "reconstruction.html", color_by=args.color_by,
                                  open_browser=args.open, title=title))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


# ---------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------


def register(subparsers) -> None:
    r = subparsers.add_parser("reconstruct", help="the street map a model's traversals imply (Algorithm 1)")
    r.add_argument("task")
    r.add_argument("--checkpoint", help="decode this model greedily from random test OD pairs")
    r.add_argument("--model", choices=["true"], help="true: the task's own test sequences")
    r.add_argument("--sequences", help="a file of sequences, one per line")
    r.add_argument("--n-sequences", type=int, default=500,
                   help="how many distinct test OD pairs to decode (--checkpoint) or test sequences to take (--model "
                        "true), drawn without replacement (default 500; all of them, with a note, when the test "
                        "split holds fewer)")
    r.add_argument("--dataset", help="which dataset's test split (default: the checkpoint's, else the first)")
    r.add_argument("--data-dir")
    r.add_argument("--algorithm", choices=ALGORITHMS, default="paper",
                   help="paper: the authors' Algorithm 1 (default); strict: order-independent degree, rollback")
    r.add_argument("--max-degree", type=int, default=4, help="the most streets leaving an intersection (default 4)")
    r.add_argument("--max-distance-miles", type=float, default=0.5,
                   help="the longest new street the algorithm may add, in miles (default 0.5)")
    r.add_argument("--corrupt", type=float, help="keep valid sequences and re-label one step in this share")
    r.add_argument("--seed", type=int, default=0, help="seed of the draw of sequences and of --corrupt (default 0)")
    r.add_argument("--color-by", choices=["length", "direction"], default="length",
                   help="colour new streets by their length (default) or by their compass direction")
    r.add_argument("--html", action="store_true", help="also write an interactive map (folium, no tiles)")
    r.add_argument("--open", action="store_true", help="open the HTML map in a browser")
    r.add_argument("--device", default="cpu")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--out", required=True, help="folder for graph.json, stats.json and the figure")
    r.set_defaults(func=cmd_reconstruct)
