"""Write results/mutation.md from the last mutmut run (the ``mutants/`` folder).

Per module: mutants, killed, survived, timeouts, not checked, and the score
``killed / (mutants checked - equivalent)``. Survivors are listed with their diff; the
ones explained as equivalent are read from ``results/mutation-equivalent.toml``
(``"mutant name" = "why it cannot change behaviour"``), kept by hand.

    python scripts/mutation_report.py [--out results/mutation.md]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KILLED = {1, 3, 36, 24, -24, 152, 255, 37}   # test failure, pytest error, timeout (SIGXCPU), type check
SURVIVED = {0}
NO_TESTS = {5, 33}


def status(code) -> str:
    if code is None:
        return "not checked"
    if code in SURVIVED:
        return "survived"
    if code in NO_TESTS:
        return "no tests"
    if code in {36, 24, -24, 152, 255}:
        return "timeout"
    if code in KILLED:
        return "killed"
    return "suspicious"


def diff_of(name: str) -> str:
    out = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=ROOT, capture_output=True, text=True)
    lines = [ln for ln in out.stdout.splitlines()[1:] if ln.startswith(("+", "-")) and not ln.startswith(("+++", "---"))]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/mutation.md")
    ap.add_argument("--commit", default=None, help="commit the run mutated (default: HEAD)")
    ap.add_argument("--note", default="", help="a file whose text is added under the title (scope of the run)")
    args = ap.parse_args(argv)
    metas = sorted((ROOT / "mutants").rglob("*.py.meta"))
    if not metas:
        print("worldmodel: error: no mutmut results under mutants/ (run scripts/mutation.sh first)", file=sys.stderr)
        return 2
    eq_path = ROOT / "results" / "mutation-equivalent.toml"
    equivalent = tomllib.loads(eq_path.read_text()) if eq_path.exists() else {}
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                           capture_output=True, text=True).stdout.strip()
    rows, survivors = [], []
    for meta in metas:
        module = str(meta.relative_to(ROOT / "mutants"))[: -len(".meta")]
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts: dict[str, int] = {}
        for name, code in sorted(codes.items()):
            s = status(code)
            if s == "survived" and name in equivalent:
                s = "equivalent"
            counts[s] = counts.get(s, 0) + 1
            if s in ("survived", "equivalent", "suspicious", "no tests"):
                survivors.append((module, name, s, equivalent.get(name, "")))
        rows.append((module, len(codes), counts))
    lines = ["# Mutation testing report", "",
             f"`scripts/mutation.sh` (mutmut 3.x, config in `pyproject.toml` `[tool.mutmut]`) on commit `{commit}`.",
             "Score = killed / (checked − equivalent); timeouts count as killed. "
             "Regenerate this file with `python scripts/mutation_report.py`.", ""]
    if args.note:
        lines += [Path(args.note).read_text().strip(), ""]
    lines += ["| module | mutants | checked | killed | survived | equivalent | no tests | not checked | score |",
              "|---|---|---|---|---|---|---|---|---|"]
    for module, n, c in rows:
        killed = c.get("killed", 0) + c.get("timeout", 0)
        eq = c.get("equivalent", 0)
        checked = n - c.get("not checked", 0)
        denom = checked - eq
        score = f"{100 * killed / denom:.1f}%" if denom and not c.get("not checked") else (
            f"({100 * killed / denom:.1f}% of checked)" if denom else "—")
        lines.append(f"| `{module}` | {n} | {checked} | {killed} | {c.get('survived', 0)} | {eq} | "
                     f"{c.get('no tests', 0)} | {c.get('not checked', 0)} | {score} |")
    lines += ["", "## Survivors", "",
              "Each survivor: its diff, and either why it is equivalent or that it is still open.", ""]
    for module, name, s, why in survivors:
        lines.append(f"### `{name}` ({s})")
        lines.append("")
        if why:
            lines.append(f"Equivalent: {why}")
            lines.append("")
        diff = diff_of(name)
        lines += ["```diff", diff, "```", ""] if diff else ["(diff not available: the module was not mutated in the last run)", ""]
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
