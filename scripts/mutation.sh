#!/usr/bin/env bash
# Mutation testing (issue 17): mutmut 3.x on the core and world modules listed under
# [tool.worldmodel-mutation.tests] in pyproject.toml, one module at a time, each in its own
# folder .mutation/<module>/ and against only the test files listed for it (each mutant runs
# those of them that call the mutated function). Not part of the default test run.
#
#   scripts/mutation.sh                       # every configured module, one after another
#   scripts/mutation.sh wthor protocol        # the named modules (file stem or path)
#   scripts/mutation.sh dfa --survivors       # rerun only a module's survivors (after adding tests)
#   JOBS=2 NICE=19 scripts/mutation.sh dfa    # workers (default 1) and niceness (default 10)
#
# Results are kept per module (a rerun resumes; a changed module starts afresh). Then
# `python scripts/mutation_report.py` writes results/mutation.md; to see one mutant:
# `cd .mutation/worldmodel.dfa && mutmut show NAME`.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec nice -n "${NICE:-10}" python scripts/mutation.py run "$@"
