#!/usr/bin/env bash
# Build the compiled core in place for development: compiles cscore._core with
# CMake into build/dev and copies it into python/cscore/, so that
# `PYTHONPATH=python pytest` runs the tests against the working tree.
#   scripts/dev-build.sh            # Release build
#   SANITIZE=1 scripts/dev-build.sh # ASan+UBSan build into build/asan
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [[ "${SANITIZE:-0}" == 1 ]]; then
  dir=build/asan; extra=(-DCSCORE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
else
  dir=build/dev; extra=(-DCMAKE_BUILD_TYPE=Release)
fi
cmake -S . -B "$dir" -G Ninja -DPython_EXECUTABLE="$("$PY" -c 'import sys; print(sys.executable)')" \
  -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" -DCSCORE_WERROR=${WERROR:-OFF} "${extra[@]}" >/dev/null
cmake --build "$dir" -j "${JOBS:-2}"
cp "$dir"/_core*.so python/cscore/
