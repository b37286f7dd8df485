"""Write results/mutation.md from the per-module mutmut runs (``.mutation/<module>/``).

Per module: mutants, killed, survived, timeouts, not checked, and the score
``killed / (mutants checked - equivalent)``; the commit each module was run on and
whether its source has changed since. Survivors are listed with their diff; the
ones explained as equivalent are read from ``results/mutation-equivalent.toml``
(``"mutant name" = "why it cannot change behaviour"``), kept by hand.

    python scripts/mutation_report.py [--out results/mutation.md] [--note FILE] [--keep-from FILE]

The text under the title (how the runs were made and what they cover) is ``results/mutation-note.md``.

A module with no results under ``.mutation/`` here keeps its row and its survivors from the
previous report (``--keep-from``, default the ``--out`` file), marked as carried over, so a
session that reruns one module does not erase the others.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTE = ROOT / "results" / "mutation-note.md"
sys.path.insert(0, str(ROOT / "scripts"))
from mutation import folder_of, load_config  # noqa: E402

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


def diff_of(folder: Path, name: str) -> str:
    out = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=folder, capture_output=True, text=True)
    lines = [ln for ln in out.stdout.splitlines()[1:] if ln.startswith(("+", "-")) and not ln.startswith(("+++", "---"))]
    return "\n".join(lines)


def previous_report(path: Path) -> tuple[dict[str, str], list[str]]:
    """The table rows (module -> line) and the survivor sections of an earlier report."""
    if not path.exists():
        return {}, []
    text = path.read_text()
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `worldmodel/"):
            rows[line.split("`")[1]] = line
    body = text.split("\n## Survivors\n", 1)[-1] if "\n## Survivors\n" in text else ""
    sections = ["### `" + part.rstrip() for part in body.split("\n### `")[1:]]
    return rows, sections


def dotted(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".") + "."


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/mutation.md")
    ap.add_argument("--note", default=str(NOTE.relative_to(ROOT)),
                    help="a file whose text is added under the title: how the runs were made, their scope "
                         "(default: %(default)s, kept by hand; none if it does not exist)")
    ap.add_argument("--keep-from", default=None,
                    help="earlier report whose rows and survivors modules not run here keep (default: --out)")
    args = ap.parse_args(argv)
    old_rows, old_sections = previous_report(ROOT / (args.keep_from or args.out))
    _, table = load_config()
    eq_path = ROOT / "results" / "mutation-equivalent.toml"
    equivalent = tomllib.loads(eq_path.read_text()) if eq_path.exists() else {}
    rows, survivors = [], []
    for module, tests in table.items():
        folder = folder_of(module)
        meta = folder / "mutants" / (module + ".meta")
        if not meta.exists():
            rows.append((module, None, {}, None, tests))
            continue
        run = json.loads((folder / "run.json").read_text())
        current = run["source_sha256"] == hashlib.sha256((ROOT / module).read_bytes()).hexdigest()
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts: dict[str, int] = {}
        for name, code in sorted(codes.items()):
            s = status(code)
            if s == "survived" and name in equivalent:
                s = "equivalent"
            counts[s] = counts.get(s, 0) + 1
            if s in ("survived", "equivalent", "suspicious", "no tests"):
                survivors.append((folder, name, s, equivalent.get(name, "")))
        rows.append((module, len(codes), counts, (run, current), run["tests"]))
    if all(r[1] is None for r in rows):
        print("worldmodel: error: no mutmut results under .mutation/ (run scripts/mutation.sh first)", file=sys.stderr)
        return 2
    lines = ["# Mutation testing report", "",
             "`scripts/mutation.sh` (mutmut 3.x; shared settings in `pyproject.toml` `[tool.mutmut]`, the test files "
             "per module in `[tool.worldmodel-mutation.tests]`): each module is mutated in its own run, and each "
             "mutant runs those of its module's test files that call the mutated function.",
             "Score = killed / (checked − equivalent); timeouts count as killed; \"no tests\" counts as surviving. "
             "Regenerate this file with `python scripts/mutation_report.py`.", ""]
    if args.note and (ROOT / args.note).is_file():
        lines += [(ROOT / args.note).read_text().strip(), ""]
    lines += ["| module | mutants | checked | killed | survived | equivalent | no tests | not checked | score |"
              " run on | tests |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for module, n, c, run, tests in rows:
        test_list = ", ".join(f"`{Path(t).name}`" for t in tests)
        if n is None:
            if module in old_rows and "not run" not in old_rows[module]:
                lines.append(old_rows[module].rstrip(" |") + " (carried over from the previous report) |"
                             if "carried over" not in old_rows[module] else old_rows[module])
            else:
                lines.append(f"| `{module}` | — | 0 | | | | | all | not run | | {test_list} |")
            continue
        killed = c.get("killed", 0) + c.get("timeout", 0)
        eq = c.get("equivalent", 0)
        checked = n - c.get("not checked", 0)
        denom = checked - eq
        score = f"{100 * killed / denom:.1f}%" if denom and not c.get("not checked") else (
            f"({100 * killed / denom:.1f}% of checked)" if denom else "—")
        info, current = run
        when = f"`{info['commit']}`" + ("" if current else " (source changed since)")
        lines.append(f"| `{module}` | {n} | {checked} | {killed} | {c.get('survived', 0)} | {eq} | "
                     f"{c.get('no tests', 0)} | {c.get('not checked', 0)} | {score} | {when} | {test_list} |")
    lines += ["", "## Survivors", "",
              "Each survivor: its diff, and either why it is equivalent or that it is still open.", ""]
    for folder, name, s, why in survivors:
        lines.append(f"### `{name}` ({s})")
        lines.append("")
        if why:
            lines.append(f"Equivalent: {why}")
            lines.append("")
        diff = diff_of(folder, name)
        lines += ["```diff", diff, "```", ""] if diff else ["(diff not available)", ""]
    carried = [m for m, n, *_ in rows if n is None and m in old_rows]
    for section in old_sections:
        name = section.split("`")[1]
        if any(name.startswith(dotted(m)) for m in carried):
            lines += [section, ""]
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
