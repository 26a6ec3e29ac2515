"""Stopping without knowing the noise: ``tol="auto"`` for greedy decoders.

The LSTM-CS paper stops a greedy decoder once the residual is as small as the
noise, which needs the noise level.  In practice it is not known.  This module
estimates it from the measurements of each problem and stops on the estimate,
so that any greedy decoder that records its atoms in selection order gets the
rule with one call of :func:`auto_decode_mmv` (or :func:`auto_decode_omp` for
OMP's layout).  :func:`cscore.omp` and :func:`cscore.somp` run the same method
inside their compiled kernel (``cpp/include/cscore/greedy.hpp``, ``auto_cut``):
one decode of the path, the test and the cut on it, no second pass; this
module gives them the thresholds (:func:`rrt_tables`).

Method
------
1. **Greedy path.** The decoder runs ``K = min(M - 1, N)`` steps and reports
   its atoms in selection order. (Learned decoders with one support per
   channel, whose steps cost more, first run ``ceil(M / 2)`` steps; only
   problems whose signal reaches into the last third of that path, step 2, run
   again to the full length. LSTM-CS and BLSTM-CS instead end each problem's
   path inside their compiled kernel once the test of step 2 has taken a step
   for signal and a few steps in a row showed nothing signal-like, and report
   the channel residual norms of their own least squares after every step: one
   decode, no refit, see :mod:`cscore.decoders.path_stop`.) The residual norm
   after every prefix of the path comes from least squares along it in the
   compiled kernel (progressive Cholesky factorization of the selected columns'
   Gram matrix, one per problem for a shared support, one per channel
   otherwise: the explicit residual at the end plus the tail of the path's
   coordinates, sums of squares without cancellation); the prefix least-squares
   fits are exactly the decoder's (up to rounding), because a greedy decoder
   stopped by ``tol`` is the same path cut short. OMP and SOMP need no such
   refit: their kernel has these coordinates already.
2. **Where the signal ends: residual ratio thresholding** (RRT, Kallummil &
   Kalyani 2018).  With ``E_k`` the squared residual (summed over the L
   channels) after ``k`` steps, the ratio ``RR(k) = sqrt(E_k / E_{k-1})`` drops
   far below 1 while true atoms are being found and stays close to 1 once only
   noise is left: then ``RR(k)**2`` is distributed as ``Beta((M - k) L / 2,
   L / 2)`` for a fixed atom, whatever ``sigma``.  With the union bound over the
   ``N - k + 1`` atoms a greedy step can pick, the threshold ``Gamma(k)**2 =
   F^{-1}_{Beta((M-k)L/2, L/2)}(alpha / (K (N - k + 1)))`` is crossed by a
   noise-only step with probability at most ``alpha``; the signal part is
   ``k_rrt = max{k : RR(k) < Gamma(k)}``.  When no step crosses, the step with
   the smallest union-bound p-value is taken (RRT's own fallback), **but only
   when the measurements hold signal at all** (step 2b); otherwise
   ``k_rrt = 0`` and the answer is the empty support.
2b. **Is there any signal?**  A path that is all signal (a dense signal, or a
   decoder that finds its atoms slowly) may have no step below ``Gamma(k)``,
   and neither may pure noise: there the fallback used to pick a deep step,
   estimate the noise from what was left (10-50x too small) and fit half the
   path to noise.  Two tests of "the measurements are pure Gaussian noise",
   each at level ``SIGNAL_ALPHA / 2``, decide: (i) the block test: after any
   ``k`` atoms, ``E_k / E_0`` of pure noise is ``Beta((M - k) L / 2, k L / 2)``
   for a fixed support, so with the union bound over every support of ``k``
   atoms (``C(N, k)``, to the power L for per-channel supports) and over the
   ``K`` steps no path of pure noise falls below the bound with probability
   more than ``SIGNAL_ALPHA / 2``, whatever path the decoder takes; (ii) the
   residual-ratio test of every channel alone (``Beta((M - k) / 2, 1 / 2)``,
   ``N - k + 1`` choices, Bonferroni over the K steps and L channels), which
   finds a signal confined to some channels that the summed ratios dilute.
   Either test rejecting lets the fallback run.  Both laws are scale-free.
3. **Noise estimate.**  ``sigma_hat**2 = E_{k_rrt} / (L (M - k_rrt))``: the
   residual after the signal's atoms is noise projected off ``k_rrt``
   dimensions.
4. **Stop on it** with the paper's rule and the estimated level: the first step
   whose summed channel residual norms are ``<= L * sigma_hat * sqrt(M L)``
   (:func:`cscore.datasets.expected_noise_tol`; ``sigma_hat * sqrt(M)`` for a
   single vector).

Why RRT: it needs no noise level and no sparsity, has a finite-sample
guarantee (support recovery with probability >= 1 - alpha at high SNR), costs
one greedy path per problem, and works per problem: no batch needs to share
one noise level.  Robust scale estimates from the measurements alone (median
absolute deviation of ``y``) cannot separate noise from signal, because ``y``
is a dense mixture of both; the greedy path separates them.  Stopping with the
paper's rule on ``sigma_hat`` (rather than at ``k_rrt`` itself) keeps ``auto``
and the oracle rule directly comparable: the two differ only in the noise level.

References
----------
S. Kallummil, S. Kalyani, "Signal and noise statistics oblivious orthogonal
matching pursuit", ICML 2018 (residual ratio thresholding).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._validation import check_positive_int, transposed_hint
from ..result import DecodeResult
from ._auto_cut import AutoStop, auto_stop, mmv_result, result_extra
from ._rrt import ALPHA, REDO_FRACTION, path_length, rrt_tables, rrt_thresholds, signal_tables
from ._rrt import SIGNAL_ALPHA as SIGNAL_ALPHA  # step 2b's level (read in _rrt)

__all__ = [
    "AUTO",
    "AutoStop",
    "auto_decode_mmv",
    "auto_decode_omp",
    "auto_stop",
    "is_auto",
    "rrt_tables",
    "rrt_thresholds",
    "signal_tables",
]

#: The value of ``tol`` that asks for the noise to be estimated.
AUTO = "auto"


def is_auto(tol: Any) -> bool:
    """True when ``tol`` asks for the automatic rule.

    Parameters
    ----------
    tol : object
        A decoder's ``tol`` argument.

    Returns
    -------
    bool
        ``tol == "auto"``.

    Raises
    ------
    TypeError
        ``tol`` is a string other than ``"auto"``.
    """
    if isinstance(tol, str):
        if tol != AUTO:
            raise TypeError(f"tol must be a real number >= 0, None or 'auto'; got {tol!r}")
        return True
    return False


def _two_stage(
    decode_sub: Callable[[Any, int], np.ndarray],
    A: np.ndarray,
    Y3: np.ndarray,
    n_nonzero: int | None,
    alpha: float,
    short_first: bool,
) -> AutoStop:
    """Path of ``ceil(M/2)`` steps; problems whose signal reaches its last third get ``M - 1``.

    ``decode_sub(index, K)`` returns the atoms of the problems ``index`` (None:
    all) decoded with ``n_nonzero=K``.
    """
    M, N = A.shape
    if n_nonzero is not None:
        n_nonzero = check_positive_int(
            "n_nonzero", n_nonzero, upper=min(M, N), upper_desc=f"min(M, N) for A of shape {(M, N)}"
        )
    K_long = path_length(M, N)
    K1 = min(K_long, max(1, (M + 1) // 2)) if short_first else K_long
    if n_nonzero is not None:
        K1 = max(K1, min(int(n_nonzero), K_long))
    st = auto_stop(A, Y3, decode_sub(None, K1), alpha=alpha, max_atoms=n_nonzero)
    redo = (np.nonzero(st.n_signal > K1 - max(1, K1 // REDO_FRACTION))[0] if K1 < K_long
            else np.zeros(0, dtype=int))  # fmt: skip
    if redo.size == 0:
        return st
    st2 = auto_stop(A, Y3[redo], decode_sub(redo, K_long), alpha=alpha, max_atoms=n_nonzero)
    atoms = np.full((*st.atoms.shape[:2], K_long), -1, dtype=np.int64)
    atoms[:, :, :K1] = st.atoms
    atoms[redo] = st2.atoms
    st.atoms = atoms
    for name in ("x", "residual", "n_iter", "sigma", "tol", "n_signal"):
        getattr(st, name)[redo] = getattr(st2, name)
    return st


def auto_decode_mmv(
    decode_path: Callable[[np.ndarray, int], Any],
    A: Any,
    Y: Any,
    *,
    n_nonzero: int | None = None,
    return_result: bool = False,
    alpha: float = ALPHA,
    joint: bool = False,
) -> np.ndarray | DecodeResult:
    """``tol="auto"`` for a greedy MMV decoder: one call does it all.

    Parameters
    ----------
    decode_path : callable
        ``decode_path(Y3, K)`` decodes the batch ``Y3`` (B, M, L) with
        ``n_nonzero=K`` and ``return_result=True``; its ``extra["atoms"]``
        holds the atoms in selection order, (B, K) for a shared support or
        (B, L, K) per channel.
    A : array_like (M, N)
        The sensing matrix the decoder uses.
    Y : array_like (M, L) or (B, M, L)
        Measurements (already validated by the decoder).
    n_nonzero : int, optional
        Also stop at this many steps.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` (``extra`` adds ``sigma_hat``,
        ``tol_auto`` and ``n_signal``, per problem).
    alpha : float, default 0.1
        False-alarm level of the residual-ratio test.
    joint : bool, default False
        Report the support as shared by the channels (SOMP's layout).

    Returns
    -------
    ndarray (N, L) or (B, N, L), or DecodeResult
        In ``Y``'s float dtype.
    """
    Y = np.asarray(Y)
    single = Y.ndim == 2
    Y3 = Y[None] if single else Y
    A = np.asarray(A)
    if Y.ndim not in (2, 3) or Y3.shape[1] != A.shape[0]:
        raise ValueError(
            f"Y must be (M, L) or (B, M, L) with M = {A.shape[0]} rows (A has shape "
            f"{A.shape}); got Y of shape {Y.shape}"
            + transposed_hint(A.shape, Y.shape[-2] if Y.ndim in (2, 3) else -1)
        )
    dtypes: list[np.dtype] = []

    def sub(index: Any, K: int) -> np.ndarray:
        res = decode_path(Y3 if index is None else Y3[index], K)
        dtypes.append(np.asarray(res.x).dtype)
        return np.asarray(res.extra["atoms"])

    st = _two_stage(sub, A, Y3, n_nonzero, alpha, short_first=not joint)
    dtype = dtypes[0] if dtypes else np.result_type(Y.dtype, np.float32)
    return mmv_result(st, single, dtype, joint, return_result)


def auto_decode_omp(
    decode_path: Callable[[np.ndarray, int], Any],
    A: Any,
    y: Any,
    *,
    n_nonzero: int | None = None,
    return_result: bool = False,
    alpha: float = ALPHA,
) -> np.ndarray | DecodeResult:
    """``tol="auto"`` for OMP's layout: ``y`` (M,) or (M, B), one problem per column.

    Parameters
    ----------
    decode_path : callable
        ``decode_path(y, K)``: OMP with ``n_nonzero=K, return_result=True``.
    A : array_like (M, N)
    y : array_like (M,) or (M, B)
    n_nonzero : int, optional
        Also stop at this many atoms.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` as :func:`cscore.omp` does, with
        ``sigma_hat``, ``tol_auto`` and ``n_signal`` in ``extra``.
    alpha : float, default 0.1
        False-alarm level of the residual-ratio test.

    Returns
    -------
    ndarray (N,) or (N, B), or DecodeResult
    """
    y = np.asarray(y)
    single = y.ndim == 1
    Y2 = y[:, None] if single else y
    A = np.asarray(A)
    dtypes: list[np.dtype] = []

    def sub(index: Any, K: int) -> np.ndarray:
        res = decode_path(y if index is None else Y2[:, index], K)
        dtypes.append(np.asarray(res.x).dtype)
        return np.asarray(res.extra["atoms"]).reshape(-1, K)

    st = _two_stage(sub, A, Y2.T[:, :, None], n_nonzero, alpha, short_first=False)
    dtype = dtypes[0] if dtypes else np.result_type(y.dtype, np.float32)
    X = np.ascontiguousarray(st.x[:, :, 0].T).astype(dtype, copy=False)
    if not return_result:
        return X[:, 0] if single else X
    kept = st.atoms[:, 0, :]
    sup = np.zeros(X.shape if X.ndim == 2 else (X.shape[0], 1), dtype=bool)
    b, j = np.nonzero(kept >= 0)
    sup[kept[b, j], b] = True
    sel: Any = 0 if single else slice(None)
    return DecodeResult(
        x=X[:, 0] if single else X,
        support=sup[:, 0] if single else sup,
        residual_norm=st.residual[:, 0].astype(dtype)[sel],
        n_iter=st.n_iter[sel],
        stop_reason=np.full(X.shape[1], "tol")[sel],
        extra={"atoms": kept[sel], **result_extra(st, sel)},
    )
