"""The untrained unrolled networks a training run starts from, and the NMSE they
are chosen by: :func:`initial_model` (ISTA / AMP with parameters fitted to
training problems), :func:`nmse_db`.  LISTA's stepped start is in
:mod:`cscore.training._lista_init`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..decoders.learned import LAMP, LISTA, UnrolledModel
from ..problem import ProblemSpec

__all__ = ["initial_model", "nmse_db"]


def nmse_db(X_hat: np.ndarray, X: np.ndarray) -> float:
    """NMSE in dB over a whole set: ``10 log10(sum ||x_hat - x||^2 / sum ||x||^2)``.

    Parameters
    ----------
    X_hat, X : ndarray, same shape
        Estimates and ground truths.

    Returns
    -------
    float
    """
    err = float(np.sum((np.asarray(X_hat, dtype=np.float64) - X) ** 2))
    return 10.0 * math.log10(max(err, 1e-300) / max(float(np.sum(np.square(X))), 1e-300))


def _bg_theta(X: np.ndarray) -> tuple[float, float]:
    """(log psi, logit rho) of a Bernoulli-Gaussian fitted to ground truths X."""
    nz = X != 0
    rho = float(np.clip(nz.mean(), 1e-3, 0.9))
    psi = float(np.sum(X * X) / max(int(nz.sum()), 1))
    return math.log(max(psi, 1e-12)), math.log(rho / (1 - rho))


def initial_model(
    arch: str, A: np.ndarray, spec: ProblemSpec, X: np.ndarray, Y: np.ndarray, *,
    n_layers: int, shrinkage: str = "bg", joint: bool = False, untied: bool = True,
    info: dict[str, Any] | None = None,
) -> UnrolledModel:
    """The untrained network, its parameters fitted to training problems (X, Y).

    LISTA: ISTA with the l1 weight that gives the least NMSE after
    ``n_layers`` iterations on these problems (a grid).  LAMP: AMP (``B_t =
    A^T``) with, for "soft" and "pwlin", the threshold multiplier that does best
    after ``n_layers`` iterations (a grid), for "bg" the rate and variance of
    the nonzero entries of ``X``.

    Parameters
    ----------
    arch : {"lista", "lamp"}
    A : ndarray (M, N)
    spec : ProblemSpec
    X : ndarray (n, N, L)
        Ground truths.
    Y : ndarray (n, M, L)
        Their measurements.
    n_layers : int
    shrinkage : {"soft", "bg", "pwlin"}, default "bg"
        LAMP only.
    joint : bool, default False
        Row-sparse shrinkage across the channels.
    untied : bool, default True
        LISTA: one B, S per layer.
    info : dict, optional

    Returns
    -------
    LISTA or LAMP
    """
    if arch == "lista":
        scale = float(np.median(np.abs(np.einsum("mn,bml->bnl", A, Y)).max(axis=1)))
        c = float(np.linalg.norm(A, 2) ** 2)

        def lista(lam: float) -> UnrolledModel:
            return LISTA.from_ista(A, spec, n_layers=n_layers, lam=lam * c, joint=joint,
                                   untied=untied, info=info)

        grid = [scale * f / c for f in np.geomspace(1e-3, 1.0, 16)]
        return min((lista(g) for g in grid), key=lambda m: nmse_db(np.asarray(m.decode(Y)), X))
    if arch != "lamp":
        raise ValueError(f"arch must be 'lista' or 'lamp', got {arch!r}")

    def lamp(theta: tuple[float, ...], kind: str) -> UnrolledModel:
        return LAMP.from_amp(A, spec, n_layers=n_layers, shrinkage=kind, theta=theta,
                             joint=joint, info=info)

    if shrinkage == "bg":
        return lamp(_bg_theta(X), "bg")
    best = min((lamp((a, 1.0), "soft") for a in np.linspace(0.5, 3.0, 11)),
               key=lambda m: nmse_db(np.asarray(m.decode(Y)), X))
    if shrinkage == "soft":
        return best
    alpha = float(best.arrays()["theta"][0, 0])
    return lamp((alpha, 2 * alpha, 0.0, 1.0, 1.0), "pwlin")
