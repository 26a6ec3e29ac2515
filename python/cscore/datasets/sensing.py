"""Sensing matrices, measurements and noise (all seeded)."""

from __future__ import annotations

import numpy as np

from .._tol import paper_noise_tol
from .._validation import as_float_array, check_nonnegative_float, common_float_dtype

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
    """An i.i.d. Gaussian M x N matrix, N(0, 1/M) entries or unit-norm columns.

    Parameters
    ----------
    M, N : int
        Rows (measurements) and columns (atoms), ``1 <= M <= N``.
    seed : int or None, default 0
        Seed of the generator.
    unit_norm : bool, default True
        Scale every column to unit Euclidean norm.

    Returns
    -------
    ndarray (M, N), float64
    """
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
        float32 when A and S are both float32, float64 otherwise.
    noise : ndarray, same shape and dtype as Y
    """
    dtype = common_float_dtype(A, S)
    A = as_float_array("A", A, ndim=2, dtype=dtype)
    S = as_float_array("S", S, ndim=(2, 3), dtype=dtype)
    sigma = check_nonnegative_float("sigma", sigma)
    if S.shape[-2] != A.shape[1]:
        want = f"({A.shape[1]}, L) or (P, {A.shape[1]}, L)"
        raise ValueError(
            f"S must be {want} to match A of shape {A.shape}; got shape {S.shape}"
        )
    single = S.ndim == 2
    if single:
        S = S[None]
    L = S.shape[2]
    Y = np.einsum("mn,pnl->pml", A, S)
    rng = np.random.default_rng(seed)
    if fresh_noise:
        noise = sigma * rng.standard_normal(Y.shape)
    else:
        noise = np.broadcast_to(sigma * rng.standard_normal((A.shape[0], L)), Y.shape)
    noise = noise.astype(dtype)
    Y += noise
    return (Y[0], noise[0]) if single else (Y, noise)


def expected_noise_tol(M: int, L: int, sigma: float) -> float:
    """The paper's stopping threshold with the noise norm replaced by its expectation.

    The authors stop once ``sum_j ||r_j||_2 < L * ||noise||_F`` with ``noise``
    the (M, L) noise matrix they added.  With fresh noise per problem this
    uses ``E||noise||_F ~= sigma * sqrt(M * L)``: ``tol = L * sigma * sqrt(M * L)``.

    Parameters
    ----------
    M : int
        Number of measurements per channel.
    L : int
        Number of channels.
    sigma : float
        Noise standard deviation (>= 0).

    Returns
    -------
    float
        The threshold ``L * sigma * sqrt(M * L)`` (written once, in
        :func:`cscore._tol.paper_noise_tol`).
    """
    return float(paper_noise_tol(M, L, sigma))
