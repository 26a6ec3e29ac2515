"""The shrinkages of the unrolled decoders (:mod:`cscore.decoders.learned.unrolled`).

Each acts on groups of G channels: a column ``r_n`` in R^G of a group's (G, N)
estimate is shrunk through its norm, ``x_n = g(||r_n||) r_n`` (G = 1: the usual
scalar shrinkage of independent vectors; G = L: row sparsity across the channels
of a multi-vector problem).  :func:`shrink` also returns the summed Jacobian
``sum_n dx_n / dr_n`` (G x G), the Onsager term of LAMP, from ``g`` and
``g'(rho) / rho`` (``dx/dr = g I + (g'(rho)/rho) r r^T``).

The families (``theta`` per layer; ``sigma`` the per-entry noise std):

* ``"lista"`` -- soft threshold at ``theta_0`` (absolute);
* ``"soft"`` -- ``theta_1 * soft(r; theta_0 sigma sqrt(G))`` (LAMP-l1);
* ``"bg"`` -- the posterior mean of a Bernoulli-Gaussian ``x`` (rate
  ``rho = sigmoid(theta_1)``, variance ``psi = exp(theta_0)`` per entry on the
  support, the G entries of a row on or off together) seen through
  ``N(0, sigma^2)`` noise: ``x = gamma * pi(||r||) * r``, ``gamma = psi / (psi +
  sigma^2)``, ``pi`` the posterior probability of the support;
* ``"pwlin"`` -- piecewise linear in ``||r||`` with breakpoints ``|theta_0|`` and
  ``|theta_1|`` times ``sigma sqrt(G)`` and slopes ``theta_2, theta_3, theta_4``
  (Borgerding et al.'s five-parameter shrinkage).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SHRINKAGES", "shrink"]

#: LAMP's shrinkages and the number of parameters each takes per layer.
SHRINKAGES: dict[str, int] = {"soft": 2, "bg": 2, "pwlin": 5}
#: Floor of the residual variance (keeps the shrinkages finite at ``v = 0``).
_VAR_FLOOR = 1e-30


def _safe(rho: np.ndarray) -> np.ndarray:
    return np.where(rho > 0, rho, 1.0)


def _radial(kind: str, rho: np.ndarray, sigma: np.ndarray, theta: np.ndarray,
            G: int) -> tuple[np.ndarray, np.ndarray]:
    """``g`` and ``g'(rho)/rho`` of the radial shrinkage ``x = g(||r||) r``.

    ``rho`` (P, N) row norms, ``sigma`` (P, 1) per-entry noise std, ``G`` the
    group size (L for a joint model, else 1).
    """
    if kind == "lista":  # absolute threshold theta[0]
        lam = max(float(theta[0]), 0.0)
        on = rho > lam
        rs = _safe(rho)
        return np.where(on, 1.0 - lam / rs, 0.0), np.where(on, lam / rs**3, 0.0)
    if kind == "soft":
        thr = max(float(theta[0]), 0.0) * sigma * math.sqrt(G)
        on = rho > thr
        rs, beta = _safe(rho), float(theta[1])
        return (np.where(on, beta * (1.0 - thr / rs), 0.0),
                np.where(on, beta * thr / rs**3, 0.0))
    if kind == "bg":
        psi = math.exp(float(theta[0]))
        s2 = sigma * sigma
        c = psi / (s2 * (psi + s2))
        u = float(theta[1]) - 0.5 * G * np.log1p(psi / s2) + 0.5 * c * rho * rho
        pi = 0.5 * (1.0 + np.tanh(0.5 * u))
        gam = psi / (psi + s2)
        return gam * pi, gam * c * pi * (1.0 - pi)
    if kind == "pwlin":
        scale = sigma * math.sqrt(G)
        t1 = abs(float(theta[0])) * scale
        t2 = np.maximum(abs(float(theta[1])) * scale, t1)
        s3, s4, s5 = (float(v) for v in theta[2:5])
        f = np.where(rho <= t1, s3 * rho,
                     np.where(rho <= t2, s3 * t1 + s4 * (rho - t1),
                              s3 * t1 + s4 * (t2 - t1) + s5 * (rho - t2)))
        fp = np.where(rho <= t1, s3, np.where(rho <= t2, s4, s5))
        rs = _safe(rho)
        g = np.where(rho > 0, f / rs, s3)
        return g, np.where(rho > 0, (fp - g) / rs**2, 0.0)
    raise ValueError(f"unknown shrinkage {kind!r}")


def shrink(
    kind: str, R: np.ndarray, sigma2: np.ndarray, theta: np.ndarray, *, onsager: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Apply a shrinkage to groups of rows, and its Onsager matrix.

    Parameters
    ----------
    kind : {"lista", "soft", "bg", "pwlin"}
        ``"lista"``: soft threshold at ``theta[0]``; the others are LAMP's (see
        the module docstring).
    R : ndarray (P, G, N)
        P groups of G channels (G = 1: independent vectors); the shrinkage acts
        on each column ``R[p, :, n]`` in R^G through its norm.
    sigma2 : ndarray (P,)
        Per-entry noise variance of each group (unused by ``"lista"``).
    theta : ndarray (n_params,)
        The layer's shrinkage parameters.
    onsager : bool, default False
        Also return ``sum_n dx_n / dr_n`` per group.

    Returns
    -------
    X : ndarray (P, G, N)
        The shrunk estimate.
    J : ndarray (P, G, G) or None
        The summed Jacobians (when ``onsager``).
    """
    G = R.shape[1]
    rho = np.sqrt(np.einsum("pgn,pgn->pn", R, R)) if G > 1 else np.abs(R[:, 0, :])
    sigma = np.sqrt(np.maximum(sigma2, _VAR_FLOOR))[:, None].astype(R.dtype, copy=False)
    g, d = _radial(kind, rho, sigma, np.asarray(theta), G)
    g = g.astype(R.dtype, copy=False)
    X = R * g[:, None, :]
    if not onsager:
        return X, None
    d = d.astype(R.dtype, copy=False)
    if G == 1:  # the scalar case: sum_n (g + d r^2)
        return X, (g + d * rho * rho).sum(axis=1)[:, None, None]
    J = (R * d[:, None, :]) @ R.transpose(0, 2, 1)
    J += g.sum(axis=1)[:, None, None] * np.eye(G, dtype=R.dtype)
    return X, J
