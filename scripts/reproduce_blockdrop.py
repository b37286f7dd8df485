#!/usr/bin/env python
"""Reproduce the block-drop (ChatGPT4PCG) results.

    OMP_NUM_THREADS=1 python scripts/reproduce_blockdrop.py [--quick]

Writes under ``results/blockdrop/`` (each file names this command):

* ``table2.md`` — the competition's scoring on the paper's Table I means: Table II's
  weights and the norm_prompt of each variant, beside the printed values;
* ``static-vs-physics.md`` — the static stability rule against Box2D on random levels;
* ``true.md`` — ``evaluate blockdrop`` / ``blockdrop-stable`` with the true world model;
* ``generators.md`` — the committed table: the GPT-2 trained on letter programs (and an
  untrained one) with its world-model metrics beside the stability (Box2D) and the
  **proxy** similarity of the levels it writes for I, L and U, next to the scripted
  generator (known-stable programs), random drops and a tiny local HF chat model asked
  the five prompt variants;
* ``probe.md`` — the probe in words (true, random, tiny chat);

and ``figures/blockdrop-levels.png`` (settled levels beside the target letter) and
``figures/blockdrop-metrics.png``. Work (the proxy classifier, the checkpoint, caches,
level images) is kept under ``runs/blockdrop/``; a rerun reuses it.
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

OUT = REPO / "results" / "blockdrop"
FIG = REPO / "figures"


def _cmd(argv) -> str:
    return "OMP_NUM_THREADS=1 python scripts/reproduce_blockdrop.py" + "".join(" " + shlex.quote(a) for a in argv)


def table2(header: str) -> dict:
    from worldmodel.worlds.blockdrop import scoring as sc

    s = sc.paper_scores()
    L = sc.PAPER_LETTERS
    lines = [header, "# Table II from Table I: the competition's scoring on the paper's means", "",
             "`score_from_means` (worldmodel/worlds/blockdrop/scoring.py) on Table I's stability and similarity "
             "means (two decimals). Table I prints rounded means, so each recomputed weight is given with the "
             "range it takes over every Table I within ±0.005 of the printed one.", "",
             "| Letter | w_st | printed | w_si | printed | range of w_si | weight | printed | range of weight |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, j in enumerate(L):
        b = sc.weight_bounds(i)
        lines.append(f"| {j} | {s.w_st[j]:.3f} | {sc.PAPER_W_ST[i]:.3f} | {s.w_si[j]:.3f} | {sc.PAPER_W_SI[i]:.3f} | "
                     f"{b['w_si'][0]:.3f}–{b['w_si'][1]:.3f} | {s.weight[j]:.3f} | {sc.PAPER_WEIGHT[i]:.3f} | "
                     f"{b['weight'][0]:.3f}–{b['weight'][1]:.3f} |")
    lines += ["", "| Variant | norm_prompt (from the means) | printed | difference |", "|---|---|---|---|"]
    for k in sc.PAPER_RANKING:
        lines.append(f"| {k} | {s.norm[k]:.2f} | {sc.PAPER_NORM[k]:.2f} | {s.norm[k] - sc.PAPER_NORM[k]:+.2f} |")
    lines += ["", f"Ranking from the means: {' > '.join(s.ranking())}; printed: {' > '.join(sc.PAPER_RANKING)}. "
              "The weights depend only on the means and agree with Table II within Table I's rounding "
              "(the point values differ by at most 0.002). The prompt scores need each trial's st × si, "
              "which the paper does not publish; from the means (mean st × mean si) they come within 2.5 "
              "points and keep the top three, while v2 and v3 (printed 0.10 apart) swap; raising v3's means "
              "and lowering v2's by the rounding, 0.005, restores the printed ranking "
              "(tests/test_blockdrop.py::test_paper_ranking).", ""]
    (OUT / "table2.md").write_text("\n".join(lines))
    return s.to_dict()


def physics_agreement(header: str, programs: int) -> dict:
    from worldmodel.worlds.blockdrop.physics import agreement

    t = time.time()
    r = agreement(programs, seed=0)
    r["seconds"] = round(time.time() - t, 1)
    n = r["programs"]
    lines = [header, "# The static stability rule against Box2D", "",
             f"{n} random levels (1–{r['max_drops']} drops, each a uniformly random block and slot that lands "
             f"inside the grid; seed 0), each judged by the rule (worldmodel/worlds/blockdrop/stability.py) and "
             f"simulated for 10 s in {r['engine']} with Science Birds' settings (physics.py): physics-stable when "
             f"no block moved 0.1 units (st = 1). {r['seconds']} s.", "",
             "| | physics stable | physics unstable |", "|---|---|---|",
             f"| rule stable | {r['both stable']} | {r['rule stable, physics unstable']} |",
             f"| rule unstable | {r['rule unstable, physics stable']} | {r['both unstable']} |", "",
             f"Agreement: **{r['agreement']:.3f}**. Of the {r['rule unstable, physics stable']} levels the rule "
             f"refuses but the physics passes, {r['rule unstable, physics stable, a block turned > 0.05 rad']} "
             "have a block that turned by more than 0.05 rad: it toppled or tilted onto a neighbour with its "
             "centre moving less than the evaluator's 0.1 units, which the evaluator counts as not moving.", ""]
    (OUT / "static-vs-physics.md").write_text("\n".join(lines))
    return r


def true_model(header: str, trials: int) -> dict:
    from worldmodel.evaluator import build_model, evaluate, settings_for
    from worldmodel.results import MetricResult, markdown_table
    from worldmodel.tasks import load_task

    rows, out = {}, {}
    for name in ("blockdrop", "blockdrop-stable"):
        task = load_task(name)
        t = time.time()
        summ = evaluate(task, build_model(task, model="true"), ["compression", "distinction", "next-token"],
                        settings_for(task, trials=trials), None, None, None, False)
        out[name] = {**summ["metrics"], "seconds": round(time.time() - t, 1)}
        rows[f"{name} (true)"] = {k: MetricResult(k, **v) for k, v in summ["metrics"].items()}
    lines = [header, "# The true world model", "",
             f"`worldmodel evaluate TASK --model true --trials {trials} --metrics compression,distinction,next-token` "
             "for both variants (sampled true boundary, M = 10, continuations of at most 6 drops, ε = 0.01). "
             + "; ".join(f"{k}: {v['seconds']} s" for k, v in out.items()) + ".", "", markdown_table(rows), ""]
    (OUT / "true.md").write_text("\n".join(lines))
    return out


def proxy_classifier(work: Path, steps: int):
    from worldmodel.worlds.blockdrop.similarity import ProxyLetterClassifier, train_proxy

    folder = work / f"proxy-{steps}"
    if not (folder / "model.safetensors").exists():
        train_proxy(folder, seed=0, steps=steps)
    return ProxyLetterClassifier(folder)


def letters_model(work: Path, quick: bool):
    from worldmodel.tasks import load_task
    from worldmodel.training import train

    task = load_task("blockdrop-letters")
    ckpt = work / "gpt2-letters"
    t = time.time()
    if not (ckpt / "vocab.json").exists():
        train(task, ckpt, steps=200 if quick else None, progress=True)
    return task, ckpt, time.time() - t


def generators(header: str, work: Path, args, classifier) -> dict:
    from worldmodel.chat import HFChatBackend, ResponseCache
    from worldmodel.evaluator import build_model, evaluate, settings_for
    from worldmodel.results import scored_under
    from worldmodel.worlds.blockdrop.generate import (GenerateSettings, ModelGenerator, RandomGenerator,
                                                      ScriptedGenerator, run, summary)
    from worldmodel.worlds.blockdrop.probe import make_tiny_chat_model
    from worldmodel.worlds.blockdrop.prompts import VARIANTS

    letters = ["I", "L", "U"]
    settings = GenerateSettings(letters, args.trials, 0)
    task, ckpt, train_s = letters_model(work, args.quick)
    rows, timing = {}, {"train gpt2-letters s": round(train_s, 1)}

    def levels(label, backend, prompts):
        t = time.time()
        cache = ResponseCache(work / "cache" / f"{label.replace(' ', '_').replace('/', '_')}.jsonl")
        runs, scores = run(backend, prompts, settings, classifier, cache, work / "levels" / label.replace(" ", "_"))
        cache.close()
        s = summary(runs, scores, settings, backend, classifier)
        timing[f"levels {label} s"] = round(time.time() - t, 1)
        return s

    def mean_over(s, key):
        vals = [p[j][key] for p in s["per_prompt"].values() for j in letters]
        return sum(vals) / len(vals)

    for label, source in (("GPT-2 on letter programs", str(ckpt)), ("untrained GPT-2", "untrained")):
        model = build_model(task, checkpoint=source if source != "untrained" else None,
                            model="untrained" if source == "untrained" else None)
        t = time.time()
        scored = evaluate(task, model, ["compression", "distinction", "next-token"],
                          settings_for(task, trials=args.metric_trials), None, None, None, False)
        wm = scored["metrics"]
        timing[f"metrics {label} s"] = round(time.time() - t, 1)
        s = levels(label, ModelGenerator(model, source, seed=0), {"model": "The letter <OBJECT>."})
        # the conventions it was scored under: read only inside the trained lengths, keep-top, next-token positions
        rows[label] = {"wm": wm, "levels": s, **scored_under(scored)}
    rows["scripted generator (known-stable programs)"] = {"wm": None, "levels": levels(
        "scripted", ScriptedGenerator(0), {"v5": VARIANTS["v5"]})}
    rows["random drops"] = {"wm": None, "levels": levels("random", RandomGenerator(0), {"v5": VARIANTS["v5"]})}
    tiny = work / f"tiny-chat-generate-{args.tiny_steps}"
    if not (tiny / "config.json").exists():
        make_tiny_chat_model(tiny, seed=0, train_steps=args.tiny_steps, kind="generate")
    hf = HFChatBackend(tiny, max_new_tokens=48, batch_size=8)
    hf.temperature = 1.0
    prompts = VARIANTS if not args.quick else {"v5": VARIANTS["v5"]}
    rows[f"tiny local HF chat model ({args.tiny_steps} format steps), prompts v1–v5"] = {
        "wm": None, "levels": levels("tiny-chat", hf, prompts)}

    cls = classifier.describe()
    lines = [header, "# Generators of letters I, L, U: world-model metrics beside stability and similarity", "",
             f"Each generator writes {args.trials} levels per letter. A level comes from the response's last code "
             "block as the competition reads it (a program that intrudes on the grid boundary builds no level and "
             "scores 0); stability st is Box2D's (10 s, moved < 0.1 units; "
             f"{rows['random drops']['levels']['physics']}); similarity si is the probability of the target "
             f"letter from the **proxy letter classifier** `{cls['label']}` (a small CNN the project trains on "
             "pixelated font letters, `worldmodel blockdrop-proxy`; held-out accuracy on such letters "
             f"{cls.get('accuracy', float('nan')):.2f}), **not vit-base-letter**: its numbers are not comparable "
             "with the paper's. World-model metrics (task `blockdrop-letters`: the stable world with letter "
             f"tokens; pairs from the letter generator's programs, reordered; {args.metric_trials} trials, M = 10, "
             "ε = 0.01, sampled boundary) exist only for the sequence models.", "",
             "| Generator | Next-token | Compr. P | Dist. P | Dist. R | levels built | stability st | "
             "similarity si (proxy) | I / L / U st | I / L / U si (proxy) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for label, r in rows.items():
        s = r["levels"]
        built = sum(p[j]["levels"] for p in s["per_prompt"].values() for j in letters)
        total = sum(p[j]["trials"] for p in s["per_prompt"].values() for j in letters)
        if r["wm"]:
            w = r["wm"]
            cells = [f"{w[m]['mean']:.2f} ({w[m]['stderr']:.2f})" for m in
                     ("next_token", "compression_precision", "distinction_precision", "distinction_recall")]
        else:
            cells = ["—"] * 4
        per = {j: (sum(p[j]["stability"] for p in s["per_prompt"].values()) / len(s["per_prompt"]),
                   sum(p[j]["similarity"] for p in s["per_prompt"].values()) / len(s["per_prompt"])) for j in letters}
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {built}/{total} | {mean_over(s, 'stability'):.2f} | "
                     f"{mean_over(s, 'similarity'):.2f} | " + " / ".join(f"{per[j][0]:.2f}" for j in letters)
                     + " | " + " / ".join(f"{per[j][1]:.2f}" for j in letters) + " |")
    lines += ["", "Stability and similarity are means over all trials (a trial without a level counts 0, as in the "
              "competition). Times (s): " + ", ".join(f"{k} {v}" for k, v in timing.items()) + ".", ""]
    tiny_s = rows[f"tiny local HF chat model ({args.tiny_steps} format steps), prompts v1–v5"]["levels"]
    lines += ["## The tiny chat model on the five prompt variants (competition scores)", "",
              "The competition's scores across the prompts it was asked (weights from these prompts only; the "
              "model learned only the answer format, from random programs: this row proves the local path, it "
              "says nothing about the variants).", ""]
    from worldmodel.worlds.blockdrop.generate import markdown

    lines += [markdown(tiny_s), ""]
    (OUT / "generators.md").write_text("\n".join(lines))
    return {"rows": {k: {"wm": v["wm"], "levels": v["levels"],
                         **{x: v[x] for x in ("length_bound", "conventions") if x in v}} for k, v in rows.items()},
            "timing": timing}


def probe_rows(header: str, work: Path, args) -> dict:
    from worldmodel.chat import CachedBackend, HFChatBackend, ResponseCache
    from worldmodel.worlds.blockdrop.probe import (ProbeSettings, RandomProbeResponder, TrueProbeResponder,
                                                   make_tiny_chat_model, probe, probe_table)
    from worldmodel.worlds.blockdrop.world import BlockDropWorld

    world = BlockDropWorld("stable")
    settings = ProbeSettings(states=args.probe_states, samples=5, seed=0)
    tiny = work / f"tiny-chat-probe-{args.tiny_steps}"
    if not (tiny / "config.json").exists():
        make_tiny_chat_model(tiny, seed=0, train_steps=args.tiny_steps, kind="probe")
    out = {}
    for label, backend in (("true world model", TrueProbeResponder(world)), ("random", RandomProbeResponder(0)),
                           (f"tiny local HF chat model ({args.tiny_steps} format steps)",
                            HFChatBackend(tiny, max_new_tokens=6, batch_size=32))):
        cached = CachedBackend(backend, ResponseCache(work / "cache" / "probe.jsonl"), progress=True)
        try:
            out[label] = probe(cached, world, settings).summary()
        finally:
            cached.close()
    lines = [header, "# The probe in words: is a drop possible, and does the structure still stand?", "",
             f"`worldmodel blockdrop-probe`: {settings.states} trials per metric, 5 proposed drops each, histories of "
             f"{settings.min_len}–{settings.max_len} random drops in the stable world.", "", probe_table(out), ""]
    (OUT / "probe.md").write_text("\n".join(lines))
    return out


def figures(work: Path, gen: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from worldmodel.worlds.blockdrop.letters import glyph_cells
    from worldmodel.worlds.blockdrop.similarity import cells_image

    FIG.mkdir(exist_ok=True)
    sources = [("target glyph", None), ("scripted", "scripted"), ("GPT-2 on letters", "GPT-2_on_letter_programs"),
               ("random drops", "random")]
    fig, axes = plt.subplots(3, len(sources), figsize=(2.2 * len(sources), 6.6))
    for r, j in enumerate("ILU"):
        for c, (title, folder) in enumerate(sources):
            ax = axes[r][c]
            ax.axis("off")
            if folder is None:
                img = cells_image(glyph_cells(j, 2, 3, 0), size=256)
            else:
                prompt = "v5" if folder in ("scripted", "random") else "model"
                found = sorted((work / "levels" / folder / "levels" / prompt / j).glob("*.png"),
                               key=lambda q: int(q.stem))  # the first trial that built a level
                img = Image.open(found[0]) if found else Image.new("L", (256, 256), 255)
            ax.imshow(img, cmap="gray", vmin=0, vmax=255)
            if r == 0:
                ax.set_title(title, fontsize=9)
            if c == 0:
                ax.text(-0.1, 0.5, j, transform=ax.transAxes, fontsize=16, va="center", ha="right")
    fig.suptitle("Settled levels after 10 s of Box2D (first trial with a level), as the evaluator renders them",
                 fontsize=9)
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    save_figure(fig, FIG / "blockdrop-levels.png", dpi=110)

    rows = gen["rows"]
    labels = list(rows)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    keys = [("stability", "stability st (Box2D)"), ("similarity", "similarity si (proxy)")]
    wm_keys = [("compression_precision", "compr. P"), ("distinction_recall", "dist. R")]
    width = 0.18
    for i, label in enumerate(labels):
        s = rows[label]["levels"]
        vals = []
        for key, _ in keys:
            v = [p[j][key] for p in s["per_prompt"].values() for j in "ILU"]
            vals.append(sum(v) / len(v))
        for key, _ in wm_keys:
            vals.append(rows[label]["wm"][key]["mean"] if rows[label]["wm"] else float("nan"))
        for k, v in enumerate(vals):
            ax.bar(i + (k - 1.5) * width, v, width, color=f"C{k}", label=(keys + wm_keys)[k][1] if i == 0 else None)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([lb.split(" (")[0].replace(", prompts v1–v5", "") for lb in labels], fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, ncol=4, loc="upper right")
    ax.set_title("Block-drop generators of I, L, U (similarity from the proxy classifier, not vit-base-letter)",
                 fontsize=9)
    fig.tight_layout()
    from worldmodel.plotting import save_figure

    save_figure(fig, FIG / "blockdrop-metrics.png", dpi=110)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a small run (seconds to minutes) for checking the pipeline")
    p.add_argument("--trials", type=int, default=10, help="levels per generator and letter (default 10, as the paper)")
    p.add_argument("--metric-trials", type=int, default=100)
    p.add_argument("--true-trials", type=int, default=100)
    p.add_argument("--physics-programs", type=int, default=1000)
    p.add_argument("--probe-states", type=int, default=50)
    p.add_argument("--proxy-steps", type=int, default=800)
    p.add_argument("--tiny-steps", type=int, default=150)
    p.add_argument("--figures-only", action="store_true", help="redraw the figures from results.json and runs/")
    args = p.parse_args(argv)
    if args.quick:
        args.trials, args.metric_trials, args.true_trials = 2, 6, 6
        args.physics_programs, args.probe_states, args.proxy_steps, args.tiny_steps = 40, 6, 20, 5
    work = REPO / "runs" / ("blockdrop-quick" if args.quick else "blockdrop")
    work.mkdir(parents=True, exist_ok=True)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.figures_only:
        figures(work, json.loads((OUT / "results.json").read_text())["generators"])
        return 0
    header = f"Made by `{_cmd(argv)}`.\n"
    t0 = time.time()
    record = {"table2": table2(header)}
    record["physics"] = physics_agreement(header, args.physics_programs)
    record["true"] = true_model(header, args.true_trials)
    classifier = proxy_classifier(work, args.proxy_steps)
    record["generators"] = generators(header, work, args, classifier)
    record["probe"] = probe_rows(header, work, args)
    figures(work, record["generators"])
    record["minutes"] = round((time.time() - t0) / 60, 1)
    (OUT / "results.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"wrote {OUT} in {record['minutes']} minutes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
