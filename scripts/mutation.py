"""Run mutmut 3.x one module at a time, each against only the tests that exercise it.

Each module listed under ``[tool.worldmodel-mutation.tests]`` in pyproject.toml gets its
own folder ``.mutation/<module>/`` (ignored by git): a copy of ``worldmodel/``,
``tests/`` and ``tasks/`` and a pyproject.toml whose ``[tool.mutmut]`` is the shared one
with ``only_mutate`` set to that module and the test selection set to its test files.
mutmut then runs there as usual: the stats pass maps each function to the tests that
call it, and each mutant runs only those. A module's results are kept between runs,
so an interrupted run resumes where it stopped; they are thrown away (and the module
mutated afresh) when the module's source has changed since they were made.

    python scripts/mutation.py run [MODULE ...]          # all configured modules, or the named ones
    python scripts/mutation.py run wthor --survivors     # rerun survivors and timeouts (after adding tests)
    python scripts/mutation.py run dfa --fresh           # throw the module's results away first
    python scripts/mutation.py run dfa --keep            # after a small fix: rerun only the changed functions
    python scripts/mutation.py list                      # modules, their tests and folders

MODULE is a module's file stem (``dfa``, ``wthor``, ``world`` ...) or its path.
``scripts/mutation.sh`` wraps ``run`` with ``nice`` and ``JOBS`` workers;
``scripts/mutation_report.py`` writes results/mutation.md from the folders.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"
SURVIVED_CODES = {0, 5, 33}   # survived, no tests (mutmut's exit codes as stored in the .meta files)
TIMEOUT_CODES = {36, 24, -24, 152, 255}   # rerun too: a worker that hung is not a test that failed


def fail(msg: str) -> int:
    print(f"worldmodel: error: {msg}", file=sys.stderr)
    return 2


def load_config() -> tuple[dict, dict[str, list[str]]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    base = data.get("tool", {}).get("mutmut", {})
    tests = data.get("tool", {}).get("worldmodel-mutation", {}).get("tests", {})
    return base, tests


def folder_of(module: str) -> Path:
    return WORK / module.removesuffix(".py").replace("/", ".")


def resolve(names: list[str], modules: list[str]) -> list[str]:
    if not names:
        return list(modules)
    out = []
    for name in names:
        hits = [m for m in modules if name in (m, m.removesuffix(".py"), Path(m).stem)]
        if len(hits) != 1:
            raise ValueError(f"unknown mutation module {name!r} (choose from: "
                             f"{', '.join(Path(m).stem for m in modules)})")
        out.append(hits[0])
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def toml_value(value) -> str:
    # JSON strings, lists and numbers are valid TOML values
    return json.dumps(value, ensure_ascii=False)


def module_pyproject(base: dict, module: str, tests: list[str]) -> str:
    """The repo's pyproject.toml with its mutmut tables replaced by this module's settings."""
    text = (ROOT / "pyproject.toml").read_text()
    kept, skip = [], False
    for line in text.splitlines():
        if re.match(r"^\[", line):
            skip = line.strip() in ("[tool.mutmut]", "[tool.worldmodel-mutation.tests]", "[tool.worldmodel-mutation]")
        if not skip:
            kept.append(line)
    conf = dict(base, only_mutate=[module], pytest_add_cli_args_test_selection=tests)
    kept += ["", "[tool.mutmut]"] + [f"{k} = {toml_value(v)}" for k, v in conf.items()]
    return "\n".join(kept) + "\n"


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def prepare(module: str, base: dict, tests: list[str], fresh: bool, keep: bool = False) -> Path:
    folder = folder_of(module)
    record = folder / "run.json"
    source_sha = sha256(ROOT / module)
    changed = record.exists() and json.loads(record.read_text()).get("source_sha256") != source_sha
    if folder.exists() and (fresh or not record.exists() or (changed and not keep)):
        print(f"{module}: source changed since the last run (or --fresh): starting afresh")
        shutil.rmtree(folder)
    elif changed:
        # mutmut mutates the file again and resets the results of the functions whose code changed
        print(f"{module}: source changed; keeping the results of unchanged functions (--keep)")
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("worldmodel", "tests", "tasks"):
        if (ROOT / sub).exists():
            copy_tree(ROOT / sub, folder / sub)
    # mutmut copies the package into mutants/ only once; refresh every file but the
    # mutated one there, so that the other modules are the current ones
    mutated_pkg = folder / "mutants" / "worldmodel"
    if mutated_pkg.exists():
        for path in (ROOT / "worldmodel").rglob("*"):
            rel = path.relative_to(ROOT)
            if path.is_file() and "__pycache__" not in rel.parts and str(rel) != module:
                (folder / "mutants" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, folder / "mutants" / rel)
    (folder / "pyproject.toml").write_text(module_pyproject(base, module, tests))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", module], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    record.write_text(json.dumps({
        "module": module, "tests": tests, "source_sha256": source_sha,
        "commit": commit + ("+uncommitted" if dirty else ""),
        "tests_sha256": {t: sha256(ROOT / t) for t in tests},
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }, indent=1) + "\n")
    return folder


def survivors(folder: Path, module: str) -> list[str]:
    meta = folder / "mutants" / (module + ".meta")
    if not meta.exists():
        return []
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    return sorted(k for k, v in codes.items() if v in SURVIVED_CODES | TIMEOUT_CODES)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the named modules (default: all), one after another")
    r.add_argument("modules", nargs="*")
    r.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "1")), help="mutmut workers (JOBS)")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--survivors", action="store_true", help="rerun only the survivors, no-test and timed-out mutants")
    g.add_argument("--fresh", action="store_true", help="throw the module's earlier results away first")
    r.add_argument("--keep", action="store_true",
                   help="after a change to the module, keep the results of the functions that did not change "
                        "(mutmut reruns the changed ones); default: start afresh")
    sub.add_parser("list", help="the configured modules and their tests")
    args = ap.parse_args(argv)

    base, table = load_config()
    if not table:
        return fail("pyproject.toml has no [tool.worldmodel-mutation.tests] table")
    modules = list(table)
    if args.cmd == "list":
        for m in modules:
            print(f"{m}: {' '.join(table[m])}  ({folder_of(m).relative_to(ROOT)})")
        return 0
    try:
        chosen = resolve(args.modules, modules)
    except ValueError as exc:
        return fail(str(exc))
    if args.jobs < 1:
        return fail("--jobs must be at least 1")
    try:
        import mutmut  # noqa: F401
    except ImportError:
        return fail("mutmut is not installed (pip install -e '.[mutation]')")
    for module in chosen:
        folder = prepare(module, base, table[module], args.fresh, args.keep)
        names = survivors(folder, module) if args.survivors else []
        if args.survivors and not names:
            print(f"{module}: no survivors to rerun")
            continue
        print(f"== {module}: mutmut in {folder.relative_to(ROOT)} against {' '.join(table[module])}", flush=True)
        cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.jobs), *names]
        rc = subprocess.run(cmd, cwd=folder).returncode
        if rc != 0:
            return fail(f"mutmut exited with {rc} on {module}")
        rec = json.loads((folder / "run.json").read_text())
        rec["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        (folder / "run.json").write_text(json.dumps(rec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
