"""Training data for LSTM-CS (section 4.3.2 of Palangi's thesis), vectorized.

For a training problem with ground truth ``S`` (N, L), measurements
``Y = A S + noise`` and greedy step ``t = 1..T``, channel j gives

* input: the residual of ``y_j`` after least squares on the ``t - 1``
  largest-magnitude entries of ``s_j`` (``y_j`` itself at t = 1), divided by
  its largest absolute entry (:func:`~cscore.decoders.learned._greedy.normalize_maxabs`);
* target: the index of the t-th largest-magnitude entry of ``s_j`` (ties: the
  lower index first), or :data:`IGNORE` once ``t`` exceeds the number of
  non-zeros of ``s_j`` (no atom left to find; such entries carry no loss).

A sequence is one (problem, t) pair run over the L channels.  Sequences where
no channel has a target are dropped.

All problems are processed together: the least-squares residuals come from
an incremental (twice-iterated) Gram--Schmidt basis of the selected atoms,
updated for every problem and channel at once per step, so the residual at
step t is ``y - Q_t Q_t^T y`` -- exactly the least-squares residual.
"""

from __future__ import annotations

import numpy as np

from ..datasets.sparsify import keep_largest
from ..decoders.learned._greedy import normalize_maxabs

__all__ = [
    "IGNORE",
    "default_steps",
    "flat_steps",
    "sequences_for_epoch",
    "training_sequences",
]

#: target value of a (sequence, channel) entry with no atom to predict
IGNORE = -1


def default_steps(M: int) -> int:
    """The paper's number of steps per training problem, ``floor(M / 4)``.

    Parameters
    ----------
    M : int
        Measurements per channel.

    Returns
    -------
    int
        ``max(1, M // 4)``.
    """
    return max(1, M // 4)


def training_sequences(
    A: np.ndarray,
    S: np.ndarray,
    *,
    n_steps: int | None = None,
    sigma: float = 0.005,
    seed: int | None = 0,
    Y: np.ndarray | None = None,
    dtype: type = np.float32,
    chunk: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """Residual sequences and target atoms for training (see the module docstring).

    Parameters
    ----------
    A : ndarray (M, N)
    S : ndarray (P, N, L)
        Sparse ground truths.
    n_steps : int, optional
        Steps T per problem (default: :func:`default_steps`, the paper's
        ``floor(M/4)``); capped at ``min(M, N)``.
    sigma : float, default 0.005
        Noise standard deviation; fresh noise for every problem.
    seed : int or None
        Seeds the noise.
    Y : ndarray (P, M, L), optional
        Use these measurements instead of ``A S + noise``.
    dtype : float dtype of the returned inputs.
    chunk : int
        Problems processed together (bounds the memory).

    Returns
    -------
    X : ndarray (n_seq, L, M)
        Max-abs normalized residuals, sequences ordered problem-major then by step.
    targets : ndarray int64 (n_seq, L)
        Atom index per channel, or :data:`IGNORE`.
    """
    A = np.asarray(A, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"A must be 2-D, got shape {A.shape}")
    M, N = A.shape
    if S.ndim != 3 or S.shape[1] != N:
        raise ValueError(f"S must be (P, {N}, L), got shape {S.shape}")
    P, _, L = S.shape
    T = default_steps(M) if n_steps is None else int(n_steps)
    if T < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    T = min(T, M, N)
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    rng = np.random.default_rng(seed)
    if Y is None:
        Y = np.einsum("mn,pnl->pml", A, S) + sigma * rng.standard_normal((P, M, L))
    else:
        Y = np.asarray(Y, dtype=np.float64)
        if Y.shape != (P, M, L):
            raise ValueError(f"Y must be {(P, M, L)}, got {Y.shape}")

    X = np.empty((P, T, L, M), dtype=dtype)
    tg = np.empty((P, T, L), dtype=np.int64)
    for p0 in range(0, P, chunk):
        p1 = min(P, p0 + chunk)
        Sc = S[p0:p1].transpose(0, 2, 1).reshape(-1, N)  # (C, N), C = chunk * L
        yc = Y[p0:p1].transpose(0, 2, 1).reshape(-1, M)  # (C, M)
        C = Sc.shape[0]
        order = np.argsort(-np.abs(Sc), axis=1, kind="stable")[:, :T]
        nnz = np.count_nonzero(Sc, axis=1)
        Q = np.zeros((C, M, T))
        r = yc.copy()
        Xc = np.empty((C, T, M))
        tc = np.empty((C, T), dtype=np.int64)
        for t in range(T):
            Xc[:, t] = normalize_maxabs(r)
            tc[:, t] = np.where(t < nnz, order[:, t], IGNORE)
            if t == T - 1:
                break
            a = A[:, order[:, t]].T.copy()  # (C, M)
            for _ in range(2):  # twice is enough (Kahan / Parlett)
                if t:
                    Qt = Q[:, :, :t]
                    a -= np.einsum("cmt,ct->cm", Qt, np.einsum("cmt,cm->ct", Qt, a))
            nrm = np.linalg.norm(a, axis=1, keepdims=True)
            q = np.divide(a, nrm, out=np.zeros_like(a), where=nrm > 1e-12)
            Q[:, :, t] = q
            r -= q * np.einsum("cm,cm->c", q, r)[:, None]
        X[p0:p1] = Xc.reshape(p1 - p0, L, T, M).transpose(0, 2, 1, 3)
        tg[p0:p1] = tc.reshape(p1 - p0, L, T).transpose(0, 2, 1)
    X = X.reshape(P * T, L, M)
    tg = tg.reshape(P * T, L)
    keep = (tg != IGNORE).any(axis=1)
    return np.ascontiguousarray(X[keep]), np.ascontiguousarray(tg[keep])


def sequences_for_epoch(
    A: np.ndarray, S: np.ndarray, n_steps: int, sigma: float, k_range: tuple[int, int] | None,
    n_problems: int | None, seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One epoch's training sequences from ground truths ``S`` (P, N, L).

    Parameters
    ----------
    A : ndarray (M, N)
        Sensing matrix.
    S : ndarray (P, N, L)
        Ground truths.
    n_steps : int
        Greedy steps per problem (see :func:`training_sequences`).
    sigma : float
        Measurement noise standard deviation.
    k_range : (int, int), optional
        Re-sparsify each problem to a random k in this range (inclusive).
    n_problems : int, optional
        Use this many problems, drawn at random (all when None).
    seed : int
        Seed of every draw.

    Returns
    -------
    X, targets : ndarray
        What :func:`training_sequences` returns.
    """
    rng = np.random.default_rng(seed)
    if n_problems is not None and n_problems < S.shape[0]:
        S = S[np.sort(rng.choice(S.shape[0], n_problems, replace=False))]
    if k_range is not None:
        ks = np.asarray(rng.integers(k_range[0], k_range[1] + 1, size=S.shape[0]))
        St = keep_largest(S.transpose(0, 2, 1), np.repeat(ks[:, None], S.shape[2], axis=1))
        S = St.transpose(0, 2, 1)
    return training_sequences(A, S, n_steps=n_steps, sigma=sigma, seed=int(rng.integers(2**31)))


def flat_steps(X: np.ndarray, tg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``X`` (..., d) as (n, d) float32, targets ``tg`` as (n,); padding dropped.

    Parameters
    ----------
    X : ndarray (..., d)
        Inputs, one per (sequence, channel).
    tg : ndarray (...)
        Targets, :data:`IGNORE` where there is none.

    Returns
    -------
    X2 : ndarray (n, d) float32
    tg2 : ndarray (n,)
    """
    X = X.reshape(-1, X.shape[-1])
    tg = tg.reshape(-1)
    keep = tg != IGNORE
    return np.ascontiguousarray(X[keep], dtype=np.float32), tg[keep]
