"""Navigation subcommands: ``worldmodel reconstruct`` and ``worldmodel detours``.

    worldmodel reconstruct TASK (--checkpoint DIR --n-sequences N | --model true --n-sequences N
                                 | --sequences FILE) [--dataset NAME] [--max-degree 4]
                                [--max-distance-miles 0.5] [--corrupt RATE] [--seed S]
                                [--color-by length|direction] [--html [--open]] --out DIR
    worldmodel detours TASK (--checkpoint DIR | --model true) --kind random|adversarial[,...]
                            --p 0,0.01,0.1,0.5,0.75 [--trials N] [--dataset NAME] [--seed S] --out FILE

Where sequences come from (reconstruct):

* ``--checkpoint DIR --n-sequences N``: the model decodes greedily from ``N`` random
  origin–destination pairs of the task's test split (``--dataset``; default the
  checkpoint's dataset), up to ``end`` or the task's token limit, invalid moves included
  (:func:`decode_unchecked`);
* ``--model true --n-sequences N``: ``N`` random test sequences themselves (all valid);
  with ``--corrupt RATE`` this is the paper's corruption control;
* ``--sequences FILE``: one sequence per line.

``--model true`` for detours is the world's own navigator: at each step it puts equal
probability on the directions that lie on a shortest route (fewest moves) to the
destination and all mass on ``end`` at the destination. (The uniform-over-valid-tokens
true model cannot be decoded greedily: its argmax is just the first valid token.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from worldmodel.errors import WorldModelError
from worldmodel.models import SequenceModel

from .reconstruct import MILE_M, Reconstructor, corrupt, format_stats


# ---------------------------------------------------------------------------
# Helpers shared by both commands
# ---------------------------------------------------------------------------


class ShortestRouteModel(SequenceModel):
    """The navigation world as a greedy-decodable model: shortest-route directions, then ``end``.

    After ``origin destination moves...`` it spreads probability equally over the
    directions that reduce the remaining number of moves by one, or puts it all on
    ``end`` at the destination. Prefixes that are invalid (or unfinished) get no mass.
    """

    name = "true"

    def __init__(self, world):
        self.world = world
        self.tokens = tuple(world.tokens)

    def next_token_probs(self, prefixes):
        from worldmodel.dfa import run

        idx = self.token_index()
        out = np.zeros((len(prefixes), len(self.tokens)))
        for i, prefix in enumerate(prefixes):
            state = run(self.world, list(prefix))
            if not isinstance(state, tuple):
                continue
            cur, dest = state
            if cur == dest:
                out[i, idx["end"]] = 1.0
                continue
            hops = self.world.hops_to(dest)
            if cur not in hops:
                continue
            good = [d for d, v in self.world.map.neighbours(cur).items() if hops.get(v, -1) == hops[cur] - 1]
            for d in good:
                out[i, idx[d]] = 1.0 / len(good)
        return out

    def score(self, prefixes, suffixes, acceptance):  # pragma: no cover - not used by these commands
        raise WorldModelError("the shortest-route model only serves greedy decoding (detours)")

    def sample(self, prefixes, uniforms, acceptance, stop_tokens=frozenset()):  # pragma: no cover
        raise WorldModelError("the shortest-route model only serves greedy decoding (detours)")


def reachable_within(world, max_len: int):
    """Detour predicate: a direction is allowed when the destination stays reachable in time.

    ``allowed((node, dest), token, length)``: ``token`` is a direction with a street at
    ``node``, and after it the fewest moves to ``dest`` plus the final ``end`` keep the
    whole sequence within ``max_len`` tokens.
    """

    def allowed(state, token, length) -> bool:
        if not isinstance(state, tuple) or token == "end":
            return False
        cur, dest = state
        nxt = world.map.edges.get((cur, token))
        if nxt is None:
            return False
        h = world.hops_to(dest).get(nxt)
        return h is not None and length + 1 + h + 1 <= max_len

    return allowed


def _load(task_name: str):
    from worldmodel.tasks import load_task

    task = load_task(task_name)
    if task.config.get("domain") != "navigation":
        raise WorldModelError(f"task {task.name} is a {task.config.get('domain')!r} task; "
                              "reconstruct and detours need a navigation task")
    return task


def _dataset(task, args) -> str:
    if getattr(args, "dataset", None):
        return args.dataset
    if getattr(args, "checkpoint", None):
        try:
            from worldmodel.train import checkpoint_dataset

            got = checkpoint_dataset(args.checkpoint)
            if got:
                return got
        except ImportError:
            pass
    return task.domain.datasets()[0]


def _od_pairs(task, dataset: str, n: int, seed: int, data_dir=None, max_len: int = 100) -> list[tuple[str, str]]:
    """``n`` random test OD pairs (distinct while there are enough), reachable within ``max_len``."""
    from .data import iter_od_pairs

    world = task.domain.world
    pairs = [(o, d) for o, d in iter_od_pairs(task.domain.sequences("test", dataset, data_dir))
             if world.hops_to(d).get(o, max_len) + 3 <= max_len]
    if not pairs:
        raise WorldModelError(f"task {task.name}: the {dataset} test split has no usable origin-destination pair")
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(pairs), size=n, replace=n > len(pairs))
    return [pairs[int(i)] for i in idx]


def decode_unchecked(model, pairs: list[tuple[str, str]], max_tokens: int, batch: int = 256,
                     progress: bool = False) -> list[list[str]]:
    """Greedy traversals that keep going after an invalid move (reconstruction needs the whole ride).

    Each pair is decoded with the model's top-1 token until it emits ``end`` or the
    sequence has ``max_tokens`` tokens; the world is never consulted, so a traversal
    with an impossible turn carries on from wherever the model believes it is.
    """
    from tqdm.auto import tqdm

    tokens = list(model.tokens)
    seqs = [[o, d] for o, d in pairs]
    live = [i for i in range(len(seqs)) if len(seqs[i]) < max_tokens]
    bar = tqdm(total=len(seqs), desc="greedy decoding", disable=not progress, leave=False)
    while live:
        probs = np.concatenate([np.asarray(model.next_token_probs([seqs[i] for i in live[b:b + batch]]))
                                for b in range(0, len(live), batch)])
        nxt = []
        for row, i in zip(probs, live):
            tok = tokens[int(np.argmax(row))]
            seqs[i].append(tok)
            if tok != "end" and len(seqs[i]) < max_tokens:
                nxt.append(i)
            else:
                bar.update(1)
        live = nxt
    bar.close()
    return seqs


def _model(task, args):
    if bool(getattr(args, "checkpoint", None)) == bool(getattr(args, "model", None)):
        raise WorldModelError("give exactly one of --checkpoint DIR or --model true")
    if args.checkpoint:
        from worldmodel.models import HFModel

        return HFModel.from_pretrained(args.checkpoint, task.domain.world, device=getattr(args, "device", "cpu"))
    return ShortestRouteModel(task.domain.world)


# ---------------------------------------------------------------------------
# reconstruct
# ---------------------------------------------------------------------------


def cmd_reconstruct(args) -> int:
    from .draw import draw_reconstruction, write_html

    task = _load(args.task)
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
    dataset = _dataset(task, args)
    if args.sequences:
        path = Path(args.sequences)
        if not path.is_file():
            raise WorldModelError(f"sequence file {path} does not exist")
        seqs = [line.split() for line in path.read_text().splitlines() if line.strip()]
        source = str(path)
    else:
        if not args.n_sequences or args.n_sequences < 1:
            raise WorldModelError("--checkpoint and --model need --n-sequences N (N >= 1)")
        if args.checkpoint:
            model = _model(task, args)
            pairs = _od_pairs(task, dataset, args.n_sequences, args.seed, args.data_dir, domain.max_tokens())
            seqs = decode_unchecked(model, pairs, domain.max_tokens(), progress=progress)
            source = f"greedy decoding of {args.checkpoint} from {len(pairs)} {dataset} test pairs"
        else:
            test = domain.sequences("test", dataset, args.data_dir)
            rng = np.random.default_rng(args.seed)
            idx = rng.choice(len(test), size=args.n_sequences, replace=args.n_sequences > len(test))
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

    rec = Reconstructor(m, args.max_degree, args.max_distance_miles * MILE_M).run(seqs, progress=progress)
    stats = {"task": task.name, "dataset": dataset, "source": source, "input_sequences": n_in,
             "corrupted": corrupted, **rec.stats()}
    title = (f"{task.name}: {stats['used']} of {stats['sequences']} sequences consistent, "
             f"{stats['new_edges']} new edges (max degree {args.max_degree}, {args.max_distance_miles:g} mi)")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    graph = {"task": task.name, "nodes": len(m.nodes), "edges": rec.edge_list()}
    (out / "graph.json").write_text(json.dumps(graph, indent=1))
    (out / "stats.json").write_text(json.dumps(stats, indent=1))
    png = draw_reconstruction(rec, m, out / "reconstruction.png", color_by=args.color_by, title=title)
    print(f"{task.name}: {source}")
    print(format_stats(stats))
    written = [out / "graph.json", out / "stats.json", png]
    if args.html:
        written.append(write_html(rec, m, out / "reconstruction.html", color_by=args.color_by,
                                  open_browser=args.open))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


# ---------------------------------------------------------------------------
# detours
# ---------------------------------------------------------------------------


def cmd_detours(args) -> int:
    from worldmodel.detours import parse_kinds, parse_ps, report, run_kinds

    task = _load(args.task)
    domain = task.domain
    world = domain.world
    kinds = parse_kinds(args.kind)
    ps = parse_ps(args.p)
    if args.trials < 1:
        raise WorldModelError(f"--trials must be at least 1, got {args.trials}")
    model = _model(task, args)
    dataset = _dataset(task, args)
    max_len = domain.max_tokens()
    pairs = _od_pairs(task, dataset, args.trials, args.seed, args.data_dir, max_len)
    starts = [[o, d] for o, d in pairs]
    allowed = reachable_within(world, max_len)
    results, trials = run_kinds(model, world, starts, kinds, ps, allowed=allowed, max_len=max_len,
                                seed=args.seed, progress=not args.no_progress)
    meta = {"task": task.name, "dataset": dataset, "model": args.checkpoint or "true",
            "trials": args.trials, "max_len": max_len, "seed": args.seed}
    report(Path(args.out), results, trials, meta, f"{task.name}: {meta['model']} on {args.trials} {dataset} test pairs")
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
    r.add_argument("--n-sequences", type=int, help="how many sequences to draw (with --checkpoint / --model)")
    r.add_argument("--dataset", help="which dataset's test split (default: the checkpoint's, else the first)")
    r.add_argument("--data-dir")
    r.add_argument("--max-degree", type=int, default=4)
    r.add_argument("--max-distance-miles", type=float, default=0.5)
    r.add_argument("--corrupt", type=float, help="keep valid sequences and re-label one step in this share")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--color-by", choices=["length", "direction"], default="length")
    r.add_argument("--html", action="store_true", help="also write an interactive map (folium, no tiles)")
    r.add_argument("--open", action="store_true", help="open the HTML map in a browser")
    r.add_argument("--device", default="cpu")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--out", required=True, help="folder for graph.json, stats.json and the figure")
    r.set_defaults(func=cmd_reconstruct)

    d = subparsers.add_parser("detours", help="share of traversals that survive forced detours")
    d.add_argument("task")
    d.add_argument("--checkpoint")
    d.add_argument("--model", choices=["true"], help="true: the world's shortest-route navigator")
    d.add_argument("--kind", default="random", help="random, adversarial, or both comma-separated")
    d.add_argument("--p", default="0,0.01,0.1,0.5,0.75", help="detour probabilities, comma-separated")
    d.add_argument("--trials", type=int, default=100)
    d.add_argument("--dataset")
    d.add_argument("--data-dir")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--device", default="cpu")
    d.add_argument("--no-progress", action="store_true")
    d.add_argument("--out", required=True, help="JSON file with per-p results and every trial")
    d.set_defaults(func=cmd_detours)
