"""Greedy decoders: orthogonal matching pursuit (OMP) and simultaneous OMP (SOMP).

Both run in the compiled core (``cpp/include/cscore/greedy.hpp``) with the
Gram-based "Batch-OMP" formulation of Rubinstein, Zibulevsky & Elad (2008): the
Gram matrix of the normalized dictionary is formed once per call and shared by
every problem of a batch, each problem needs one small product ``A^T Y``, and the
least-squares fit on the growing support is updated through a progressive
Cholesky factorization (O(N n) work to add the n-th atom, no per-step solve).
Batches are split across threads with the GIL released; results never depend on
the thread count.  On x86-64 CPUs with AVX2/FMA the kernel runs a build of itself
vectorized for them (chosen at run time); setting the environment variable
``CSCORE_ISA=generic`` before the first call selects the portable build instead
(results then differ from the AVX2 build by rounding only).

Complex data.  ``A`` and ``Y`` may be complex64/complex128 (radar, sonar, MRI,
antenna arrays; the direction-of-arrival guide docs/complex.md): the same
templated kernel runs on complex scalars (its complex-only parts, the Hermitian
Gram entries and Cholesky factor, in ``cpp/include/cscore/greedy_complex.hpp``)
with conjugate transposes -- correlations ``A^H r``, Gram matrix ``A^H A``, least
squares through the Hermitian Cholesky factor -- selects the atom maximizing
``sum_c |a_j^H r_c|^2 / ||a_j||^2`` and returns complex coefficients; residual
norms stay real.  dtype: complex64 when every input is complex64 or float32,
else complex128 (a real input is promoted, see :mod:`cscore.decoders._complex`).
Same validation, threading (GIL released, results independent of the thread
count) and stopping rules as the real path.  ``tol="auto"`` needs real data.

Problems are decoded in chunks of 32 (measurements loaded and solutions zeroed in
memory order, ``A^T y`` four vectors at a time); for OMP one pass over the atoms
per step updates the factorization, the correlations and the running maximum.
No result depends on the chunking.  ``tol="auto"`` runs in the same kernel: the
greedy path, the residual ratio test on it and the cut
(:mod:`cscore.decoders.stopping`), in one decode.

Memory and cost follow the atoms found.  The Gram matrix takes ``N**2`` floats
per call (166 kB for N = 144).  It is formed only when the batch is large enough
to repay it (``B * n_nonzero >= N / 2``) and has at most 2**25 entries; it is
formed four columns per pass over the atoms.  With ``tol`` alone the atom count
is not known in advance: a batch decodes its first problem alone and, when that
problem's atom count would repay it, stores ``G`` for the others; otherwise it
keeps each Gram column the first time an atom is selected (cost and memory grow
with the distinct atoms selected).  A single vector forms its columns on demand,
with its first correlations taken from the atoms themselves (no second copy of
``A``); once ``A`` has 2 MiB or more, the pass that forms a missing column also
forms those of the three best candidates not yet selected, which the next steps
mostly need (about one pass over ``A`` per four atoms).  The per-problem
work arrays (the factorization, ``A^T A_I L^{-T}``) start with room for 64 atoms
and grow as atoms are added, so a ``tol``-stopped decode holds memory for the
atoms it found, not for ``min(M, N)``.  Results are bit-identical whichever way
is taken.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._config import resolve_threads
from .._validation import renamed_measurements
from ..result import STOP_REASONS, DecodeResult, batch_result
from ._greedy_common import OMP, SOMP, GreedyLayout
from ._greedy_dense import run_dense
from ._operator_products import is_operator
from .greedy_operator import run_operator

__all__ = ["omp", "somp"]


def _decode(
    layout: GreedyLayout,
    A: Any,
    Y: Any,
    n_nonzero: Any,
    tol: Any,
    n_threads: Any,
    column_norms: Any,
    device: Any,
) -> dict[str, Any]:
    """The raw outputs of OMP or SOMP: the operator path or the dense one."""
    if not is_operator(A):
        return run_dense(layout, A, Y, n_nonzero, tol, n_threads, device)
    if device is not None:
        raise TypeError("device= needs a dense A (an array), not an operator")
    resolve_threads(n_threads)
    return run_operator(layout, A, Y, n_nonzero, tol, column_norms)


def _support_mask(atoms: np.ndarray, N: int) -> np.ndarray:
    """(P, N) boolean mask of the selected atoms."""
    mask = np.zeros((atoms.shape[0], N), dtype=bool)
    rows, cols = np.nonzero(atoms >= 0)
    mask[rows, atoms[rows, cols]] = True
    return mask


def _stop_names(stop: np.ndarray) -> np.ndarray:
    """Stop reasons as names (the kernel's codes are turned into names only here)."""
    if stop.dtype.kind in "iu":
        return np.asarray(STOP_REASONS, dtype=object)[stop].astype(str)
    return stop


def _result(
    out: dict[str, Any], support: np.ndarray, residual: np.ndarray, extra: dict[str, Any]
) -> DecodeResult:
    """The :class:`~cscore.DecodeResult` of :func:`_decode`'s outputs.

    ``residual`` and the values of ``extra`` have a leading problem axis, dropped
    for a single problem; ``support`` is shaped as returned.
    """
    return batch_result(
        out["X"], support, residual, out["n_iter"], _stop_names(out["stop"]), extra,
        single=out["single"],
    )


def omp(
    A: Any,
    Y: Any = None,
    *,
    n_nonzero: int | None = None,
    tol: float | str | None = None,
    n_threads: int | None = None,
    return_result: bool = False,
    column_norms: Any = None,
    device: Any = None,
    y: Any = None,
) -> np.ndarray | DecodeResult:
    """Orthogonal matching pursuit for one vector or a batch of independent vectors.

    Solves ``min ||x||_0`` subject to ``||y - A x||_2 <= tol`` (or ``||x||_0 <= n_nonzero``)
    greedily: at each step the column most correlated with the residual joins the
    support and ``x`` is re-fitted by least squares on the support.

    Parameters
    ----------
    A : array_like, scipy sparse matrix or LinearOperator, shape (M, N)
        Sensing matrix (dictionary), real or complex.  Columns need not have unit
        norm: they are normalized internally for the selection, and the
        coefficients returned are for ``A`` as given.  Must be finite, with no
        all-zero column.  A
        :class:`scipy.sparse.linalg.LinearOperator`, any object with ``shape``,
        ``matvec`` and ``rmatvec`` (e.g. a PyLops operator) or a scipy sparse
        matrix is used through its products only, never formed
        (:mod:`cscore.decoders.greedy_operator`; an operator's columns are assumed
        to have equal norms unless ``column_norms`` is given).
    Y : array_like, shape (M,) or (M, B)
        One measurement vector ``y``, or B independent vectors as columns; real
        or complex.
    n_nonzero : int, optional
        Number of atoms to select, ``1 <= n_nonzero <= min(M, N)``.
    tol : float, optional
        Stop once the residual norm ``||y - A x||_2 <= tol`` (``tol >= 0``).  With
        both ``n_nonzero`` and ``tol``, whichever is reached first stops.  With
        neither, ``n_nonzero = max(1, int(0.1 * N))`` capped at ``min(M, N)`` (the
        scikit-learn default).  With ``tol`` alone, at most ``min(M, N)`` atoms.
        ``tol="auto"`` estimates each column's noise level from its own greedy
        path (residual ratio thresholding, :mod:`cscore.decoders.stopping`) and stops once
        the residual norm is ``<= sigma_hat * sqrt(M)``; ``extra`` then holds
        ``sigma_hat`` (real data only).
    n_threads : int, optional
        Threads used across the batch; default :func:`cscore.get_num_threads`.
        Results are bit-identical for every thread count.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` instead of the plain array.
    column_norms : array_like, shape (N,), optional
        Column norms of an operator ``A`` (used for the selection only); ignored
        for dense arrays and not needed for sparse matrices, whose norms are
        computed exactly.  ``n_threads`` is ignored for operators.
    device : str, optional
        None (default): the compiled kernel.  A torch device (``"cpu"``,
        ``"cuda"``, ``"cuda:1"``): the same Batch-OMP in PyTorch on that device
        (:mod:`cscore.decoders.torch_backend.greedy`; needs torch, dense real
        ``A``, ``n_nonzero`` or a numeric ``tol``; ``docs/gpu.md``).
    y : array_like, optional
        Deprecated name of ``Y``.

    Returns
    -------
    x : numpy.ndarray, shape (N,) or (N, B)
        The sparse solution(s), float32 when every input is float32, else
        float64; for complex input complex64 when every input is complex64 or
        float32, else complex128 (residual norms are of the real type).  With
        ``return_result=True`` a :class:`cscore.DecodeResult` whose
        ``residual_norm``, ``n_iter`` and ``stop_reason`` have shape () or (B,),
        whose ``support`` is the mask of selected atoms (shape of ``x``), and whose
        ``extra["atoms"]`` lists the atoms in selection order (-1 padded), shape
        (n_nonzero,) or (B, n_nonzero).

    Raises
    ------
    ValueError
        Wrong shapes, NaN/inf, empty arrays, an all-zero column in ``A``,
        ``n_nonzero`` outside ``[1, min(M, N)]``, negative ``tol``.
    TypeError
        Non-numeric or boolean arrays, non-integer ``n_nonzero``, ``tol="auto"``
        with complex data.

    Warns
    -----
    RuntimeWarning
        Once per call, when some problem stopped early (``stop_reason ==
        'dependent'``) with a residual that is not rounding noise: the best
        remaining atom was numerically dependent on the chosen ones, or the
        residual is orthogonal to every column (rank-deficient ``A``).  Like
        scikit-learn, the solution found so far is returned.

    Notes
    -----
    Integer and boolean arrays are converted to float64; non-contiguous arrays are
    copied.  Stop reasons: ``'n_nonzero'``, ``'tol'``, ``'exhausted'`` (``tol``
    alone and all ``min(M, N)`` atoms used) and ``'dependent'``.  A zero ``y`` gives
    a zero ``x`` after no iteration.

    Complex ``A`` or ``y``: correlations are ``a_j^H r`` and the least squares
    use ``A^H A`` (module docstring); a real operand is promoted to complex.

    The implementation is Batch-OMP [1]_ in progressive-Cholesky form; the residual
    norm used for ``tol`` is tracked by the energy update ``||r||^2 = ||y||^2 -
    ||z||^2`` and recomputed explicitly whenever rounding could change the decision.

    References
    ----------
    .. [1] R. Rubinstein, M. Zibulevsky, M. Elad, "Efficient implementation of the
       K-SVD algorithm using batch orthogonal matching pursuit", Technion CS
       technical report CS-2008-08, 2008.
    .. [2] Y. C. Pati, R. Rezaiifar, P. S. Krishnaprasad, "Orthogonal matching
       pursuit", Asilomar 1993.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((20, 40))
    >>> x = np.zeros(40); x[[3, 17]] = [1.5, -2.0]
    >>> x_hat = cscore.omp(A, A @ x, n_nonzero=2)
    >>> bool(np.allclose(x_hat, x))
    True
    """
    y = renamed_measurements("omp", Y, y)
    out = _decode(OMP, A, y, n_nonzero, tol, n_threads, column_norms, device)
    X = out["X"]
    if not return_result:
        return X
    mask = _support_mask(out["atoms"], X.shape[0])
    support = mask[0] if out["single"] else np.ascontiguousarray(mask.T)
    extra = {"atoms": out["atoms"], **out.get("extra", {})}
    return _result(out, support, out["residual"][:, 0], extra)


def somp(
    A: Any,
    Y: Any,
    *,
    n_nonzero: int | None = None,
    tol: float | str | None = None,
    n_threads: int | None = None,
    return_result: bool = False,
    column_norms: Any = None,
    device: Any = None,
) -> np.ndarray | DecodeResult:
    """Simultaneous OMP: one support shared by the L channels of an MMV problem.

    At each step the atom maximizing ``||a_j^H R||_2`` over channels (with the
    columns of ``A`` normalized for the selection) joins the common support, and
    every channel is re-fitted by least squares on it.  Real or complex data
    (e.g. the snapshots of an antenna array, docs/complex.md).

    Parameters
    ----------
    A : array_like, scipy sparse matrix or LinearOperator, shape (M, N)
        Sensing matrix, real or complex; columns need not have unit norm (see
        :func:`omp`, also for operators).
    Y : array_like, shape (M, L) or (B, M, L)
        One multiple-measurement-vector problem, or a batch of B of them; real
        or complex.
    n_nonzero : int, optional
        Number of atoms (rows of the solution) to select, ``1 <= n_nonzero <=
        min(M, N)``.
    tol : float, optional
        Stop once the SUM over channels of the channel residual l2 norms,
        ``sum_c ||y_c - A s_c||_2``, is ``<= tol`` (the rule of the LSTM-CS paper).
        Defaults as in :func:`omp`.  ``tol="auto"`` estimates each problem's
        noise level from the measurements (:mod:`cscore.decoders.stopping`) and uses the
        paper's threshold ``L * sigma_hat * sqrt(M L)``.
    n_threads : int, optional
        Threads used across the batch; results do not depend on it.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` instead of the plain array.
    column_norms : array_like, shape (N,), optional
        Column norms of an operator ``A`` (used for the selection only); ignored
        for dense arrays and not needed for sparse matrices, whose norms are
        computed exactly.  ``n_threads`` is ignored for operators.
    device : str, optional
        None (default): the compiled kernel.  A torch device (``"cpu"``,
        ``"cuda"``, ``"cuda:1"``): the same Batch-OMP in PyTorch on that device
        (:mod:`cscore.decoders.torch_backend.greedy`; needs torch, dense real
        ``A``, ``n_nonzero`` or a numeric ``tol``; ``docs/gpu.md``).

    Returns
    -------
    S : numpy.ndarray, shape (N, L) or (B, N, L)
        Row-sparse solution(s), of the dtype rule of :func:`omp`.  With
        ``return_result=True`` a
        :class:`cscore.DecodeResult` with ``residual_norm`` per channel, shape (L,)
        or (B, L); ``n_iter`` and ``stop_reason`` of shape () or (B,); ``support``
        the selected rows broadcast to the shape of ``S``; ``extra["atoms"]`` the
        atoms in selection order (-1 padded) and ``extra["residual_total"]`` the
        summed channel residual norms.

    Raises
    ------
    ValueError, TypeError
        As :func:`omp`; ``Y`` must be 2-D or 3-D.

    Warns
    -----
    RuntimeWarning
        As :func:`omp`.

    Notes
    -----
    SOMP is due to Tropp, Gilbert & Strauss, "Algorithms for simultaneous sparse
    approximation. Part I: Greedy pursuit", Signal Processing 86 (2006).  The
    implementation shares the Gram-based kernel of :func:`omp`; with ``L = 1`` it is
    exactly OMP.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((20, 40))
    >>> S = np.zeros((40, 3)); S[[5, 9]] = rng.standard_normal((2, 3)) + 2
    >>> S_hat = cscore.somp(A, A @ S, n_nonzero=2)
    >>> bool(np.allclose(S_hat, S))
    True
    """
    out = _decode(SOMP, A, Y, n_nonzero, tol, n_threads, column_norms, device)
    X = out["X"]
    if not return_result:
        return X
    N, L = X.shape[-2], X.shape[-1]
    mask = np.repeat(_support_mask(out["atoms"], N)[:, :, None], L, axis=2)
    res = out["residual"]
    extra = {"atoms": out["atoms"], "residual_total": res.sum(axis=1), **out.get("extra", {})}
    return _result(out, mask[0] if out["single"] else mask, res, extra)
