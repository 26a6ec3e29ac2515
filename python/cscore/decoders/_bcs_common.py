"""What BCS and MT-BCS share: argument checks, exact power-of-two scaling, records.

The checks of ``A``, the measurements and the common options, the scaling of
columns and problems of extreme magnitude by powers of two (exact, so every
rounding stays as at unit scale), the kernel's per-problem records as arrays,
and the warnings (``max_iter`` reached, dependent atoms).  The decoders are in
:mod:`cscore.decoders.bcs`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._config import resolve_threads
from .._validation import (
    MAX_ITER_LIMIT,
    as_float_array,
    check_matrix,
    check_nonnegative_float,
    check_positive_int,
    common_float_dtype,
    transposed_hint,
)
from ..result import STOP_REASONS

__all__ = [
    "DEFAULT_MAX_ITER",
    "check_common",
    "check_rows",
    "clamp_positive",
    "moves",
    "per_problem",
    "pow2_exp",
    "pow2_scale",
    "prepare",
    "scaled_A",
    "warn_dependent",
    "warn_max_iter",
]

#: Iteration bound of both originals (``for count = 1:10000``).
DEFAULT_MAX_ITER = 10000

_MAX_ITER_CODE = STOP_REASONS.index("max_iter")


def prepare(
    A: Any, Y: Any, ndims: tuple[int, ...], yname: str
) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """``A`` and ``Y`` checked, in float64, and the output dtype."""
    out_dtype = common_float_dtype(A, Y)
    A64 = check_matrix("A", A, dtype=np.float64)
    # a batch of zero problems, y (M, 0) or Y (0, M, L), gives an empty result
    empty = (2, 1) if ndims == (1, 2) else (3, 0)
    Y64 = as_float_array(yname, Y, ndim=ndims, dtype=np.float64, empty_batch=empty)
    return A64, Y64, out_dtype


def check_rows(A: np.ndarray, Y: np.ndarray, yname: str, axis: int) -> None:
    """``Y`` as the user passed it; ``axis`` counted from the end."""
    if Y.shape[axis] != A.shape[0]:
        raise ValueError(
            f"{yname} has {Y.shape[axis]} measurements (shape {Y.shape}) but A has "
            f"{A.shape[0]} rows{transposed_hint(A.shape, Y.shape[axis])}"
        )


def check_common(rtol: Any, max_iter: Any, n_threads: Any) -> tuple[float, int, int]:
    """``rtol``, ``max_iter`` (default :data:`DEFAULT_MAX_ITER`) and the thread count, checked."""
    rtol = check_nonnegative_float("rtol", rtol)
    max_iter = (
        DEFAULT_MAX_ITER
        if max_iter is None
        else check_positive_int("max_iter", max_iter, upper=MAX_ITER_LIMIT)
    )
    return rtol, max_iter, resolve_threads(n_threads)


def warn_max_iter(name: str, stop: np.ndarray, max_iter: int) -> None:
    """Warn (once) when problems stopped at ``max_iter`` before converging."""
    hit = int(np.count_nonzero(stop == _MAX_ITER_CODE))
    if hit:
        warnings.warn(
            f"{name}: {hit} problem(s) reached max_iter={max_iter} before the "
            "marginal-likelihood gain converged; the result is the last iterate",
            RuntimeWarning,
            stacklevel=3,
        )


def per_problem(info: dict[str, Any], errbars: bool) -> dict[str, list[np.ndarray]]:
    """The kernel's per-problem records as lists of arrays (``errbars`` for BCS only)."""
    per = {
        "indices": [np.asarray(v) for v in info["index"]],
        "alpha": [np.asarray(v) for v in info["alpha"]],
        "gamma": [1.0 / np.asarray(a) for a in info["alpha"]],
    }
    if errbars:
        per["errbars"] = [np.sqrt(d) for d in info["sig_diag"]]
    per["ml"] = [np.asarray(v) for v in info["ml"]]
    return per


def scaled_A(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``A / cA`` with ``cA`` per-column powers of two for columns of extreme scale.

    BCS is invariant to the scale of each column of ``A`` (``a_i -> a_i / c_i``,
    ``x_i -> c_i x_i``: the prior precision of each atom adapts), so columns whose
    largest entry lies outside ``[2**-64, 2**64]`` (``A * 1e-160``, whose squares
    underflow) are brought to unit scale exactly; other columns are untouched.
    """
    mx = np.max(np.abs(A), axis=0)
    extreme = (mx < 2.0**-64) | (mx > 2.0**64)
    cA = np.ones(A.shape[1])
    if np.any(extreme):
        cA[extreme] = pow2_scale(mx[extreme])
        return A / cA, cA
    return A, cA


def warn_dependent(name: str, A: np.ndarray, Y: np.ndarray, X: np.ndarray) -> None:
    """Warn when a solution is non-finite or cancels itself on dependent atoms.

    ``Y`` is (M, B), ``X`` (B, N).  The symptom checked first (cheaply) is
    ``sum_i |x_i| ||a_i|| >> ||y||``: large coefficients that cancel, which with
    a tiny noise variance happens on duplicate or collinear columns; the
    selected columns are then tested for numerical rank.
    """
    if X.size == 0:
        return
    col = np.sqrt(np.sum((A / np.max(np.abs(A))) ** 2, axis=0)) * np.max(np.abs(A))
    with np.errstate(over="ignore", invalid="ignore"):
        mass = np.abs(X) @ col
        ynorm = np.linalg.norm(Y / np.maximum(np.max(np.abs(Y), axis=0), 1e-300), axis=0) * (
            np.maximum(np.max(np.abs(Y), axis=0), 1e-300)
        )
    bad_finite = ~np.isfinite(X).all(axis=1)
    suspect = np.flatnonzero(bad_finite | ~(mass <= 1e6 * np.maximum(ynorm, 1e-300)))
    dependent = []
    for p in suspect:
        idx = np.flatnonzero(X[p] != 0)
        if bad_finite[p] or idx.size < 2:
            dependent.append(p)
            continue
        An = A[:, idx] / col[idx]
        sv = np.linalg.svd(An, compute_uv=False)
        if sv[-1] <= 1e-8 * sv[0]:
            dependent.append(p)
    if dependent:
        warnings.warn(
            f"{name}: {len(dependent)} of {X.shape[0]} problem(s) selected linearly "
            "dependent atoms (duplicate or collinear columns of A): with a small "
            "noise_var their coefficients are ill-determined (large values that cancel, "
            "or non-finite).  Remove duplicate columns or raise noise_var; "
            "cscore.omp detects dependent atoms and stops",
            RuntimeWarning,
            stacklevel=3,
        )


def pow2_scale(mx: np.ndarray) -> np.ndarray:
    """Powers of two near ``mx`` (1 where ``mx`` is zero)."""
    _, e = np.frexp(np.where(mx > 0, mx, 1.0))
    return np.ldexp(1.0, e)


def pow2_exp(c: np.ndarray) -> np.ndarray:
    """Exponents ``e`` with ``c = 2**e`` (``c`` from :func:`pow2_scale`)."""
    return np.frexp(c)[1] - 1


def clamp_positive(v: np.ndarray | float) -> np.ndarray:
    """Keep rescaled prior/noise parameters inside the positive normal range.

    After rescaling by ``c**2`` a parameter can leave the float range for extreme
    ``Y``; where it does, it is negligible (or dominant) against ``y'y`` of order
    one by hundreds of orders of magnitude, so clamping changes no decision.
    """
    fi = np.finfo(np.float64)
    return np.clip(v, fi.tiny, fi.max / 16)


def moves(info: dict[str, Any], single: bool) -> dict[str, Any]:
    """Counts of each kind of move, per problem (scalars for one problem)."""
    mv = np.asarray(info["moves"])
    keys = ("add", "reestimate", "delete", "forced_refresh")
    return {k: (int(mv[0, i]) if single else mv[:, i].copy()) for i, k in enumerate(keys)}
