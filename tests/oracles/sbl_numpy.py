"""The pure-NumPy test oracle of T-SBL and T-MSBL (:mod:`cscore.decoders.sbl`).

The compiled kernel (``cpp/include/cscore/sbl.hpp``) is tested against this
code (tests/test_sbl.py, tests/test_complex.py put :func:`solve_numpy` in place
of the kernel, ``cscore.decoders.sbl._SOLVE``); it is not part of the installed
package.  The algorithm, the
shared spectral kernel and the notation (``Phi``, ``Gamma``, ``P``, ``K``) are
described in the module docstring of :mod:`cscore.decoders.sbl`.  T-MSBL also
takes complex ``A`` and ``Y`` (the Hermitian form: every ``'`` is a conjugate
transpose, as in the kernel's complex instantiation); real input runs the
real expressions unchanged.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from cscore.decoders._sbl_common import SblOut

__all__ = ["solve_numpy"]

_EPS = np.finfo(np.float64).eps


def _h(X: np.ndarray) -> np.ndarray:
    """``X'``: the conjugate transpose (the plain transpose of a real array)."""
    return X.conj().T if np.iscomplexobj(X) else X.T


def _abs2(X: np.ndarray) -> np.ndarray:
    """``|X|^2`` entrywise (``X**2`` for a real array)."""
    if np.iscomplexobj(X):
        out: np.ndarray = X.real**2 + X.imag**2
        return out
    return X**2


class _Spectral:
    """Eigendecomposition of ``P = Phi Gamma Phi'`` on its smaller side."""

    def __init__(self, Phi: np.ndarray, gamma: np.ndarray) -> None:
        M, K = Phi.shape
        self.Phi = Phi
        self.gamma = gamma
        self.gram = K <= M
        if self.gram:
            self.g = np.sqrt(gamma)
            PhiG = Phi * self.g
            e, V = np.linalg.eigh(_h(PhiG) @ PhiG)
            self.V = V
        else:
            e, W = np.linalg.eigh((Phi * gamma) @ _h(Phi))
            self.W = W
            self.Z = _h(W) @ Phi
        e = np.maximum(e, 0.0)
        self.e = e
        emax = e[-1] if e.size else 0.0
        self.keep = e > 16.0 * K * _EPS * emax
        self.n_dim = min(M, K)

    def project(self, R: np.ndarray) -> np.ndarray:
        """Coordinates of ``R`` (M, m) in the eigenbasis, before scaling."""
        if self.gram:
            return _h(self.V) @ ((_h(self.Phi) @ R) * self.g[:, None])
        return _h(self.W) @ R

    def mean(self, T: np.ndarray, c: np.ndarray | float) -> np.ndarray:
        """``Gamma Phi' (P + c I)^-1 R`` from ``T = project(R)``; c per column."""
        d = np.where(self.keep[:, None], 1.0 / (self.e[:, None] + c), 0.0)
        if self.gram:
            return (self.V @ (T * d)) * self.g[:, None]
        return (_h(self.Z) @ (T * d)) * self.gamma[:, None]

    def post_var(self, c: float) -> np.ndarray:
        """``gamma_i - gamma_i^2 phi_i' (P + c I)^-1 phi_i`` for every kept row."""
        if self.gram:
            return self.gamma * c * (_abs2(self.V) @ (1.0 / (self.e + c)))
        d = np.where(self.keep, 1.0 / (self.e + c), 0.0)
        return self.gamma - self.gamma**2 * (d @ _abs2(self.Z))

    def trace_ratio(self, lam: float) -> float:
        """``tr(P (lam I + P)^-1)``."""
        return float(np.sum(self.e / (self.e + lam)))


def _sym_inverse(B: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive semidefinite ``B`` as the core computes it.

    Eigenvalues are clamped below at ``eps * max`` (``sym_inverse`` in
    ``cpp/include/cscore/sbl.hpp``), so a rank-deficient ``B`` (noiseless data with
    fewer independent rows than channels) gives a large but finite inverse instead
    of a LAPACK "singular matrix" error whose occurrence depends on rounding.
    """
    w, Q = np.linalg.eigh(0.5 * (B + _h(B)))
    wmax = max(float(w[-1]), np.finfo(float).tiny)
    w = np.maximum(w, np.finfo(float).eps * wmax)
    return (Q / w) @ _h(Q)


def _lambda_update(
    lam: float, resid2: float, M: int, L: int, Phi: np.ndarray, gamma: np.ndarray,
    enhance: bool, spec: _Spectral | None,
) -> float:
    if enhance:
        p = _abs2(Phi) @ gamma
        return resid2 / (M * L) + lam * float(np.sum(p / (lam + p))) / M
    if spec is None:
        spec = _Spectral(Phi, gamma)
    return resid2 / (M * L) + lam * spec.trace_ratio(lam) / M


def _prune(
    prune: float, gamma: np.ndarray, Phi: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Remove the rows whose ``gamma`` fell below ``prune`` (their columns of ``Phi``)."""
    if gamma.size and gamma.min() < prune:
        idx = np.flatnonzero(gamma > prune)
        return gamma[idx], Phi[:, idx], keep[idx]
    return gamma, Phi, keep


def _settled(mu: np.ndarray, mu_old: np.ndarray, tol: float) -> bool:
    """The stopping rule: no row pruned and ``max |mu - mu_old| < tol``."""
    return bool(mu.shape == mu_old.shape and np.max(np.abs(mu - mu_old)) < tol)


def _out(
    N: int, keep: np.ndarray, mu: np.ndarray, gamma: np.ndarray, B: np.ndarray, lam: float,
    count: int, stop: str,
) -> SblOut:
    """The record of one problem: the kept rows ``keep`` scattered back into N rows."""
    x = np.zeros((N, mu.shape[1]), dtype=mu.dtype)
    x[keep] = mu
    g = np.zeros(N)
    g[keep] = gamma
    B_dtype = complex if np.iscomplexobj(B) else float
    return SblOut(x, g, np.array(B, dtype=B_dtype), float(lam), count, stop)


def _tmsbl_one(
    A: np.ndarray, Y: np.ndarray, prune: float, lam: float, learn_lambda: bool,
    enhance: bool, R: np.ndarray, B_fixed: np.ndarray | None, max_iter: int, tol: float,
) -> SblOut:
    M, N = A.shape
    L = Y.shape[1]
    gamma = np.ones(N)
    keep = np.arange(N)
    Phi = A
    cplx = np.iscomplexobj(A) or np.iscomplexobj(Y)
    mu = np.zeros((N, L), dtype=complex if cplx else float)
    B = np.eye(L) if B_fixed is None else B_fixed
    count = 0
    stop = "max_iter"
    while True:
        gamma, Phi, keep = _prune(prune, gamma, Phi, keep)
        if gamma.size == 0:
            mu = np.zeros((0, L), dtype=mu.dtype)
            stop = "exhausted"
            break
        mu_old = mu
        spec = _Spectral(Phi, gamma)
        lamp = lam + 1e-16
        mu = spec.mean(spec.project(Y), lamp)
        sig = spec.post_var(lamp)
        if learn_lambda:
            resid2 = float(np.sum(_abs2(Y - Phi @ mu)))
            lam = _lambda_update(lam, resid2, M, L, Phi, gamma, enhance, spec)
        if B_fixed is None:
            K = gamma.size
            if K <= M:
                B = np.eye(L)
            else:
                B = _h(mu / gamma[:, None]) @ mu + R
                B = B / np.linalg.norm(B)
        mub = mu @ _sym_inverse(B) if B_fixed is not None or gamma.size > M else mu
        if cplx:  # Re(mu_i B^-1 mu_i^H)
            gamma = np.sum(mub * mu.conj(), axis=1).real / L + sig
        else:
            gamma = np.sum(mub * mu, axis=1) / L + sig
        count += 1
        if count >= max_iter:
            break
        if _settled(mu, mu_old, tol):
            stop = "rtol"
            break
    return _out(N, keep, mu, gamma, B, lam, count, stop)


def _tsbl_one(
    A: np.ndarray, Y: np.ndarray, prune: float, lam: float, learn_lambda: bool,
    enhance: bool, max_iter: int, tol: float,
) -> SblOut:
    M, N = A.shape
    L = Y.shape[1]
    gamma = np.ones(N)
    keep = np.arange(N)
    Phi = A
    mu = np.zeros((N, L))
    B = np.eye(L)
    count = 0
    stop = "max_iter"
    while True:
        count += 1
        gamma, Phi, keep = _prune(prune, gamma, Phi, keep)
        if gamma.size == 0:
            mu = np.zeros((0, L))
            stop = "exhausted"
            break
        K = gamma.size
        mu_old = mu
        b, Q = np.linalg.eigh(B)
        b = np.maximum(b, _EPS * b[-1])
        c = lam / b
        spec = _Spectral(Phi, gamma)
        mut = spec.mean(spec.project(Y @ Q), c)  # (K, L) rotated mean
        # rotated posterior covariances: Q' Sigma_i Q = diag(S[i, :])
        S = np.empty((K, L))
        for j in range(L):
            S[:, j] = b[j] * spec.post_var(float(c[j]))
        mu = mut @ Q.T
        if K <= M:
            B = np.eye(L)
            Binv_rot = np.ones(L)
            Bm = B
        else:
            Bm = (Q * (S / gamma[:, None]).sum(axis=0)) @ Q.T + (mu / gamma[:, None]).T @ mu
            Bm = 0.5 * (Bm + Bm.T)
            Bm = Bm / np.linalg.norm(Bm)
            B = Bm
            Binv = _sym_inverse(Bm)
            Binv_rot = np.einsum("kj,kl,lj->j", Q, Binv, Q)
        if K <= M:
            quad = np.sum(mu * mu, axis=1)
        else:
            quad = np.sum((mu @ Binv) * mu, axis=1)
        gamma = (S @ Binv_rot + quad) / L
        if learn_lambda:
            resid2 = float(np.sum((Y - Phi @ mu) ** 2))
            lam = _lambda_update(lam, resid2, M, L, Phi, gamma, enhance, None)
        if count >= max_iter:
            break
        if _settled(mu, mu_old, tol):
            stop = "rtol"
            break
    return _out(N, keep, mu, gamma, B, lam, count, stop)


def solve_numpy(A: np.ndarray, Y: np.ndarray, kw: dict[str, Any], threads: int) -> list[SblOut]:
    """Decode ``Y`` (M, L) or (B, M, L) with the NumPy reference.

    Parameters
    ----------
    A : ndarray (M, N) float64
    Y : ndarray (M, L) or (B, M, L) float64
    kw : dict
        The checked parameters (``exact`` selects T-SBL, else T-MSBL).
    threads : int
        Problems decoded in parallel.

    Returns
    -------
    list of SblOut
        One record per problem.
    """
    def one(y: np.ndarray) -> SblOut:
        with np.errstate(all="ignore"):  # overflow is reported by the caller
            try:
                return one_(y)
            except np.linalg.LinAlgError:  # overflowed data: a non-finite result, as the kernel's
                nan = np.full((A.shape[1], y.shape[1]), np.nan, dtype=np.result_type(A, y))
                return SblOut(nan, np.full(A.shape[1], np.nan), np.eye(y.shape[1]), np.nan, 0,
                              "max_iter")

    def one_(y: np.ndarray) -> SblOut:
        if kw["exact"]:
            return _tsbl_one(A, y, kw["prune"], kw["lam"], kw["learn"], kw["enh"],
                             kw["max_iter"], kw["rtol"])
        return _tmsbl_one(A, y, kw["prune"], kw["lam"], kw["learn"], kw["enh"], kw["R"],
                          kw["B_fixed"], kw["max_iter"], kw["rtol"])

    Ys = list(Y) if Y.ndim == 3 else [Y]
    if threads > 1 and len(Ys) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(Ys))) as ex:
            return list(ex.map(one, Ys))
    return [one(y) for y in Ys]

