"""How faithful is the project's "8" simulator to a real game server? Play both the same way and compare.

    python scripts/check_eight_server.py --game-url http://127.0.0.1:5000 [--climbs 150] [--seed 0]
        [--arcs-dir DIR] [--out results/eight/server-check.md]

The real server is the game's own source (alvations/melon-eight, ``python app.py``), run
outside this repository. For every arc and difficulty (easy, normal, hard, insane) the
script plays ``--climbs`` climbs on the server and as many on the simulator, with the same
policy (the judge's call, a random call one time in ten, so that wrong calls and resets
happen too), and

* reads every loop back into tokens and runs the automaton over each transcript: every
  transcript must be valid in it and every call judged as the server judged it (the
  rules, exactly);
* compares the odds (a statistical check of the simulator's generator): the share of
  loops with a change, per level; the share with two changes (level 4 on); the share of
  changes that repeat the previous loop's change; the number of details a loop shows;
  how often both late properties appear in the first two loops of a climb; in insane
  the baseline values drawn. Each row gives the server's and the simulator's numbers
  and a two-proportion z (or, for the details shown, a chi-square over 4/5/6).

Writes a Markdown report (``--out``) and prints it.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from worldmodel.datasets import resolve_path  # noqa: E402
from worldmodel.dfa import REJECT  # noqa: E402
from worldmodel.worlds.eight.arcs import ARC_IDS, load_arc  # noqa: E402
from worldmodel.worlds.eight.rules import GOAL  # noqa: E402
from worldmodel.worlds.eight.server import slot_seed  # noqa: E402
from worldmodel.worlds.eight.sessions import HTTPSession, LocalSession, room_tokens  # noqa: E402
from worldmodel.worlds.eight.world import build_world  # noqa: E402

DIFFS = ("easy", "normal", "hard", "insane")


def play(session, arc, world, climbs: int, rng: random.Random) -> dict:
    """``climbs`` climbs (each until the door or a wrong call) with the judge's call, a random one 1 time in 10."""
    stats = {"loops": [], "invalid": 0, "disagree": 0, "calls": 0, "late01": [], "baselines": Counter()}
    insane = world.difficulty.random_baseline
    for _ in range(climbs):
        payload = session.new()
        state = world.initial_state()
        prev_changed: set = set()
        base: dict[str, str] = {}
        late_seen01: set = set()
        while True:
            level = int(payload["level"])
            toks = room_tokens(arc, payload)
            values = dict(arc.split(t) for t in toks)
            if insane:
                for p, v in values.items():
                    if p not in base:
                        base[p] = v
                        stats["baselines"][(p, v)] += 1
                changed = {(p, v) for p, v in values.items() if v != base[p]}
            else:
                changed = {(p, v) for p, v in values.items() if v != arc.prop(p).baseline}
            if level <= 1:
                late_seen01 |= {p for p in values if p in arc.late}
            stats["loops"].append({"level": level, "shown": len(toks), "changed": len(changed),
                                   "repeat": bool(changed & prev_changed) if prev_changed and level > 0 else None})
            for t in toks:
                state = world.step(state, t) if state is not REJECT else REJECT
            judge = "turn_back" if changed else "go_on"
            call = judge if rng.random() < 0.9 else rng.choice(["go_on", "turn_back"])
            verdict = world.verdict(state, call) if state is not REJECT else None
            res = session.act(call)
            stats["calls"] += 1
            if state is REJECT:
                stats["invalid"] += 1
            elif verdict != bool(res["correct"]):
                stats["disagree"] += 1
            prev_changed = changed
            if res.get("won") or not res["correct"]:
                stats["late01"].append(len(late_seen01))
                break
            state = world.step(state, call)
            payload = res
    return stats


def z2(k1, n1, k2, n2) -> float:
    if not n1 or not n2:
        return float("nan")
    p = (k1 + k2) / (n1 + n2)
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2)) or float("inf")
    return (k1 / n1 - k2 / n2) / se


def rate(rows, pred, cond=lambda r: True):
    sel = [r for r in rows if cond(r)]
    return sum(pred(r) for r in sel), len(sel)


def chi2_shown(a, b) -> float:
    ca, cb = Counter(r["shown"] for r in a), Counter(r["shown"] for r in b)
    stat = 0.0
    for k in sorted(set(ca) | set(cb)):
        tot = ca[k] + cb[k]
        ea, eb = tot * len(a) / (len(a) + len(b)), tot * len(b) / (len(a) + len(b))
        stat += (ca[k] - ea) ** 2 / ea + (cb[k] - eb) ** 2 / eb
    return stat


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game-url", required=True)
    ap.add_argument("--climbs", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arcs-dir", default="shared:eight/arcs")
    ap.add_argument("--arcs", default=",".join(ARC_IDS))
    ap.add_argument("--out", default="results/eight/server-check.md")
    args = ap.parse_args()
    folder = resolve_path(args.arcs_dir)
    t0 = time.time()
    lines = [f"# The simulator against a game server ({args.game_url})", "",
             f"`python scripts/check_eight_server.py --game-url {args.game_url} --climbs {args.climbs}"
             f" --seed {args.seed}`: {args.climbs} climbs per arc and difficulty on each side, the judge's call "
             "with a random call one time in ten.", ""]
    lines += ["| arc | difficulty | calls (server) | automaton: invalid / disagreeing | change rate by level, server "
              "(simulator) | max abs z | two changes, level 4+ | repeats of the last change | details shown: chi2 (2 df) "
              "| both late props in loops 1-2 |", "|---|---|---|---|---|---|---|---|---|---|"]
    baseline_rows = []
    total_calls = total_bad = 0
    for arc_id in args.arcs.split(","):
        arc = load_arc(folder, arc_id)
        for d in DIFFS:
            world = build_world(arc, d)
            srv = play(HTTPSession(args.game_url, arc_id, d, f"check-{args.seed}-{arc_id}-{d}"), arc, world,
                       args.climbs, random.Random(f"{args.seed}:{arc_id}:{d}:srv"))
            sim = play(LocalSession(arc, d, slot_seed(args.seed, f"check-{arc_id}-{d}", 0)), arc, world,
                       args.climbs, random.Random(f"{args.seed}:{arc_id}:{d}:sim"))
            total_calls += srv["calls"]
            total_bad += srv["invalid"] + srv["disagree"]
            by_level, zs = [], []
            for lv in range(GOAL):
                k1, n1 = rate(srv["loops"], lambda r: r["changed"] > 0, lambda r, lv=lv: r["level"] == lv)
                k2, n2 = rate(sim["loops"], lambda r: r["changed"] > 0, lambda r, lv=lv: r["level"] == lv)
                by_level.append(f"{k1 / n1:.2f} ({k2 / n2:.2f})" if n1 and n2 else "–")
                if n1 and n2 and (k1 + k2):
                    zs.append(abs(z2(k1, n1, k2, n2)))
            d1 = rate(srv["loops"], lambda r: r["changed"] == 2, lambda r: r["level"] >= 4 and r["changed"] > 0)
            d2 = rate(sim["loops"], lambda r: r["changed"] == 2, lambda r: r["level"] >= 4 and r["changed"] > 0)
            r1 = rate(srv["loops"], lambda r: r["repeat"], lambda r: r["repeat"] is not None)
            r2 = rate(sim["loops"], lambda r: r["repeat"], lambda r: r["repeat"] is not None)
            l1 = sum(x == 2 for x in srv["late01"]), len(srv["late01"])
            l2 = sum(x == 2 for x in sim["late01"]), len(sim["late01"])

            def pr(a, b):
                return (f"{a[0]}/{a[1]} ({b[0]}/{b[1]})" + (f", z = {z2(*a, *b):.1f}" if a[0] + b[0] else ""))
            lines.append(f"| {arc_id} | {d} | {srv['calls']} | {srv['invalid']} / {srv['disagree']} | "
                         f"{' · '.join(by_level)} | {max(zs) if zs else 0:.1f} | {pr(d1, d2)} | {pr(r1, r2)} | "
                         f"{chi2_shown(srv['loops'], sim['loops']):.1f} | {pr(l1, l2)} |")
            if d == "insane":
                for (p, v) in sorted(set(srv["baselines"]) | set(sim["baselines"])):
                    baseline_rows.append(f"| {arc_id} | {p} | {v} | {srv['baselines'][(p, v)]} | "
                                         f"{sim['baselines'][(p, v)]} |")
            print(lines[-1], flush=True)
    lines += ["", f"Every one of the {total_calls} calls on the server: "
              + ("judged by the automaton as the server judged it, in transcripts all valid in the automaton."
                 if not total_bad else f"{total_bad} invalid or disagreeing."), "",
              "Two-proportion z: the difference of the server's and the simulator's shares in standard errors "
              "(|z| < 2 is what chance gives 95% of the time for one comparison; the change-rate column reports "
              "the largest of 8). Chi-square of 4/5/6 details shown, 2 degrees of freedom (5.99 at the 5% level).",
              "", "Insane: the climbs' baselines drawn (first appearances), server vs simulator:", "",
              "| arc | property | value | server | simulator |", "|---|---|---|---|---|"] + baseline_rows
    lines += ["", f"Run time: {(time.time() - t0) / 60:.1f} min."]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
