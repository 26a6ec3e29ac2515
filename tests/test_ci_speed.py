"""benchmarks/ci_speed.py (issue 23): its NumPy SOMP reference is a real SOMP, and CI
runs the report so that a crash fails and a slow result does not."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import cscore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import ci_speed  # noqa: E402


def test_numpy_somp_reference_agrees_with_cscore_somp():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((72, 144))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((144, 4))
    S[rng.choice(144, 10, replace=False)] = rng.standard_normal((10, 4))
    Y = A @ S
    ref = ci_speed.numpy_somp(A, Y, 10)
    np.testing.assert_allclose(ref, S, atol=1e-8)
    np.testing.assert_allclose(ref, cscore.somp(A, Y, n_nonzero=10), atol=1e-8)


def test_ci_runs_the_report_and_lets_a_crash_fail():
    script = (ROOT / ".ci" / "run").read_text()
    lines = [ln.strip() for ln in script.splitlines() if "ci_speed.py" in ln
             and not ln.strip().startswith("#")]
    assert lines == ["python benchmarks/ci_speed.py"]  # no "|| true": a crash fails
    assert script.index("python -m pytest -q tests") < script.index(lines[0])
    assert "set -euo pipefail" in script
