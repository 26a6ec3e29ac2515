"""OMP and SOMP on a dense ``A``: the compiled kernel (or PyTorch with ``device=``).

:func:`run_dense` checks ``A`` and the measurements, brings columns of extreme
scale to unit scale, lays out strided views so that nothing is copied, and runs
``_core._greedy_decode`` (or, with ``tol="auto"``, ``_core._greedy_decode_auto``,
the path, test and cut in one decode; with ``device=``, the PyTorch twin).  The
algorithm and its options are described in :mod:`cscore.decoders.greedy`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import _core
from .._config import resolve_threads
from .._validation import check_matrix_scales
from ._complex import as_array, checked_matrix, decode_dtype, is_complex
from ._greedy_common import DEPENDENT_MSG, GreedyLayout, checked_rows, resolve_stopping
from ._rrt import path_length, rrt_tables, signal_tables
from .path_stop import greedy_path_end
from .stopping import is_auto

__all__ = [
    "run_dense",
]

#: Largest Gram matrix (entries) stored per call: 2**25 entries = 256 MiB in float64,
#: i.e. N <= 5792.  Beyond it each selected atom's Gram column is computed on demand
#: (O(M N) per step instead of memory N**2); the results are identical either way.
_GRAM_LIMIT = 1 << 25


def _unit_scale_columns(
    A_arr: np.ndarray, col_max: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """``A`` with its columns of extreme scale brought to unit scale, and the scales.

    Columns of extreme scale (e.g. float32 subnormals, whose inverse norm would
    overflow) are scaled by a power of two, exactly; the selection uses
    normalized columns anyway and x_j scales back by 1/c_j.  Columns of ordinary
    scale are untouched (results are bit-identical); the scales are None when
    no column is extreme.  Complex columns are scaled by their largest part.
    ``col_max``, when given, is ``max_i |a_ij|`` per column of a real ``A``.
    """
    cplx = A_arr.dtype.kind == "c"
    if cplx:
        col_max = np.max(np.maximum(np.abs(A_arr.real), np.abs(A_arr.imag)), axis=0)
    elif col_max is None:
        # max |a_ij| from the column maxima and minima: no temporary the size of A
        col_max = np.maximum(np.max(A_arr, axis=0), -np.min(A_arr, axis=0))
    extreme = (col_max < 2.0**-40) | (col_max > 2.0**40)
    if not np.any(extreme):
        return A_arr, None
    _, e = np.frexp(np.where(extreme, col_max, 1.0).astype(np.float64))
    col_scale = np.where(extreme, np.ldexp(1.0, e), 1.0)
    shift = -np.where(extreme, e, 0)
    if not cplx:
        return np.ascontiguousarray(np.ldexp(A_arr, shift).astype(A_arr.dtype, copy=False)), \
            col_scale
    scaled = np.empty_like(A_arr)
    scaled.real = np.ldexp(A_arr.real, shift)
    scaled.imag = np.ldexp(A_arr.imag, shift)
    return scaled, col_scale


def _stopping(
    n_nonzero: Any, tol: Any, auto: bool, M: int, N: int
) -> tuple[int, bool, float, int]:
    """:func:`resolve_stopping`, and the atoms kept at most (``tol="auto"``'s cap).

    With ``tol="auto"`` the path runs up to :func:`~.stopping.path_length` steps
    and at most ``n_nonzero`` atoms (when given) are kept.
    """
    if not auto:
        max_atoms, cap_is_n_nonzero, tol_value = resolve_stopping(n_nonzero, tol, M, N)
        return max_atoms, cap_is_n_nonzero, tol_value, max_atoms
    K = path_length(M, N)
    cap = K if n_nonzero is None else min(resolve_stopping(n_nonzero, None, M, N)[0], K)
    return K, False, -1.0, cap


def run_dense(
    layout: GreedyLayout, A: Any, Y: Any, n_nonzero: Any, tol: Any, n_threads: Any, device: Any
) -> dict[str, Any]:
    """Validate, decode, and return the raw outputs in (P, ., L) layout."""
    fn, y_name = layout.fn, layout.y_name
    if device is not None:
        from .torch_backend import check_device

        check_device(device)
    dtype = decode_dtype(A, Y)
    real_dtype = np.finfo(dtype).dtype  # of the residual norms
    col_max: np.ndarray | None = None
    if np.dtype(dtype).kind == "c":
        A_arr = checked_matrix("A", A, dtype=dtype)
    else:  # the checks and the column scales from one pass over A
        A_arr, col_max = check_matrix_scales("A", A, dtype=dtype)
    # A batch of zero problems, y (M, 0) or Y (0, M, L), gives an empty result.
    Y_arr = as_array(y_name, Y, ndim=layout.y_ndims, dtype=dtype, empty_batch=layout.empty)
    M, N = A_arr.shape
    checked_rows(layout, Y_arr.shape, A_arr.shape)
    A_arr, col_scale = _unit_scale_columns(A_arr, col_max)
    auto = is_auto(tol)
    if auto:
        _refuse_complex_auto(fn, A_arr, Y_arr)
    max_atoms, cap_is_n_nonzero, tol_value, cap = _stopping(n_nonzero, tol, auto, M, N)
    threads = resolve_threads(n_threads)

    # Strided (P, M, L) views of the measurements and (P, N, L) views of the output,
    # so that no copy or transpose is needed on either side.
    if fn == "omp":
        if Y_arr.ndim == 1:
            X = np.empty(N, dtype=dtype)
            Yv, Xv = Y_arr[None, :, None], X[None, :, None]
        else:
            X = np.empty((N, Y_arr.shape[1]), dtype=dtype)
            Yv, Xv = Y_arr.T[:, :, None], X.T[:, :, None]
    else:
        X = np.empty((*Y_arr.shape[:-2], N, Y_arr.shape[-1]), dtype=dtype)
        if Y_arr.ndim == 2:
            Yv, Xv = Y_arr[None], X[None]
        else:
            Yv, Xv = Y_arr, X
    P, _, L = Yv.shape
    # The kernel writes every entry of X (zeros off the support).
    residual = np.zeros((P, L), dtype=real_dtype)
    n_iter = np.zeros(P, dtype=np.int64)
    stop = np.zeros(P, dtype=np.int8)
    warn = np.zeros(P, dtype=np.uint8)
    atoms = np.full((P, max_atoms), -1, dtype=np.int64)
    outs: _Outputs = (Xv, residual, n_iter, stop, warn, atoms)
    extra: dict[str, np.ndarray] = {}
    if device is not None:
        _device_decode(fn, A_arr, Yv, outs, max_atoms, cap_is_n_nonzero, tol_value, auto,
                       device)
    elif auto:
        extra = _decode_auto(A_arr, Yv, outs, max_atoms, cap, threads)
    elif P:
        _core._greedy_decode(
            A_arr, Yv, *outs, max_atoms, cap_is_n_nonzero, tol_value, threads, _GRAM_LIMIT
        )
    if col_scale is not None:
        with np.errstate(over="ignore"):
            # X[..., n, l]: atoms on the second-to-last axis, or the last for omp's (N,)
            Xv /= col_scale.astype(real_dtype)[None, :, None]
    n_warn = int(np.count_nonzero(warn))
    if n_warn:
        warnings.warn(
            DEPENDENT_MSG.format(fn=fn, count=n_warn, total=P), RuntimeWarning, stacklevel=4
        )
    return {
        "X": X,
        "residual": residual,
        "n_iter": n_iter,
        "stop": stop,  # codes; names only for a DecodeResult (see _result)
        "atoms": atoms,
        "extra": extra,
        "single": Yv.shape[0] == 1 and Y_arr.ndim == layout.single_ndim,
    }


def _device_decode(fn: str, A: np.ndarray, Yv: np.ndarray, outs: _Outputs, max_atoms: int,
                   cap_is_n_nonzero: bool, tol: float, auto: bool, device: Any) -> None:
    """``device=``: the PyTorch (S)OMP (:mod:`.torch_backend.greedy`) fills ``outs``."""
    if auto:
        raise ValueError(f"{fn}: tol='auto' runs on the compiled path only (device=None); "
                         "give n_nonzero or a numeric tol with device=")
    if A.dtype.kind == "c" or Yv.dtype.kind == "c":
        raise TypeError(f"{fn}: complex data runs on the compiled path only (device=None)")
    if Yv.shape[0] == 0:
        return
    from .torch_backend.greedy import greedy_decode

    res = greedy_decode(A, np.ascontiguousarray(Yv), max_atoms, cap_is_n_nonzero, tol, device)
    for dst, src in zip(outs, res):
        dst[...] = src


def _refuse_complex_auto(fn: str, A: Any, Y: Any) -> None:
    """``TypeError`` for ``tol="auto"`` with complex data (its noise estimate is real-only)."""
    if is_complex(A) or is_complex(Y):
        raise TypeError(
            f"{fn}: tol='auto' supports real A and Y only; for complex data pass "
            "n_nonzero or a numeric tol"
        )


#: The output arrays of ``_core._greedy_decode``: X view, residual, n_iter, stop, warn, atoms.
_Outputs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _decode_auto(
    A: np.ndarray, Yv: np.ndarray, outs: _Outputs, max_atoms: int, cap: int, threads: int
) -> dict[str, np.ndarray]:
    """``tol="auto"`` in the compiled kernel; returns the per-problem estimates.

    ``outs`` are the outputs of ``_core._greedy_decode`` (X view, residual,
    n_iter, stop, warn, atoms); the path runs up to ``max_atoms`` steps and at
    most ``cap`` atoms are kept (see :mod:`cscore.decoders.stopping`).
    """
    P, M, L = Yv.shape
    dtype = outs[0].dtype
    extra = {"sigma_hat": np.zeros(P, dtype=dtype), "tol_auto": np.zeros(P, dtype=dtype),
             "n_signal": np.zeros(P, dtype=np.int64)}  # fmt: skip
    t = rrt_tables(M, A.shape[1], L, max_atoms)
    end = greedy_path_end(M, A.shape[1], L, max_atoms, n_nonzero=cap if cap < max_atoms else None)
    if P:
        _core._greedy_decode_auto(
            A, Yv, *outs, extra["sigma_hat"], extra["tol_auto"], extra["n_signal"], max_atoms,
            cap, t["gamma2"], t["a"], t["lnbeta"], t["logu"], t["b"], threads, _GRAM_LIMIT,
            path_end=end, signal=signal_tables(M, A.shape[1], L, max_atoms),
        )  # fmt: skip
    # float64 whatever the input, as the learned decoders' estimates
    extra["sigma_hat"] = extra["sigma_hat"].astype(np.float64)
    extra["tol_auto"] = extra["tol_auto"].astype(np.float64)
    return extra
