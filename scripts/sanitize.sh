#!/usr/bin/env bash
# Build the core with AddressSanitizer + UndefinedBehaviorSanitizer and run the
# test suite against it.  Usage: scripts/sanitize.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SANITIZE=1 WERROR=ON scripts/dev-build.sh
libasan=$(g++ -print-file-name=libasan.so)
libubsan=$(g++ -print-file-name=libubsan.so)
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_odr_violation=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
LD_PRELOAD="$libasan:$libubsan" PYTHONPATH=python "$PY" -m pytest -x -q -m "not slow and not torch" "$@" || status=$?
# Put back the optimized build for development.
scripts/dev-build.sh >/dev/null
exit $status
