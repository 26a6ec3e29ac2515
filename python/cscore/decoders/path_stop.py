"""``tol="auto"`` for greedy decoders whose compiled path ends by itself (LSTM-CS).

The method is :mod:`cscore.decoders.stopping`'s (residual ratio thresholding on
the decoder's own greedy path, the noise estimate, the paper's rule on it).  A
learned decoder's steps are costly, and the test needs the path past the
signal, so LSTM-CS and BLSTM-CS do not run a fixed path: their compiled kernel
(``lstm::PathStop`` in ``cpp/include/cscore/lstm.hpp``) ends each problem's path
once the test has taken a step for signal (a residual ratio below
``Gamma(k)``) and :data:`PATIENCE` steps in a row showed nothing signal-like (no
ratio below the same union-bound threshold at the much looser level
:data:`RESET_ALPHA`).  A signal step after that point is rare (the steps the
test takes for signal come in bursts), so the cut is almost always the one the
full path would give.  The kernel reports the channel residual norms of its own
least squares after every step, so the cut needs no refit of the path and no
second decode.  Each problem's path depends on its own numbers only (batch and
thread independent).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from scipy import special

from .._validation import check_positive_int
from ..result import DecodeResult
from ._auto_cut import cut, mmv_result
from ._rrt import ALPHA, REDO_FRACTION, path_length, rrt_thresholds

__all__ = ["GREEDY_PATIENCE", "GREEDY_RESET_Q", "PATIENCE", "RESET_ALPHA",
           "auto_decode_path_stop", "greedy_path_end", "path_stop_rule"]

#: LSTM-CS's path ends by itself (``lstm::PathStop``), per problem, once the
#: residual-ratio test has taken a step for signal and PATIENCE steps in a row
#: looked like noise: none below the test's threshold at the looser level
#: RESET_ALPHA (rather than ALPHA).  Chosen on MNIST validation digits (images
#: 5400-5999; benchmarks/results/lstm_auto.md): NMSE within 1.2x of the oracle
#: rule's at about 1.3x its steps.
PATIENCE = 3
RESET_ALPHA = 1e7

#: OMP and SOMP end their compiled ``tol="auto"`` path the same way
#: (``cpp/include/cscore/path_end.hpp``, as ``greedy::Options::auto_end``).  A step
#: is signal-like when its residual ratio is below the GREEDY_RESET_Q quantile of
#: a noise-only step's law, ``Beta((M - k) L / 2, L / 2)`` (no union bound: the
#: joint steps that add one channel's atom are weak).  The check step applies to
#: single vectors (L = 1) only: in MMV the joint support's last atoms serve single
#: channels and the strict test misses them, so a path ended at ceil(M/2) would cut
#: signal.  Chosen on MNIST validation digits (benchmarks/results/omp_auto.md).
GREEDY_PATIENCE = 3
GREEDY_RESET_Q = 0.01


def path_stop_rule(
    M: int, N: int, L: int, K: int, alpha: float = ALPHA, n_nonzero: int | None = None
) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """What a compiled greedy path needs to end by itself under ``tol="auto"``.

    Parameters
    ----------
    M, N, L : int
        Measurements, atoms and channels (one atom per channel and step).
    K : int
        Longest path.
    alpha : float
        False-alarm level of the residual-ratio test.
    n_nonzero : int, optional
        The caller's cap on atoms (the check step is at least this).

    Returns
    -------
    gamma2, reset2 : ndarray (K,)
        The test's squared thresholds, and the looser ones (level
        :data:`RESET_ALPHA`) of a signal-like step.
    patience : int
        :data:`PATIENCE`.
    check, check_last : int
        At step ``check = ceil(M / 2)`` a path ends when the last step the test
        took for signal is at most ``check_last`` (its first two thirds): the
        bound of the two-stage rule of :mod:`cscore.decoders.stopping`, so that
        no path runs longer than that rule's (0, 0 when the path is that short).
    """
    gamma2 = rrt_thresholds(M, N, L, K, alpha, joint=False) ** 2
    reset2 = rrt_thresholds(M, N, L, K, RESET_ALPHA, joint=False) ** 2
    check, check_last = _check_steps(M, K, n_nonzero)
    return (np.ascontiguousarray(gamma2), np.ascontiguousarray(reset2), PATIENCE, check,
            check_last)


def _check_steps(M: int, K: int, n_nonzero: int | None) -> tuple[int, int]:
    """The check step ``ceil(M / 2)`` (at least ``n_nonzero``) and its two-thirds mark."""
    check = min(K, max(1, (M + 1) // 2))
    if n_nonzero is not None:
        check = max(check, min(int(n_nonzero), K))
    check_last = check - max(1, check // REDO_FRACTION)
    return (0, 0) if check >= K else (check, check_last)


def greedy_path_end(
    M: int, N: int, L: int, K: int, n_nonzero: int | None = None
) -> tuple[np.ndarray, int, int, int]:
    """Where the compiled (S)OMP ``tol="auto"`` path may end before ``K`` steps.

    The rule of :func:`path_stop_rule`: the path ends once the test took a step
    for signal and :data:`GREEDY_PATIENCE` steps in a row were not signal-like
    (below the :data:`GREEDY_RESET_Q` quantile of a noise step's ratio law), and,
    for single vectors, at the check step.

    Parameters
    ----------
    M, N, L : int
        Measurements, atoms and channels.
    K : int
        Longest path.
    n_nonzero : int, optional
        The caller's cap on atoms (the check step is at least this).

    Returns
    -------
    reset2 : ndarray (K,)
        Squared thresholds of a signal-like step (level :data:`GREEDY_RESET_ALPHA`).
    patience, check, check_last : int
        As in :func:`path_stop_rule`.
    """
    k = np.arange(1, K + 1, dtype=np.float64)
    a = np.maximum((M - k) * L / 2.0, 1e-9)
    reset2 = special.betaincinv(a, L / 2.0, GREEDY_RESET_Q)
    check, check_last = _check_steps(M, K, n_nonzero) if L == 1 else (0, 0)
    return np.ascontiguousarray(reset2), GREEDY_PATIENCE, check, check_last


def auto_decode_path_stop(
    run_path: Callable[[np.ndarray, int, tuple[np.ndarray, np.ndarray, int, int, int]], Any],
    A: Any,
    Y: np.ndarray,
    *,
    n_nonzero: int | None = None,
    return_result: bool = False,
    alpha: float = ALPHA,
) -> np.ndarray | DecodeResult:
    """``tol="auto"`` for a decoder whose compiled path ends by itself (LSTM-CS).

    One decode: every problem's path (one support per channel) runs until
    :func:`path_stop_rule` ends it, at most ``min(M - 1, N)`` steps, and reports
    its channel residual norms after every step; the method of the module
    docstring then cuts it (no refit of the path, no second decode).

    Parameters
    ----------
    run_path : callable
        ``run_path(Y3, K, rule)`` decodes ``Y3`` (B, M, L) float64 for at most
        ``K`` steps with the path-end rule ``rule`` (:func:`path_stop_rule`'s tuple) and
        returns ``(atoms, norms)``: the atoms (B, L, K), -1 padded, and the
        channel residual norms after every step (B, L, K + 1), the last repeated
        past the path's end.
    A : array_like (M, N)
        The sensing matrix the decoder uses.
    Y : ndarray (M, L) or (B, M, L)
        Measurements, checked, in float32 or float64 (the output's dtype).
    n_nonzero : int, optional
        Also stop at this many steps.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` (``extra`` adds ``sigma_hat``,
        ``tol_auto`` and ``n_signal``, per problem).
    alpha : float, default 0.1
        False-alarm level of the residual-ratio test.

    Returns
    -------
    ndarray (N, L) or (B, N, L), or DecodeResult
        In ``Y``'s dtype.
    """
    A = np.asarray(A, dtype=np.float64)
    M, N = A.shape
    if n_nonzero is not None:
        n_nonzero = check_positive_int(
            "n_nonzero", n_nonzero, upper=min(M, N), upper_desc=f"min(M, N) for A of shape {(M, N)}"
        )
    single = Y.ndim == 2
    Y3 = np.ascontiguousarray(Y[None] if single else Y, dtype=np.float64)
    P, _, L = Y3.shape
    K = path_length(M, N)
    atoms, norms = run_path(Y3, K, path_stop_rule(M, N, L, K, alpha, n_nonzero))
    scale = norms[:, :, 0].max(axis=1) if P else np.zeros(0)
    scale = np.where(scale > 0, scale, 1.0)
    Ec = (norms / scale[:, None, None]) ** 2
    E = Ec.sum(axis=1)
    Yi = Y3.transpose(0, 2, 1).reshape(P * L, M, 1)
    st = cut(A, Yi, atoms.reshape(P * L, K), E, norms.sum(axis=1), scale, L, False, alpha,
              n_nonzero, Ec)  # fmt: skip
    return mmv_result(st, single, Y.dtype, False, return_result)
