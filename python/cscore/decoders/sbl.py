"""T-SBL and T-MSBL: sparse Bayesian learning with temporally correlated rows.

Model (Zhang & Rao 2011).  ``Y = A S + V`` with ``A`` (M, N), ``S`` (N, L) and
white noise of variance ``lam``.  Row ``i`` of ``S`` is ``N(0, gamma_i B)``:
every row has its own scale ``gamma_i`` and all rows share one L x L correlation
matrix ``B`` (learned, Frobenius-normalized).  Rows whose ``gamma_i`` falls
below a pruning threshold are removed, which makes the estimate row-sparse.

Both decoders follow the published MATLAB programs of Zhilin Zhang
(``TSBL.m`` v1.4 and ``TMSBL.m`` v1.11) step by step -- order of updates,
defaults, presets, pruning and stopping rule -- but compute every step through a
symmetric eigendecomposition (or a Cholesky factorization) of a matrix of size
``min(M, K)`` instead of SVDs and ``(M L) x (M L)`` inverses.  On the authors'
programs' own inputs the results agree to ~1e-13 (tests/reference/README_sbl.md).

Notation: ``K`` rows currently kept, ``Phi`` the kept columns of ``A``,
``Gamma = diag(gamma)``, ``P = Phi Gamma Phi'`` (M x M).

T-MSBL (the fast approximation)
-------------------------------
Each iteration computes ``Xi = Gamma Phi' (P + lam' I)^-1`` with
``lam' = lam + 1e-16`` (the original adds 1e-16 for safety), the mean
``mu = Xi Y`` and the posterior variances ``Sigma_ii = gamma_i - (Xi Phi Gamma)_ii``.
Then, in this order: ``lam`` is updated from the residual (rules below); ``B`` is
re-estimated as ``sum_i mu_i' mu_i / gamma_i + R`` normalized to unit Frobenius
norm -- but set to ``I`` whenever ``K <= M`` (the authors' v1.11 rule), and fixed
to ``I`` when ``L >= 10``; finally ``gamma_i = mu_i B^-1 mu_i' / L + Sigma_ii``.

T-SBL (the exact form) and its Kronecker structure
--------------------------------------------------
T-SBL works on ``y = vec(Y')`` with dictionary ``D = A kron I_L``; the prior
covariance of the kept rows is ``Gamma kron B`` and the original inverts
``D (Gamma kron B) D' + lam I = P kron B + lam I``, an ``(M L) x (M L)`` matrix,
every iteration: ``O((M L)^3)``.  With ``B = Q diag(b) Q'``
(an L x L eigendecomposition),

    P kron B + lam I = (I kron Q) (P kron diag(b) + lam I) (I kron Q)',

and ``P kron diag(b) + lam I`` is, after a permutation, block diagonal with the
L blocks ``b_j P + lam I``.  So in the rotated coordinates ``Y Q`` the problem
splits into L independent M-dimensional problems, channel ``j`` having the
effective noise ``c_j = lam / b_j``:

    (mu Q)[:, j] = Gamma Phi' (P + c_j I)^-1 (Y Q)[:, j],
    Q' Sigma_i Q = diag_j( b_j (gamma_i - gamma_i^2 phi_i' (P + c_j I)^-1 phi_i) ).

One eigendecomposition of ``P`` serves all L channels (below).  ``B`` is then
``sum_i (Sigma_i + mu_i' mu_i) / gamma_i``, Frobenius-normalized (``I`` while
``K <= M``), and ``gamma_i = tr(B^-1 (Sigma_i + mu_i' mu_i)) / L``; the noise
rule uses the new ``gamma``.  Per iteration this costs ``O(M^2 K + min(M, K)^3)``
instead of ``O((M L)^3 + K (M L)^2)``.

Shared spectral kernel
----------------------
Everything above needs ``Gamma Phi' (P + c I)^-1 R`` and the diagonal
``gamma_i - gamma_i^2 phi_i' (P + c I)^-1 phi_i`` for a few values of ``c``.  Both
come from one symmetric eigendecomposition on the smaller side:

* ``K > M``: ``P = W diag(e) W'``; with ``Z = W' Phi``,
  ``Gamma Phi' (P + c)^-1 R = Gamma Z' diag(1/(e+c)) W' R`` and
  ``phi_i' (P + c)^-1 phi_i = sum_k Z_ki^2 / (e_k + c)``.
* ``K <= M``: with ``G = Gamma^(1/2)``, ``G Phi' Phi G = V diag(e) V'`` (this is the
  SVD of ``Phi G`` the originals use) and by the push-through identity
  ``Gamma Phi' (P + c)^-1 R = G V diag(1/(e+c)) V' G Phi' R`` and
  ``gamma_i - gamma_i^2 phi_i'(P + c)^-1 phi_i = gamma_i c sum_k V_ik^2 / (e_k + c)``
  (no cancellation).

Eigen-components with ``e_k <= 16 K eps e_max`` (a numerically singular ``Phi G``)
are dropped from the mean -- the pseudo-inverse limit the originals' SVD form
``s / (s^2 + lam)`` tends to -- so a singular or duplicated dictionary gives no
NaN.

T-MSBL needs a single ``c`` and, unless the paper's trace rule is used, no
eigenvalues; the compiled kernel then factors ``C = G Phi' Phi G + c I`` (K <= M)
or ``C = P + c I`` (K > M) by Cholesky and reads the mean and the diagonal from
``C^-1`` -- several times cheaper than an eigendecomposition.  It falls back to
the eigendecomposition when a squared pivot drops below ``16 n eps max diag C``.

The compiled kernel (``cpp/include/cscore/sbl.hpp``, one template for real and
complex data) runs batches on threads with the GIL released; the tests check it
against a NumPy oracle (``tests/oracles/sbl_numpy.py``, not installed).
Argument checks and result assembly are in :mod:`cscore.decoders._sbl_common`.
BLAS is limited to one thread during a call (via threadpoolctl when
installed): these matrices are small.

The noise (lambda) rules, from the originals:

* enhanced: ``lam <- ||Y - Phi mu||_F^2 / (M L) + lam sum_m p_m / (lam + p_m) / M``
  with ``p = diag(P)``;
* paper's rule: ``lam <- ||Y - Phi mu||_F^2 / (M L) + lam tr(P (lam I + P)^-1) / M``.

Stopping: after each iteration, stop when ``max |mu - mu_old| < rtol`` (only when no
row was pruned in that iteration) or when ``max_iter`` iterations have run (a
``RuntimeWarning`` is issued).  If every row is pruned the result is zero
(``stop_reason='exhausted'``; a ``RuntimeWarning`` when ``Y`` is nonzero).  The
thresholds are absolute, as in the originals, so results depend on the scale of
``Y``; an overflowing iteration (``Y`` ~ 1e80) raises ``FloatingPointError``
instead of returning NaN.

Complex data (T-MSBL)
---------------------
:func:`tmsbl` also takes complex ``A`` and ``Y`` (complex64/complex128; a real
operand is promoted).  The model is the circular complex one: row ``i`` of
``S`` is ``CN(0, gamma_i B)`` and the noise ``CN(0, lam I)``, whose EM updates
are the real ones with every transpose conjugated (the factors of 2 of the
complex Gaussian cancel): ``P = Phi Gamma Phi^H``, ``mu = Gamma Phi^H (P + lam'
I)^-1 Y``, ``Sigma_ii = gamma_i - gamma_i^2 phi_i^H (P + lam' I)^-1 phi_i``,
``B = sum_i mu_i^H mu_i / gamma_i + R`` and ``gamma_i = Re(mu_i B^-1 mu_i^H) / L
+ Sigma_ii`` (``mu_i`` the i-th row).  The learned temporal-correlation matrix
``B`` is kept **Hermitian** (complex): the phase of the correlation between
snapshots is part of the model (``extra["B"]`` is then complex); the same rules
apply (``I`` while ``K <= M`` and for ``L >= 10``, Frobenius-normalized).
``matrix_reg`` and ``fix_b`` stay real symmetric.  The iteration runs in
complex128 (the kernel's complex instantiation, with LAPACK's Hermitian
eigensolver ``zheevd`` from SciPy) and the output is complex64 when every input is
complex64 or float32, else complex128.  T-SBL (:func:`tsbl`) is real only.

Differences from the originals
------------------------------
* A preset (``noise=`` / ``snr=``) only supplies defaults: parameters passed
  explicitly win (the originals silently overrode them).  There is no ``PRINT``.
* Numerically singular systems are handled by eigen-truncation instead of
  producing huge or NaN entries; on regular problems this changes nothing.
* With T-SBL's ``snr='inf'`` (lambda fixed to 1e-10) the original's explicit
  inverse of an ill-conditioned ``(M L) x (M L)`` matrix makes its mean jitter at
  ~1e-9, so it often runs to its 2000-iteration cap; cscore's decoupled solve
  settles and stops (same answer to ~1e-7).

References
----------
Z. Zhang and B. D. Rao, "Sparse signal recovery with temporally correlated
source vectors using sparse Bayesian learning", IEEE J. Sel. Topics Signal
Process. 5(5), 912-926, 2011.
"""


from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np

from .._blas import single_threaded_blas
from .._config import resolve_threads
from .._tol import resolve_rtol, warn_scale
from .._validation import (
    MAX_ITER_LIMIT,
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
)
from ..result import DecodeResult
from ._complex import is_complex
from ._sbl_common import (
    TMSBL_PRESETS,
    TSBL_PRESETS,
    check_inputs,
    empty_result,
    make_result,
    overflow_message,
    preset,
    resolve_params,
    solve_core,
    tmsbl_matrices,
)

__all__ = ["TMSBL_PRESETS", "TSBL_PRESETS", "tmsbl", "tsbl"]

# TMSBL_PRESETS and TSBL_PRESETS (the original programs' defaults) are defined in
# _sbl_common, beside preset() that reads them.


#: The batch solver ``(A, Y, kw, threads) -> list[SblOut]``: the compiled kernel.
#: The tests put their NumPy oracle here to compare the two.
_SOLVE = solve_core


def _run(
    name: str, kw: dict[str, Any], A: np.ndarray, Y: np.ndarray, out_dtype: np.dtype,
    ndim: int, n_threads: int | None, return_result: bool,
) -> np.ndarray | DecodeResult:
    """Decode with the selected backend, warn about pruned or capped problems, shape the output.

    The warnings are issued here, two frames below the user's call of
    :func:`tmsbl` / :func:`tsbl` (``stacklevel=3``).
    """
    threads = resolve_threads(n_threads)
    warn_scale(name, Y, why="its thresholds (prune_gamma, lam) are absolute, as in the original")
    max_iter = kw["max_iter"]
    batch = Y.ndim == 3
    if batch and Y.shape[0] == 0:  # a batch of zero problems
        return empty_result(A, Y, out_dtype, return_result)
    with single_threaded_blas(), np.errstate(all="ignore"):
        outs = _SOLVE(A, Y, kw, threads)
    if not all(np.all(np.isfinite(o.x)) for o in outs):
        raise FloatingPointError(overflow_message(name, Y))
    Ys = Y if batch else Y[None]
    zero = [i for i, (o, y) in enumerate(zip(outs, Ys)) if not np.any(o.x) and np.any(y)]
    if zero:
        n_zero = len(zero)
        warnings.warn(
            f"{name}: every row was pruned for {n_zero} of {len(outs)} problem(s) with "
            "nonzero Y, so the estimate is all zero (stop_reason 'exhausted').  The "
            "thresholds prune_gamma and lam are absolute, as in the original: for Y "
            "of small magnitude (max |Y| here: "
            f"{float(np.max(np.abs(Ys[zero]))):.3g}) rescale Y to unit scale, or lower them",
            RuntimeWarning,
            stacklevel=3,
        )
    n_cap = sum(o.stop == "max_iter" for o in outs)
    if n_cap:
        warnings.warn(
            f"{name}: {n_cap} of {len(outs)} problem(s) reached max_iter={max_iter} "
            "before the mean settled; the result may be inaccurate",
            RuntimeWarning,
            stacklevel=3,
        )
    X = np.stack([o.x for o in outs]) if batch else outs[0].x
    if ndim == 1:
        X = X[:, 0]
    X = X.astype(out_dtype, copy=False)
    if not return_result:
        return X
    return make_result(A, Y, X, outs, out_dtype, ndim)


def tmsbl(
    A: Any,
    Y: Any,
    *,
    noise: Literal["no", "small", "mild", "large"] | None = None,
    prune_gamma: float | None = None,
    lam: float | None = None,
    learn_lambda: bool | None = None,
    enhance_lambda: bool | None = None,
    matrix_reg: float | np.ndarray | None = None,
    fix_b: np.ndarray | None = None,
    max_iter: int = 2000,
    rtol: float = 1e-8,
    n_threads: int | None = None,
    return_result: bool = False,
    tol: float | None = None,
) -> np.ndarray | DecodeResult:
    """T-MSBL: fast sparse Bayesian learning for row-sparse, temporally correlated S.

    Parameters
    ----------
    A : array_like, shape (M, N)
        Sensing matrix (no all-zero column), real or complex.
    Y : array_like, shape (M, L), (B, M, L) or (M,)
        Measurements; a 3-D array is a batch of problems sharing ``A``.  Real or
        complex (e.g. array snapshots, docs/complex.md).
    noise : {None, 'no', 'small', 'mild', 'large'}, default None
        Parameter preset of ``TMSBL.m`` (see :data:`TMSBL_PRESETS`):

        ======== ============ ======= ============ ============== ==========
        noise    prune_gamma  lam     learn_lambda enhance_lambda matrix_reg
        ======== ============ ======= ============ ============== ==========
        None     1e-3 [*]     1e-3    True         True           2 I
        'no'     1e-4 [*]     1e-15   False        False          0
        'small'  1e-3 [*]     1e-3    True         False          0
        'mild'   1e-3 [*]     1e-3    True         True           2 I
        'large'  1e-2         1e-2    True         True           4 I
        ======== ============ ======= ============ ============== ==========

        [*] multiplied by 10 when M >= 500 or N >= 1000.  The authors suggest
        'no' for noiseless data, 'small' for SNR > 22 dB, 'mild' for 6-22 dB
        and 'large' for SNR <= 6 dB.  Unlike the original (where the preset
        overrides them) any parameter given explicitly below wins over the preset.
    prune_gamma : float, optional
        Rows whose gamma_i falls below this threshold are removed.
    lam : float, optional
        Initial value of the noise/regularization parameter lambda (its final
        value when ``learn_lambda`` is False).
    learn_lambda : bool, optional
        Re-estimate lambda every iteration.
    enhance_lambda : bool, optional
        Use the authors' robust lambda rule (diagonal of ``Phi Gamma Phi'``)
        instead of the paper's trace rule.
    matrix_reg : float or array_like (L, L), optional
        Added to the estimate of B before normalization (a float c means c I).
    fix_b : array_like (L, L), optional
        Use this B instead of learning it.  B is fixed to I when L >= 10 (as in
        the original); B is also reset to I while more than M rows are kept.
    max_iter : int, default 2000
        Iteration cap; reaching it issues a ``RuntimeWarning``.
    rtol : float, default 1e-8
        Convergence test: stop when the largest absolute change of the mean is
        below ``rtol`` (an absolute threshold, as in the original; ``rtol=0``
        disables the test and the iterations run to ``max_iter``).  Stop
        reason ``"rtol"``.
    n_threads : int, optional
        Threads for a batch (default: :func:`cscore.get_num_threads`); results
        do not depend on it.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` with ``extra`` holding ``gamma``
        (N,), ``B`` (L, L) and ``lambda`` (per problem) instead of the array.
    tol : float, optional
        Deprecated name of ``rtol``.

    Returns
    -------
    numpy.ndarray or DecodeResult
        ``S`` of shape (N, L) (or (B, N, L), or (N,) for 1-D ``Y``); float32
        when both inputs are float32 (the iteration itself always runs in
        float64: the noiseless presets' lambda of 1e-15 / 1e-10 is below
        float32 resolution).  Complex input gives complex64 when every input
        is complex64 or float32, else complex128 (computed in complex128).

    Notes
    -----
    Noiseless data: use ``noise="no"``.  The default preset is tuned for noisy
    data; on noiseless data it typically runs to ``max_iter`` (with a
    ``RuntimeWarning``) and leaves a relative error ~1e-5, exactly as the
    original ``TMSBL.m`` does (checked with GNU Octave).

    Complex data: the Hermitian form of the updates with a Hermitian ``B``
    (module docstring, "Complex data").

    Scale.  As in the original, the iteration starts from ``gamma = 1`` and
    ``prune_gamma`` and ``lam`` are absolute, so the result depends on the scale
    of ``Y`` (the method is meant for nonzero rows of ``S`` of order one).  For
    small ``Y`` every row can be pruned: a nonzero ``Y`` then gives an all-zero
    estimate with ``stop_reason='exhausted'`` and a ``RuntimeWarning`` (e.g. a
    noiseless 16 x 32 problem scaled by 1e-3).  For huge ``Y`` (~1e80) the
    iteration overflows and a ``FloatingPointError`` is raised.  In both cases
    divide ``Y`` by a constant (e.g. ``np.abs(Y).max()``), decode and multiply the
    result back, or set ``prune_gamma`` and ``lam`` for the data's scale.

    Z. Zhang and B. D. Rao, IEEE J-STSP 5(5), 2011; algorithm and numerics in
    the module docstring of :mod:`cscore.decoders.sbl`.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((20, 40)); S = np.zeros((40, 3)); S[[3, 17]] = 1.0
    >>> S_hat = cscore.tmsbl(A, A @ S, noise="no")
    >>> sorted(np.argsort(-np.abs(S_hat).sum(1))[:2].tolist())
    [3, 17]
    """
    A64, Y64, out_dtype, ndim = check_inputs(A, Y, allow_complex=True)
    M, N = A64.shape
    L = Y64.shape[-1]
    p = preset(TMSBL_PRESETS, noise, "noise")
    key = noise.lower() if isinstance(noise, str) else None
    if key != "large" and (M >= 500 or N >= 1000):
        p["prune_gamma"] = 10 * float(p["prune_gamma"])
    prune, lam0, learn, enh = resolve_params(
        p, prune_gamma, lam, learn_lambda, enhance_lambda, check_nonnegative_float)
    R, B_fixed = tmsbl_matrices(p, matrix_reg, fix_b, L)
    max_iter = check_positive_int("max_iter", max_iter, upper=MAX_ITER_LIMIT)
    rtol = check_nonnegative_float("rtol", resolve_rtol("tmsbl", rtol, tol))

    kw = dict(exact=False, prune=prune, lam=lam0, learn=learn, enh=enh, R=R, B_fixed=B_fixed,
              max_iter=max_iter, rtol=rtol)
    return _run("tmsbl", kw, A64, Y64, out_dtype, ndim, n_threads, return_result)


def tsbl(
    A: Any,
    Y: Any,
    *,
    snr: Literal["inf", "high", "low"] | None = None,
    prune_gamma: float | None = None,
    lam: float | None = None,
    learn_lambda: bool | None = None,
    enhance_lambda: bool | None = None,
    max_iter: int = 2000,
    rtol: float = 1e-8,
    n_threads: int | None = None,
    return_result: bool = False,
    tol: float | None = None,
) -> np.ndarray | DecodeResult:
    """T-SBL: exact sparse Bayesian learning for row-sparse, temporally correlated S.

    The block (Kronecker) model of Zhang & Rao solved exactly, with the
    ``(M L) x (M L)`` inversion decoupled into L problems of size M through the
    eigendecomposition of B (see the module docstring).

    Parameters
    ----------
    A : array_like, shape (M, N)
        Sensing matrix (no all-zero column).
    Y : array_like, shape (M, L), (B, M, L) or (M,)
        Measurements; a 3-D array is a batch of problems sharing ``A``.
    snr : {None, 'inf', 'high', 'low'}, default None
        Parameter preset of ``TSBL.m`` (its ``'SNR'`` argument, see
        :data:`TSBL_PRESETS`):

        ======= ============ ======= ============ ==============
        snr     prune_gamma  lam     learn_lambda enhance_lambda
        ======= ============ ======= ============ ==============
        None    1e-2         1e-3    True         True
        'inf'   1e-4         1e-10   False        False
        'high'  1e-3         1e-3    True         False
        'low'   1e-2         1e-2    True         True
        ======= ============ ======= ============ ==============

        'inf' is for noiseless data, 'high' for SNR > 13 dB, 'low' (and the
        default) for SNR <= 13 dB.  Explicit parameters below win over the preset.
    prune_gamma : float, optional
        Rows whose gamma_i falls below this threshold are removed.
    lam : float, optional
        Initial (or, without learning, fixed) noise variance lambda, ``> 0``
        (use a tiny value such as 1e-300 for the noiseless limit).
    learn_lambda : bool, optional
        Re-estimate lambda every iteration.
    enhance_lambda : bool, optional
        Use the authors' robust lambda rule instead of the paper's trace rule.
    max_iter : int, default 2000
        Iteration cap; reaching it issues a ``RuntimeWarning``.
    rtol : float, default 1e-8
        Convergence test: stop when the largest absolute change of the mean is
        below ``rtol`` (an absolute threshold, as in the original; ``rtol=0``
        disables the test and the iterations run to ``max_iter``).  Stop
        reason ``"rtol"``.
    n_threads : int, optional
        Threads for a batch; results do not depend on it.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` with ``extra`` holding ``gamma``,
        ``B`` and ``lambda`` instead of the array.
    tol : float, optional
        Deprecated name of ``rtol``.

    Returns
    -------
    numpy.ndarray or DecodeResult
        ``S`` of shape (N, L) (or (B, N, L), or (N,) for 1-D ``Y``); float32
        when both inputs are float32 (the iteration itself always runs in
        float64: the noiseless presets' lambda of 1e-15 / 1e-10 is below
        float32 resolution).

    Notes
    -----
    Complex ``A`` or ``Y`` is refused with a ``TypeError`` (use :func:`tmsbl`).

    Noiseless data: use ``snr="inf"``.  The default preset is tuned for noisy
    data; on noiseless data it typically runs to ``max_iter`` (with a
    ``RuntimeWarning``) and leaves a relative error ~1e-5, exactly as the
    original ``TSBL.m`` does (checked with GNU Octave).

    Scale.  As in the original, the iteration starts from ``gamma = 1`` and
    ``prune_gamma`` and ``lam`` are absolute, so the result depends on the scale
    of ``Y`` (the method is meant for nonzero rows of ``S`` of order one).  For
    small ``Y`` every row can be pruned: a nonzero ``Y`` then gives an all-zero
    estimate with ``stop_reason='exhausted'`` and a ``RuntimeWarning`` (e.g. a
    noiseless 16 x 32 problem scaled by 1e-3).  For huge ``Y`` (~1e80) the
    iteration overflows and a ``FloatingPointError`` is raised.  In both cases
    divide ``Y`` by a constant (e.g. ``np.abs(Y).max()``), decode and multiply the
    result back, or set ``prune_gamma`` and ``lam`` for the data's scale.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((20, 40)); S = np.zeros((40, 3)); S[[3, 17]] = 1.0
    >>> S_hat = cscore.tsbl(A, A @ S, snr="inf")
    >>> sorted(np.argsort(-np.abs(S_hat).sum(1))[:2].tolist())
    [3, 17]
    """
    if is_complex(A) or is_complex(Y):
        raise TypeError(
            "tsbl: complex A or Y is not supported (T-SBL is real only); use cscore.tmsbl, "
            "which takes complex data"
        )
    A64, Y64, out_dtype, ndim = check_inputs(A, Y)
    p = preset(TSBL_PRESETS, snr, "snr")
    # T-SBL's whitened update divides by lam: lam = 0 is refused (a tiny lam such
    # as 1e-300 is the noiseless limit).
    prune, lam0, learn, enh = resolve_params(
        p, prune_gamma, lam, learn_lambda, enhance_lambda, check_positive_float)
    max_iter = check_positive_int("max_iter", max_iter, upper=MAX_ITER_LIMIT)
    rtol = check_nonnegative_float("rtol", resolve_rtol("tsbl", rtol, tol))

    kw = dict(exact=True, prune=prune, lam=lam0, learn=learn, enh=enh, max_iter=max_iter,
              rtol=rtol)
    return _run("tsbl", kw, A64, Y64, out_dtype, ndim, n_threads, return_result)
