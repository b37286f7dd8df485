#!/usr/bin/env bash
# Mutation testing (issue 17): mutmut 3.x on the core and world modules listed under
# [tool.mutmut] in pyproject.toml, each mutant run against the fast unit tests that cover
# the mutated function. Not part of the default test run (it takes hours on 2 cores).
#
#   scripts/mutation.sh                       # every configured module
#   scripts/mutation.sh 'worldmodel.dfa*'     # one module (mutant-name globs, as `mutmut run` takes)
#   JOBS=4 scripts/mutation.sh                # more workers (default 1; CPUs are shared)
#
# Then: `mutmut results` lists survivors, `mutmut show NAME` shows one, and
# `python scripts/mutation_report.py` writes results/mutation.md from mutants/.
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import mutmut" 2>/dev/null || { echo "worldmodel: error: mutmut is not installed (pip install -e '.[mutation]')" >&2; exit 2; }
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec nice -n "${NICE:-10}" mutmut run --max-children "${JOBS:-1}" "$@"
