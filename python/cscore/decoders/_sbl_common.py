"""Checks, presets and results shared by T-SBL and T-MSBL (:mod:`cscore.decoders.sbl`).

The presets of the original programs (:data:`TMSBL_PRESETS`, :data:`TSBL_PRESETS`),
argument checks and preset resolution for the two public wrappers, the call of
the compiled kernel, the per-problem record both backends return
(:class:`SblOut`) and the assembly of a :class:`~cscore.DecodeResult` from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import _core
from .._validation import (
    as_float_array,
    check_matrix,
    check_nonnegative_float,
    transposed_hint,
)
from ..result import CONVERGENCE_STOP_REASONS, DecodeResult, batch_result
from ._complex import as_array, checked_matrix, decode_dtype, is_complex

__all__ = [
    "TMSBL_PRESETS",
    "TSBL_PRESETS",
    "SblOut",
    "check_flag",
    "check_inputs",
    "empty_result",
    "make_result",
    "overflow_message",
    "preset",
    "resolve_params",
    "solve_core",
    "tmsbl_matrices",
]


#: T-MSBL presets, as in ``TMSBL.m`` v1.11.  ``None`` is the program's default
#: (tuned for mild noise).  ``prune_gamma`` is raised tenfold when M >= 500 or
#: N >= 1000 (``"large"`` excepted), and ``matrix_reg`` is a multiple of I.
TMSBL_PRESETS: dict[str | None, dict[str, float | bool]] = {
    None: dict(prune_gamma=1e-3, lam=1e-3, learn_lambda=True, enhance_lambda=True, matrix_reg=2.0),
    "no": dict(prune_gamma=1e-4, lam=1e-15, learn_lambda=False, enhance_lambda=False,
               matrix_reg=0.0),
    "small": dict(prune_gamma=1e-3, lam=1e-3, learn_lambda=True, enhance_lambda=False,
                  matrix_reg=0.0),
    "mild": dict(prune_gamma=1e-3, lam=1e-3, learn_lambda=True, enhance_lambda=True,
                 matrix_reg=2.0),
    "large": dict(prune_gamma=1e-2, lam=1e-2, learn_lambda=True, enhance_lambda=True,
                  matrix_reg=4.0),
}

#: T-SBL presets, as in ``TSBL.m`` v1.4 (its ``'SNR'`` argument).  ``None`` is the
#: program's default (tuned for SNR <= 13 dB).
TSBL_PRESETS: dict[str | None, dict[str, float | bool]] = {
    None: dict(prune_gamma=1e-2, lam=1e-3, learn_lambda=True, enhance_lambda=True),
    "inf": dict(prune_gamma=1e-4, lam=1e-10, learn_lambda=False, enhance_lambda=False),
    "high": dict(prune_gamma=1e-3, lam=1e-3, learn_lambda=True, enhance_lambda=False),
    "low": dict(prune_gamma=1e-2, lam=1e-2, learn_lambda=True, enhance_lambda=True),
}


@dataclass
class SblOut:
    """One problem's outcome, from either backend."""

    x: np.ndarray  # (N, L)
    gamma: np.ndarray  # (N,)
    B: np.ndarray  # (L, L)
    lam: float
    n_iter: int
    stop: str


def check_inputs(
    A: Any, Y: Any, *, allow_complex: bool = False
) -> tuple[np.ndarray, np.ndarray, np.dtype, int]:
    """Check ``A`` (M, N) and ``Y`` (M,), (M, L) or (B, M, L).

    Parameters
    ----------
    A, Y : array_like
        The user's inputs.
    allow_complex : bool, default False
        Accept complex inputs (T-MSBL); otherwise they are refused with a
        ``TypeError`` by the shared checks.

    Returns
    -------
    tuple
        ``(A64, Y64, out_dtype, ndim)``: both in float64 -- complex128 when
        either input is complex (and allowed) --, ``Y64`` (M, L) or (B, M, L)
        (a 1-D ``Y`` gains a channel axis), the output dtype (float32 when both
        inputs are float32; complex64 when both are complex64 or float32 and one
        is complex, else complex128) and the number of dimensions of ``Y``.
    """
    if allow_complex and (is_complex(A) or is_complex(Y)):
        work = np.dtype(np.complex128)
        out_dtype = decode_dtype(A, Y)
        A64 = checked_matrix("A", A, dtype=work)
        Y64 = as_array("Y", Y, ndim=(1, 2, 3), dtype=work, empty_batch=(3, 0))
        return _check_rows(A64, Y64, out_dtype)
    A_in = as_float_array("A", A, ndim=2)
    Y_in = as_float_array("Y", Y, ndim=(1, 2, 3), empty_batch=(3, 0))
    out_dtype = (
        np.dtype(np.float32)
        if A_in.dtype == np.float32 and Y_in.dtype == np.float32
        else np.dtype(np.float64)
    )
    A64 = check_matrix("A", A_in, dtype=np.float64)
    Y64 = np.asarray(Y_in, dtype=np.float64)
    return _check_rows(A64, Y64, out_dtype)


def _check_rows(
    A64: np.ndarray, Y64: np.ndarray, out_dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.dtype, int]:
    """Check that ``Y`` has M rows; a 1-D ``Y`` gains a channel axis."""
    M = A64.shape[0]
    ndim = Y64.ndim
    if Y64.shape[-2 if ndim > 1 else 0] != M:
        raise ValueError(
            f"Y must have M = {M} rows (A is {A64.shape}); got Y of shape {Y64.shape}"
            + transposed_hint(A64.shape, Y64.shape[-2 if ndim > 1 else 0])
        )
    if ndim == 1:
        Y64 = Y64[:, None]
    return A64, Y64, out_dtype, ndim


def check_flag(name: str, v: Any) -> bool:
    """``v`` as a bool; ``TypeError`` unless it is a bool or 0/1."""
    if isinstance(v, (bool, np.bool_)) or v in (0, 1):
        return bool(v)
    raise TypeError(f"{name} must be a bool, got {v!r}")


def preset(
    table: dict[str | None, dict[str, float | bool]], key: Any, argname: str
) -> dict[str, float | bool]:
    """A copy of ``table[key]`` (``key`` case-insensitive; None the default preset)."""
    if key is not None and not isinstance(key, str):
        raise TypeError(f"{argname} must be a string or None, got {key!r}")
    k = key.lower() if isinstance(key, str) else None
    if k not in table:
        choices = ", ".join(repr(c) for c in table)
        raise ValueError(f"{argname} must be one of {choices}; got {key!r}")
    return dict(table[k])


def resolve_params(
    p: dict[str, float | bool], prune_gamma: Any, lam: Any, learn_lambda: Any,
    enhance_lambda: Any, check_lam: Callable[[str, Any], float],
) -> tuple[float, float, bool, bool]:
    """``(prune_gamma, lam, learn_lambda, enhance_lambda)``: explicit values win over preset ``p``.

    Parameters
    ----------
    p : dict
        The preset (from :func:`preset`).
    prune_gamma, lam, learn_lambda, enhance_lambda : optional
        The user's values; None takes the preset's.
    check_lam : callable
        Validator of an explicit ``lam`` (T-SBL refuses 0, T-MSBL accepts it).

    Returns
    -------
    tuple
        The four checked values, in that order.
    """
    prune = float(p["prune_gamma"]) if prune_gamma is None else check_nonnegative_float(
        "prune_gamma", prune_gamma)
    lam0 = float(p["lam"]) if lam is None else check_lam("lam", lam)
    learn = bool(p["learn_lambda"]) if learn_lambda is None else check_flag(
        "learn_lambda", learn_lambda)
    enh = bool(p["enhance_lambda"]) if enhance_lambda is None else check_flag(
        "enhance_lambda", enhance_lambda)
    return prune, lam0, learn, enh


def tmsbl_matrices(
    p: dict[str, float | bool], matrix_reg: Any, fix_b: Any, L: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """T-MSBL's regularization ``R`` (L, L) and fixed ``B`` (None: B is learned).

    Parameters
    ----------
    p : dict
        The preset (its ``matrix_reg`` is used when ``matrix_reg`` is None).
    matrix_reg : float or array_like (L, L) or None
        The user's regularization (a float c means c I).
    fix_b : array_like (L, L) or None
        The user's fixed B (symmetric positive definite); I when L >= 10.
    L : int
        Number of channels.

    Returns
    -------
    tuple
        ``(R, B_fixed)``.
    """
    if matrix_reg is None:
        R = float(p["matrix_reg"]) * np.eye(L)
    elif np.ndim(matrix_reg) == 0:
        R = check_nonnegative_float("matrix_reg", matrix_reg) * np.eye(L)
    else:
        R = as_float_array("matrix_reg", matrix_reg, ndim=2, dtype=np.float64)
        if R.shape != (L, L):
            raise ValueError(f"matrix_reg must be a scalar or ({L}, {L}); got {R.shape}")
    B_fixed: np.ndarray | None = None
    if fix_b is not None:
        B_fixed = as_float_array("fix_b", fix_b, ndim=2, dtype=np.float64)
        if B_fixed.shape != (L, L):
            raise ValueError(f"fix_b must be ({L}, {L}); got {B_fixed.shape}")
        if not np.allclose(B_fixed, B_fixed.T) or np.linalg.eigvalsh(B_fixed)[0] <= 0:
            raise ValueError("fix_b must be symmetric positive definite")
    elif L >= 10:
        B_fixed = np.eye(L)
    return R, B_fixed


def solve_core(A: np.ndarray, Y: np.ndarray, kw: dict[str, Any], threads: int) -> list[SblOut]:
    """Decode ``Y`` (M, L) or (B, M, L) with the compiled kernel; one record per problem."""
    Yb = Y if Y.ndim == 3 else Y[None]
    Yt = np.ascontiguousarray(Yb.transpose(0, 2, 1))
    if np.iscomplexobj(A) or np.iscomplexobj(Y):  # complex T-MSBL (sbl_complex.hpp)
        X, G, Bs, lam, n_iter, stop = _core._sbl_solve_complex(
            np.asfortranarray(A, dtype=np.complex128), Yt.astype(np.complex128, copy=False),
            kw["prune"], kw["lam"], kw["learn"], kw["enh"], kw.get("R"), kw.get("B_fixed"),
            kw["max_iter"], kw["rtol"], threads,
        )
    else:
        X, G, Bs, lam, n_iter, stop = _core._sbl_solve(
            np.asfortranarray(A), Yt, kw["exact"], kw["prune"], kw["lam"], kw["learn"],
            kw["enh"], kw.get("R"), kw.get("B_fixed"), kw["max_iter"], kw["rtol"], threads,
        )
    return [
        SblOut(X[b].T.copy(), G[b], Bs[b].T.copy(), float(lam[b]), int(n_iter[b]),
               CONVERGENCE_STOP_REASONS[int(stop[b])])
        for b in range(X.shape[0])
    ]


def overflow_message(name: str, Y: np.ndarray) -> str:
    """The ``FloatingPointError`` message of an overflowed iteration."""
    return (
        f"{name}: the iteration overflowed (non-finite values) for Y of magnitude "
        f"max |Y| = {float(np.max(np.abs(Y))):.3g}.  The algorithm starts from gamma = 1 and "
        "uses absolute thresholds (prune_gamma, lam), so it is meant for Y of moderate "
        "scale: divide Y by a constant (e.g. its largest absolute value) and multiply "
        "the result by it"
    )


def empty_result(
    A: np.ndarray, Y: np.ndarray, out_dtype: np.dtype, return_result: bool
) -> np.ndarray | DecodeResult:
    """The outcome for a batch ``Y`` (0, M, L) of zero problems."""
    N, L = A.shape[1], Y.shape[2]
    X0 = np.zeros((0, N, L), dtype=out_dtype)
    if not return_result:
        return X0
    return DecodeResult(
        x=X0, support=X0 != 0, residual_norm=np.zeros((0, L), dtype=np.finfo(out_dtype).dtype),
        n_iter=np.zeros(0, dtype=int), stop_reason=np.zeros(0, dtype="<U9"),
        extra={"gamma": np.zeros((0, N)), "B": np.zeros((0, L, L)),
               "lambda": np.zeros(0)},
    )  # fmt: skip


def make_result(
    A: np.ndarray, Y: np.ndarray, X: np.ndarray, outs: list[SblOut], out_dtype: np.dtype,
    ndim: int,
) -> DecodeResult:
    """The :class:`~cscore.DecodeResult` of a decode.

    Parameters
    ----------
    A : ndarray (M, N)
    Y : ndarray (M, L) or (B, M, L)
        The measurements, float64 (a 1-D ``Y`` with its channel axis added).
    X : ndarray
        The estimate as returned (shape of the user's ``Y``, dtype ``out_dtype``).
    outs : list of SblOut
        One record per problem.
    out_dtype : numpy.dtype
        dtype of the estimate; the residual norms are of its real type.
    ndim : int
        Number of dimensions of the user's ``Y``.

    Returns
    -------
    DecodeResult
        ``extra`` holds ``gamma``, ``B`` and ``lambda`` per problem.
    """
    batch = Y.ndim == 3
    Yb = Y if batch else Y[None]
    Xb = np.stack([o.x for o in outs])
    resid = _norm_axis1(Yb - np.einsum("mn,bnl->bml", A, Xb)).astype(np.finfo(out_dtype).dtype)
    return batch_result(
        X,
        X != 0,
        resid[:, 0] if ndim == 1 else resid,
        np.array([o.n_iter for o in outs]),
        np.array([o.stop for o in outs]),
        {
            "gamma": np.stack([o.gamma for o in outs]),
            "B": np.stack([o.B for o in outs]),
            "lambda": np.array([o.lam for o in outs]),
        },
        single=not batch,
    )


def _norm_axis1(R: np.ndarray) -> np.ndarray:
    """l2 norms along axis 1 of (B, M, L) without overflow/underflow of the squares."""
    if R.size == 0:
        return np.zeros((R.shape[0], R.shape[2]))
    mx = np.max(np.abs(R), axis=1, keepdims=True)
    ok = (mx > 0) & np.isfinite(mx)
    scale = np.where(ok, np.exp2(np.floor(np.log2(np.where(ok, mx, 1.0)))), 1.0)
    out: np.ndarray = np.linalg.norm(R / scale, axis=1) * scale[:, 0, :]
    return out
