"""The cut of ``tol="auto"``: from a greedy path's residuals to where it stops.

:func:`auto_stop` fits least squares along every problem's path (in the compiled
kernel), and :func:`cut` runs steps 2-4 of :mod:`cscore.decoders.stopping` on
the residuals: the signal steps, the noise estimate, the paper's rule on it, the
fit on the kept prefix (an :class:`AutoStop`).  :func:`mmv_result` turns an
:class:`AutoStop` into the decoder's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .._config import resolve_threads
from .._tol import paper_noise_tol
from ..result import DecodeResult
from ._rrt import ALPHA, signal_steps

__all__ = [
    "AutoStop",
    "auto_stop",
    "cut",
    "mmv_result",
    "result_extra",
]


@dataclass
class AutoStop:
    """Where the automatic rule stopped each problem, and what it estimated.

    Attributes
    ----------
    x : ndarray (P, N, L)
        Least-squares fit on the kept atoms.
    atoms : ndarray (P, L, K) int
        Kept atoms in selection order, -1 padded.
    residual : ndarray (P, L)
        Channel residual norms at the stop.
    n_iter : ndarray (P,) int
        Greedy steps kept.
    sigma : ndarray (P,)
        Estimated noise standard deviation.
    tol : ndarray (P,)
        The threshold used (the paper's rule with ``sigma``).
    n_signal : ndarray (P,) int
        ``k_rrt``: steps judged to add signal.
    """

    x: np.ndarray
    atoms: np.ndarray
    residual: np.ndarray
    n_iter: np.ndarray
    sigma: np.ndarray
    tol: np.ndarray
    n_signal: np.ndarray


def _fit_paths(
    A: np.ndarray, Y: np.ndarray, atoms: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares along every item's path, in the compiled kernel.

    ``Y`` (I, M, C) shares the item's atoms (I, K) (-1 padded; a path also ends
    at an atom numerically dependent on the earlier ones).  Returns the fit on
    the whole path x (I, N, C), its residual norms (I, C) and the squared
    residual norms after every prefix, res2 (I, C, K + 1) (the last repeated
    beyond the path's end).
    """
    I, _, C = Y.shape
    K = atoms.shape[1]
    x = np.empty((I, A.shape[1], C))
    res = np.zeros((I, C))
    energy = np.zeros((I, K + 1, C))
    scratch = (np.zeros(I, np.int64), np.zeros(I, np.int8), np.zeros(I, np.uint8),
               np.full((I, K), -1, np.int64))  # fmt: skip
    if I and K:
        _core._greedy_path(
            np.ascontiguousarray(A), np.ascontiguousarray(Y), np.ascontiguousarray(atoms), x,
            res, energy, *scratch, resolve_threads(None), 1 << 25,
        )  # fmt: skip
    elif I:
        x[:] = 0.0
        res[:] = np.linalg.norm(Y, axis=1)
        energy[:] = (Y**2).sum(axis=1)[:, None, :]
    return x, res, energy.transpose(0, 2, 1)


def auto_stop(
    A: Any,
    Y: Any,
    atoms: Any,
    *,
    alpha: float = ALPHA,
    max_atoms: int | None = None,
) -> AutoStop:
    """Estimate each problem's noise from its greedy path and stop on it.

    Parameters
    ----------
    A : array_like (M, N)
        Sensing matrix.
    Y : array_like (P, M, L)
        Measurements.
    atoms : array_like (P, K) or (P, L, K) int
        The decoder's atoms in selection order (-1 padded): one support shared
        by the channels (P, K), or one per channel (P, L, K).
    alpha : float, default 0.1
        False-alarm level of the residual-ratio test.
    max_atoms : int, optional
        Keep at most this many steps (a user's ``n_nonzero``).

    Returns
    -------
    AutoStop
        The fit, the kept atoms, the estimated noise and threshold.
    """
    A = np.asarray(A, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    atoms = np.asarray(atoms, dtype=np.int64)
    P, M, L = Y.shape
    joint = atoms.ndim == 2
    K = atoms.shape[-1]
    if joint:  # one path per problem, shared by its channels
        Yi, ai = Y, atoms
    else:  # one path per channel
        Yi, ai = Y.transpose(0, 2, 1).reshape(P * L, M, 1), atoms.reshape(P * L, K)
    _, _, res2 = _fit_paths(A, Yi, ai)
    res2_p = np.maximum(res2, 0.0).reshape(P, L, K + 1)
    E = res2_p.sum(axis=1)  # (P, K+1) squared Frobenius residual
    total = np.sqrt(res2_p).sum(axis=1)  # (P, K+1) summed channel norms
    return cut(A, Yi, ai, E, total, None, L, joint, alpha, max_atoms, res2_p)


def cut(
    A: np.ndarray,
    Yi: np.ndarray,
    ai: np.ndarray,
    E: np.ndarray,
    total: np.ndarray,
    scale: np.ndarray | None,
    L: int,
    joint: bool,
    alpha: float,
    max_atoms: int | None,
    Ec: np.ndarray | None = None,
) -> AutoStop:
    """Steps 2-4 of the method on the paths ``ai`` of the items ``Yi`` (see :func:`auto_stop`).

    ``E`` (P, K+1) are the squared residuals after every prefix (divided by
    ``scale**2``, per problem, when ``scale`` is given), ``total`` the summed
    channel residual norms, ``Ec`` (P, L, K+1) the channels' squared residuals
    (any common scale per problem).
    """
    M, N = A.shape
    P, K = E.shape[0], ai.shape[-1]
    n_sig = signal_steps(E, M, N, L, K, alpha, joint, Ec)
    dof = L * np.maximum(M - n_sig, 1)
    sigma = np.sqrt(E[np.arange(P), n_sig] / dof)
    if scale is not None:
        sigma = sigma * scale
    tol = paper_noise_tol(M, L, sigma)

    # The paper's rule on the estimate: first step with total <= tol.
    hit = total <= tol[:, None] * (1 + 1e-12)
    n_iter = np.where(hit.any(axis=1), np.argmax(hit, axis=1), K)
    if max_atoms is not None:
        n_iter = np.minimum(n_iter, max_atoms)

    # Least squares on the kept prefix of every item.
    n_item = n_iter if joint else np.repeat(n_iter, L)
    kept = np.where(np.arange(K)[None, :] < n_item[:, None], ai, -1)
    x, resid, _ = _fit_paths(A, Yi, kept)
    if joint:
        X, kept3 = x, np.repeat(kept[:, None, :], L, axis=1)
    else:
        X = x[:, :, 0].reshape(P, L, N).transpose(0, 2, 1)
        kept3 = kept.reshape(P, L, K)
    return AutoStop(
        x=np.ascontiguousarray(X),
        atoms=kept3,
        residual=resid.reshape(P, L),
        n_iter=n_iter.astype(np.int64),
        sigma=sigma,
        tol=tol,
        n_signal=n_sig.astype(np.int64),
    )


def result_extra(st: AutoStop, sel: Any) -> dict[str, Any]:
    """What ``tol="auto"`` adds to a result's ``extra`` (``sigma_hat``, ``tol_auto``, ...)."""
    return {"sigma_hat": st.sigma[sel], "tol_auto": st.tol[sel], "n_signal": st.n_signal[sel]}


def mmv_result(
    st: AutoStop, single: bool, dtype: Any, joint: bool, return_result: bool
) -> np.ndarray | DecodeResult:
    """The array, or the DecodeResult, of an MMV decode stopped by ``st``."""
    x = st.x.astype(dtype, copy=False)
    if not return_result:
        return x[0] if single else x
    atoms: np.ndarray = st.atoms[:, 0, :] if joint else st.atoms
    support = np.zeros(x.shape, dtype=bool)
    b, c, j = np.nonzero(st.atoms >= 0)
    support[b, st.atoms[b, c, j], c] = True
    stop = np.full(x.shape[0], "tol")
    sel: Any = 0 if single else slice(None)
    return DecodeResult(
        x=x[sel],
        support=support[sel],
        residual_norm=st.residual.astype(dtype)[sel],
        n_iter=st.n_iter[sel],
        stop_reason=stop[sel],
        extra={"atoms": atoms[sel], **result_extra(st, sel)},
    )
