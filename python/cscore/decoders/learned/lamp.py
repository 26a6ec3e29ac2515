"""LAMP (Borgerding, Schniter, Rangan 2017): AMP unrolled into T layers (an
unrolled decoder, :class:`~cscore.decoders.learned.unrolled.UnrolledModel`).

LAMP (learned AMP, "tied": the residual uses the model's own A), ``x_0 = 0``,
``v_0 = y``::

    r_t     = x_t + B_t v_t
    x_{t+1} = eta(r_t; sigma_t, theta_t)          sigma_t^2 = ||v_t||^2 / M
    v_{t+1} = y - A x_{t+1} + (1/M) sum_n eta'(r_t)_n v_t     (Onsager correction)

with ``B_t`` (N, M) and the shrinkage's parameters ``theta_t`` learned per layer.
The shrinkages (``shrinkage=``):

* ``"soft"`` -- ``beta * soft(r; alpha * sigma)`` (LAMP-l1; theta = (alpha, beta));
* ``"bg"`` -- the MMSE estimate of a Bernoulli-Gaussian ``x`` (rate rho, variance
  psi on the support) from ``r = x + N(0, sigma^2)``, theta = (log psi, logit rho);
* ``"pwlin"`` -- Borgerding et al.'s piecewise-linear shrinkage: slope theta_3 up
  to theta_1 sigma, theta_4 up to theta_2 sigma, theta_5 beyond.

For a joint model every shrinkage is applied to the norm of a row ``r_n`` in R^L
(``x_n = g(||r_n||) r_n``: group soft threshold, row-sparse Bernoulli-Gaussian,
radial piecewise-linear; thresholds scale with ``sigma sqrt(L)``), sigma^2 is the
per-entry residual variance of the problem, and the Onsager term is the L x L
matrix ``(1/M) sum_n d x_n / d r_n`` applied to the channels of ``v_t``.  With
L = 1 the joint shrinkages are the scalar ones.

File entries (float32): ``B`` (T, N, M), ``theta`` (T, P) (P = 2, 2, 5 for
soft, bg, pwlin); ``arch`` "lamp"; ``arch_params = {"n_layers", "joint",
"shrinkage"}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..._validation import check_positive_int
from ...problem import ProblemSpec
from .base import FileArray, FileParam
from .shrinkage import SHRINKAGES, shrink
from .unrolled import MAX_LAYERS, UnrolledModel

__all__ = ["LAMP"]


class LAMP(UnrolledModel):
    """LAMP (Borgerding, Schniter, Rangan 2017): AMP unrolled with learned B_t and shrinkage.

    Parameters
    ----------
    arrays : mapping
        ``B`` (T, N, M) and ``theta`` (T, P) (P from :data:`SHRINKAGES`); kept
        as float32.
    A : ndarray (M, N)
        The sensing matrix the model was trained for (the tied residual's A).
    spec : ProblemSpec
        Sizes (and for a joint model, the channels L).
    params : mapping
        ``{"n_layers": T, "joint": 0/1, "shrinkage": "soft" | "bg" | "pwlin"}``.
    info : dict, optional
        Free-form provenance.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore.decoders.learned import LAMP
    >>> from cscore.problem import ProblemSpec
    >>> A = np.random.default_rng(0).normal(size=(8, 16)) / np.sqrt(8)
    >>> m = LAMP.from_amp(A, ProblemSpec(M=8, N=16, L=1), n_layers=3, shrinkage="bg",
    ...                   theta=(0.0, -2.0))
    >>> m.decode(A[:, :2], n_layers=2).shape
    (16, 2)
    """

    ARCH = "lamp"
    FILE_PARAMS: ClassVar[Mapping[str, FileParam]] = {
        "n_layers": FileParam(hi=MAX_LAYERS),
        "joint": FileParam("flag", default=0),
        "shrinkage": FileParam("str", choices=tuple(SHRINKAGES)),
    }
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = {
        "B": FileArray(("n_layers", "N", "M")),
        "theta": FileArray(("n_layers", "P")),
    }

    @classmethod
    def _file_dims(cls, params: Mapping[str, Any]) -> dict[str, int]:
        """``P``: the shrinkage's parameters per layer."""
        return {"P": SHRINKAGES[str(params["shrinkage"])]}

    def _check_weights(self) -> None:
        """LAMP-bg: ``theta[:, 0] = log psi`` must keep ``psi`` in the float range."""
        if self.shrinkage == "bg":
            top = float(np.max(self._w["theta"][:, 0], initial=-np.inf))
            limit = math.log(np.finfo(np.float64).max)
            if top > limit:
                raise ValueError(f"weight 'theta': LAMP-bg's log slab variance theta[:, 0] = "
                                 f"{top:g} exceeds {limit:.2f} (its exp overflows)")

    @property
    def shrinkage(self) -> str:
        """The shrinkage family ("soft", "bg" or "pwlin")."""
        return str(self._params["shrinkage"])

    @classmethod
    def from_amp(cls, A: np.ndarray, spec: ProblemSpec, *, n_layers: int, shrinkage: str,
                 theta: Any, joint: bool = False, info: dict[str, Any] | None = None) -> LAMP:
        """The untrained network: ``n_layers`` iterations of AMP (``B_t = A^T``).

        Parameters
        ----------
        A : ndarray (M, N)
        spec : ProblemSpec
        n_layers : int
        shrinkage : {"soft", "bg", "pwlin"}
        theta : sequence of float
            The shrinkage's parameters, the same for every layer (e.g. ``(alpha,
            1.0)`` for AMP-l1, ``(log psi, logit rho)`` for matched BG-AMP).
        joint : bool, default False
        info : dict, optional

        Returns
        -------
        LAMP
        """
        A = np.asarray(A, dtype=np.float64)
        T = check_positive_int("n_layers", n_layers)
        th = np.asarray(theta, dtype=np.float64).reshape(1, -1)
        arrays = {"B": np.repeat(A.T[None], T, axis=0), "theta": np.repeat(th, T, axis=0)}
        return cls(arrays, A, spec, {"n_layers": T, "joint": int(joint), "shrinkage": shrinkage},
                   info)

    def _layers(self, Yt: np.ndarray, n_layers: int, w: dict[str, np.ndarray],
                keep: bool) -> list[np.ndarray]:
        B, L, M = Yt.shape
        P, G = self._groups(B, L)
        A, kind = w["A"], self.shrinkage
        X = np.zeros((B, L, self.N), dtype=Yt.dtype)
        V = Yt
        outs = []
        for t in range(n_layers):
            Vg = V.reshape(P, G, M)
            sigma2 = np.einsum("pgm,pgm->p", Vg, Vg) / (M * G)
            R = X + V @ w["B"][t].T
            Xg, J = shrink(kind, R.reshape(P, G, -1), sigma2, w["theta"][t], onsager=True)
            assert J is not None
            X = Xg.reshape(B, L, -1)
            if keep or t == n_layers - 1:
                outs.append(X)
            if t < n_layers - 1:
                V = Yt - X @ A.T + (J @ Vg).reshape(B, L, M) / M
        return outs
