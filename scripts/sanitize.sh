#!/usr/bin/env bash
# Build the core with AddressSanitizer + UndefinedBehaviorSanitizer and run the
# test suite against it.  Usage: [PYTHON=/path/to/python] scripts/sanitize.sh [pytest args...]
# (PYTHON must have numpy/scipy/pytest/hypothesis; JOBS defaults to 1 here.)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHON=$PY JOBS=${JOBS:-1}
SANITIZE=1 WERROR=ON scripts/dev-build.sh
libasan=$(g++ -print-file-name=libasan.so)
libubsan=$(g++ -print-file-name=libubsan.so)
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_odr_violation=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
echo "sanitize: running pytest with $libasan and $libubsan preloaded" >&2
LD_PRELOAD="$libasan:$libubsan" PYTHONPATH=python "$PY" -m pytest -x -q -m "not slow and not torch" "$@" || status=$?
# Put back the optimized build for development (CSCORE_SANITIZE_RESTORE=0 skips it).
if [[ "${CSCORE_SANITIZE_RESTORE:-1}" != 0 ]]; then
  scripts/dev-build.sh >/dev/null
fi
exit $status
