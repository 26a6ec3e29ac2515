"""The Donoho-Tanner l1 weak-threshold phase transition, for reference in figures.

For a k-sparse signal of length N measured by M Gaussian measurements, l1
minimization recovers (asymptotically, for most signals) every signal with
``rho = k / M`` below ``rho_W(delta)``, ``delta = M / N``: the weak threshold of
the projected cross-polytope (Donoho & Tanner 2005, 2009).  It is computed here
from its closed form in Donoho, Maleki & Montanari (PNAS 2009, eq. for
``rho_CG``, shown there to coincide with the cross-polytope weak threshold)::

    rho_W(delta) = max_{z >= 0} [1 - (2/delta) g(z)] / [1 + z^2 - 2 g(z)],
    g(z) = (1 + z^2) Phi(-z) - z phi(z),

and, independently, from the statistical dimension of the l1 descent cone
(Amelunxen, Lotz, McCoy & Tropp 2014), ``delta = psi(eps) = inf_tau [eps (1 +
tau^2) + 2 (1 - eps) g(tau)]`` with ``eps = k / N``; :func:`weak_threshold_sd`
gives that form, which the tests compare with the first.

Greedy decoders (OMP, SOMP) and multi-channel decoders are not bound by this
curve; it shows where l1 minimization on one channel would stop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import special

__all__ = ["weak_threshold", "weak_threshold_sd"]


def _g(z: float) -> float:
    phi = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    Phi = 0.5 * special.erfc(z / np.sqrt(2))
    return float((1 + z * z) * Phi - z * phi)


def _rho_one(delta: float) -> float:
    from scipy import optimize  # lazily: scipy.optimize takes ~0.1 s to import
    if delta >= 1:
        return 1.0
    if delta <= 0:
        return 0.0

    def neg(z: float) -> float:
        g = _g(z)
        return -(1 - 2 * g / delta) / (1 + z * z - 2 * g)

    zs = np.linspace(1e-3, 8, 161)
    z0 = zs[int(np.argmin([neg(z) for z in zs]))]
    r = optimize.minimize_scalar(neg, bounds=(max(1e-3, z0 - 0.05), z0 + 0.05), method="bounded",
                                 options={"xatol": 1e-10})
    return float(min(1.0, max(0.0, -r.fun)))


def weak_threshold(delta: float | Sequence[float] | np.ndarray) -> np.ndarray:
    """The l1 weak threshold ``rho_W(delta)`` (k/M against M/N).

    Parameters
    ----------
    delta : float or array_like
        Undersampling ratios ``M / N`` in [0, 1].

    Returns
    -------
    ndarray
        ``rho_W`` for each ``delta`` (same shape), in [0, 1].
    """
    d = np.asarray(delta, dtype=np.float64)
    return np.vectorize(_rho_one, otypes=[np.float64])(d)


def weak_threshold_sd(eps: float | Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same curve from the statistical dimension of the l1 descent cone.

    Parameters
    ----------
    eps : float or array_like
        Sparsity fractions ``k / N`` in (0, 1).

    Returns
    -------
    delta, rho : ndarray
        ``delta = psi(eps)`` (the M/N where recovery starts) and ``rho = eps /
        delta``.
    """
    from scipy import optimize  # lazily: scipy.optimize takes ~0.1 s to import
    e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
    delta = np.empty_like(e)
    for i, ei in enumerate(e):
        r = optimize.minimize_scalar(lambda t, ei=ei: ei * (1 + t * t) + 2 * (1 - ei) * _g(t),
                                     bounds=(0, 10), method="bounded", options={"xatol": 1e-10})
        delta[i] = r.fun
    return delta, e / delta
