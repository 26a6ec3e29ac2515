"""Stopping without knowing the noise: ``tol="auto"`` for greedy decoders.

The LSTM-CS paper stops a greedy decoder once the residual is as small as the
noise, which needs the noise level.  In practice it is not known.  This module
estimates it from the measurements of each problem and stops on the estimate,
so that any greedy decoder that records its atoms in selection order gets the
rule with one call of :func:`auto_decode_mmv` (or :func:`auto_decode_omp` for
OMP's layout).  :func:`cscore.omp` and :func:`cscore.somp` run the same method
inside their compiled kernel (``cpp/include/cscore/greedy.hpp``, ``auto_cut``):
one decode of the path, the test and the cut on it, no second pass; this
module gives them the thresholds (:func:`rrt_tables`).

Method
------
1. **Greedy path.** The decoder runs ``K = min(M - 1, N)`` steps and reports
   its atoms in selection order. (Learned decoders with one support per
   channel, whose steps cost more, first run ``ceil(M / 2)`` steps; only
   problems whose signal reaches into the last third of that path, step 2, run
   again to the full length. LSTM-CS and BLSTM-CS instead end each problem's
   path inside their compiled kernel once the test of step 2 has taken a step
   for signal and a few steps in a row showed nothing signal-like, and report
   the channel residual norms of their own least squares after every step: one
   decode, no refit, see :mod:`cscore.decoders.path_stop`.) The residual norm
   after every prefix of the path comes from least squares along it in the
   compiled kernel (progressive Cholesky factorization of the selected columns'
   Gram matrix, one per problem for a shared support, one per channel
   otherwise: the explicit residual at the end plus the tail of the path's
   coordinates, sums of squares without cancellation); the prefix least-squares
   fits are exactly the decoder's (up to rounding), because a greedy decoder
   stopped by ``tol`` is the same path cut short. OMP and SOMP need no such
   refit: their kernel has these coordinates already.
2. **Where the signal ends: residual ratio thresholding** (RRT, Kallummil &
   Kalyani 2018).  With ``E_k`` the squared residual (summed over the L
   channels) after ``k`` steps, the ratio ``RR(k) = sqrt(E_k / E_{k-1})`` drops
   far below 1 while true atoms are being found and stays close to 1 once only
   noise is left: then ``RR(k)**2`` is distributed as ``Beta((M - k) L / 2,
   L / 2)`` for a fixed atom, whatever ``sigma``.  With the union bound over the
   ``N - k + 1`` atoms a greedy step can pick, the threshold ``Gamma(k)**2 =
   F^{-1}_{Beta((M-k)L/2, L/2)}(alpha / (K (N - k + 1)))`` is crossed by a
   noise-only step with probability at most ``alpha``; the signal part is
   ``k_rrt = max{k : RR(k) < Gamma(k)}``.  When no step crosses, the step with
   the smallest union-bound p-value is taken (RRT's own fallback), **but only
   when the measurements hold signal at all** (step 2b); otherwise
   ``k_rrt = 0`` and the answer is the empty support.
2b. **Is there any signal?**  A path that is all signal (a dense signal, or a
   decoder that finds its atoms slowly) may have no step below ``Gamma(k)``,
   and neither may pure noise: there the fallback used to pick a deep step,
   estimate the noise from what was left (10-50x too small) and fit half the
   path to noise.  Two tests of "the measurements are pure Gaussian noise",
   each at level ``SIGNAL_ALPHA / 2``, decide: (i) the block test: after any
   ``k`` atoms, ``E_k / E_0`` of pure noise is ``Beta((M - k) L / 2, k L / 2)``
   for a fixed support, so with the union bound over every support of ``k``
   atoms (``C(N, k)``, to the power L for per-channel supports) and over the
   ``K`` steps no path of pure noise falls below the bound with probability
   more than ``SIGNAL_ALPHA / 2``, whatever path the decoder takes; (ii) the
   residual-ratio test of every channel alone (``Beta((M - k) / 2, 1 / 2)``,
   ``N - k + 1`` choices, Bonferroni over the K steps and L channels), which
   finds a signal confined to some channels that the summed ratios dilute.
   Either test rejecting lets the fallback run.  Both laws are scale-free.
3. **Noise estimate.**  ``sigma_hat**2 = E_{k_rrt} / (L (M - k_rrt))``: the
   residual after the signal's atoms is noise projected off ``k_rrt``
   dimensions.
4. **Stop on it** with the paper's rule and the estimated level: the first step
   whose summed channel residual norms are ``<= L * sigma_hat * sqrt(M L)``
   (:func:`cscore.datasets.expected_noise_tol`; ``sigma_hat * sqrt(M)`` for a
   single vector).

Why RRT: it needs no noise level and no sparsity, has a finite-sample
guarantee (support recovery with probability >= 1 - alpha at high SNR), costs
one greedy path per problem, and works per problem: no batch needs to share
one noise level.  Robust scale estimates from the measurements alone (median
absolute deviation of ``y``) cannot separate noise from signal, because ``y``
is a dense mixture of both; the greedy path separates them.  Stopping with the
paper's rule on ``sigma_hat`` (rather than at ``k_rrt`` itself) keeps ``auto``
and the oracle rule directly comparable: the two differ only in the noise level.

References
----------
S. Kallummil, S. Kalyani, "Signal and noise statistics oblivious orthogonal
matching pursuit", ICML 2018 (residual ratio thresholding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy import special

from .. import _core
from .._config import resolve_threads
from .._tol import paper_noise_tol
from .._validation import check_positive_int, transposed_hint
from ..result import DecodeResult

__all__ = [
    "AUTO",
    "AutoStop",
    "auto_decode_mmv",
    "auto_decode_omp",
    "auto_stop",
    "is_auto",
    "rrt_tables",
    "rrt_thresholds",
    "signal_tables",
]

#: The value of ``tol`` that asks for the noise to be estimated.
AUTO = "auto"

#: Default false-alarm level of the residual-ratio test.
ALPHA = 0.1

#: Level of the test that the measurements hold any signal (step 2b of the module
#: docstring): a path with no step below the residual-ratio threshold takes the
#: fallback step only if one of two tests rejects pure Gaussian noise, which they
#: do for pure noise with probability at most SIGNAL_ALPHA.  Chosen on MNIST
#: validation digits (benchmarks/results/omp_auto.md, section 4).
SIGNAL_ALPHA = 0.05

#: A learned decoder's first path (ceil(M / 2) steps) runs again to M - 1 steps
#: when its signal steps reach into the last 1 / REDO_FRACTION of it (with 2, half
#: of the path, LSTM-CS ran twice for k >= 18 of 72; 3 keeps its NMSE within 1.2x
#: of the oracle rule's on MNIST, benchmarks/results/omp_auto.md).
REDO_FRACTION = 3



def is_auto(tol: Any) -> bool:
    """True when ``tol`` asks for the automatic rule.

    Parameters
    ----------
    tol : object
        A decoder's ``tol`` argument.

    Returns
    -------
    bool
        ``tol == "auto"``.

    Raises
    ------
    TypeError
        ``tol`` is a string other than ``"auto"``.
    """
    if isinstance(tol, str):
        if tol != AUTO:
            raise TypeError(f"tol must be a real number >= 0, None or 'auto'; got {tol!r}")
        return True
    return False


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
    """The residual-ratio thresholds ``Gamma(k)``, k = 1..K (see the module docstring).

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
    """The two tests that the measurements hold any signal (step 2b of the module docstring).

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


@dataclass
class AutoStop:
    """Where the automatic rule stopped each problem, and what it estimated.

    Attributes
    ----------
    x : ndarray (P, N, L)
        Least-squares fit on the kept atoms.
    atoms : ndarray (P, L, K) int
        Kept atoms in selection order, -1 padded.
    residual : ndarray (P, L)
        Channel residual norms at the stop.
    n_iter : ndarray (P,) int
        Greedy steps kept.
    sigma : ndarray (P,)
        Estimated noise standard deviation.
    tol : ndarray (P,)
        The threshold used (the paper's rule with ``sigma``).
    n_signal : ndarray (P,) int
        ``k_rrt``: steps judged to add signal.
    """

    x: np.ndarray
    atoms: np.ndarray
    residual: np.ndarray
    n_iter: np.ndarray
    sigma: np.ndarray
    tol: np.ndarray
    n_signal: np.ndarray


def _fit_paths(
    A: np.ndarray, Y: np.ndarray, atoms: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares along every item's path, in the compiled kernel.

    ``Y`` (I, M, C) shares the item's atoms (I, K) (-1 padded; a path also ends
    at an atom numerically dependent on the earlier ones).  Returns the fit on
    the whole path x (I, N, C), its residual norms (I, C) and the squared
    residual norms after every prefix, res2 (I, C, K + 1) (the last repeated
    beyond the path's end).
    """
    I, _, C = Y.shape
    K = atoms.shape[1]
    x = np.empty((I, A.shape[1], C))
    res = np.zeros((I, C))
    energy = np.zeros((I, K + 1, C))
    scratch = (np.zeros(I, np.int64), np.zeros(I, np.int8), np.zeros(I, np.uint8),
               np.full((I, K), -1, np.int64))  # fmt: skip
    if I and K:
        _core._greedy_path(
            np.ascontiguousarray(A), np.ascontiguousarray(Y), np.ascontiguousarray(atoms), x,
            res, energy, *scratch, resolve_threads(None), 1 << 25,
        )  # fmt: skip
    elif I:
        x[:] = 0.0
        res[:] = np.linalg.norm(Y, axis=1)
        energy[:] = (Y**2).sum(axis=1)[:, None, :]
    return x, res, energy.transpose(0, 2, 1)


def _rrt(
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


def auto_stop(
    A: Any,
    Y: Any,
    atoms: Any,
    *,
    alpha: float = ALPHA,
    max_atoms: int | None = None,
) -> AutoStop:
    """Estimate each problem's noise from its greedy path and stop on it.

    Parameters
    ----------
    A : array_like (M, N)
        Sensing matrix.
    Y : array_like (P, M, L)
        Measurements.
    atoms : array_like (P, K) or (P, L, K) int
        The decoder's atoms in selection order (-1 padded): one support shared
        by the channels (P, K), or one per channel (P, L, K).
    alpha : float, default 0.1
        False-alarm level of the residual-ratio test.
    max_atoms : int, optional
        Keep at most this many steps (a user's ``n_nonzero``).

    Returns
    -------
    AutoStop
        The fit, the kept atoms, the estimated noise and threshold.
    """
    A = np.asarray(A, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    atoms = np.asarray(atoms, dtype=np.int64)
    P, M, L = Y.shape
    joint = atoms.ndim == 2
    K = atoms.shape[-1]
    if joint:  # one path per problem, shared by its channels
        Yi, ai = Y, atoms
    else:  # one path per channel
        Yi, ai = Y.transpose(0, 2, 1).reshape(P * L, M, 1), atoms.reshape(P * L, K)
    _, _, res2 = _fit_paths(A, Yi, ai)
    res2_p = np.maximum(res2, 0.0).reshape(P, L, K + 1)
    E = res2_p.sum(axis=1)  # (P, K+1) squared Frobenius residual
    total = np.sqrt(res2_p).sum(axis=1)  # (P, K+1) summed channel norms
    return _cut(A, Yi, ai, E, total, None, L, joint, alpha, max_atoms, res2_p)


def _cut(
    A: np.ndarray,
    Yi: np.ndarray,
    ai: np.ndarray,
    E: np.ndarray,
    total: np.ndarray,
    scale: np.ndarray | None,
    L: int,
    joint: bool,
    alpha: float,
    max_atoms: int | None,
    Ec: np.ndarray | None = None,
) -> AutoStop:
    """Steps 2-4 of the method on the paths ``ai`` of the items ``Yi`` (see :func:`auto_stop`).

    ``E`` (P, K+1) are the squared residuals after every prefix (divided by
    ``scale**2``, per problem, when ``scale`` is given), ``total`` the summed
    channel residual norms, ``Ec`` (P, L, K+1) the channels' squared residuals
    (any common scale per problem).
    """
    M, N = A.shape
    P, K = E.shape[0], ai.shape[-1]
    n_sig = _rrt(E, M, N, L, K, alpha, joint, Ec)
    dof = L * np.maximum(M - n_sig, 1)
    sigma = np.sqrt(E[np.arange(P), n_sig] / dof)
    if scale is not None:
        sigma = sigma * scale
    tol = paper_noise_tol(M, L, sigma)

    # The paper's rule on the estimate: first step with total <= tol.
    hit = total <= tol[:, None] * (1 + 1e-12)
    n_iter = np.where(hit.any(axis=1), np.argmax(hit, axis=1), K)
    if max_atoms is not None:
        n_iter = np.minimum(n_iter, max_atoms)

    # Least squares on the kept prefix of every item.
    n_item = n_iter if joint else np.repeat(n_iter, L)
    kept = np.where(np.arange(K)[None, :] < n_item[:, None], ai, -1)
    x, resid, _ = _fit_paths(A, Yi, kept)
    if joint:
        X, kept3 = x, np.repeat(kept[:, None, :], L, axis=1)
    else:
        X = x[:, :, 0].reshape(P, L, N).transpose(0, 2, 1)
        kept3 = kept.reshape(P, L, K)
    return AutoStop(
        x=np.ascontiguousarray(X),
        atoms=kept3,
        residual=resid.reshape(P, L),
        n_iter=n_iter.astype(np.int64),
        sigma=sigma,
        tol=tol,
        n_signal=n_sig.astype(np.int64),
    )


def _two_stage(
    decode_sub: Callable[[Any, int], np.ndarray],
    A: np.ndarray,
    Y3: np.ndarray,
    n_nonzero: int | None,
    alpha: float,
    short_first: bool,
) -> AutoStop:
    """Path of ``ceil(M/2)`` steps; problems whose signal reaches its last third get ``M - 1``.

    ``decode_sub(index, K)`` returns the atoms of the problems ``index`` (None:
    all) decoded with ``n_nonzero=K``.
    """
    M, N = A.shape
    if n_nonzero is not None:
        n_nonzero = check_positive_int(
            "n_nonzero", n_nonzero, upper=min(M, N), upper_desc=f"min(M, N) for A of shape {(M, N)}"
        )
    K_long = path_length(M, N)
    K1 = min(K_long, max(1, (M + 1) // 2)) if short_first else K_long
    if n_nonzero is not None:
        K1 = max(K1, min(int(n_nonzero), K_long))
    st = auto_stop(A, Y3, decode_sub(None, K1), alpha=alpha, max_atoms=n_nonzero)
    redo = (np.nonzero(st.n_signal > K1 - max(1, K1 // REDO_FRACTION))[0] if K1 < K_long
            else np.zeros(0, dtype=int))  # fmt: skip
    if redo.size == 0:
        return st
    st2 = auto_stop(A, Y3[redo], decode_sub(redo, K_long), alpha=alpha, max_atoms=n_nonzero)
    atoms = np.full((*st.atoms.shape[:2], K_long), -1, dtype=np.int64)
    atoms[:, :, :K1] = st.atoms
    atoms[redo] = st2.atoms
    st.atoms = atoms
    for name in ("x", "residual", "n_iter", "sigma", "tol", "n_signal"):
        getattr(st, name)[redo] = getattr(st2, name)
    return st


def _extra(st: AutoStop, sel: Any) -> dict[str, Any]:
    return {"sigma_hat": st.sigma[sel], "tol_auto": st.tol[sel], "n_signal": st.n_signal[sel]}


def auto_decode_mmv(
    decode_path: Callable[[np.ndarray, int], Any],
    A: Any,
    Y: Any,
    *,
    n_nonzero: int | None = None,
    return_result: bool = False,
    alpha: float = ALPHA,
    joint: bool = False,
) -> np.ndarray | DecodeResult:
    """``tol="auto"`` for a greedy MMV decoder: one call does it all.

    Parameters
    ----------
    decode_path : callable
        ``decode_path(Y3, K)`` decodes the batch ``Y3`` (B, M, L) with
        ``n_nonzero=K`` and ``return_result=True``; its ``extra["atoms"]``
        holds the atoms in selection order, (B, K) for a shared support or
        (B, L, K) per channel.
    A : array_like (M, N)
        The sensing matrix the decoder uses.
    Y : array_like (M, L) or (B, M, L)
        Measurements (already validated by the decoder).
    n_nonzero : int, optional
        Also stop at this many steps.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` (``extra`` adds ``sigma_hat``,
        ``tol_auto`` and ``n_signal``, per problem).
    alpha : float, default 0.1
        False-alarm level of the residual-ratio test.
    joint : bool, default False
        Report the support as shared by the channels (SOMP's layout).

    Returns
    -------
    ndarray (N, L) or (B, N, L), or DecodeResult
        In ``Y``'s float dtype.
    """
    Y = np.asarray(Y)
    single = Y.ndim == 2
    Y3 = Y[None] if single else Y
    A = np.asarray(A)
    if Y.ndim not in (2, 3) or Y3.shape[1] != A.shape[0]:
        raise ValueError(
            f"Y must be (M, L) or (B, M, L) with M = {A.shape[0]} rows (A has shape "
            f"{A.shape}); got Y of shape {Y.shape}"
            + transposed_hint(A.shape, Y.shape[-2] if Y.ndim in (2, 3) else -1)
        )
    dtypes: list[np.dtype] = []

    def sub(index: Any, K: int) -> np.ndarray:
        res = decode_path(Y3 if index is None else Y3[index], K)
        dtypes.append(np.asarray(res.x).dtype)
        return np.asarray(res.extra["atoms"])

    st = _two_stage(sub, A, Y3, n_nonzero, alpha, short_first=not joint)
    dtype = dtypes[0] if dtypes else np.result_type(Y.dtype, np.float32)
    return _mmv_result(st, single, dtype, joint, return_result)


def _mmv_result(
    st: AutoStop, single: bool, dtype: Any, joint: bool, return_result: bool
) -> np.ndarray | DecodeResult:
    """The array, or the DecodeResult, of an MMV decode stopped by ``st``."""
    x = st.x.astype(dtype, copy=False)
    if not return_result:
        return x[0] if single else x
    atoms: np.ndarray = st.atoms[:, 0, :] if joint else st.atoms
    support = np.zeros(x.shape, dtype=bool)
    b, c, j = np.nonzero(st.atoms >= 0)
    support[b, st.atoms[b, c, j], c] = True
    stop = np.full(x.shape[0], "tol")
    sel: Any = 0 if single else slice(None)
    return DecodeResult(
        x=x[sel],
        support=support[sel],
        residual_norm=st.residual.astype(dtype)[sel],
        n_iter=st.n_iter[sel],
        stop_reason=stop[sel],
        extra={"atoms": atoms[sel], **_extra(st, sel)},
    )


def auto_decode_omp(
    decode_path: Callable[[np.ndarray, int], Any],
    A: Any,
    y: Any,
    *,
    n_nonzero: int | None = None,
    return_result: bool = False,
    alpha: float = ALPHA,
) -> np.ndarray | DecodeResult:
    """``tol="auto"`` for OMP's layout: ``y`` (M,) or (M, B), one problem per column.

    Parameters
    ----------
    decode_path : callable
        ``decode_path(y, K)``: OMP with ``n_nonzero=K, return_result=True``.
    A : array_like (M, N)
    y : array_like (M,) or (M, B)
    n_nonzero : int, optional
        Also stop at this many atoms.
    return_result : bool, default False
        Return a :class:`cscore.DecodeResult` as :func:`cscore.omp` does, with
        ``sigma_hat``, ``tol_auto`` and ``n_signal`` in ``extra``.
    alpha : float, default 0.1
        False-alarm level of the residual-ratio test.

    Returns
    -------
    ndarray (N,) or (N, B), or DecodeResult
    """
    y = np.asarray(y)
    single = y.ndim == 1
    Y2 = y[:, None] if single else y
    A = np.asarray(A)
    dtypes: list[np.dtype] = []

    def sub(index: Any, K: int) -> np.ndarray:
        res = decode_path(y if index is None else Y2[:, index], K)
        dtypes.append(np.asarray(res.x).dtype)
        return np.asarray(res.extra["atoms"]).reshape(-1, K)

    st = _two_stage(sub, A, Y2.T[:, :, None], n_nonzero, alpha, short_first=False)
    dtype = dtypes[0] if dtypes else np.result_type(y.dtype, np.float32)
    X = np.ascontiguousarray(st.x[:, :, 0].T).astype(dtype, copy=False)
    if not return_result:
        return X[:, 0] if single else X
    kept = st.atoms[:, 0, :]
    sup = np.zeros(X.shape if X.ndim == 2 else (X.shape[0], 1), dtype=bool)
    b, j = np.nonzero(kept >= 0)
    sup[kept[b, j], b] = True
    sel: Any = 0 if single else slice(None)
    return DecodeResult(
        x=X[:, 0] if single else X,
        support=sup[:, 0] if single else sup,
        residual_norm=st.residual[:, 0].astype(dtype)[sel],
        n_iter=st.n_iter[sel],
        stop_reason=np.full(X.shape[1], "tol")[sel],
        extra={"atoms": kept[sel], **_extra(st, sel)},
    )
