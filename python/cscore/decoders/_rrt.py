"""The residual-ratio tests of ``tol="auto"`` (steps 2 and 2b of the method).

The path length, the residual-ratio thresholds ``Gamma(k)`` (:func:`rrt_thresholds`,
and :func:`rrt_tables` for the compiled kernels), the two tests that the
measurements hold any signal (:func:`signal_tables`) and, from a path's
residuals, the steps judged to add signal (:func:`signal_steps`).  The method
and its references are in :mod:`cscore.decoders.stopping`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

__all__ = [
    "ALPHA",
    "REDO_FRACTION",
    "SIGNAL_ALPHA",
    "path_length",
    "rrt_tables",
    "rrt_thresholds",
    "signal_steps",
    "signal_tables",
]

#: Default false-alarm level of the residual-ratio test.
ALPHA = 0.1

#: Level of the test that the measurements hold any signal (step 2b of the
#: method in cscore.decoders.stopping): a path with no step below the
#: residual-ratio threshold takes the fallback step only if one of two tests
#: rejects pure Gaussian noise, which they do for pure noise with probability at
#: most SIGNAL_ALPHA.  Chosen on MNIST validation digits
#: (benchmarks/results/omp_auto.md, section 4).
SIGNAL_ALPHA = 0.05

#: A learned decoder's first path (ceil(M / 2) steps) runs again to M - 1 steps
#: when its signal steps reach into the last 1 / REDO_FRACTION of it (with 2, half
#: of the path, LSTM-CS ran twice for k >= 18 of 72; 3 keeps its NMSE within 1.2x
#: of the oracle rule's on MNIST, benchmarks/results/omp_auto.md).
REDO_FRACTION = 3


def path_length(M: int, N: int) -> int:
    """Longest greedy path run to find where the signal ends: ``M - 1``, capped.

    Parameters
    ----------
    M, N : int
        Measurements and atoms.

    Returns
    -------
    int
        ``min(M - 1, N)``, at least 1.
    """
    return max(1, min(M - 1, N))


def rrt_thresholds(
    M: int, N: int, L: int, K: int, alpha: float = ALPHA, *, joint: bool = True
) -> np.ndarray:
    """The residual-ratio thresholds ``Gamma(k)``, k = 1..K (step 2 of the method).

    Parameters
    ----------
    M, N, L : int
        Measurements, atoms and channels.
    K : int
        Path length.
    alpha : float
        Probability that a noise-only step is taken for signal.
    joint : bool, default True
        One atom per step shared by the channels (union bound over ``N - k + 1``
        choices), or one atom per channel (``(N - k + 1)**L`` choices).

    Returns
    -------
    ndarray (K,)
        ``Gamma(k)`` in [0, 1) (0 where ``k >= M``).
    """
    k = np.arange(1, K + 1, dtype=np.float64)
    a = np.maximum((M - k) * L / 2.0, 0.0)
    q = alpha / (K * np.maximum(N - k + 1, 1.0) ** (1 if joint else L))
    out = np.zeros(K)
    ok = a > 0
    out[ok] = np.sqrt(special.betaincinv(a[ok], L / 2.0, q[ok]))
    return out


def rrt_tables(
    M: int, N: int, L: int, K: int, alpha: float = ALPHA, *, joint: bool = True
) -> dict[str, Any]:
    """What the compiled (S)OMP kernel needs to run ``tol="auto"`` by itself.

    Parameters
    ----------
    M, N, L : int
        Measurements, atoms and channels.
    K : int
        Path length (the union bound's number of steps).
    alpha : float
        Probability that a noise-only step is taken for signal.
    joint : bool, default True
        One atom per step shared by the channels (see :func:`rrt_thresholds`).

    Returns
    -------
    dict
        Per step k = 1..K, float64 arrays of shape (K,): ``gamma2`` the squared
        thresholds ``Gamma(k)**2``, ``a`` the first parameter ``(M - k) L / 2``
        of the ratio's Beta law, ``lnbeta`` ``ln B(a, L / 2)``, ``logu`` the log
        of the union bound's factor ``K (N - k + 1)`` (power L when not joint);
        and ``b = L / 2``.  The fallback p-value of step k is
        ``I_{RR(k)^2}(a, b) * exp(logu)``.
    """
    k = np.arange(1, K + 1, dtype=np.float64)
    a = np.maximum((M - k) * L / 2.0, 1e-9)
    power = 1 if joint else L
    return {
        "gamma2": np.ascontiguousarray(rrt_thresholds(M, N, L, K, alpha, joint=joint) ** 2),
        "a": a,
        "lnbeta": special.betaln(a, L / 2.0),
        "logu": np.log(float(K)) + power * np.log(np.maximum(N - k + 1, 1.0)),
        "b": L / 2.0,
    }


def signal_tables(
    M: int, N: int, L: int, K: int, level: float = SIGNAL_ALPHA, *, joint: bool = True
) -> np.ndarray:
    """The two tests that the measurements hold any signal (step 2b of the method).

    Parameters
    ----------
    M, N, L : int
        Measurements, atoms and channels.
    K : int
        Path length (the Bonferroni factor over the steps).
    level : float
        Probability that pure Gaussian noise passes either test.
    joint : bool, default True
        One atom per step shared by the channels (``C(N, k)`` supports of k
        atoms), or one atom per channel (``C(N, k)**L``).

    Returns
    -------
    ndarray (6, K) float64
        Per step k = 1..K: ``b = k L / 2``, ``ln B((M - k) L / 2, b)`` and
        ``ln(2 K / level) + ln C(N, k)`` (times L when not joint) of the block
        test on ``E_k / E_0``; ``a1 = (M - k) / 2``, ``ln B(a1, 1 / 2)`` and
        ``ln(2 K L (N - k + 1) / level)`` of one channel's ratio test.  A test
        rejects pure noise at step k when ``ln I_x(a, b) + row <= 0``
        (``I`` the regularized incomplete beta function, ``x`` its ratio).
    """
    k = np.arange(1, K + 1, dtype=np.float64)
    a = np.maximum((M - k) * L / 2.0, 1e-9)
    b = k * L / 2.0
    log_c = (special.gammaln(N + 1.0) - special.gammaln(k + 1.0)
             - special.gammaln(np.maximum(N - k, 0.0) + 1.0))  # fmt: skip
    a1 = np.maximum((M - k) / 2.0, 1e-9)
    base = np.log(2.0 * K / level)
    return np.ascontiguousarray(np.stack([
        b,
        special.betaln(a, b),
        base + (1 if joint else L) * log_c,
        a1,
        special.betaln(a1, 0.5),
        base + np.log(float(L)) + np.log(np.maximum(N - k + 1, 1.0)),
    ]))


def _has_signal(
    E: np.ndarray, Ec: np.ndarray | None, M: int, N: int, L: int, K: int, joint: bool
) -> np.ndarray:
    """Step 2b: which problems hold signal.

    From the summed squared residuals E (P, n + 1) and, for the channel test,
    the channels' Ec (P, L, n + 1) (None: the block test alone).
    """
    n = E.shape[1] - 1
    t = signal_tables(M, N, L, K, SIGNAL_ALPHA, joint=joint)[:, :n]
    a = np.maximum((M - np.arange(1, n + 1)) * L / 2.0, 1e-9)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(E[:, :1] > 0, E[:, 1:] / E[:, :1], 1.0)
        x = np.clip(np.nan_to_num(x, nan=1.0), 0.0, 1.0)
        lp = np.log(special.betainc(a[None, :], t[0][None, :], x)) + t[2][None, :]
        found = (lp <= 0).any(axis=1)
        if Ec is not None and L > 1:
            rc = np.where(Ec[:, :, :-1] > 0, Ec[:, :, 1:] / Ec[:, :, :-1], 1.0)
            rc = np.clip(np.nan_to_num(rc, nan=1.0), 0.0, 1.0)
            lpc = np.log(special.betainc(t[3][None, None, :], 0.5, rc)) + t[5][None, None, :]
            found |= (lpc <= 0).any(axis=(1, 2))
    return np.asarray(found)


def signal_steps(
    E: np.ndarray,
    M: int,
    N: int,
    L: int,
    K: int,
    alpha: float,
    joint: bool,
    Ec: np.ndarray | None = None,
) -> np.ndarray:
    """``k_rrt`` of every problem from its squared residuals E (P, n + 1).

    ``Ec`` (P, L, n + 1): the channels' squared residuals, for the channel test
    of step 2b (None: the block test alone).
    """
    n = E.shape[1] - 1
    k = np.arange(1, n + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rr2 = np.where(E[:, :-1] > 0, E[:, 1:] / E[:, :-1], 1.0)
    rr2 = np.clip(np.nan_to_num(rr2, nan=1.0), 0.0, 1.0)
    gamma2 = rrt_thresholds(M, N, L, K, alpha, joint=joint)[:n] ** 2
    below = rr2 < gamma2[None, :]
    n_sig = np.where(below.any(axis=1), n - np.argmax(below[:, ::-1], axis=1), 0)
    none = ~below.any(axis=1)
    if none.any():  # the fallback, for problems that hold signal (step 2b)
        none[none] = _has_signal(E[none], None if Ec is None else Ec[none], M, N, L, K, joint)
    if none.any():
        choices = np.maximum(N - k + 1, 1.0) ** (1 if joint else L)
        a = np.maximum((M - k) * L / 2.0, 1e-9)
        pval = special.betainc(a[None, :], L / 2.0, rr2[none]) * (K * choices)
        n_sig[none] = np.argmin(pval, axis=1) + 1
    return n_sig
