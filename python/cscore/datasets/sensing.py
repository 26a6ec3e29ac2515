"""Sensing matrices, measurements and noise (all seeded)."""

from __future__ import annotations

import numpy as np

__all__ = ["expected_noise_tol", "gaussian_matrix", "measure", "paper_matrix"]


def _check_sizes(M: int, N: int) -> None:
    for name, v in (("M", M), ("N", N)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if M > N:
        raise ValueError(f"M ({M}) must not exceed N ({N})")


def paper_matrix(M: int, N: int, seed: int | None = 0, *, unit_norm: bool = True) -> np.ndarray:
    """The LSTM-CS paper's sensing matrix.

    M distinct rows, chosen at random, of a random orthonormal N x N matrix
    (the Q factor of a Gaussian matrix, signs fixed so that it is Haar
    distributed); then every column is scaled to unit l2 norm.

    Parameters
    ----------
    M, N : int
        Measurements and signal length, ``1 <= M <= N``.
    seed : int or None
    unit_norm : bool, default True
        Scale the columns to unit norm (False returns the orthonormal rows
        themselves; same rows for the same seed).

    Returns
    -------
    ndarray float64 (M, N)
    """
    _check_sizes(M, N)
    rng = np.random.default_rng(seed)
    Q, R = np.linalg.qr(rng.standard_normal((N, N)))
    Q = Q * np.sign(np.where(np.diag(R) == 0, 1.0, np.diag(R)))
    rows = rng.permutation(N)[:M]
    A = Q[rows]
    return A / np.linalg.norm(A, axis=0) if unit_norm else A


def gaussian_matrix(
    M: int, N: int, seed: int | None = 0, *, unit_norm: bool = True
) -> np.ndarray:
    """An i.i.d. Gaussian M x N matrix, N(0, 1/M) entries or unit-norm columns."""
    _check_sizes(M, N)
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    if unit_norm:
        A /= np.linalg.norm(A, axis=0)
    return A


def measure(
    A: np.ndarray,
    S: np.ndarray,
    sigma: float = 0.0,
    seed: int | None = 0,
    *,
    fresh_noise: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Measurements ``Y = A S + noise`` for a batch of problems.

    Parameters
    ----------
    A : ndarray (M, N)
    S : ndarray (P, N, L) or (N, L)
    sigma : float
        Noise standard deviation (>= 0).
    seed : int or None
    fresh_noise : bool, default True
        Draw new noise for every problem.  False adds one (M, L) noise matrix
        to every problem (what the paper's authors did).

    Returns
    -------
    Y : ndarray (P, M, L) (or (M, L))
    noise : ndarray, same shape as Y
    """
    A = np.asarray(A, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    if sigma < 0 or not np.isfinite(sigma):
        raise ValueError(f"sigma must be a finite non-negative float, got {sigma!r}")
    single = S.ndim == 2
    if single:
        S = S[None]
    if S.ndim != 3 or S.shape[1] != A.shape[1]:
        raise ValueError(f"S must be (P, {A.shape[1]}, L); got shape {S.shape}")
    L = S.shape[2]
    Y = np.einsum("mn,pnl->pml", A, S)
    rng = np.random.default_rng(seed)
    if fresh_noise:
        noise = sigma * rng.standard_normal(Y.shape)
    else:
        noise = np.broadcast_to(sigma * rng.standard_normal((A.shape[0], L)), Y.shape).copy()
    Y += noise
    return (Y[0], noise[0]) if single else (Y, noise)


def expected_noise_tol(M: int, L: int, sigma: float) -> float:
    """The paper's stopping threshold with the noise norm replaced by its expectation.

    The authors stop once ``sum_j ||r_j||_2 < L * ||noise||_F`` with ``noise``
    the (M, L) noise matrix they added.  With fresh noise per problem this
    uses ``E||noise||_F ~= sigma * sqrt(M * L)``: ``tol = L * sigma * sqrt(M * L)``.
    """
    return float(L * sigma * np.sqrt(M * L))
