"""Bayesian compressive sensing: BCS and multitask BCS (MT-BCS).

Both decoders are the fast sequential marginal-likelihood algorithm of Tipping &
Faul (2003): each iteration adds, re-estimates or deletes the one atom whose
change raises the marginal likelihood the most.  The kernels are in C++
(``cpp/include/cscore/bcs.hpp``); batches run on several threads with the GIL
released, and results do not depend on the thread count.

The defaults and rules are those of the authors' MATLAB code (``BCS_fast_rvm.m``
and ``mt_CS.m``, Shihao Ji, Duke University), which the tests compare against.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import _core
from .._tol import resolve_rtol, warn_scale
from .._validation import (
    as_float_array,
    check_positive_float,
    renamed_measurements,
)
from ..result import CONVERGENCE_STOP_REASONS, DecodeResult, batch_result
from ._bcs_common import DEFAULT_MAX_ITER as DEFAULT_MAX_ITER  # the originals' bound
from ._bcs_common import (
    check_common,
    check_rows,
    clamp_positive,
    moves,
    per_problem,
    pow2_exp,
    pow2_scale,
    prepare,
    scaled_A,
    warn_dependent,
    warn_max_iter,
)

__all__ = ["bcs", "mtbcs"]


def bcs(
    A: Any,
    Y: Any = None,
    *,
    noise_var: float | Any | None = None,
    rtol: float = 1e-8,
    max_iter: int | None = None,
    n_threads: int | None = None,
    return_result: bool = False,
    tol: float | None = None,
    y: Any = None,
) -> np.ndarray | DecodeResult:
    """Bayesian compressive sensing (Ji, Xue & Carin 2008), one channel at a time.

    The fast relevance-vector-machine algorithm of Tipping & Faul (2003), as in the
    authors' ``BCS_fast_rvm.m``: it starts from the atom with the largest
    ``(a_j' y)^2 / ||a_j||^2`` and then, at every iteration, adds, re-estimates or
    deletes the atom whose change of precision ``alpha_j`` increases the marginal
    likelihood the most.

    Parameters
    ----------
    A : array_like, shape (M, N)
        Sensing matrix (finite, no all-zero column).
    Y : array_like, shape (M,) or (M, B)
        Measurements.  The B columns are B independent problems (decoded in
        parallel).
    noise_var : float or array_like of shape (B,), optional
        Noise variance ``sigma^2``, held fixed during the iterations exactly as in
        ``BCS_fast_rvm.m`` (which does not re-estimate it, to keep the fast
        updates; see Notes).  Default: ``std(y)**2 / 100`` per column, with
        MATLAB's ``std`` (``ddof=1``), which is the value the authors' demos use.
    rtol : float, default 1e-8
        Convergence test, the originals' ``eta``: stop (reason ``"rtol"``) when
        the change of the best likelihood gain
        between two iterations falls below ``rtol`` times its change since the
        first iteration, ``|ML_c - ML_{c-1}| < rtol |ML_c - ML_1|`` (checked from
        the third iteration on).
    max_iter : int, optional
        Bound on the iteration counter; default 10000, the loop bound of
        ``BCS_fast_rvm.m``.  Reaching it issues a ``RuntimeWarning``.
    n_threads : int, optional
        Threads for a batch (default: :func:`cscore.get_num_threads`).
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` instead of the array.
    tol : float, optional
        Deprecated name of ``rtol``.
    y : array_like, optional
        Deprecated name of ``Y``.

    Returns
    -------
    numpy.ndarray or DecodeResult
        ``x`` of shape (N,) or (N, B), float32 for float32 input.  With
        ``return_result=True`` a :class:`~cscore.DecodeResult` whose ``extra``
        holds, per problem (arrays for 1-D ``y``, lists of arrays otherwise):
        ``indices`` (selected atoms, in selection order), ``alpha`` (their
        precisions), ``gamma`` (``1/alpha``), ``errbars`` (posterior standard
        deviations of the selected weights), ``ml`` (the likelihood gain of
        each iteration), and the arrays ``noise_var`` (re-estimated after
        convergence, ``||y - A x||^2 / (M - m + sum_i alpha_i Sigma_ii)``, as
        ``BCS_fast_rvm.m`` returns it) and ``noise_var_init`` (the fixed value
        used; both in units of ``y**2``, so they read ``inf`` or 0 where that is
        not representable, e.g. for ``|y| ~ 1e200``), and ``moves`` (counts of
        ``add``, ``reestimate``, ``delete`` moves and of ``forced_refresh``,
        recomputations of the posterior forced by a numerically impossible
        state).  ``stop_reason`` is ``"rtol"`` (converged), ``"max_iter"``,
        ``"exhausted"`` (no atom explains more than the noise, or no move is
        left; ``x`` is then zero or the current estimate) or ``"dependent"``
        (the posterior became numerically singular; the current estimate is
        returned).

    Notes
    -----
    Faithful to ``BCS_fast_rvm.m``: same initialisation, the same three
    likelihood-gain formulas, the same stopping rule and the same iteration bound.
    The noise variance stays fixed during the iterations, as in the original.
    The posterior covariance of the selected atoms is updated with the rank-one
    formulas of Tipping & Faul and recomputed from a Cholesky factorisation of
    its inverse every max(50, 4m) updates (m atoms selected), whenever an update
    leaves an impossible state, and at the end (the returned weights come from
    that factorisation).  For selected atoms, ``s, q, S, Q`` are taken from the
    exact identities ``Sigma_ii = 1/(alpha_i + s_i)``, ``mu_i = Sigma_ii q_i``
    rather than from the running ``S, Q`` vectors, which cancel catastrophically
    when the noise variance is tiny.  Differences from the original: a problem
    whose best atom explains less than the noise (where the original would use a
    negative precision) returns zero; a state with no possible move stops instead
    of spinning until the loop bound.  The computation runs on ``y / c`` with a
    power-of-two ``c`` (the default noise variance is computed there too), which
    changes no rounding and makes the result scale-equivariant for any finite
    ``y``, up to magnitudes ~1e±300.

    References
    ----------
    S. Ji, Y. Xue, L. Carin, "Bayesian compressive sensing", IEEE Trans. Signal
    Processing 56(6), 2008.  M. E. Tipping, A. C. Faul, "Fast marginal likelihood
    maximisation for sparse Bayesian models", AISTATS 2003.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((40, 100)); x0 = np.zeros(100); x0[[3, 50, 70]] = [1, -2, 1.5]
    >>> x = cscore.decoders.bcs(A, A @ x0)
    >>> bool(np.allclose(x, x0, atol=1e-2))
    True
    """
    y = renamed_measurements("bcs", Y, y)
    A64, Y64, out_dtype = prepare(A, y, (1, 2), "y")
    single = Y64.ndim == 1
    check_rows(A64, Y64, "y", 0)
    Y2 = Y64[:, None] if single else Y64
    rtol, max_iter, threads = check_common(resolve_rtol("bcs", rtol, tol), max_iter, n_threads)
    # Both the model and the algorithm are scale-equivariant (y -> y/c with
    # sigma2 -> sigma2/c^2); a power-of-two c keeps every rounding identical and
    # only removes the risk of overflow or underflow for extreme magnitudes.  The
    # default noise variance is computed on the rescaled data for the same reason.
    c = pow2_scale(np.max(np.abs(Y2), axis=0))
    ce = pow2_exp(c)
    Ys = Y2 / c
    sigma2, s2 = _noise_variance(noise_var, Ys, ce)
    Ac, cA = scaled_A(A64)
    X, info = _core._bcs(
        Ac,
        np.ascontiguousarray(Ac.T),
        np.ascontiguousarray(Ys.T),
        np.ascontiguousarray(s2),
        rtol,
        max_iter,
        threads,
    )
    X *= c[:, None]
    X /= cA
    warn_dependent("bcs", A64, Y2, X)
    with np.errstate(over="ignore", under="ignore"):
        info["noise_var"] = [np.ldexp(nv, 2 * e) for nv, e in zip(info["noise_var"], ce)]
    stop = np.asarray(info["stop"])
    warn_max_iter("bcs", stop, max_iter)
    x = X.T  # (N, B)
    x_out = (x[:, 0] if single else np.ascontiguousarray(x)).astype(out_dtype, copy=False)
    if not return_result:
        return x_out
    return _bcs_result(A64, Ys, c, x, x_out, info, stop, sigma2, single)


def _noise_variance(
    noise_var: Any, Ys: np.ndarray, ce: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """BCS's fixed noise variance per problem, in ``y`` units and rescaled.

    ``Ys`` (M, B) is ``y / c`` with ``c = 2**ce`` per column.  Returns ``(sigma2,
    s2)``: the user's ``noise_var`` (or the default ``var(y) / 100``, computed on
    ``Ys``) in units of ``y**2``, and the same divided by ``c**2`` (clamped to the
    positive normal range), which the kernel uses.
    """
    M, B = Ys.shape
    if noise_var is None:
        if M < 2:
            raise ValueError("y needs at least 2 measurements for the default noise_var")
        # row-wise on a contiguous copy: the same reduction for a column alone or
        # in a batch, so batch and loop give bit-identical results
        s2 = np.array([np.var(col, ddof=1) for col in np.ascontiguousarray(Ys.T)]) / 100.0
        zero = s2 <= 0
        if np.any(zero):  # constant y: fall back on its mean power (1 for y == 0,
            # which then decodes to zero: no atom explains more than the noise)
            power = np.mean(Ys[:, zero] ** 2, axis=0) / 100.0
            s2[zero] = np.where(power > 0, power, 1.0)
        with np.errstate(over="ignore"):
            sigma2 = np.ldexp(s2, 2 * ce)  # in y units (inf if not representable)
    else:
        nv = np.asarray(noise_var)
        if nv.ndim == 0:
            sigma2 = np.full(B, check_positive_float("noise_var", noise_var))
        else:
            sigma2 = as_float_array("noise_var", noise_var, ndim=1, dtype=np.float64)
            if sigma2.shape != (B,):
                raise ValueError(
                    f"noise_var must be a scalar or have shape ({B},); got {sigma2.shape}"
                )
            if np.any(sigma2 <= 0):
                raise ValueError("noise_var must be > 0")
        with np.errstate(over="ignore", under="ignore"):
            s2 = clamp_positive(np.ldexp(sigma2, -2 * ce))
    return sigma2, s2


def _bcs_result(
    A: np.ndarray, Ys: np.ndarray, c: np.ndarray, x: np.ndarray, x_out: np.ndarray,
    info: dict[str, Any], stop: np.ndarray, sigma2: np.ndarray, single: bool,
) -> DecodeResult:
    """:func:`bcs`'s :class:`~cscore.DecodeResult`.

    ``Ys`` (M, B) is ``y / c``, ``x`` (N, B) the estimate in float64, ``x_out``
    the estimate as returned, ``info`` the kernel's records (noise in ``y``
    units), ``stop`` its stop codes and ``sigma2`` the fixed noise variances.
    """
    # on the rescaled data: no overflow of the squares for extreme magnitudes
    resid = (np.linalg.norm(Ys - A @ (x / c), axis=0) * c).astype(x_out.dtype)
    per = per_problem(info, errbars=True)
    extra: dict[str, Any] = {k: (v[0] if single else v) for k, v in per.items()}
    extra["noise_var"] = np.array([nv[0] if len(nv) else np.nan for nv in info["noise_var"]])
    extra["noise_var_init"] = sigma2.copy()
    extra["moves"] = moves(info, single)
    if single:
        extra["noise_var"] = extra["noise_var"][0:1]
    support = x_out != 0
    return DecodeResult(
        x=x_out,
        support=support,
        residual_norm=resid,
        n_iter=np.asarray(info["n_iter"]),
        stop_reason=np.array([CONVERGENCE_STOP_REASONS[int(s)] for s in stop]),
        extra=extra,
    )


def _merge_infos(
    parts: list[tuple[np.ndarray, dict[str, Any]]], B: int, c: np.ndarray
) -> dict[str, Any]:
    """Reassemble the per-problem records of several kernel calls (noise in y units)."""
    out: dict[str, Any] = {
        "n_iter": np.zeros(B, dtype=np.int64),
        "stop": np.zeros(B, dtype=np.int64),
        "moves": np.zeros((B, 4), dtype=np.int64),
    }
    lists = ("index", "alpha", "sig_diag", "ml", "noise_var")
    for key in lists:
        out[key] = [None] * B
    for sel, info in parts:
        for key in ("n_iter", "stop", "moves"):
            out[key][sel] = np.asarray(info[key])
        for key in lists:
            for pos, i in enumerate(sel):
                out[key][i] = info[key][pos]
    ce = pow2_exp(c)
    with np.errstate(over="ignore", under="ignore"):
        out["noise_var"] = [np.ldexp(nv, 2 * e) for nv, e in zip(out["noise_var"], ce)]
    return out


def mtbcs(
    A: Any,
    Y: Any,
    *,
    a: float = 1e2 / 0.1,
    b: float = 1.0,
    rtol: float = 1e-8,
    max_iter: int | None = None,
    n_threads: int | None = None,
    return_result: bool = False,
    tol: float | None = None,
) -> np.ndarray | DecodeResult:
    """Multitask Bayesian compressive sensing (Ji, Dunson & Carin 2009).

    The L columns of ``Y`` are L tasks measured with the same ``A``; they share the
    precisions ``alpha_j`` (hence the support), and the noise precision is
    integrated out under a Gamma(``a``, ``b``) prior.  The algorithm is the fast
    sequential add / re-estimate / delete of the authors' ``mt_CS.m``.

    Parameters
    ----------
    A : array_like, shape (M, N)
        Sensing matrix (finite, no all-zero column), shared by all tasks.
    Y : array_like, shape (M, L) or (B, M, L)
        One multitask problem, or a batch of B independent ones (decoded in
        parallel).  L = 1 gives single-task BCS with the noise integrated out.
    a, b : float, default 1e2/0.1 and 1
        Shape and rate of the Gamma prior on the noise precision; the defaults
        are those of the authors' demo (``a = 1e2/0.1; b = 1``).
    rtol : float, default 1e-8
        Convergence test, the original's ``eta``: stop (reason ``"rtol"``) when
        ``|ML_c - ML_{c-1}| < rtol (max_i ML_i -
        ML_c)``, ``ML_c`` being the best likelihood gain at iteration ``c``
        (``ML_1`` that of the initial atom), checked from the third iteration on.
    max_iter : int, optional
        Bound on the iteration counter (which starts at 2, as in ``mt_CS.m``);
        default 10000, the original's loop bound.  Reaching it issues a
        ``RuntimeWarning``.
    n_threads : int, optional
        Threads for a batch (default: :func:`cscore.get_num_threads`).
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` instead of the array.
    tol : float, optional
        Deprecated name of ``rtol``.

    Returns
    -------
    numpy.ndarray or DecodeResult
        ``S`` of shape (N, L) or (B, N, L), float32 for float32 input.  With
        ``return_result=True``, ``n_iter`` and ``stop_reason`` have shape () for
        one problem and (B,) for a batch, and ``extra`` holds per problem (arrays for one
        problem, lists of arrays for a batch): ``indices`` (shared support, in
        selection order), ``alpha``, ``gamma`` (``1/alpha``), ``ml`` (likelihood
        gain per iteration, the original's ``ML`` output), and ``noise_var``
        (shape (L,) or (B, L)): the posterior mean of each task's noise variance
        given the final ``alpha``, ``(2b + y'y - y'A Sigma A'y)/(M + 2a - 2)``,
        and ``moves`` (as for :func:`bcs`).
        ``residual_norm`` is (L,) or (B, L).

    Notes
    -----
    Follows ``mt_CS.m`` (version with the fix of Aug. 3, 2008): the same
    initialisation (largest closed-form gain with a positive precision), gain
    formulas (including its ``real(log(.))``), stopping rule and loop bound.  As
    all tasks share ``A``, the posterior covariance is shared too and is computed
    once.  It is updated with rank-one formulas, recomputed from a Cholesky
    factorisation every max(50, 4m) updates, whenever an update leaves an
    impossible state, and at the end; selected atoms' ``s, q, g`` come from
    ``Sigma_ii`` and ``mu_i`` (see :func:`bcs`).  Where ``mt_CS.m`` could loop
    forever (no initial atom with a positive precision) the result is zero with
    ``stop_reason="exhausted"``.

    Scale.  The Gamma(``a``, ``b``) prior on the noise precision is absolute (its
    mean noise variance is about ``b / a = 1e-3`` with the defaults), so the
    result depends on the scale of ``Y``: for ``Y`` much smaller than that noise
    level (e.g. a noiseless 16 x 32 problem scaled by 1e-3) no atom explains more
    than the noise and the estimate is zero -- a ``RuntimeWarning`` is issued
    when this happens to a nonzero ``Y``.  Rescale ``Y`` to unit scale (and
    multiply the result back) or lower ``b``.  For huge ``Y`` the prior becomes
    negligible (the computation runs on a power-of-two rescaling of ``Y`` with
    ``b / c**2``, clamped to the smallest normal double), which equals ``b -> 0``.

    References
    ----------
    S. Ji, D. Dunson, L. Carin, "Multitask compressive sensing", IEEE Trans.
    Signal Processing 57(1), 2009.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((40, 100)); S0 = np.zeros((100, 3))
    >>> S0[[3, 50, 70]] = rng.standard_normal((3, 3)) + 2
    >>> S = cscore.mtbcs(A, A @ S0)
    >>> bool(np.allclose(S, S0, atol=1e-2))
    True
    """
    A64, Y64, out_dtype = prepare(A, Y, (2, 3), "Y")
    single = Y64.ndim == 2
    check_rows(A64, Y64, "Y", -2)
    Y3 = Y64[None] if single else Y64
    warn_scale("mtbcs", Y3, why="its Gamma(a, b) prior on the noise precision is absolute")
    a = check_positive_float("a", a)
    b = check_positive_float("b", b)
    rtol, max_iter, threads = check_common(resolve_rtol("mtbcs", rtol, tol), max_iter, n_threads)
    # Scale-equivariant with b -> b/c^2; c a power of two (see bcs).  One call per
    # distinct scale keeps a batch's problems independent of each other.
    c = pow2_scale(np.max(np.abs(Y3), axis=(1, 2)))
    Yt = np.ascontiguousarray((Y3 / c[:, None, None]).transpose(0, 2, 1))
    Ac, cA = scaled_A(A64)
    At = np.ascontiguousarray(Ac.T)
    X = np.empty((Y3.shape[0], Y3.shape[2], A64.shape[1]))
    parts: list[tuple[np.ndarray, dict[str, Any]]] = []
    for cv in np.unique(c):
        sel = np.flatnonzero(c == cv)
        with np.errstate(over="ignore", under="ignore"):
            b_s = float(clamp_positive(np.ldexp(b, -2 * int(pow2_exp(np.array(cv))))))
        Xs, inf_s = _core._mtbcs(Ac, At, Yt[sel], a, b_s, rtol, max_iter, threads)
        X[sel] = Xs * cv / cA
        parts.append((sel, inf_s))
    info = _merge_infos(parts, Y3.shape[0], c)
    stop = np.asarray(info["stop"])
    warn_max_iter("mtbcs", stop, max_iter)
    empty = ~np.any(X, axis=(1, 2)) & np.any(Y3, axis=(1, 2))
    if np.any(empty):
        warnings.warn(
            f"mtbcs: {int(np.count_nonzero(empty))} of {len(empty)} problem(s) with nonzero "
            "Y gave an all-zero estimate (stop_reason 'exhausted'): no atom explains more "
            "than the noise under the Gamma(a, b) noise prior.  The prior is absolute, as in "
            "the original, so for Y of small magnitude (max |Y| here: "
            f"{float(np.max(np.abs(Y3[empty]))):.3g}) rescale Y to unit scale or lower b",
            RuntimeWarning,
            stacklevel=2,
        )
    S = np.ascontiguousarray(X.transpose(0, 2, 1))  # (B, N, L)
    S_out = (S[0] if single else S).astype(out_dtype, copy=False)
    if not return_result:
        return S_out
    cb = c[:, None, None]
    resid = (np.linalg.norm(Y3 / cb - A64 @ (S / cb), axis=1) * c[:, None]).astype(out_dtype)
    per: dict[str, Any] = dict(per_problem(info, errbars=False))
    per["noise_var"] = (
        np.stack(info["noise_var"]) if info["noise_var"] else np.zeros((0, Y3.shape[2]))
    )
    return batch_result(
        S_out,
        S_out != 0,
        resid,
        np.asarray(info["n_iter"]),
        [CONVERGENCE_STOP_REASONS[int(s)] for s in stop],
        per,
        single=single,
        extra_as_is={"moves": moves(info, single)},
    )
