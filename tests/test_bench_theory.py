"""The Donoho-Tanner l1 weak threshold drawn in the phase-transition figures."""

from __future__ import annotations

import numpy as np

from cscore.bench.theory import weak_threshold, weak_threshold_sd


def test_two_independent_formulas_agree():
    # Donoho-Maleki-Montanari's closed form vs the statistical dimension of the
    # l1 descent cone (Amelunxen et al.): the same curve, computed two ways.
    delta, rho = weak_threshold_sd([0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8])
    np.testing.assert_allclose(weak_threshold(delta), rho, rtol=1e-6)


def test_known_values_and_limits():
    # rho_W(1/2) ~= 0.385 (Donoho & Tanner's cross-polytope weak threshold)
    assert abs(float(weak_threshold(0.5)) - 0.3857) < 2e-3
    r = weak_threshold([0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999])
    assert np.all(np.diff(r) > 0) and np.all((r > 0) & (r < 1))
    assert weak_threshold(1.0) == 1.0 and r[-1] > 0.95
    # small delta: rho_W ~ 1 / (2 log(1/delta)) to leading order
    d = 1e-4
    assert 0.5 < float(weak_threshold(d)) * 2 * np.log(1 / d) < 1.5
