"""Approximate message passing: AMP and VAMP with l1 or Bernoulli-Gaussian denoisers.

Both decoders solve ``Y = A X + W`` for a sparse ``X`` by iterating a scalar (or
row-wise) denoiser and a linear step whose errors behave, for large random
``A``, like white Gaussian noise of a variance the algorithm tracks:

* :func:`amp` -- approximate message passing of Donoho, Maleki & Montanari [1]_:
  ``x = eta(x + A^T z; tau)``, ``z = y - A x + (1/delta) z <eta'>``.  Made for
  i.i.d. (sub-)Gaussian ``A``; it can diverge on ill-conditioned matrices.
* :func:`vamp` / :class:`VAMPSolver` -- vector AMP of Rangan, Schniter &
  Fletcher [2]_ in its SVD form: one economy SVD of ``A``, then per iteration a
  denoiser and an LMMSE stage that costs two products with ``V`` (the SVD makes it
  cheap).  Rigorous for right-rotationally invariant ``A``, so it also works on
  ill-conditioned matrices.

Denoisers (``denoiser=``):

``"bg"`` (default)
    The MMSE denoiser of a Bernoulli-Gaussian prior: a row of ``X`` is zero with
    probability ``1 - lambda`` and ``N(0, phi)`` per entry otherwise.  The prior
    ``(lambda, phi)`` and the noise variance ``psi`` are learned from the
    measurements by expectation-maximization as in EM-BG-AMP [3]_ (one EM step
    after every iteration), from the paper's initialization: ``lambda_0 = delta
    rho_SE(delta)`` (the l1 phase transition, ``delta = M/N``),
    ``psi_0 = ||y||^2 / ((SNR0 + 1) M)`` with ``SNR0 = 100``, and
    ``phi_0 = (||y||^2 - M psi_0) / (||A||_F^2 lambda_0)``.  Any of the three can be
    fixed instead (``sparsity=``, ``slab_var=``, ``noise_var=``); fixing all three
    to the truth gives the "matched" decoders of the literature.
``"l1"``
    Soft thresholding at ``alpha * sigma_hat`` (AMP: ``sigma_hat^2 = ||z||^2/M``;
    VAMP: ``sigma_hat^2 = 1/gamma_1``), i.e. AMP for the LASSO.  By default
    ``alpha`` follows the minimax rule of [1]_ for the problem's ``delta``
    (:func:`minimax_alpha`: the threshold that maximizes the sparsity AMP can
    recover, 0.877 at ``delta = 0.5``); it needs no knowledge of the sparsity,
    and on the Borgerding-Schniter-Rangan problem (N = 500, M = 250, rate 0.1,
    40 dB) it gives -35.5 dB against the tuned LASSO's published -36.7 dB.  It is
    the smallest safe threshold, so convergence is slow there (about 140
    iterations); a fixed ``alpha`` of 1.2-1.4 takes 35-45 for an NMSE within 1 dB
    of it, but recovers a smaller range of sparsities (its phase transition is
    lower) and degrades more on ill-conditioned ``A`` (benchmarks/RESULTS.md).

Multiple measurement vectors.  With ``Y`` of shape (M, L) and ``joint=True``
(default) the rows of ``X`` are assumed jointly sparse: for ``"bg"`` a row is
active in all L channels or in none, and its posterior activity combines the L
channels' likelihoods; for ``"l1"`` the threshold is a row-l2 (group) soft
threshold, with the minimax ``alpha`` computed for groups of L.  Channels may
have different noise levels (each has its own effective variance).  With
``joint=False`` every channel is decoded as an independent problem (its own
prior, noise and iteration count).

Damping and safety.  ``damping = beta`` mixes each new message with the previous
one (``(1 - beta) new + beta old``: AMP damps ``x`` and the scaled residual as
damped GAMP does; VAMP damps ``r2`` and ``1/sqrt(gamma2)``).  Both default to 0:
the undamped recursions are the ones the state-evolution theory describes and
they are fastest where that theory holds (on the i.i.d. problem above damping
0.3 takes AMP from 19 to 33 iterations and changes nothing else).  Instead of
damping every run, each run watches the residual ``||Y - A X_t||``: when it
exceeds both twice the smallest residual seen so far and ``||Y||`` (the zero
estimate's residual), or any quantity stops being finite, the run goes back to
its best iterate (the one of smallest residual) and
raises the damping (``beta <- (1 + beta)/2``: 0, 0.5, 0.75, ...); after five
raises it stops there with stop reason ``"diverged"``.  So NaN never escapes,
and AMP on an ill-conditioned ``A`` ends up damped rather than diverging.  The
damping a run ended with is in ``extra["damping"]``.

Scale.  Each problem is decoded as ``Y / 2**e`` (exact) with ``max |Y| / 2**e`` in
[0.5, 1) and the estimate multiplied back, so ``decode(c Y) = c decode(Y)`` for any
finite ``c`` whose result is representable (bit for bit for powers of two), from
``Y`` near the smallest subnormal to near the largest float.  With ``joint=True``
and no fixed variance, a channel weaker than the strongest by more than a factor
``2**8`` is scaled up to that distance (exactly) before the joint denoiser sees it,
so that its one slab variance fits every channel.

Stopping: ``||x_t - x_{t-1}|| <= rtol ||x_t||`` (stop reason ``"rtol"``) or
``max_iter`` iterations (``"max_iter"``).  Per-iteration curves: a run is a
deterministic function of its inputs, so ``max_iter=t, rtol=0`` returns exactly
the ``t``-th iterate; calling it for ``t = 1, 2, ...`` gives, for example, the NMSE
per iteration against a known ``X`` (``benchmarks/bench_amp.py`` does so).

Every problem runs in the compiled core (``cpp/include/cscore/amp.hpp``), in
float64 whatever the input dtype (float32 input gives float32 output); batches
are split across threads with the GIL released, and results never depend on the
thread count or on the batch a problem is in.

References
----------
.. [1] D. L. Donoho, A. Maleki, A. Montanari, "Message-passing algorithms for
   compressed sensing", PNAS 106(45), 18914-18919, 2009.
.. [2] S. Rangan, P. Schniter, A. K. Fletcher, "Vector approximate message
   passing", IEEE Trans. Inf. Theory 65(10), 6664-6684, 2019.
.. [3] J. P. Vila, P. Schniter, "Expectation-maximization Gaussian-mixture
   approximate message passing", IEEE Trans. Signal Process. 61(19), 4658-4672,
   2013 (the Bernoulli-Gaussian case: EM-BG-AMP).
.. [4] M. Borgerding, P. Schniter, S. Rangan, "AMP-inspired deep networks for
   sparse linear inverse problems", IEEE Trans. Signal Process. 65(16), 2017
   (the N = 500, M = 250 test problem).
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from collections import OrderedDict
from typing import Any, cast

import numpy as np

from .. import _core
from .._blas import single_threaded_blas
from .._config import resolve_threads
from .._tol import resolve_rtol
from .._validation import (
    check_matrix,
    common_float_dtype,
)
from ..result import DecodeResult
from ._amp_common import (
    _DENOISERS,
    _STOP_NAMES,
    _as_measurements,
    _check_options,
    _initial_sparsity,
    _shape_out,
    minimax_alpha,
)
from .amp_operator import OperatorProducts, amp_operator_kernel, is_operator

__all__ = ["VAMPSolver", "amp", "minimax_alpha", "vamp"]


# --------------------------------------------------------------------------- shared driver


def _decode(
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
    lam0 = _initial_sparsity(M, N) if sparsity is None else sparsity
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
                _DENOISERS[opts["denoiser"]], joint, opts["max_iter"], opts["rtol"],
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
    shape = _shape_out(Y_arr, N)
    X_out = X.reshape(shape) if Y_arr.ndim != 2 else X[0]
    x = X_out.astype(out_dtype, copy=False)
    if not return_result:
        return x

    # Per-problem summaries: the longest run and the worst stop over the channels.
    n_it = n_iter.max(axis=1)
    worst = stop.max(axis=1)
    reasons = np.asarray(_STOP_NAMES, dtype=object)[worst].astype(str)
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


def amp(
    A: Any,
    Y: Any,
    *,
    denoiser: str = "bg",
    joint: bool = True,
    max_iter: int = 200,
    rtol: float = 1e-5,
    damping: float = 0.0,
    alpha: float | str | None = None,
    sparsity: float | None = None,
    slab_var: float | None = None,
    noise_var: float | None = None,
    snr0: float = 100.0,
    n_threads: int | None = None,
    return_result: bool = False,
    tol: float | None = None,
    device: Any = None,
) -> np.ndarray | DecodeResult:
    """Approximate message passing (Donoho, Maleki & Montanari 2009) with EM-BG or l1.

    Iterates ``x = eta(x + A^T z; tau)``, ``z = y - A x + (1/delta) z <eta'>``
    (``delta = M/N``, ``tau = ||z||^2/M``), written as uniform-variance GAMP so
    that damping is well defined.  See the module docstring
    (:mod:`cscore.decoders.amp`) for the denoisers, the EM learning, the joint
    (MMV) model and the divergence safeguard.

    ``A`` is used scaled to ``||A||_F^2 = N`` (the unit-norm columns AMP's
    Onsager term assumes, on average); the estimate is returned for ``A`` as
    given.  AMP is meant for i.i.d. (sub-)Gaussian-like ``A``; for
    ill-conditioned or structured matrices use :func:`vamp`.

    Parameters
    ----------
    A : array_like, scipy sparse matrix or LinearOperator, shape (M, N)
        Sensing matrix (finite, no all-zero column).  A sparse matrix, a
        :class:`scipy.sparse.linalg.LinearOperator` or any object with ``shape``,
        ``matvec`` and ``rmatvec`` (PyLops operators) runs the same iteration in
        NumPy with block products (:mod:`cscore.decoders.amp_operator`, ``O(N)``
        memory per vector, results equal to the dense path's up to rounding).
    Y : array_like, shape (M,), (M, L) or (B, M, L)
        One measurement vector, one MMV problem with L channels, or a batch of B
        problems.
    denoiser : {"bg", "l1"}, default "bg"
        Bernoulli-Gaussian MMSE denoiser with EM-learned prior and noise, or
        soft thresholding (AMP for the LASSO).
    joint : bool, default True
        Treat the L channels as sharing one row support (row-sparse denoiser); with
        False each channel is an independent problem.
    max_iter : int, default 200
        Iteration cap.  With ``rtol=0`` the result is exactly the ``max_iter``-th
        iterate (use it to trace the error per iteration).
    rtol : float, default 1e-5
        Convergence test: stop once ``||x_t - x_{t-1}||_F <= rtol ||x_t||_F``
        (stop reason ``"rtol"``).
    damping : float, default 0.0
        Initial damping ``beta`` in ``[0, 1)``; raised automatically when a run
        diverges.
    alpha : float or "minimax", optional
        ``"l1"`` only: threshold multiplier; default the minimax rule
        (:func:`minimax_alpha` for ``delta = M/N`` and the group size).
    sparsity, slab_var, noise_var : float, optional
        ``"bg"`` only: fix the Bernoulli rate ``lambda`` in (0, 1), the slab
        variance ``phi`` or the noise variance ``psi`` instead of learning it.
    snr0 : float, default 100
        ``"bg"``: the SNR (linear) behind the initial noise variance
        ``psi_0 = ||y||^2/((snr0 + 1) M)`` (EM-BG-AMP's value).
    n_threads : int, optional
        Threads across the problems of a batch (and the channels with
        ``joint=False``); results do not depend on it.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` instead of the array.
    tol : float, optional
        Deprecated name of ``rtol``.
    device : str, optional
        None (default): the compiled kernel.  A torch device (``"cpu"``,
        ``"cuda"``, ``"cuda:1"``): the same algorithm in PyTorch on that device,
        in float64 (:mod:`cscore.decoders.torch_backend.amp`; needs torch;
        ``docs/gpu.md``).

    Returns
    -------
    X : numpy.ndarray, shape (N,), (N, L) or (B, N, L)
        The estimate (the posterior mean for ``"bg"``, so not exactly sparse),
        float32 when ``A`` and ``Y`` are float32, else float64.  With
        ``return_result=True`` a :class:`cscore.DecodeResult`: ``support`` marks the
        rows with posterior activity above 0.5 (``"bg"``) or nonzero (``"l1"``),
        shaped like ``X``; ``residual_norm`` is ``||y_l - A x_l||`` per channel;
        ``n_iter``/``stop_reason`` per problem (with ``joint=False`` the longest
        channel run and the worst reason: ``"diverged"`` over ``"max_iter"`` over
        ``"rtol"``); ``extra`` holds ``"damping"`` (final), for ``"bg"``
        ``"sparsity"``, ``"slab_var"`` (per problem, or per channel with
        ``joint=False``), ``"noise_var"`` (per channel) and ``"activity"`` (the
        posterior activity of each row, or entry with ``joint=False``), for
        ``"l1"`` ``"alpha"``.

    Raises
    ------
    ValueError
        Bad shapes (naming ``A`` or ``Y``), NaN/inf, out-of-range options, or an
        option that does not apply to the chosen denoiser.
    TypeError
        Non-numeric, complex or boolean arrays; options of the wrong type.

    Notes
    -----
    A zero ``Y`` (or a zero problem in a batch) gives a zero estimate after no
    iteration.  On the problem of Borgerding, Schniter & Rangan (N = 500, M =
    250, A i.i.d. N(0, 1/M), Bernoulli-Gaussian rate 0.1, 40 dB) AMP-BG reaches
    about -45.7 dB NMSE, within 0.5 dB of the support oracle, in about 20
    iterations (benchmarks/RESULTS.md).

    References
    ----------
    .. [1] D. L. Donoho, A. Maleki, A. Montanari, "Message-passing algorithms
       for compressed sensing", PNAS 106(45), 2009.
    .. [2] J. P. Vila, P. Schniter, "Expectation-maximization Gaussian-mixture
       approximate message passing", IEEE Trans. Signal Process. 61(19), 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore.decoders.amp import amp
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((100, 200)) / 10
    >>> x = np.zeros(200); x[rng.choice(200, 10, replace=False)] = rng.standard_normal(10)
    >>> x_hat = amp(A, A @ x + 1e-3 * rng.standard_normal(100))
    >>> bool(np.linalg.norm(x_hat - x) < 0.05 * np.linalg.norm(x))
    True
    """
    kernel: Any = _core._amp_decode
    if device is not None:
        from .torch_backend import check_device
        from .torch_backend.amp import amp_decode

        check_device(device)
        kernel = functools.partial(amp_decode, device=device)
    opts = _check_options(
        "amp", denoiser, joint, max_iter, resolve_rtol("amp", rtol, tol), damping, alpha,
        sparsity, slab_var, noise_var, snr0,
    )  # fmt: skip
    if is_operator(A):  # LinearOperator / sparse: the NumPy operator path
        prod = OperatorProducts(A)
        y32 = np.asarray(Y).dtype == np.float32 and getattr(A, "dtype", None) == np.float32
        dt = np.dtype(np.float32 if y32 else np.float64)
        Y_op, Y3_op = _as_measurements(Y, prod.shape[0], dt, prod.shape[1])
        return _decode(
            "amp", amp_operator_kernel, (prod,), cast(Any, prod), prod.c, Y_op, Y3_op, dt, opts,
            n_threads, return_result,
        )  # fmt: skip
    dtype = common_float_dtype(A, Y)
    A_arr = check_matrix("A", A, dtype=dtype)
    M, N = A_arr.shape
    Y_arr, Y3 = _as_measurements(Y, M, dtype, N)
    A64 = np.asarray(A_arr, dtype=np.float64)
    frob2 = float(np.sum(A64 * A64))
    if not (np.isfinite(frob2) and frob2 > 0.0):
        raise ValueError("A is too large or too small to scale (||A||_F^2 not finite)")
    c = math.sqrt(N / frob2)
    A_s = np.ascontiguousarray(A64 * c)
    # The kernel works with A_s = c A, whose solution is x / c.
    return _decode(
        "amp", kernel, (A_s, float(N)), A64, c, Y_arr, Y3, dtype, opts,
        n_threads, return_result,
    )  # fmt: skip


# --------------------------------------------------------------------------- VAMP


class VAMPSolver:
    """VAMP for one sensing matrix: the economy SVD of ``A`` computed once.

    Parameters
    ----------
    A : array_like, shape (M, N)
        Sensing matrix (finite, no all-zero column).  Its SVD ``A = U diag(s) V^T``
        (NumPy/LAPACK, float64) is computed here; every call then costs two
        products with ``V`` per iteration plus one for the residual check.

    Attributes
    ----------
    shape : tuple of int
        ``(M, N)``.
    dtype : numpy.dtype
        The dtype of ``A`` as given (float32 output needs float32 ``A`` and ``Y``).
    singular_values : numpy.ndarray
        ``s``, shape (min(M, N),), descending.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore.decoders.amp import VAMPSolver
    >>> rng = np.random.default_rng(1)
    >>> A = rng.standard_normal((100, 200)) / 10
    >>> solver = VAMPSolver(A)
    >>> x = np.zeros(200); x[:10] = 1.0
    >>> x_hat = solver(A @ x + 1e-3 * rng.standard_normal(100))
    >>> bool(np.linalg.norm(x_hat - x) < 0.05 * np.linalg.norm(x))
    True
    """

    def __init__(self, A: Any) -> None:
        dtype = np.dtype(np.float32) if np.asarray(A).dtype == np.float32 else np.float64
        A_arr = check_matrix("A", A)
        self.dtype = np.dtype(dtype)
        self._A64 = np.ascontiguousarray(A_arr, dtype=np.float64)
        U, s, Vt = np.linalg.svd(self._A64, full_matrices=False)
        frob2 = float(np.sum(s * s))
        if not (np.all(np.isfinite(s)) and np.isfinite(frob2) and frob2 > 0.0):
            raise ValueError("A is too large or too small to decompose (SVD not finite)")
        self._U = np.ascontiguousarray(U)
        self._s = np.ascontiguousarray(s)
        self._Vt = np.ascontiguousarray(Vt)
        # The kernel sees c A (||c A||_F^2 = N, as AMP), whose solution is x / c, so
        # that its variances are of order one whatever the scale of A.
        self._c = math.sqrt(A_arr.shape[1] / frob2)
        self._s_scaled = np.ascontiguousarray(s * self._c)
        self.shape: tuple[int, int] = (int(A_arr.shape[0]), int(A_arr.shape[1]))

    @property
    def singular_values(self) -> np.ndarray:
        """The singular values of ``A`` (a copy), descending."""
        return self._s.copy()

    def __call__(
        self,
        Y: Any,
        *,
        denoiser: str = "bg",
        joint: bool = True,
        max_iter: int = 200,
        rtol: float = 1e-5,
        damping: float = 0.0,
        alpha: float | str | None = None,
        sparsity: float | None = None,
        slab_var: float | None = None,
        noise_var: float | None = None,
        snr0: float = 100.0,
        n_threads: int | None = None,
        return_result: bool = False,
        tol: float | None = None,
        device: Any = None,
    ) -> np.ndarray | DecodeResult:
        """Decode ``Y`` with this matrix; the arguments are those of :func:`vamp`."""
        kernel: Any = _core._vamp_decode
        if device is not None:
            from .torch_backend import check_device
            from .torch_backend.amp import vamp_decode

            check_device(device)
            kernel = functools.partial(vamp_decode, device=device)
        opts = _check_options(
            "vamp", denoiser, joint, max_iter, resolve_rtol("vamp", rtol, tol), damping, alpha,
            sparsity, slab_var, noise_var, snr0,
        )  # fmt: skip
        M = self.shape[0]
        dtype = self.dtype if np.asarray(Y).dtype == np.float32 else np.dtype(np.float64)
        Y_arr, Y3 = _as_measurements(Y, M, dtype, self.shape[1])
        return _decode(
            "vamp", kernel, (self._U, self._s_scaled, self._Vt), self._A64,
            self._c, Y_arr,
            Y3, dtype, opts, n_threads, return_result,
        )  # fmt: skip


#: SVDs of the last matrices passed to :func:`vamp`, keyed by content.
_CACHE_SIZE = 4
_cache: OrderedDict[tuple[Any, ...], VAMPSolver] = OrderedDict()
_cache_lock = threading.Lock()


def _solver_for(A: Any) -> VAMPSolver:
    """A cached :class:`VAMPSolver` for ``A`` (keyed by shape, dtype and a content hash)."""
    A_arr = check_matrix("A", A)
    key = (
        A_arr.shape,
        A_arr.dtype.str,
        hashlib.blake2b(A_arr.tobytes(), digest_size=20).digest(),
    )
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    solver = VAMPSolver(A_arr)
    with _cache_lock:
        _cache[key] = solver
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return solver


def vamp(
    A: Any,
    Y: Any,
    *,
    denoiser: str = "bg",
    joint: bool = True,
    max_iter: int = 200,
    rtol: float = 1e-5,
    damping: float = 0.0,
    alpha: float | str | None = None,
    sparsity: float | None = None,
    slab_var: float | None = None,
    noise_var: float | None = None,
    snr0: float = 100.0,
    n_threads: int | None = None,
    return_result: bool = False,
    tol: float | None = None,
    device: Any = None,
) -> np.ndarray | DecodeResult:
    """Vector AMP (Rangan, Schniter & Fletcher 2019), SVD form, with EM-BG or l1.

    With ``A = U diag(s) V^T`` (economy SVD) each iteration runs

    * the denoiser on ``r1`` at precision ``gamma1``: ``x1 = eta(r1)``,
      ``alpha1 = <eta'>``, then ``r2 = (x1 - alpha1 r1)/(1 - alpha1)``,
      ``gamma2 = gamma1 (1 - alpha1)/alpha1``;
    * the LMMSE stage in the SVD basis: ``d = gw s^2/(gw s^2 + gamma2)``,
      ``alpha2 = 1 - sum(d)/N``, ``r1 = r2 + V diag(gw s/(gw s^2 + gamma2))
      (U^T y - s V^T r2) / (1 - alpha2)``, ``gamma1 = gamma2 (1 - alpha2)/alpha2``
      (``gw = 1/psi``, the noise precision);

    the estimate is ``x1``.  EM updates the prior after the denoiser and the noise
    variance after the LMMSE stage (``psi = (||y - A x2||^2 + tr(A C2 A^T))/M``).
    For ``joint=True`` MMV problems each channel has its own precisions and only
    the denoiser couples the channels.  See :mod:`cscore.decoders.amp` for the
    denoisers, defaults and the divergence safeguard.

    The SVD of the last four matrices is cached (keyed by shape, dtype and a
    BLAKE2 hash of the contents, so an array modified in place is not mistaken
    for its old self); hashing costs about a millisecond per MB.  To hold an SVD
    explicitly, use :class:`VAMPSolver` (``vamp(solver, Y)`` is accepted too).

    Parameters
    ----------
    A : array_like, shape (M, N), or VAMPSolver
        Sensing matrix, any conditioning (VAMP is exact for right-rotationally
        invariant matrices), or a solver holding its SVD.
    Y : array_like, shape (M,), (M, L) or (B, M, L)
        Measurements, as in :func:`amp`.
    denoiser, joint, max_iter, rtol, damping, alpha, sparsity, slab_var, snr0
        As in :func:`amp`.
    n_threads, return_result, tol, device
        As in :func:`amp` (``tol`` is the deprecated name of ``rtol``; ``device``
        runs the same algorithm in PyTorch, :mod:`cscore.decoders.torch_backend.amp`).
    noise_var : float, optional
        Fix the noise variance (both denoisers: VAMP's LMMSE stage needs it;
        learned by EM otherwise).

    Returns
    -------
    X : numpy.ndarray or DecodeResult
        As :func:`amp`; ``extra["noise_var"]`` is given for both denoisers.

    Raises
    ------
    ValueError, TypeError
        As :func:`amp`.

    Notes
    -----
    On the N = 500, M = 250, rate-0.1, 40 dB problem VAMP-BG reaches about
    -45.7 dB on i.i.d. ``A`` (as AMP-BG) and about -44 dB in about 25 iterations on
    a matrix of condition number 15, where undamped AMP diverges (damped by the
    safeguard, it needs about 75).

    References
    ----------
    .. [1] S. Rangan, P. Schniter, A. K. Fletcher, "Vector approximate message
       passing", IEEE Trans. Inf. Theory 65(10), 6664-6684, 2019.
    .. [2] J. P. Vila, P. Schniter, "Expectation-maximization Gaussian-mixture
       approximate message passing", IEEE Trans. Signal Process. 61(19), 2013.
    .. [3] A. K. Fletcher, M. Sahraee-Ardakan, S. Rangan, P. Schniter, "Expectation
       consistent approximate inference: generalizations and convergence", ISIT
       2016 (EM inside VAMP).

    Examples
    --------
    >>> import numpy as np
    >>> from cscore.decoders.amp import vamp
    >>> rng = np.random.default_rng(2)
    >>> A = rng.standard_normal((100, 200)) / 10
    >>> X = np.zeros((200, 3)); X[rng.choice(200, 8, replace=False)] = 1.0
    >>> X_hat = vamp(A, A @ X + 1e-3 * rng.standard_normal((100, 3)))
    >>> X_hat.shape
    (200, 3)
    """
    rtol = resolve_rtol("vamp", rtol, tol)
    solver = A if isinstance(A, VAMPSolver) else None
    if solver is None:
        # Check the options and Y before paying for an SVD.
        _check_options(
            "vamp", denoiser, joint, max_iter, rtol, damping, alpha, sparsity, slab_var,
            noise_var, snr0,
        )  # fmt: skip
        A_arr = check_matrix("A", A)
        _as_measurements(Y, A_arr.shape[0], np.dtype(np.float64), A_arr.shape[1])
        solver = _solver_for(A_arr)
    return solver(
        Y, denoiser=denoiser, joint=joint, max_iter=max_iter, rtol=rtol, damping=damping,
        alpha=alpha, sparsity=sparsity, slab_var=slab_var, noise_var=noise_var, snr0=snr0,
        n_threads=n_threads, return_result=return_result, device=device,
    )  # fmt: skip
