#!/usr/bin/env python
"""Reproduce the paper's navigation results (Vafa et al. 2024, Tables 1 and 2, Figure 3) at CPU scale.

    OMP_NUM_THREADS=1 python scripts/reproduce_navigation.py TASK [--runs runs] [--steps N]
                      [--trials N] [--detour-trials N] [--recon-sequences N] [--corrupt-rate R]
                      [--algorithm paper|strict]
                      [--skip-train]

For a navigation task (``nav-grid``, ``nav-manhattan-region``, ...) it runs

1. **data**: the three training sets (shortest paths, noisy shortest paths, random walks)
   into ``<runs>/<task>/data``;
2. **training**: one GPT-2 per dataset into ``<runs>/<task>/<dataset>``. A finished
   checkpoint is reused when its ``training.json`` and saved ``task.toml`` match the
   task (world, data, model and training settings, step count); otherwise it is
   retrained (``--skip-train`` refuses to train and stops instead);
3. **Table 1**: next-token test, current-state probe, compression precision, distinction
   precision and recall, plus the navigation capabilities (greedy decoding from test
   origin–destination pairs), for the rows untrained / shortest paths / noisy shortest
   paths / random walks / true world model -> ``<results>/<task>/table1.md`` + ``.json``
   and ``<figures>/<task>-metrics.png``. Trial logs go to ``<runs>/<task>/eval/``, so a
   rerun resumes;
4. **Table 2**: detours, random and adversarial, at p in {0, 0.01, 0.1, 0.5, 0.75}, for each
   trained model and the world's shortest-route navigator as a reference row, from the
   same held-out OD pairs (the shortest-paths test split) ->
   ``<results>/<task>/table2.md`` + ``.json`` and ``<figures>/<task>-detours.png``;
5. **map reconstruction** (Algorithm 1, the paper's algorithm unless ``--algorithm
   strict``) from the true test sequences, from the corruption control (valid sequences
   with one step re-labelled in a share equal to the shortest-paths model's invalid rate,
   or ``--corrupt-rate``) and from each trained model's greedy traversals ->
   ``<figures>/<task>-map-<which>.png`` and ``<results>/<task>/reconstruction.md`` +
   ``.json``; the shortest-paths model's traversals are also reconstructed with the
   other algorithm, for comparison (``<figures>/<task>-map-shortest-paths-<other>.png``).

Every Markdown file states the command that produced it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from worldmodel.errors import WorldModelError  # noqa: E402

DATASETS = ("shortest-paths", "noisy-shortest-paths", "random-walks")
DATASET_LABELS = {"shortest-paths": "Shortest paths", "noisy-shortest-paths": "Noisy shortest paths",
                  "random-walks": "Random walks"}
PS = (0.0, 0.01, 0.1, 0.5, 0.75)
KINDS = ("random", "adversarial")
FIVE = ("next_token", "probe", "compression_precision", "distinction_precision", "distinction_recall")
CAPS = ("valid_traversal", "shortest_path", "noisy_shortest_path", "legal_moves")
LABELS = {
    "next_token": "Next-token test", "probe": "Current-state probe", "compression_precision": "Compression precision",
    "distinction_precision": "Distinction precision", "distinction_recall": "Distinction recall",
    "valid_traversal": "Valid traversal", "shortest_path": "Shortest path",
    "noisy_shortest_path": "Noisy-shortest path", "legal_moves": "Legal moves",
}
SHORT = {"next_token": "Next-token", "probe": "Probe", "compression_precision": "Compr. P",
         "distinction_precision": "Dist. P", "distinction_recall": "Dist. R"}


@dataclass
class Row:
    label: str
    kind: str  # "untrained", "checkpoint" or "true"
    dataset: str  # held-out data for next-token, probe and capabilities
    checkpoint: Path | None = None


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------


def ensure_checkpoint(task, dataset: str, runs: Path, steps: int | None, skip_train: bool,
                      progress: bool) -> tuple[Path, dict]:
    """``<runs>/<dataset>``: reused when it matches the task, else trained (``--skip-train``: refused)."""
    from worldmodel.checkpoints import reuse_or_train

    try:
        return reuse_or_train(task, dataset, runs / dataset, steps, data_dir=runs / "data", train=not skip_train,
                              progress=progress)
    except WorldModelError as exc:
        raise WorldModelError(f"--skip-train: {exc}" if skip_train else str(exc)) from None


# ---------------------------------------------------------------------------
# Table 1
# ---------------------------------------------------------------------------


def build(task, row: Row, seed: int):
    from worldmodel.evaluator import build_model

    checkpoint = row.checkpoint if row.kind == "checkpoint" else None
    model = build_model(task, checkpoint, None if checkpoint else row.kind, seed=seed)
    model.source = row.label
    return model


def table1(task, rows: list[Row], settings, runs: Path, progress: bool) -> dict:
    from worldmodel.evaluator import evaluate

    out = {}
    for row in rows:
        t0 = time.time()
        model = build(task, row, settings.seed)
        metrics = ["next-token", "compression", "distinction"] + (["probe"] if row.kind != "true" else [])
        slug = row.label.lower().replace(" ", "-")
        summary = evaluate(task, model, metrics, settings, runs / "eval" / f"{slug}.json", dataset=row.dataset,
                           data_dir=runs / "data", progress=progress)
        summary["seconds_this_run"] = time.time() - t0  # resumed trials cost nothing
        out[row.label] = summary
        print(f"evaluated {row.label} in {summary['seconds_this_run']:.0f} s")
    return out


def _cell(m: dict | None, digits: int = 2) -> str:
    if not m or not m.get("n"):
        return "—"
    return f"{m['mean']:.{digits}f} ({m['stderr']:.{digits}f})"


def write_table1(path: Path, task, results: dict, training: dict, settings, command: str,
                 rerun: list[str] | None = None) -> None:
    cols = FIVE + ("valid_traversal", "shortest_path", "noisy_shortest_path")
    head = "| Model | " + " | ".join(SHORT.get(c, LABELS[c]) for c in cols) + " |"
    lines = [head, "|---|" + "|".join("---" for _ in cols) + "|"]
    for label, summary in results.items():
        lines.append(f"| {label} | " + " | ".join(_cell(summary["metrics"].get(c)) for c in cols) + " |")
    w = task.world
    train_lines = ["| Dataset | train sequences | parameters | steps × batch | seconds | final val loss |",
                   "|---|---|---|---|---|---|"]
    for ds, info in training.items():
        vl = info.get("final_val_loss")
        train_lines.append(f"| {ds} | {info['train_sequences']:,} | {info['n_params']:,} | "
                           f"{info['steps']} × {info['batch_size']} | {info['seconds']:.0f} | "
                           f"{'—' if vl is None else f'{vl:.4f}'} |")
    n_edges = len(w.map.edges)
    cap = task.section("capabilities")
    text = f"""# {task.name}: Table 1 (navigation world model metrics)

Made by `{command}`.

Map: {len(w.map.nodes)} intersections, {n_edges} directed streets. Each cell is the mean with its
standard error in brackets (over states for compression and distinction, over sequences for
next-token, over test positions for the probe, over origin–destination pairs for the capabilities).
Settings: acceptance {settings.acceptance.spec()}, M = {settings.M}, k = {settings.k},
{settings.trials} trials per metric, {settings.probe_sequences} probe sequences.
Next-token, probe and capabilities use each model's own held-out data (the untrained network and the
true world model: shortest paths). Capabilities: greedy decoding from up to {cap.get('pairs', 200)} test
origin–destination pairs; "valid traversal" = legal moves ending with `end` at the destination,
"shortest path" = also shortest by length, "noisy-shortest path" = shortest under one of the
noisy weightings of the noisy-shortest-paths data. The true world model is uniform over valid
tokens, so its greedy decoding circles without arriving (valid traversal 0 is expected; Table 2
uses the shortest-route navigator instead). It has no hidden states, so no probe.
{_conventions_note(results, rerun)}
{chr(10).join(lines)}

Training (CPU, `OMP_NUM_THREADS=1`):

{chr(10).join(train_lines)}
"""
    path.write_text(text)


def _conventions_note(results: dict, rerun: list[str] | None) -> str:
    """Which rows follow the paper's code on keep-top sampling and next-token positions/pooling."""
    new = [label for label, r in results.items() if "keep_top" in r.get("settings", {})]
    if len(new) == len(results):
        return ("Conventions of the paper's code: a sample keeps the most likely token where none clears ε; the "
                "next-token test scores the moves after origin and destination, pooled over positions.\n")
    return (f"Rows {', '.join(new)} follow the paper's code (a sample keeps the most likely token where none "
            "clears ε; next-token scores the moves after origin and destination, pooled over positions, standard "
            f"error clustered by sequence). Rows {', '.join(k for k in results if k not in new)} were evaluated "
            "before that change (a sample ended where no token cleared ε; next-token scored every prefix, "
            "averaged per sequence) and were not re-run, as that needs their checkpoints.\n")


def plot_metrics(path: Path, task_name: str, results: dict) -> None:
    from worldmodel.plotting import metric_bars

    metric_bars(path, {label: r["metrics"] for label, r in results.items()}, FIVE, LABELS,
                f"{task_name}: next-token and probe vs. Myhill–Nerode metrics")


# ---------------------------------------------------------------------------
# Table 2: detours
# ---------------------------------------------------------------------------


def detour_pairs(task, runs: Path, n: int, seed: int) -> list[tuple[str, str]]:
    from worldmodel.worlds.navigation.navigator import od_pairs

    return od_pairs(task.domain, "shortest-paths", n, seed, runs / "data", task.domain.max_tokens())


def table2(task, models: dict[str, object], pairs, ps, runs: Path, seed: int, progress: bool) -> dict:
    """``{label: [result dicts]}``; each (model, kind) is cached in ``<runs>/detours`` and reused."""
    from worldmodel.detours import cached, run_detours
    from worldmodel.worlds.navigation.navigator import reachable_within

    world = task.world
    max_len = task.domain.max_tokens()
    allowed = reachable_within(world, max_len)
    starts = [[o, d] for o, d in pairs]
    out = {}
    for label, make in models.items():
        out[label] = []
        for kind in KINDS:
            slug = label.lower().replace(" ", "-").replace("(", "").replace(")", "")
            meta = {"task": task.name, "model": label, "kind": kind, "ps": list(ps), "seed": seed,
                    "pairs": [list(p) for p in pairs], "max_len": max_len}

            def run(make=make, kind=kind):
                results, trials = run_detours(make(), world, starts, kind, ps, allowed=allowed, max_len=max_len,
                                              seed=seed, progress=progress)
                return results, trials, {}

            out[label] += cached(runs / "detours" / f"{slug}-{kind}.json", meta, run)["results"]
    return out


def write_table2(path: Path, task, detours: dict, n_pairs: int, ps, command: str) -> None:
    head = "| Model | detour | " + " | ".join(f"p = {p:g}" for p in ps) + " |"
    lines = [head, "|---|---|" + "|".join("---" for _ in ps) + "|"]
    for label, res in detours.items():
        for kind in KINDS:
            by_p = {r["p"]: r for r in res if r["kind"] == kind}
            cells = [f"{by_p[p]['share']:.2f} ({by_p[p]['stderr']:.2f})" if p in by_p else "—" for p in ps]
            lines.append(f"| {label} | {kind} | " + " | ".join(cells) + " |")
    rate_lines = ["| Model | detour | " + " | ".join(f"p = {p:g}" for p in ps) + " |",
                  "|---|---|" + "|".join("---" for _ in ps) + "|"]
    for label, res in detours.items():
        for kind in KINDS:
            by_p = {r["p"]: r for r in res if r["kind"] == kind}
            rate_lines.append(f"| {label} | {kind} | " + " | ".join(
                f"{by_p[p]['replace_rate']:.3f}" if p in by_p else "—" for p in ps) + " |")
    m = task.world.map
    out_deg = {n: 0 for n in m.nodes}
    for (u, _d) in m.edges:
        out_deg[u] += 1
    low = sum(1 for d in out_deg.values() if d <= 2) / max(1, len(out_deg))
    text = f"""# {task.name}: Table 2 (detours)

Made by `{command}`.

Share of traversals that reach the destination with only valid moves (and `end` there), with the
binomial standard error in brackets, over {n_pairs} held-out origin–destination pairs (the
shortest-paths test split; the same pairs and the same random numbers for every model and p).
Each model decodes greedily; at each step, with probability p, its token is replaced by a
uniformly chosen valid direction other than its top choice (random) or by the valid direction it
ranks lowest (adversarial), only among directions from which the destination stays reachable
within the {task.domain.max_tokens()}-token limit. "Shortest-route navigator" is the world itself
choosing a shortest (fewest-moves) route: the reference that always recovers.

Random and adversarial detours can only differ where at least two candidates remain after the
model's top choice is excluded. On this map {low:.0%} of intersections have at most two outgoing
streets, so wherever the model's top choice is a valid street there is at most one candidate and
the two kinds pick the same detour; that is why their rows are nearly identical here.

{chr(10).join(lines)}

Realised replacement rate (replaced tokens per generated token):

{chr(10).join(rate_lines)}
"""
    path.write_text(text)


def plot_detours(path: Path, task_name: str, detours: dict, ps) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(9, 4.6))
    x = np.arange(len(ps))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, res) in enumerate(detours.items()):
        for kind, style, marker in zip(KINDS, ("-", "--"), ("o", "s")):
            by_p = {r["p"]: r for r in res if r["kind"] == kind}
            y = [by_p[p]["share"] if p in by_p else np.nan for p in ps]
            e = [by_p[p]["stderr"] if p in by_p else 0 for p in ps]
            ax.errorbar(x + (i - 1.5) * 0.03, y, yerr=e, fmt=style, marker=marker, ms=4, capsize=2,
                        color=colors[i % len(colors)], label=f"{label} ({kind})")
    ax.set_xticks(x, [f"{p:g}" for p in ps])
    ax.set_xlabel("detour probability p per step (evenly spaced for readability)")
    ax.set_ylabel("share of valid traversals")
    ax.set_ylim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.set_title(f"{task_name}: detours")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    save_figure(fig, path, dpi=130)


# ---------------------------------------------------------------------------
# Map reconstruction
# ---------------------------------------------------------------------------


def reconstructions(task, checkpoints: dict[str, Path], runs: Path, n_seq: int, corrupt_rate: float | None,
                    max_degree: int, max_miles: float, seed: int, figures: Path, progress: bool,
                    algorithm: str = "paper") -> tuple[dict, dict | None]:
    """Reconstruct from true, corrupted and model sequences; draw each map.

    Returns stats per source, and the stats of the shortest-paths model's traversals
    under the other algorithm (``None`` without that model).
    """
    import numpy as np

    from worldmodel.checkpoints import load
    from worldmodel.worlds.navigation.draw import draw_reconstruction
    from worldmodel.worlds.navigation.navigator import decode_unchecked, od_pairs
    from worldmodel.worlds.navigation.reconstruct import MILE_M, Reconstructor, corrupt

    domain = task.domain
    m = task.world.map
    max_tokens = domain.max_tokens()
    sources: dict[str, tuple[str, list[list[str]], dict]] = {}
    test = domain.sequences("test", "shortest-paths", runs / "data")
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(test), size=min(n_seq, len(test)), replace=False)
    true_seqs = [test[int(i)] for i in idx]
    sources["true"] = ("True sequences", true_seqs, {"origin": f"{len(true_seqs)} shortest-paths test sequences"})

    decoded: dict[str, list[list[str]]] = {}
    pairs = od_pairs(domain, "shortest-paths", n_seq, seed, runs / "data", max_tokens)
    for ds, ck in checkpoints.items():
        cache = runs / "reconstruct" / f"decoded-{ds}.json"
        meta = {"checkpoint": str(ck), "pairs": [list(p) for p in pairs], "max_tokens": max_tokens,
                "trained": json.loads((ck / "training.json").read_text()).get("seconds")}
        if cache.exists() and json.loads(cache.read_text()).get("meta") == meta:
            decoded[ds] = json.loads(cache.read_text())["sequences"]
        else:
            model = load(ck, task.world)
            decoded[ds] = decode_unchecked(model, pairs, max_tokens, progress=progress)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"meta": meta, "sequences": decoded[ds]}))

    invalid_rate = {ds: 1 - sum(task.world.is_traversal(s) for s in seqs) / len(seqs)
                    for ds, seqs in decoded.items()}
    if corrupt_rate is None:
        if "shortest-paths" not in invalid_rate:
            raise WorldModelError("the corruption control needs the shortest-paths model or --corrupt-rate")
        rate, why = invalid_rate["shortest-paths"], "the shortest-paths model's invalid rate"
    else:
        rate, why = corrupt_rate, "--corrupt-rate"
    corrupted, chosen = corrupt(true_seqs, m, rate, seed=seed)
    sources["corrupted"] = ("Corrupted true sequences", corrupted,
                            {"origin": f"the true sequences with one step re-labelled in {len(chosen)} of "
                                       f"{len(corrupted)} (rate {rate:.3f} = {why})",
                             "corrupt_rate": rate, "corrupted": len(chosen)})
    for ds, seqs in decoded.items():
        sources[ds] = (f"{DATASET_LABELS[ds]} model", seqs,
                       {"origin": f"greedy decoding of the {ds} model from {len(pairs)} shortest-paths test "
                                  f"OD pairs", "invalid_rate": invalid_rate[ds]})

    other = "strict" if algorithm == "paper" else "paper"
    jobs = [(which, title, seqs, info, algorithm, which) for which, (title, seqs, info) in sources.items()]
    if "shortest-paths" in sources:
        title, seqs, info = sources["shortest-paths"]
        jobs.append(("shortest-paths", title, seqs, info, other, f"shortest-paths-{other}"))
    out, comparison = {}, None
    recs = {a: Reconstructor(m, max_degree, max_miles * MILE_M, a) for a in {algorithm, other}}
    for which, title, seqs, info, algo, name in jobs:
        t0 = time.time()
        r = recs[algo].run(seqs, progress=progress)
        stats = {**info, "title": title, **r.stats(), "seconds": time.time() - t0}
        fig = figures / f"{task.name}-map-{name}.png"
        draw_reconstruction(r, m, fig, title=(
            f"{task.name} — {title}: {stats['used']} of {stats['sequences']} sequences consistent, "
            f"{stats['new_edges']} new edges\n({algo} algorithm, max degree {max_degree}, "
            f"new edges ≤ {max_miles:g} mi)"))
        graph_path = runs / "reconstruct" / f"graph-{name}.json"
        graph_path.parent.mkdir(parents=True, exist_ok=True)
        graph_path.write_text(json.dumps({"task": task.name, "source": which, "algorithm": algo,
                                          "edges": r.edge_list()}))
        stats["figure"] = str(fig)
        if algo == algorithm:
            out[which] = stats
        else:
            comparison = stats
    return out, comparison


RECONSTRUCTION_ALGORITHMS = {
    "paper": ("the paper's Algorithm 1 as the authors' code runs it: every true street starts unused and "
              "counts toward the degree limit only once a sequence uses it; a sequence first follows the map "
              "as it stands, then, where it is stuck, gets a new edge in the stuck direction to the node (the "
              "current one included) whose continuation is longest (ties: node order), or straight to its "
              "destination on its last move; a failed sequence keeps the edges it added"),
    "strict": ("the strict variant: at the first invalid step of a sequence a new edge is added from the "
               "current node with that step's direction, to the candidate that greedily makes the most later "
               "steps valid (ties: the nearer); every true street counts toward the degree limit; a sequence "
               "that cannot be made consistent is failed and its edges removed"),
}


def _recon_row(s: dict) -> str:
    ls = s.get("new_edge_length_m")
    lens = "—" if not ls else f"{ls['median']:.0f} / {ls['mean']:.0f} / {ls['max']:.0f}"
    share = s.get("valid_share")
    valid = f"{s['valid_on_true_map']}" + ("" if share is None else f" ({100 * share:.0f}%)")
    fig = Path(s["figure"]).name
    return (f"| {s['title']} | {s['sequences']} | {s['malformed']} | {valid} | "
            f"{s['used']} | {s['failed']} | {s['true_edges_used']} / {s['true_edges']} | "
            f"{s['new_edges']} | {lens} | `figures/{fig}` |")


def write_reconstruction(path: Path, task, recs: dict, max_degree: int, max_miles: float, command: str,
                         algorithm: str = "paper", comparison: dict | None = None) -> None:
    head = ["| Sequences | input | malformed | valid on true map | used | failed | true edges used | "
            "new edges | new-edge length median / mean / max (m) | figure |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    lines = head + [_recon_row(s) for s in recs.values()]
    from worldmodel.worlds.navigation.geometry import DIRECTIONS

    dirs = ["| Sequences | " + " | ".join(DIRECTIONS) + " |", "|---|" + "|".join("---" for _ in DIRECTIONS) + "|"]
    for s in recs.values():
        dirs.append(f"| {s['title']} | " + " | ".join(str(s["new_edges_by_direction"].get(d, 0))
                                                     for d in DIRECTIONS) + " |")
    compare = ""
    if comparison is not None:
        other = comparison["algorithm"]
        compare = (f"\nThe shortest-paths model's traversals under the {other} algorithm, for comparison "
                   f"({RECONSTRUCTION_ALGORITHMS[other]}):\n\n" + "\n".join(head + [_recon_row(comparison)]) + "\n")
    hist_keys = []
    for s in recs.values():
        for k in s["new_edge_length_histogram"]:
            if k not in hist_keys:
                hist_keys.append(k)
    hist = ["| Sequences | " + " | ".join(hist_keys) + " |", "|---|" + "|".join("---" for _ in hist_keys) + "|"]
    for s in recs.values():
        hist.append(f"| {s['title']} | " + " | ".join(str(s["new_edge_length_histogram"].get(k, 0))
                                                     for k in hist_keys) + " |")
    origins = "\n".join(f"- **{s['title']}**: {s['origin']}." for s in recs.values())
    fails = "\n".join(f"- {s['title']}: " + ", ".join(f"{n} {r}" for r, n in sorted(s["failed_by_reason"].items()))
                      for s in recs.values() if s["failed_by_reason"])
    mal = "\n".join(f"- {s['title']}: " + ", ".join(f"{n} {r}" for r, n in sorted(s["malformed_by_reason"].items()))
                    for s in recs.values() if s["malformed_by_reason"])
    text = f"""# {task.name}: map reconstruction (Algorithm 1, {algorithm} algorithm)

Made by `{command}`.

The graph each set of sequences implies on the true map's {len(task.world.map.nodes)} intersections
({len(task.world.map.edges)} true streets), with {RECONSTRUCTION_ALGORITHMS[algorithm]}. At most one
used or new edge per direction per node, out-degree ≤ {max_degree}, new edges ≤ {max_miles:g} mile
(great circle). Malformed sequences (not ending in `end`, e.g. a model that never stops) are skipped.
"valid on true map" counts the well-formed sequences that are valid on the true map (share in brackets).

{origins}

{chr(10).join(lines)}
{compare}
New edges by direction:

{chr(10).join(dirs)}

New-edge length distribution (count per bin):

{chr(10).join(hist)}

Failed sequences by reason:

{fails or '- none'}

Malformed (skipped) sequences by reason:

{mal or '- none'}
"""
    path.write_text(text)


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", help="a navigation task name or TOML path (nav-grid, nav-manhattan-region, ...)")
    ap.add_argument("--runs", default="runs", help="folder for data, checkpoints and trial logs (default runs)")
    ap.add_argument("--results", default="results", help="tables go to <results>/<task>/ (default results)")
    ap.add_argument("--figures", default="figures", help="figures go to <figures>/<task>-*.png (default figures)")
    ap.add_argument("--steps", type=int, help="training steps (default: the task's)")
    ap.add_argument("--skip-train", action="store_true", help="only reuse checkpoints; stop if one is missing")
    ap.add_argument("--trials", type=int, help="metric trials (default: the task's)")
    ap.add_argument("--M", type=int, help="model samples per prefix (default: the task's)")
    ap.add_argument("--probe-sequences", type=int, help="probe sequences (default: the task's)")
    ap.add_argument("--probe-epochs", type=int, help="probe epochs (default: the task's)")
    ap.add_argument("--detour-trials", type=int, default=100, help="OD pairs per detour setting (default 100)")
    ap.add_argument("--ps", default=",".join(f"{p:g}" for p in PS), help="detour probabilities")
    ap.add_argument("--recon-sequences", type=int, default=500,
                    help="sequences per map reconstruction (default 500)")
    ap.add_argument("--corrupt-rate", type=float,
                    help="corruption control rate (default: the shortest-paths model's invalid rate)")
    ap.add_argument("--algorithm", choices=["paper", "strict"], default="paper",
                    help="map reconstruction algorithm (default paper; the other one is drawn for comparison)")
    ap.add_argument("--max-degree", type=int, default=4)
    ap.add_argument("--max-distance-miles", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--only-rows", help="re-evaluate only these Table 1 rows (comma-separated labels of rows that "
                                        "need no training: Untrained, True world model) and keep the others")
    args = ap.parse_args(argv)
    from worldmodel.progress import silence

    silence(args.no_progress)    # data generation's own bars too
    try:
        return run(args, argv)
    except WorldModelError as exc:
        print(f"reproduce_navigation: error: {exc}", file=sys.stderr)
        return 2


def rerun_rows(task, args, runs: Path, results: Path, figures: Path, command: str, progress: bool) -> int:
    """Re-evaluate rows that need no checkpoint and merge them into the existing Table 1."""
    from worldmodel.evaluator import settings_for

    wanted = [x.strip() for x in args.only_rows.split(",") if x.strip()]
    kinds = {"Untrained": "untrained", "True world model": "true"}
    bad = [w for w in wanted if w not in kinds]
    if bad:
        raise WorldModelError(f"--only-rows takes {', '.join(kinds)}, not {bad}")
    path = results / "table1.json"
    if not path.exists():
        raise WorldModelError(f"--only-rows needs an existing {path}")
    old = json.loads(path.read_text())
    task.domain.ensure_data("shortest-paths", runs / "data")
    settings = settings_for(task, trials=args.trials, M=args.M, probe_sequences=args.probe_sequences,
                            probe_epochs=args.probe_epochs)
    new = table1(task, [Row(w, kinds[w], "shortest-paths") for w in wanted], settings, runs, progress)
    rows = {label: new.get(label, summary) for label, summary in old["rows"].items()}
    made = f"{old['command']}`; rows {', '.join(wanted)} re-evaluated by `{command}"
    write_table1(results / "table1.md", task, rows, old["training"], settings, made, rerun=wanted)
    path.write_text(json.dumps({**old, "rows": rows, "reevaluated": {"rows": wanted, "command": command}},
                               indent=1, default=str))
    plot_metrics(figures / f"{task.name}-metrics.png", task.name, rows)
    print((results / "table1.md").read_text())
    return 0


def run(args, argv) -> int:
    from worldmodel.detours import parse_ps
    from worldmodel.evaluator import settings_for
    from worldmodel.tasks import load_task
    from worldmodel.worlds.navigation.navigator import ShortestRouteModel

    task = load_task(args.task)
    if task.config.get("domain") != "navigation":
        raise WorldModelError(f"task {task.name} is not a navigation task")
    for name in ("trials", "detour_trials", "recon_sequences", "steps"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise WorldModelError(f"--{name.replace('_', '-')} must be at least 1, got {v}")
    if args.corrupt_rate is not None and not 0 <= args.corrupt_rate <= 1:
        raise WorldModelError(f"--corrupt-rate must be in [0, 1], got {args.corrupt_rate}")
    ps = parse_ps(args.ps)
    progress = not args.no_progress
    runs = Path(args.runs) / task.name
    results = Path(args.results) / task.name
    figures = Path(args.figures)
    results.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    command = "OMP_NUM_THREADS=1 python scripts/reproduce_navigation.py " + shlex.join(argv)

    if args.only_rows:
        return rerun_rows(task, args, runs, results, figures, command, progress)

    # 1. data
    for ds in DATASETS:
        folder = task.domain.ensure_data(ds, runs / "data")
        print(f"data {task.name}/{ds}: {folder}")

    # 2. training
    checkpoints, training = {}, {}
    for ds in DATASETS:
        checkpoints[ds], training[ds] = ensure_checkpoint(task, ds, runs, args.steps, args.skip_train, progress)

    # 3. Table 1
    settings = settings_for(task, trials=args.trials, M=args.M, probe_sequences=args.probe_sequences,
                            probe_epochs=args.probe_epochs)
    rows = [Row("Untrained", "untrained", "shortest-paths")]
    rows += [Row(DATASET_LABELS[ds], "checkpoint", ds, checkpoints[ds]) for ds in DATASETS]
    rows.append(Row("True world model", "true", "shortest-paths"))
    t1 = table1(task, rows, settings, runs, progress)
    write_table1(results / "table1.md", task, t1, training, settings, command)
    (results / "table1.json").write_text(json.dumps(
        {"command": command, "task": task.name, "training": training, "rows": t1}, indent=1, default=str))
    plot_metrics(figures / f"{task.name}-metrics.png", task.name, t1)
    print((results / "table1.md").read_text())

    # 4. Table 2
    from worldmodel.checkpoints import load

    pairs = detour_pairs(task, runs, args.detour_trials, args.seed)
    models = {DATASET_LABELS[ds]: (lambda ck=ck: load(ck, task.world))
              for ds, ck in checkpoints.items()}
    models["Shortest-route navigator"] = lambda: ShortestRouteModel(task.world)
    t2 = table2(task, models, pairs, ps, runs, args.seed, progress)
    write_table2(results / "table2.md", task, t2, len(pairs), ps, command)
    (results / "table2.json").write_text(json.dumps(
        {"command": command, "task": task.name, "pairs": len(pairs), "ps": ps, "rows": t2}, indent=1))
    plot_detours(figures / f"{task.name}-detours.png", task.name, t2, ps)
    print((results / "table2.md").read_text())

    # 5. map reconstruction
    recs, comparison = reconstructions(task, checkpoints, runs, args.recon_sequences, args.corrupt_rate,
                                       args.max_degree, args.max_distance_miles, args.seed, figures, progress,
                                       args.algorithm)
    write_reconstruction(results / "reconstruction.md", task, recs, args.max_degree, args.max_distance_miles, command,
                         args.algorithm, comparison)
    (results / "reconstruction.json").write_text(json.dumps({"command": command, "task": task.name,
                                                             "algorithm": args.algorithm, "sources": recs,
                                                             "comparison": comparison},
                                                            indent=1))
    print((results / "reconstruction.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
