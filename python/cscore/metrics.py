"""Reconstruction error and support-recovery measures (tests and benchmarks).

The LSTM-CS paper's error is ``NMSE = ||S_hat - S||_F / ||S||_F`` (a ratio of
norms, not of squared norms) computed per reconstructed image and averaged.

Conventions
-----------
* A 2-D array ``(N, L)`` is **one** problem: :func:`nmse` returns
  ``||S_hat - S||_F / ||S||_F`` over the whole matrix.
* A 3-D array ``(P, N, L)`` is a batch: :func:`nmse` returns the mean over the
  P problems of the per-problem ratio (the paper's per-image averaging).
* :func:`nmse_per_item` gives the ratio for every item along axis 0 of any
  array of at least 2 dimensions (problems, or images ``(n, h, w)``).
* A ground truth of zero norm has no relative error: it raises ``ValueError``
  (``nmse_per_item(..., zero="nan")`` returns NaN for such items instead, so a
  caller can drop them explicitly).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

__all__ = ["nmse", "nmse_per_item", "support_f1", "support_recovery"]


def _pair(S_hat: Any, S: Any, *, allow_bool: bool = False) -> tuple[np.ndarray, np.ndarray]:
    S_hat = np.asarray(S_hat)
    S = np.asarray(S)
    kinds = "fiub" if allow_bool else "fiu"
    for name, arr in (("S_hat", S_hat), ("S", S)):
        if arr.dtype.kind not in kinds:
            raise TypeError(f"{name} must be a real numeric array; got dtype {arr.dtype}")
    if S_hat.shape != S.shape:
        raise ValueError(f"S_hat has shape {S_hat.shape} but S has shape {S.shape}")
    return S_hat.astype(np.float64, copy=False), S.astype(np.float64, copy=False)


def nmse_per_item(
    S_hat: np.ndarray,
    S: np.ndarray,
    *,
    axes: tuple[int, ...] | None = None,
    zero: Literal["raise", "nan"] = "raise",
) -> np.ndarray:
    """``||S_hat_i - S_i||_F / ||S_i||_F`` for every item i along axis 0.

    Parameters
    ----------
    S_hat, S : ndarray, same shape (n, ...), at least 2-D
        Estimates and ground truths (problems (P, N, L), or images (n, h, w)).
    axes : tuple of int, optional
        Axes reduced by the norm (default: all but the first).
    zero : {"raise", "nan"}, default "raise"
        What an item whose ground truth has zero norm gives: a ``ValueError``,
        or NaN (drop such items with ``np.nanmean``).

    Returns
    -------
    ndarray (n,)
        The relative error of every item.

    Raises
    ------
    ValueError
        Shapes differ, fewer than 2 dimensions, no items, or (``zero="raise"``)
        an item whose ground truth is zero.
    """
    S_hat, S = _pair(S_hat, S)
    if S.ndim < 2 or S.shape[0] == 0:
        raise ValueError(f"need a stack of items of at least 2 dimensions; got shape {S.shape}")
    if zero not in ("raise", "nan"):
        raise ValueError(f"zero must be 'raise' or 'nan', got {zero!r}")
    if axes is None:
        axes = tuple(range(1, S.ndim))
    num = np.sqrt(np.sum((S_hat - S) ** 2, axis=axes))
    den = np.sqrt(np.sum(S**2, axis=axes))
    bad = np.flatnonzero(den == 0)
    if bad.size and zero == "raise":
        raise ValueError(
            f"S has {bad.size} item(s) of zero norm (first: item {int(bad[0])}); the relative "
            "error is undefined (use zero='nan' to skip them)"
        )
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def nmse(S_hat: np.ndarray, S: np.ndarray) -> float:
    """Relative reconstruction error ``||S_hat - S||_F / ||S||_F``.

    Parameters
    ----------
    S_hat, S : ndarray, same shape (N, L) or (P, N, L)
        Estimate and ground truth.  A 2-D array is one problem; a 3-D array is
        a batch of P problems, whose per-problem errors are averaged (the
        LSTM-CS paper's convention).

    Returns
    -------
    float
        The error of the problem, or the mean error over the batch.

    Raises
    ------
    ValueError
        Shapes differ, the arrays are not 2-D or 3-D, or a ground truth (a
        problem of the batch) has zero norm, so no relative error exists.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.zeros((6, 2)); S[0] = 1.0
    >>> round(nmse(1.01 * S, S), 6)
    0.01
    """
    S_hat, S = _pair(S_hat, S)
    if S.ndim == 2:
        den = float(np.linalg.norm(S))
        if den == 0:
            raise ValueError("S is all zero; the relative error is undefined")
        return float(np.linalg.norm(S_hat - S)) / den
    if S.ndim == 3:
        return float(np.mean(nmse_per_item(S_hat, S)))
    raise ValueError(
        f"S must be one problem (N, L) or a batch (P, N, L); got an array of shape {S.shape}"
    )


def _check_atol(atol: object) -> float:
    if isinstance(atol, (bool, np.bool_)) or not isinstance(atol, (int, float, np.number)):
        raise TypeError(f"atol must be a real number, got {atol!r}")
    v = float(atol)  # type: ignore[arg-type]
    if not (np.isfinite(v) and v >= 0):
        raise ValueError(f"atol must be finite and >= 0, got {atol!r}")
    return v


def support_recovery(S_hat: np.ndarray, S: np.ndarray, *, atol: float = 0.0) -> dict[str, float]:
    """Support-recovery measures per channel, averaged over problems and channels.

    Parameters
    ----------
    S_hat, S : ndarray (P, N, L) (or (N, L))
        Supports are the entries with ``|value| > atol``, per channel (axis 1
        indexes atoms).  Boolean support masks are accepted too.
    atol : float, default 0.0
        Magnitude at or below which an entry counts as zero.

    Returns
    -------
    dict with
        ``precision`` : mean ``|found & true| / |found|``
        ``recall`` : mean ``|found & true| / |true|``
        ``exact`` : fraction of channels whose support is recovered exactly
    """
    S_hat, S = _pair(S_hat, S, allow_bool=True)
    if S.ndim == 2:
        S_hat, S = S_hat[None], S[None]
    if S.ndim != 3:
        raise ValueError(
            f"S must be one problem (N, L) or a batch (P, N, L); got an array of shape {S.shape}"
        )
    atol = _check_atol(atol)
    S_hat, S = np.asarray(S_hat), np.asarray(S)
    for name, arr in (("S_hat", S_hat), ("S", S)):
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            raise ValueError(f"{name} contains NaN or infinity")
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
    """Harmonic mean (F1 score) of :func:`support_recovery`'s precision and recall.

    Parameters
    ----------
    S_hat, S : ndarray, same shape (N, L) or (P, N, L)
        Estimate and ground truth; supports are entries with ``|value| > atol``.
    atol : float, default 0.0
        Magnitude at or below which an entry counts as zero.

    Returns
    -------
    float
        ``2 p r / (p + r)`` in [0, 1] (0 when both are 0).
    """
    r = support_recovery(S_hat, S, atol=atol)
    p, q = r["precision"], r["recall"]
    return 0.0 if p + q == 0 else 2 * p * q / (p + q)
