"""LISTA (Gregor & LeCun 2010): ISTA unrolled into T layers (an unrolled decoder,
:class:`~cscore.decoders.learned.unrolled.UnrolledModel`).

LISTA (learned ISTA), layer t = 0..T-1 with ``x_0 = 0``::

    x_{t+1} = eta(B y + S x_t; lambda_t)

``eta`` is the soft threshold (the group soft threshold of the rows for a joint
model).  ``B`` (N, M) and ``S`` (N, N) are shared by the layers (Gregor &
LeCun's form; initialised as ISTA's ``A^T / c`` and ``I - A^T A / c`` with ``c =
||A||_2^2``) or, ``untied``, one pair per layer; ``lambda_t`` is one threshold per
layer (Borgerding et al.'s LISTA).

File entries (float32): ``B`` (N, M) or (T, N, M), ``S`` (N, N) or (T, N, N),
``theta`` (T, 1); ``arch`` "lista"; ``arch_params = {"n_layers", "joint",
"untied"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..._validation import check_positive_int
from ...problem import ProblemSpec
from .base import FileArray, FileParam
from .shrinkage import shrink
from .unrolled import MAX_LAYERS, UnrolledModel

__all__ = ["LISTA"]


def _lead(d: Mapping[str, Any]) -> tuple[int, ...]:
    """The layer axis of ``B`` and ``S``: (T,) when untied (one pair per layer), else ()."""
    return (int(d["n_layers"]),) if d["untied"] else ()


class LISTA(UnrolledModel):
    """LISTA (Gregor & LeCun 2010): ISTA unrolled into T layers with learned B, S, thresholds.

    Parameters
    ----------
    arrays : mapping
        ``B`` (N, M), ``S`` (N, N), ``theta`` (T, 1) (with ``untied``: ``B``
        (T, N, M), ``S`` (T, N, N)); kept as float32.
    A : ndarray (M, N)
        The sensing matrix the model was trained for.
    spec : ProblemSpec
        Sizes (and for a joint model, the channels L).
    params : mapping
        ``{"n_layers": T, "joint": 0/1, "untied": 0/1}``.
    info : dict, optional
        Free-form provenance.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore.decoders.learned import LISTA
    >>> from cscore.problem import ProblemSpec
    >>> A = np.random.default_rng(0).normal(size=(8, 16)) / np.sqrt(8)
    >>> m = LISTA.from_ista(A, ProblemSpec(M=8, N=16, L=1), n_layers=3, lam=0.05)
    >>> m.decode(A[:, :2]).shape
    (16, 2)
    """

    ARCH = "lista"
    FILE_PARAMS: ClassVar[Mapping[str, FileParam]] = {
        "n_layers": FileParam(hi=MAX_LAYERS),
        "joint": FileParam("flag", default=0),
        "untied": FileParam("flag", default=0),
    }
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = {
        "B": FileArray(lambda d: (*_lead(d), d["N"], d["M"])),
        "S": FileArray(lambda d: (*_lead(d), d["N"], d["N"])),
        "theta": FileArray(("n_layers", 1)),
    }

    @classmethod
    def from_ista(cls, A: np.ndarray, spec: ProblemSpec, *, n_layers: int, lam: float,
                  joint: bool = False, untied: bool = False,
                  info: dict[str, Any] | None = None) -> LISTA:
        """The untrained network: exactly ``n_layers`` iterations of ISTA.

        ISTA for ``min 0.5 ||y - A x||^2 + lam ||x||_1`` (the row l2,1 norm for
        a joint model) with step ``1 / ||A||_2^2``.

        Parameters
        ----------
        A : ndarray (M, N)
        spec : ProblemSpec
        n_layers : int
        lam : float
            The l1 weight (thresholds ``lam / ||A||_2^2``).
        joint, untied : bool
            See the class docstring.
        info : dict, optional

        Returns
        -------
        LISTA
        """
        A = np.asarray(A, dtype=np.float64)
        c = float(np.linalg.norm(A, 2) ** 2) if A.size and np.isfinite(A).all() else 0.0
        if not (c > 0.0 and np.isfinite(c)):
            raise ValueError("LISTA.from_ista: A must be finite and nonzero with a squared "
                             "spectral norm in the float range (ISTA's step is 1/||A||_2^2)")
        B = A.T / c
        S = np.eye(A.shape[1]) - A.T @ A / c
        T = check_positive_int("n_layers", n_layers)
        if untied:
            B, S = np.repeat(B[None], T, axis=0), np.repeat(S[None], T, axis=0)
        arrays = {"B": B, "S": S, "theta": np.full((T, 1), lam / c)}
        return cls(arrays, A, spec, {"n_layers": T, "joint": int(joint), "untied": int(untied)},
                   info)

    def _layers(self, Yt: np.ndarray, n_layers: int, w: dict[str, np.ndarray],
                keep: bool) -> list[np.ndarray]:
        B, L, _ = Yt.shape
        P, G = self._groups(B, L)
        untied = bool(self._params["untied"])
        By = None if untied else Yt @ w["B"].T
        X = np.zeros((B, L, self.N), dtype=Yt.dtype)
        outs = []
        for t in range(n_layers):
            if untied:
                R = Yt @ w["B"][t].T + X @ w["S"][t].T
            else:
                assert By is not None
                R = By + X @ w["S"].T
            Xg, _ = shrink("lista", R.reshape(P, G, -1), np.zeros(P), w["theta"][t])
            X = Xg.reshape(B, L, -1)
            if keep or t == n_layers - 1:
                outs.append(X)
        return outs
