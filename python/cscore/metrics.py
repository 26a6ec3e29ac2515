"""Reconstruction error and support-recovery measures (tests and benchmarks).

The LSTM-CS paper's error is ``NMSE = ||S_hat - S||_F / ||S||_F`` (a ratio of
norms, not of squared norms) computed per reconstructed image and averaged.
"""

from __future__ import annotations

import numpy as np

__all__ = ["nmse", "nmse_per_item", "support_f1", "support_recovery"]


def nmse_per_item(S_hat: np.ndarray, S: np.ndarray, *, axes: tuple[int, ...] | None = None
                  ) -> np.ndarray:
    """``||S_hat_i - S_i||_F / ||S_i||_F`` for every item i along axis 0.

    Parameters
    ----------
    S_hat, S : ndarray, same shape (n, ...)
        Estimates and ground truths (problems (P, N, L), or images (n, h, w)).
    axes : tuple of int, optional
        Axes reduced by the norm (default: all but the first).

    Returns
    -------
    ndarray (n,); an item whose ground truth is zero gives ``||S_hat_i||`` (0
    for a zero estimate).
    """
    S_hat = np.asarray(S_hat, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    if S_hat.shape != S.shape:
        raise ValueError(f"S_hat has shape {S_hat.shape}, S has {S.shape}")
    if S.ndim < 1 or S.shape[0] == 0:
        raise ValueError("need at least one item")
    if axes is None:
        axes = tuple(range(1, S.ndim))
    num = np.sqrt(np.sum((S_hat - S) ** 2, axis=axes))
    den = np.sqrt(np.sum(S**2, axis=axes))
    return np.divide(num, den, out=num.copy(), where=den > 0)


def nmse(S_hat: np.ndarray, S: np.ndarray) -> float:
    """Mean over items (axis 0) of :func:`nmse_per_item`."""
    return float(np.mean(nmse_per_item(S_hat, S)))


def support_recovery(S_hat: np.ndarray, S: np.ndarray, *, atol: float = 0.0) -> dict[str, float]:
    """Support-recovery measures per channel, averaged over problems and channels.

    Parameters
    ----------
    S_hat, S : ndarray (P, N, L) (or (N, L))
        Supports are the entries with ``|value| > atol``, per channel (axis 1
        indexes atoms).

    Returns
    -------
    dict with
        ``precision`` : mean |found & true| / |found|
        ``recall`` : mean |found & true| / |true|
        ``exact`` : fraction of channels whose support is recovered exactly
    """
    S_hat = np.asarray(S_hat)
    S = np.asarray(S)
    if S_hat.shape != S.shape:
        raise ValueError(f"S_hat has shape {S_hat.shape}, S has {S.shape}")
    if S.ndim == 2:
        S_hat, S = S_hat[None], S[None]
    found = np.abs(S_hat) > atol
    true = np.abs(S) > atol
    hit = (found & true).sum(axis=1).astype(np.float64)
    nf = found.sum(axis=1)
    nt = true.sum(axis=1)
    precision = np.divide(hit, nf, out=np.ones_like(hit), where=nf > 0)
    recall = np.divide(hit, nt, out=np.ones_like(hit), where=nt > 0)
    exact = np.all(found == true, axis=1)
    return {
        "precision": float(precision.mean()),
        "recall": float(recall.mean()),
        "exact": float(exact.mean()),
    }


def support_f1(S_hat: np.ndarray, S: np.ndarray, *, atol: float = 0.0) -> float:
    """Harmonic mean of :func:`support_recovery`'s precision and recall."""
    r = support_recovery(S_hat, S, atol=atol)
    p, q = r["precision"], r["recall"]
    return 0.0 if p + q == 0 else 2 * p * q / (p + q)
