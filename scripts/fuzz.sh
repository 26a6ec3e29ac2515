#!/usr/bin/env bash
# A long fuzzing campaign over every public entry point (tests/test_fuzz.py and
# tests/test_fuzz_surfaces.py -- configs, manifests, stream, seq, text -- with
# the "long" hypothesis profile: random seeds, many examples), then the
# damaged-model-file corpus and the reliability tests.
#   scripts/fuzz.sh                  # 2000 examples per property, optimized build
#   EXAMPLES=20000 scripts/fuzz.sh   # a longer campaign
#   SANITIZE=1 scripts/fuzz.sh       # the same under the ASan+UBSan build
# (PYTHON must have numpy/scipy/pytest/hypothesis.)  Failures print a hypothesis
# reproduction blob (@reproduce_failure) to paste into the test.
set -euo pipefail
cd "$(dirname "$0")/.."
export CSCORE_FUZZ_PROFILE=long CSCORE_FUZZ_EXAMPLES=${EXAMPLES:-2000}
tests=(tests/test_fuzz.py tests/test_fuzz_surfaces.py tests/test_model_files.py tests/test_reliability.py)
if [[ "${SANITIZE:-0}" == 1 ]]; then
  exec scripts/sanitize.sh -p no:cacheprovider "${tests[@]}" "$@"
fi
PY=${PYTHON:-python3}
PYTHONPATH=python "$PY" -m pytest -q -p no:cacheprovider "${tests[@]}" "$@"
