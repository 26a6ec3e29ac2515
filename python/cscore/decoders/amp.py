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

import math
from typing import Any, cast

import numpy as np

from .._tol import resolve_rtol
from .._validation import check_matrix, common_float_dtype
from ..result import DecodeResult
from ._amp_common import as_measurements, check_options, minimax_alpha
from ._amp_driver import decode, kernel_for
from ._operator_products import is_operator
from ._vamp import VAMPSolver, vamp
from .amp_operator import OperatorProducts, amp_operator_kernel

__all__ = ["VAMPSolver", "amp", "minimax_alpha", "vamp"]


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
    kernel = kernel_for("amp", device)
    opts = check_options(
        "amp", denoiser, joint, max_iter, resolve_rtol("amp", rtol, tol), damping, alpha,
        sparsity, slab_var, noise_var, snr0,
    )  # fmt: skip
    if is_operator(A):  # LinearOperator / sparse: the NumPy operator path
        prod = OperatorProducts(A)
        y32 = np.asarray(Y).dtype == np.float32 and getattr(A, "dtype", None) == np.float32
        dt = np.dtype(np.float32 if y32 else np.float64)
        Y_op, Y3_op = as_measurements(Y, prod.shape[0], dt, prod.shape[1])
        return decode(
            "amp", amp_operator_kernel, (prod,), cast(Any, prod), prod.c, Y_op, Y3_op, dt, opts,
            n_threads, return_result,
        )  # fmt: skip
    dtype = common_float_dtype(A, Y)
    A_arr = check_matrix("A", A, dtype=dtype)
    M, N = A_arr.shape
    Y_arr, Y3 = as_measurements(Y, M, dtype, N)
    A64 = np.asarray(A_arr, dtype=np.float64)
    frob2 = float(np.sum(A64 * A64))
    if not (np.isfinite(frob2) and frob2 > 0.0):
        raise ValueError("A is too large or too small to scale (||A||_F^2 not finite)")
    c = math.sqrt(N / frob2)
    A_s = np.ascontiguousarray(A64 * c)
    # The kernel works with A_s = c A, whose solution is x / c.
    return decode(
        "amp", kernel, (A_s, float(N)), A64, c, Y_arr, Y3, dtype, opts,
        n_threads, return_result,
    )  # fmt: skip
