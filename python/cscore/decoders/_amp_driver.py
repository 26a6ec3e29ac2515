"""The decode driver that AMP and VAMP share: kernel choice, scaling, the result.

:func:`kernel_for` picks the compiled kernel or its PyTorch twin (``device=``);
:func:`decode` runs a checked batch through it on ``Y / 2**e`` (exact powers of
two, so that no square over- or underflows and ``decode(2**k Y) = 2**k
decode(Y)`` bit for bit), scales the estimate back and builds the
:class:`~cscore.DecodeResult`.  The algorithms are described in
:mod:`cscore.decoders.amp`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _core
from .._blas import single_threaded_blas
from .._config import resolve_threads
from ..result import DecodeResult
from ._amp_common import DENOISERS, STOP_NAMES, initial_sparsity, minimax_alpha, shape_out

__all__ = [
    "decode",
    "kernel_for",
]


def kernel_for(fn: str, device: Any) -> Any:
    """The kernel of ``fn`` (``"amp"`` or ``"vamp"``): compiled, or PyTorch on ``device``.

    Parameters
    ----------
    fn : {"amp", "vamp"}
        Which decoder.
    device : str or None
        None for the compiled kernel, else a torch device (checked here; needs torch).

    Returns
    -------
    callable
        A function with the compiled kernel's arguments.
    """
    if device is None:
        return _core._amp_decode if fn == "amp" else _core._vamp_decode
    from .torch_backend import check_device
    from .torch_backend.amp import amp_decode, vamp_decode

    check_device(device)
    return functools.partial(amp_decode if fn == "amp" else vamp_decode, device=device)


def decode(
    fn: str,
    kernel: Any,
    matrices: tuple[Any, ...],
    A64: np.ndarray,
    x_scale: float,
    Y_arr: np.ndarray,
    Y3: np.ndarray,
    out_dtype: np.dtype,
    opts: dict[str, Any],
    n_threads: Any,
    return_result: bool,
) -> np.ndarray | DecodeResult:
    """Run the checked problems ``Y3`` (P, M, L) through ``kernel`` and shape the answer.

    Parameters
    ----------
    fn : {"amp", "vamp"}
        Which decoder (it decides which parameters ``extra`` reports).
    kernel : callable
        The compiled kernel, the operator kernel or a torch one (:func:`kernel_for`).
    matrices : tuple
        The kernel's leading arguments (the scaled ``A``, or VAMP's SVD factors).
    A64 : numpy.ndarray or OperatorProducts
        ``A`` in float64 (for the residual norms).
    x_scale : float
        The kernel solves for ``x / x_scale``.
    Y_arr, Y3 : numpy.ndarray
        ``Y`` as given (checked) and its (P, M, L) float64 view.
    out_dtype : numpy.dtype
        The dtype of the estimate.
    opts : dict
        The checked options (:func:`~cscore.decoders._amp_common.check_options`).
    n_threads : int or None
        Threads across the problems.
    return_result : bool
        Return a :class:`~cscore.DecodeResult` instead of the array.

    Returns
    -------
    numpy.ndarray or DecodeResult
        The estimate shaped like ``Y`` with ``N`` rows, or the full result.
    """
    M, N = A64.shape
    P, _, L = Y3.shape
    threads = resolve_threads(n_threads)
    bg = opts["denoiser"] == "bg"
    joint = opts["joint"]
    alpha = 0.0
    if not bg:
        alpha = opts["alpha"]
        if alpha is None:
            alpha = minimax_alpha(M / N, L if joint else 1)
    sparsity = opts["sparsity"]
    lam0 = initial_sparsity(M, N) if sparsity is None else sparsity
    s2 = x_scale * x_scale  # the kernel's x is x / x_scale
    slab = -1.0 if opts["slab_var"] is None else opts["slab_var"] / s2
    noise = -1.0 if opts["noise_var"] is None else opts["noise_var"]

    X = np.zeros((P, N, L))
    act = np.zeros((P, N, L))
    params = np.zeros((P, L, 3))
    n_iter = np.zeros((P, L), dtype=np.int64)
    stop = np.zeros((P, L), dtype=np.int8)
    damp = np.zeros((P, L))
    # Each problem runs on Y / 2**e (exact), so that no square over- or underflows.
    fixed = opts["slab_var"] is not None or opts["noise_var"] is not None
    Yn, e = _pow2_normalise(Y3, joint and not fixed)
    outs: tuple[np.ndarray, ...] = (X, act, params, n_iter, stop, damp)
    for sel in _exponent_groups(e[:, 0], fixed):
        # one call for the whole batch, or (fixed variances) one per exponent
        e0 = int(e[0 if sel is None else sel[0], 0])
        f2 = float(np.ldexp(1.0, -2 * e0)) if fixed else 1.0  # fixed variances: Y / 2**e units
        part = outs if sel is None else tuple(a[sel] for a in outs)
        with single_threaded_blas():
            kernel(
                *matrices, Yn if sel is None else np.ascontiguousarray(Yn[sel]), *part,
                DENOISERS[opts["denoiser"]], joint, opts["max_iter"], opts["rtol"],
                opts["damping"], float(alpha), float(lam0), sparsity is None,
                _scaled_var(slab, f2), _scaled_var(noise, f2), opts["snr0"], threads,
            )  # fmt: skip
        if sel is not None:
            for a, b in zip(outs, part):
                a[sel] = b
    if x_scale != 1.0:
        with np.errstate(over="ignore"):  # phi of an A scaled by 1e-150 is out of range
            X *= x_scale
            params[:, :, 1] *= s2
    Xn = X  # the estimate for Y / 2**e
    if e.any():
        with np.errstate(over="ignore"):  # an estimate beyond the float range is inf
            X = np.ldexp(X, e[:, None, :])
            params[:, :, 1:] = np.ldexp(params[:, :, 1:], 2 * e[:, :, None])
    shape = shape_out(Y_arr, N)
    X_out = X.reshape(shape) if Y_arr.ndim != 2 else X[0]
    x = X_out.astype(out_dtype, copy=False)
    if not return_result:
        return x

    # Per-problem summaries: the longest run and the worst stop over the channels.
    n_it = n_iter.max(axis=1)
    worst = stop.max(axis=1)
    reasons = np.asarray(STOP_NAMES, dtype=object)[worst].astype(str)
    with np.errstate(over="ignore"):  # (P, L), from Y / 2**e: no overflow of the squares
        res = np.ldexp(np.linalg.norm(Yn - A64 @ Xn, axis=1), e).astype(out_dtype)
    support = act > 0.5
    extra: dict[str, Any] = {"damping": damp.max(axis=1)}
    if bg:
        if joint:
            extra["sparsity"] = params[:, 0, 0]
            extra["slab_var"] = params[:, 0, 1]
        else:
            extra["sparsity"] = params[:, :, 0]
            extra["slab_var"] = params[:, :, 1]
        extra["activity"] = act[:, :, 0] if joint else act
    else:
        extra["alpha"] = float(alpha)
    if bg or fn == "vamp":
        extra["noise_var"] = params[:, :, 2]

    if Y_arr.ndim == 3:
        return DecodeResult(
            x=x, support=support, residual_norm=res, n_iter=n_it, stop_reason=reasons,
            extra=extra,
        )  # fmt: skip
    # One problem: drop the batch axis; a single vector also drops the channel axis.
    ex = {k: np.asarray(v[0]) if isinstance(v, np.ndarray) else v for k, v in extra.items()}
    sup, r = support[0], res[0]
    if Y_arr.ndim == 1:
        sup, r = sup[:, 0], r.reshape(())
        for k in ("sparsity", "slab_var", "noise_var"):
            if k in ex and ex[k].ndim == 1:
                ex[k] = ex[k].reshape(())
        if "activity" in ex and ex["activity"].ndim == 2:
            ex["activity"] = ex["activity"][:, 0]
    return DecodeResult(
        x=x, support=sup, residual_norm=r, n_iter=n_it.reshape(()),
        stop_reason=reasons.reshape(()), extra=ex,
    )  # fmt: skip


#: Joint decoding: a channel weaker than the problem's strongest by more than
#: ``2**_CHANNEL_SPAN`` (``max |y_l|``) is scaled up to that distance, exactly, by a
#: power of two (and its estimate back).  The joint Bernoulli-Gaussian prior has one
#: slab variance for all channels, so without this AMP fails on channels that differ
#: by a gain of ~3e4 (about 0 dB on both).  Channels within the span are untouched.
_CHANNEL_SPAN = 8

#: Problems with ``max |Y|`` within ``[2**-256, 2**256]`` are passed as they are:
#: the kernel divides by their root mean square, and dividing by a power of two
#: first would give the same bits (no square over- or underflows there).
_SAFE_LOW, _SAFE_HIGH = 2.0**-256, 2.0**256


def _pow2_normalise(Y3: np.ndarray, per_channel: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(Y3 / 2**e, e)``, ``e`` (P, L) integers putting each ``max |Y_p|`` in [0.5, 1).

    ``e`` is the problem's exponent (shape (P, 1): every channel), except (``per_channel``,
    shape (P, L)) for
    channels weaker than the strongest by more than ``2**_CHANNEL_SPAN``, which are
    brought up to that distance.  Dividing by a power of two is exact, and both
    decoders are equivariant to the scale of ``Y`` (their variances scale by
    ``4**e``), so the result is the same as without the division wherever that one
    did not over- or underflow, and ``decode(2**k Y) == 2**k decode(Y)`` holds bit
    for bit.
    """
    P, _, L = Y3.shape
    if P == 0 or Y3.size == 0:
        return Y3, np.zeros((P, 1), dtype=np.int64)
    mx = np.abs(Y3).max(axis=1)  # (P, L)
    top = mx.max(axis=1, keepdims=True)  # (P, 1)
    if per_channel and L > 1:
        ec = np.frexp(mx)[1]
        e = np.frexp(top)[1]
        boost = (mx > 0.0) & (ec + _CHANNEL_SPAN < e)
        if boost.any():
            e = np.where(boost, ec + _CHANNEL_SPAN, e).astype(np.int64)  # (P, L)
            return np.ldexp(Y3, -e[:, None, :]), e
    if _SAFE_LOW <= float(top.min()) and float(top.max()) <= _SAFE_HIGH:
        # the kernel's own scaling (by the root mean square, also exact up to
        # rounding-free powers of two) gives the same bits here: skip the copies
        return Y3, np.zeros((P, 1), dtype=np.int64)
    e = np.frexp(top)[1].astype(np.int64)  # (P, 1); 0 for a zero problem
    return np.ldexp(Y3, -e[:, None, :]), e


def _exponent_groups(e: np.ndarray, split: bool) -> list[np.ndarray | None]:
    """The problems to run together: all (``[None]``), or (``split``) those of equal ``e``."""
    if not split or e.shape[0] <= 1:
        return [None] if e.shape[0] else []
    return [np.flatnonzero(e == v) for v in np.unique(e)]


def _scaled_var(v: float, f2: float) -> float:
    """A fixed variance (or the -1 "learn it" flag) in normalised units, kept normal."""
    if v < 0.0:
        return v
    fi = np.finfo(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        return float(np.clip(v * f2, fi.tiny, fi.max / 16))


# --------------------------------------------------------------------------- AMP
