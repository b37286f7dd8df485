"""Reproduce ByteSized32's own metrics offline and score its games as world models.

    python scripts/reproduce_bytesized32.py [--corpus DIR] [--stages validity,closure,labels,compare,tables]
        [--budget-s 900] [--max-states 5000] [--out results/bytesized32]

Stages (each writes under ``--out``; the per-game records are JSON lines, resumed when rerun):

* ``validity``: the corpus's technical validity crawl on every GPT-4 game file (the 96 generated
  games and every reflection, 261 files), in the sandbox; ``validity.jsonl`` per file and
  ``validity.md``, the paper's Table 2 beside ours with every game where they differ;
* ``closure``: each of the 32 reference games crawled as a World under ``--max-states``:
  ``closure.jsonl`` / ``closure.md`` (closed or not, states, minimal states, winnable);
* ``labels``: the released compliance labels (GPT-4 against the human raters: agreement and
  Cohen's kappa; the shares the paper reports) and crawl winnability beside the human labels;
* ``compare``: reference games compared with each other where two share a specification,
  and GPT-4's games before and after reflection (``compare.jsonl``, in ``worlds.md``);
* ``tables``: ``worlds.md``, the per-game table from the records above (and the GPT-2 rows, from
  ``python scripts/reproduce_toy.py --task bytesized32-clean-energy --seeds 2 --out
  results/bytesized32/gpt2-clean-energy``: a small GPT-2 trained on random playthroughs of a
  reference game whose crawl closes, scored like any other world).

Untrusted game code runs only in the sandbox (bubblewrap + seccomp); without it the script stops.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from worldmodel.results import write_if_changed  # noqa: E402
from worldmodel.sandbox import Limits, check_sandbox  # noqa: E402
from worldmodel.worlds.bytesized32 import corpus  # noqa: E402
from worldmodel.worlds.bytesized32.validity import check_validity  # noqa: E402

#: the paper's Table 2 (share of the 96 GPT-4 games; 0, 1, 2, 3 reflections)
PAPER_TABLE2 = {
    "TextGame": (85.4, 85.4, 89.6, 88.5),
    "generatePossibleActions": (80.2, 83.3, 87.5, 88.5),
    "runnable": (28.1, 42.7, 51.0, 57.3),
}
COLUMNS = {"TextGame": "Game initialisation", "generatePossibleActions": "Valid actions", "runnable": "Runnable game"}


def read_jsonl(path: Path) -> dict[str, dict]:
    out = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["file"]] = rec
    return out


def append_jsonl(path: Path, rec: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def stage_validity(root: Path, out: Path, budget_s: float, limits: Limits) -> None:
    from tqdm.auto import tqdm

    log = out / "validity.jsonl"
    done = read_jsonl(log)
    games = corpus.revised_games(root)
    files = [p for versions in games.values() for p in versions.values()]
    todo = [p for p in files if p.name not in done]
    for p in tqdm(todo, desc="validity", unit="game"):
        v = check_validity(p, limits=limits, budget_s=budget_s)
        rec = {"file": p.name, "game": corpus.parse_name(p.name).game, "version": corpus.parse_name(p.name).version,
               "budget_s": budget_s, **v.to_dict()}
        append_jsonl(log, rec)
        done[p.name] = rec
    write_validity_table(games, done, out)


def write_validity_table(games: dict, done: dict, out: Path) -> None:
    rows = {k: [] for k in PAPER_TABLE2}
    per_round = {r: {} for r in corpus.REFLECTIONS}
    for game, versions in games.items():
        chosen = corpus.table2_versions(versions)
        for r, p in chosen.items():
            per_round[r][game] = done.get(p.name)
    lines = ["# ByteSized32 technical validity, reproduced (share of the 96 GPT-4 games, %)", "",
             "Command: `python scripts/reproduce_bytesized32.py --stages validity` (the corpus's crawl: depth 3, "
             "at most 100 actions per verb at the first step and 10 at later ones, seed 0; in the sandbox).", "",
             "| measure | reflections | paper | ours | games |", "|---|---|---|---|---|"]
    summary = {}
    for key, paper in PAPER_TABLE2.items():
        for r in corpus.REFLECTIONS:
            recs = [x for x in per_round[r].values() if x is not None]
            ours = 100.0 * sum(bool(x[key]) for x in recs) / max(1, len(recs))
            summary.setdefault(key, []).append(round(ours, 1))
            lines.append(f"| {COLUMNS[key]} | {r} | {paper[r]:.1f} | {ours:.1f} | {len(recs)} |")
    missing = sum(x is None for r in per_round.values() for x in r.values())
    timed = sorted({x["file"] for r in per_round.values() for x in r.values() if x and x.get("timed_out")})
    lines += ["", f"Games not yet checked: {missing}. Crawls stopped by the time budget (counted not runnable, as the "
              f"corpus's 15-minute limit would): {len(timed)}.", ""]
    # where we differ: per measure and round, the paper's count against ours
    lines += ["## Where the counts differ", "",
              "The paper gives shares only (no per-game results were released: `results.json` and the path-crawl "
              "archive are not in the public repository), so a disagreement is known by its count, not its game. "
              "Per measure and round, the paper's count (share x 96) where ours differs:", ""]
    differ = []
    for key, paper in PAPER_TABLE2.items():
        for r in corpus.REFLECTIONS:
            recs = {g: x for g, x in per_round[r].items() if x is not None}
            ours = sum(bool(x[key]) for x in recs.values())
            theirs = round(paper[r] * 96 / 100)
            if ours != theirs:
                differ.append(f"- {COLUMNS[key]}, {r} reflections: paper {theirs}/96, ours {ours}/96")
    lines += differ or ["- none: every one of the 12 counts equals the paper's (equal counts need not be the same "
                        "games, and the released data cannot tell)"]
    suspects = []
    env = ("PermissionError", "OSError", "FileNotFoundError", "MemoryError", "EOFError", "worker", "timeout",
           "crashed", "RecursionError")
    for name, x in sorted(done.items()):
        text = f"{x['stage']} {x['error_msg']}"
        if x.get("timed_out") or any(e in text for e in env):
            suspects.append(f"- `{name}`: {x['stage']}: {x['error_msg'][:160]}")
    import re

    glob_rng = re.compile(r"(?<![\w.])random\.(random|randint|choice|choices|shuffle|sample|uniform|randrange)\(")
    paths = {p.name: p for versions in games.values() for p in versions.values()}
    for name in sorted(done):
        if name in paths and glob_rng.search(paths[name].read_text(errors="replace")):
            x = done[name]
            suspects.append(f"- `{name}`: draws from the module `random` (unseeded in the corpus's run, seed 0 here); "
                            f"ours: {'runnable' if x['runnable'] else x['stage'] or 'not runnable'}")
    lines += ["", "Files whose outcome could depend on where the crawl runs (a time limit, the sandbox refusing "
              "something, memory, reading standard input), where the paper's run may have gone otherwise:", ""]
    lines += suspects or ["- none"]
    lines += ["", "## Every game (the file standing for each round)", "",
              "| game | round 0 | 1 | 2 | 3 | where the last round stops |", "|---|---|---|---|---|---|"]

    def cell(x):
        if x is None:
            return "?"
        return ("I" if x["TextGame"] else "-") + ("A" if x["generatePossibleActions"] else "-") + \
               ("R" if x["runnable"] else "-")

    for game in sorted(games):
        xs = [per_round[r][game] for r in corpus.REFLECTIONS]
        last = xs[-1]
        why = "" if last is None or last["runnable"] else f"{last['stage']}: {last['error_msg'][:90]}"
        lines.append(f"| {game} | " + " | ".join(cell(x) for x in xs) + f" | {why.replace('|', '/')} |")
    lines += ["", "I: initialises, A: lists its actions, R: runnable (the crawl ends without an exception)."]
    write_if_changed(out / "validity.md", "\n".join(lines) + "\n")
    write_if_changed(out / "validity.json", json.dumps({"paper": PAPER_TABLE2, "ours": summary}, indent=1) + "\n")


def stage_closure(root: Path, out: Path, max_states: int, budget_s: float, limits: Limits,
                  reverse: bool = False) -> None:
    """Each reference game crawled as a World: does it close under the bound, and how many states."""
    from tqdm.auto import tqdm

    from worldmodel.datasets import cache_dir
    from worldmodel.simulator import cached_crawl

    log = out / "closure.jsonl"
    done = read_jsonl(log)
    games = [p for p in corpus.reference_games(root) if p.name not in done]
    for p in tqdm(games[::-1] if reverse else games, desc="closure", unit="game"):
        if p.name in read_jsonl(log):  # a second process (--reverse) got there first
            continue
        t = time.time()
        c = cached_crawl(p, cache=cache_dir() / "simulators", max_states=max_states, budget_s=budget_s,
                         limits=limits)
        rec = {"file": p.name, **c.summary(), "source": p.name, "seconds": round(time.time() - t, 1),
               "max_states": max_states, "budget_s": budget_s}
        rec["minimal"] = c.dfa().minimise()[0].n_states if c.closed else None
        append_jsonl(log, rec)
        done[p.name] = rec
    done = read_jsonl(log)
    recs = [done[k] for k in sorted(done)]
    closed = [r for r in recs if r["closed"]]
    if recs:  # the bounds the records were made with (a rerun with nothing left to do keeps them)
        max_states, budget_s = recs[0]["max_states"], recs[0]["budget_s"]
    lines = ["# ByteSized32 reference games as worlds: does the crawl close?", "",
             f"Command: `python scripts/reproduce_bytesized32.py --stages closure --max-states {max_states} "
             f"--closure-budget-s {budget_s:g}` "
             f"(breadth first over every listed action; a state is the fingerprint of the game's objects, the "
             f"observation text and step counter left out; at most {max_states:,} states or {budget_s:g} s per game).",
             "", f"**{len(closed)} of {len(recs)} reference games close**; states crawled and minimal (Myhill-Nerode, "
             "with the end state) for those, the bound that stopped the others.", "",
             "| game | closed | states | minimal | valid actions | actions that raised | winnable | deepest | "
             "stopped by | s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        lines.append(f"| {r['file'][:-3]} | {'yes' if r['closed'] else 'no'} | {r['states']:,} | "
                     f"{r['minimal'] if r['minimal'] is not None else '–'} | {r['tokens']} | {r['errors']} | "
                     f"{ {True: 'yes', False: 'no', None: '?'}[r['winnable']]} | {r['max_depth']} | "
                     f"{r['stop'] or '–'} | {r['seconds']:.0f} |")
    write_if_changed(out / "closure.md", "\n".join(lines) + "\n")


def _k(x) -> str:
    return "n/a (constant labels)" if x is None else f"{x:.3f}"


def stage_labels(root: Path, out: Path) -> None:
    """The released compliance labels: shares, GPT-4 against the humans; winnability beside the crawl's."""
    from worldmodel.worlds.bytesized32.judges import agreement

    labels = corpus.compliance_labels(root)
    validity = read_jsonl(out / "validity.jsonl")
    lines = ["# ByteSized32 specification compliance and winnability: the released labels", "",
             "Command: `python scripts/reproduce_bytesized32.py --stages labels` (reads "
             "`results/GPT-4-32k/compliance_evaluation_*.csv`; no LLM is asked). The paper reports task-critical "
             "objects in nearly every game, task-critical actions in 93.8% and distractors in 18.8%.", "",
             "| experiment | rows | GPT-4 says yes | humans say yes | GPT-4 vs humans: agreement | kappa | "
             "rater 1 vs rater 2: kappa |", "|---|---|---|---|---|---|---|"]
    summary = {}
    for which, pick in (("before reflection (_v0)", lambda xs: [x for x in xs if corpus.parse_name(x["file"]).version == 0]),
                        ("all labelled versions", lambda xs: xs)):
        for exp in ("object", "action", "distractor"):
            xs = pick([x for x in labels if x["experiment"] == exp])
            g = [x["GPT-4-Eval"] for x in xs]
            h = [x["Human Final"] for x in xs]
            a = agreement(g, h)
            r = agreement([x["Human Rater 1"] for x in xs], [x["Human Rater 2"] for x in xs])
            n = len(xs)
            summary[f"{exp} {which}"] = {"n": n, "gpt4_yes": sum(v or 0 for v in g), "human_yes": sum(v or 0 for v in h),
                                         "agreement": a["agreement"], "kappa": a["kappa"], "raters_kappa": r["kappa"]}
            lines.append(f"| {exp}, {which} | {n} | {sum(v or 0 for v in g)} ({100 * sum(v or 0 for v in g) / n:.1f}%) "
                         f"| {sum(v or 0 for v in h)} ({100 * sum(v or 0 for v in h) / n:.1f}%) | "
                         f"{a['agreement']:.3f} | {_k(a['kappa'])} | {_k(r['kappa'])} |")
    # winnability: the human label beside the validity crawl's (a won game within 3 steps)
    pairs = [(x["Winnability"], validity[x["file"]]["winnable"]) for x in labels if x["file"] in validity]
    lines += ["", "## Winnability", "",
              f"Human winnability labels on {len(labels)} labelled game versions: {sum(x['Winnability'] or 0 for x in labels)} "
              "winnable. The validity crawl (depth 3, sampled actions) wins "
              f"{sum(1 for _, w in pairs if w)} of the {len(pairs)} it has checked; where both exist they agree on "
              f"{sum(bool(h) == bool(w) for h, w in pairs)} (a crawl of depth 3 cannot win a game that needs more "
              "steps, so 'not won' is no evidence of unwinnable)."]
    won_not_labelled = sorted(x["file"] for x in labels if x["file"] in validity and validity[x["file"]]["winnable"]
                              and not x["Winnability"])
    lines += ["", "Labelled not winnable, yet the crawl reached a won state within 3 actions (an answer game whose "
              "crawl tries every answer, or a win the raters did not count):", ""]
    lines += [f"- `{f}`" for f in won_not_labelled] or ["- none"]
    summary["winnability"] = {"labelled": len(labels), "human_winnable": sum(x["Winnability"] or 0 for x in labels),
                              "crawl_checked": len(pairs), "crawl_won": sum(1 for _, w in pairs if w)}
    write_if_changed(out / "labels.md", "\n".join(lines) + "\n")
    write_if_changed(out / "labels.json", json.dumps(summary, indent=1, sort_keys=True) + "\n")


def stage_compare(root: Path, out: Path, max_states: int, budget_s: float, limits: Limits) -> None:
    """Simulators compared as worlds: the reference pair from one specification, and GPT-4's games
    before against after reflection (where reflection changed the file and both initialise)."""
    from tqdm.auto import tqdm

    from worldmodel.compare import compare
    from worldmodel.datasets import cache_dir

    log = out / "compare.jsonl"
    done = read_jsonl(log)
    programs = root / "data" / "programs"
    pairs = [("reference", programs / "dishwasher.py", programs / "dishwasher-reductionattempt1.py")]
    validity = read_jsonl(out / "validity.jsonl")
    for game, versions in sorted(corpus.revised_games(root).items()):
        first, last = versions[0], versions[max(versions)]
        if first == last:
            continue
        a, b = validity.get(first.name), validity.get(last.name)
        if a and b and a["TextGame"] and b["TextGame"]:
            pairs.append((game, first, last))
    for kind, ref, cand in tqdm([p for p in pairs if f"{p[1].name}|{p[2].name}" not in done], desc="compare"):
        c = compare(ref, cand, max_states=max_states, budget_s=budget_s, limits=limits, trials=100, M=30,
                    cache=cache_dir() / "simulators", open_metrics=False, max_pairs=2000)
        j = c.to_json()
        rec = {"file": f"{ref.name}|{cand.name}", "kind": kind, "reference": ref.name, "candidate": cand.name,
               "exact": j["exact"], "disagreement": j["disagreement"], "vocabulary": {
                   "shared": j["vocabulary"]["shared"], "reference_only": len(j["vocabulary"]["reference_only"]),
                   "candidate_only": len(j["vocabulary"]["candidate_only"]), "overlap": j["vocabulary"]["overlap"]},
               "metrics": j["metrics"], "states": j["states"], "diff": j["diff"] and {
                   k: j["diff"][k] for k in ("equivalent", "merged_pairs", "split_states", "n_extra", "n_missing")},
               "ref_crawl": {k: j["reference"][k] for k in ("states", "closed", "stop", "tokens", "errors")},
               "cand_crawl": {k: j["candidate"][k] for k in ("states", "closed", "stop", "tokens", "errors",
                                                             "failure")}}
        append_jsonl(log, rec)
        done[rec["file"]] = rec


def _m(rec: dict, key: str) -> str:
    m = (rec.get("metrics") or {}).get(key)
    return "–" if not m or m.get("n", 0) == 0 else f"{m['mean']:.2f}"


def _disagreement(d) -> str:
    if d is None:
        return "none (they agree)"
    if isinstance(d, str):
        return "none found within the search bound"
    hist = " → ".join(d["history"]) or "start"
    return f"`{d['token']}` after {hist} (valid only in the {d['valid_in']})"


def stage_tables(root: Path, out: Path) -> None:
    """``worlds.md``: the per-game world-model table from the other stages' records."""
    validity = read_jsonl(out / "validity.jsonl")
    closure = read_jsonl(out / "closure.jsonl")
    compared = read_jsonl(out / "compare.jsonl")
    labels = {x["file"]: x for x in corpus.compliance_labels(root)}
    lines = ["# ByteSized32 games as world models", "",
             "Command: `python scripts/reproduce_bytesized32.py` (stages closure, compare, then tables); the GPT-2 "
             "sections at the end by `scripts/reproduce_toy.py` (commands there).", "",
             "## Reference games (the 32 of the corpus and one variant)", "",
             "Each crawled as a World (see `closure.md`): states, and where the crawl closed the Myhill-Nerode "
             "minimal automaton and exact winnability within it. The corpus has no second implementation of any "
             "reference game's specification except `dishwasher-reductionattempt1`, compared with `dishwasher` "
             "below; GPT-4's games implement the 16 *test* specifications, which have no reference game.", "",
             "| game | closed | states | minimal | winnable (crawl) |", "|---|---|---|---|---|"]
    for name, r in sorted(closure.items()):
        win = {True: "yes", False: "no", None: "? (open)"}[r["winnable"]]
        lines.append(f"| {name[:-3]} | {'yes' if r['closed'] else 'no'} | {r['states']:,} | "
                     f"{r['minimal'] if r['minimal'] is not None else '–'} | {win} |")
    lines += ["", "## Compared simulators", "",
              "The candidate scored as a model of the reference (its true world model, uniform over its valid "
              "actions): compression precision, distinction precision / recall over the reference's states "
              "(computed where both crawls closed), the first history on which they disagree, and the vocabulary "
              "overlap. GPT-4's games: the game before reflection (reference) against its last reflection "
              "(candidate), where reflection changed it and both initialise. Crawls bounded as in `compare.jsonl`.", "",
              "| reference | candidate | exact | states (ref / cand) | Compr. P | Dist. P | Dist. R | vocabulary "
              "overlap | first counterexample |", "|---|---|---|---|---|---|---|---|---|"]
    for key, r in sorted(compared.items(), key=lambda kv: (kv[1]["kind"] != "reference", kv[0])):
        lines.append(f"| {r['reference'][:-3]} | {r['candidate'][:-3]} | {'yes' if r['exact'] else 'no'} | "
                     f"{r['ref_crawl']['states']:,} / {r['cand_crawl']['states']:,} | {_m(r, 'compression_precision')} "
                     f"| {_m(r, 'distinction_precision')} | {_m(r, 'distinction_recall')} | "
                     f"{r['vocabulary']['overlap']:.2f} | {_disagreement(r['disagreement'])} |")
    lines += ["", "## GPT-4's games (before reflection, as labelled)", "",
              "Validity at rounds 0 and 3 (I: initialises, A: lists actions, R: runnable), the human winnability "
              "label, the depth-3 validity crawl's win.", "",
              "| game | round 0 | round 3 | human: winnable | crawl (depth 3) won |", "|---|---|---|---|---|"]
    games = corpus.revised_games(root)

    def cell(x):
        if x is None:
            return "?"
        return ("I" if x["TextGame"] else "-") + ("A" if x["generatePossibleActions"] else "-") + \
            ("R" if x["runnable"] else "-")

    for game, versions in sorted(games.items()):
        chosen = corpus.table2_versions(versions)
        v0, v3 = validity.get(chosen[0].name), validity.get(chosen[3].name)
        lab = labels.get(chosen[0].name)
        human = "–" if lab is None else ("yes" if lab["Winnability"] else "no")
        lines.append(f"| {game} | {cell(v0)} | {cell(v3)} | {human} | {'yes' if v0 and v0['winnable'] else 'no'} |")
    for table in sorted(out.glob("gpt2-*/table.md")):
        game = table.parent.name[len("gpt2-"):]
        lines += ["", f"## A small GPT-2 on random playthroughs of {game}", "",
                  f"Trained on 3,000 random playthroughs (uniform over the valid actions, 8-32 actions) of the closed "
                  f"automaton of `{game}.py`, scored like any other world (`{table.parent.name}/table.md`, made by "
                  f"`python scripts/reproduce_toy.py --task bytesized32-{game} --seeds 2 --out "
                  f"results/bytesized32/{table.parent.name}`):", "", table.read_text().split("\n\n", 2)[-1].strip()]
    write_if_changed(out / "worlds.md", "\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=None, help="the corpus folder (default: shared:bytesized32)")
    ap.add_argument("--stages", default="validity,closure,labels,compare,tables")
    ap.add_argument("--budget-s", type=float, default=900.0, help="wall clock per validity crawl (the paper: 15 min)")
    ap.add_argument("--max-states", type=int, default=5000, help="closure: states per reference game (5,000)")
    ap.add_argument("--closure-budget-s", type=float, default=600.0, help="closure: wall clock per game (600 s)")
    ap.add_argument("--compare-states", type=int, default=1000, help="compare: states per crawl (1,000)")
    ap.add_argument("--compare-budget-s", type=float, default=30.0, help="compare: wall clock per crawl (30 s)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bytesized32"))
    ap.add_argument("--reverse", action="store_true", help="closure: games in reverse order (a second process)")
    args = ap.parse_args(argv)
    check_sandbox()
    root = corpus.corpus_root(args.corpus)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    limits = Limits(call_s=300.0, start_s=60.0)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    t0 = time.time()
    if "closure" in stages:
        stage_closure(root, out, args.max_states, args.closure_budget_s, limits, args.reverse)
    if "validity" in stages:
        stage_validity(root, out, args.budget_s, limits)
    if "labels" in stages:
        stage_labels(root, out)
    if "compare" in stages:
        stage_compare(root, out, args.compare_states, args.compare_budget_s, limits)
    if "tables" in stages:
        stage_tables(root, out)
    print(f"done in {time.time() - t0:.0f} s; results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
