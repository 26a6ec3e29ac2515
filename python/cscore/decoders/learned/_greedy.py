"""A batched NumPy greedy loop shared by the learned decoders (NWSOMP, CDSN-CS).

Each iteration hands the max-abs normalized residuals of every channel,
``X`` (b, L, M), to a scoring function and adds the best-scoring atom not yet
selected:

* ``joint=True`` (SOMP-like): ``score(X)`` is (b, N); one atom per problem,
  added to the support shared by all channels;
* ``joint=False`` (LSTM-CS-like): ``score(X)`` is (b, L, N); one atom per
  channel, each channel with its own support.

Least squares is kept up to date by growing a thin QR of each support by one
column per atom (Gram--Schmidt, orthogonalized twice), so the residual is
exactly the least-squares residual; the coefficients come from one triangular
solve at the end.  All problems of a chunk advance together.

Stopping, as in :meth:`cscore.LSTMCS.decode`: ``k_max`` atoms per channel;
``tol`` stops a problem once the sum over channels of residual norms is
``<= tol`` (checked before each iteration); an atom linearly dependent on the
support stops that channel (joint: the problem).

Also the small pieces the networks share: the input scaling
:func:`normalize_maxabs`, :func:`sigmoid` and the weight-entry check
:func:`checked_weight`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["checked_weight", "greedy_decode", "normalize_maxabs", "sigmoid"]

#: stop codes (indices into cscore.result.STOP_REASONS)
_N_NONZERO, _TOL, _DEPENDENT, _MAX_ITER = 0, 1, 2, 3
_DEP_RTOL = 1e-10

def normalize_maxabs(r: np.ndarray) -> np.ndarray:
    """Divide each row of ``r`` (B, M) by its largest absolute entry (0 stays 0).

    Parameters
    ----------
    r : ndarray (B, M)
        Residuals, one per row.

    Returns
    -------
    ndarray (B, M)
        Rows scaled to max-abs 1; an all-zero row stays zero.
    """
    scale = np.abs(r).max(axis=-1, keepdims=True)
    return np.divide(r, scale, out=np.zeros_like(r), where=scale > 0)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function (through tanh: no overflow warnings), for the scoring networks."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def checked_weight(name: str, arr: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A scoring network's weight entry ``name`` as C-contiguous float32.

    Raises ``ValueError`` naming ``name`` when its shape is not ``shape`` or it
    holds anything but finite real numbers.
    """
    a = np.asarray(arr)
    if a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
    if a.dtype.kind not in "fiu" or not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite real numbers")
    return np.ascontiguousarray(a, dtype=np.float32)


def greedy_decode(
    A: np.ndarray,
    Y: np.ndarray,
    score: Callable[[np.ndarray], np.ndarray],
    *,
    joint: bool,
    k_max: int,
    tol: float,
    k_from_user: bool,
    chunk: int = 256,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run the greedy loop over a batch.

    Parameters
    ----------
    A : ndarray (M, N) float64
    Y : ndarray (B, M, L) float64
    score : callable
        ``X`` (b, L, M) -> scores (b, N) if ``joint`` else (b, L, N).
    joint : bool
        One support for all channels (True) or one per channel.
    k_max : int
        Most atoms per channel.
    tol : float
        Residual threshold (negative: none).
    k_from_user : bool
        Reaching ``k_max`` reports "n_nonzero" (True) or "max_iter" (False).
    chunk : int
        Problems advanced together.

    Returns
    -------
    S : ndarray (B, N, L) float64
    atoms : ndarray (B, L, k_max) int64
        Atoms in selection order, -1 padded.
    resid : ndarray (B,)
        Sum over channels of final residual norms.
    n_iter : ndarray (B,) int64
        Iterations run.
    stop : ndarray (B,) int64
        Stop codes (see :data:`cscore.result.STOP_REASONS`).
    """
    B, _, L = Y.shape
    N = A.shape[1]
    col_norms = np.linalg.norm(A, axis=0)
    S = np.zeros((B, N, L))
    atoms = np.full((B, L, k_max), -1, dtype=np.int64)
    resid = np.zeros(B)
    n_iter = np.zeros(B, dtype=np.int64)
    stop = np.full(B, _N_NONZERO if k_from_user else _MAX_ITER, dtype=np.int64)
    for p0 in range(0, B, chunk):
        p1 = min(B, p0 + chunk)
        out = _chunk(A, col_norms, Y[p0:p1], score, joint, k_max, tol)
        S[p0:p1], atoms[p0:p1], resid[p0:p1], n_iter[p0:p1], st = out
        stop[p0:p1] = np.where(st >= 0, st, stop[p0:p1])
    return S, atoms, resid, n_iter, stop


def _chunk(
    A: np.ndarray,
    col_norms: np.ndarray,
    Y: np.ndarray,
    score: Callable[[np.ndarray], np.ndarray],
    joint: bool,
    k_max: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    b, M, L = Y.shape
    N = A.shape[1]
    # per-channel bookkeeping; with joint supports all channels share the atoms
    R = Y.transpose(0, 2, 1).copy()  # (b, L, M) residuals
    Q = np.zeros((b, L, M, k_max))
    Rt = np.zeros((b, L, k_max, k_max))
    coef = np.zeros((b, L, k_max))
    count = np.zeros((b, L), dtype=np.int64)
    selected = np.zeros((b, L, N), dtype=bool)
    live = np.ones((b, L), dtype=bool)  # channel may still take atoms
    atoms = np.full((b, L, k_max), -1, dtype=np.int64)
    n_iter = np.zeros(b, dtype=np.int64)
    stop = np.full(b, -1, dtype=np.int64)
    running = np.ones(b, dtype=bool)
    for _ in range(k_max):
        if tol >= 0:
            hit = running & (np.linalg.norm(R, axis=2).sum(axis=1) <= tol)
            stop[hit] = _TOL
            running &= ~hit
        dead = running & ~live.any(axis=1)
        stop[dead] = _DEPENDENT
        running &= ~dead
        idx = np.flatnonzero(running)
        if idx.size == 0:
            break
        X = normalize_maxabs(R[idx].reshape(-1, M)).reshape(idx.size, L, M)
        sc = np.array(score(X), dtype=np.float64, copy=True)
        if joint:
            sc[selected[idx, 0]] = -np.inf
            pick = np.repeat(np.argmax(sc, axis=1)[:, None], L, axis=1)  # (n, L)
        else:
            sc[selected[idx]] = -np.inf
            pick = np.argmax(sc, axis=2)  # (n, L)
        n_iter[idx] += 1
        # orthogonalize the new atom of every live channel against its basis
        bi, li = np.nonzero(live[idx])
        pi = idx[bi]
        at = pick[bi, li]
        t = count[pi, li]
        a = A[:, at].T.copy()  # (c, M)
        kk = int(t.max()) if t.size else 0  # basis columns in use
        proj = np.zeros((pi.size, k_max))
        Qs = Q[pi, li, :, :kk]  # (c, M, kk)
        for _rep in range(2):
            c = np.einsum("cmk,cm->ck", Qs, a)
            a -= np.einsum("cmk,ck->cm", Qs, c)
            proj[:, :kk] += c
        nrm = np.linalg.norm(a, axis=1)
        ok = (nrm > _DEP_RTOL * col_norms[at]) & ~selected[pi, li, at]
        live[pi[~ok], li[~ok]] = False
        pi, li, at, t, a, nrm, proj = pi[ok], li[ok], at[ok], t[ok], a[ok], nrm[ok], proj[ok]
        q = a / nrm[:, None]
        Q[pi, li, :, t] = q
        Rt[pi, li, :, t] = proj
        Rt[pi, li, t, t] = nrm
        c_new = np.einsum("cm,cm->c", q, R[pi, li])
        coef[pi, li, t] = c_new
        R[pi, li] -= q * c_new[:, None]
        atoms[pi, li, t] = at
        selected[pi, li, at] = True
        count[pi, li] += 1
        if joint:
            # a problem whose atom was dependent (for its channels) stops
            dep = running & ~live.all(axis=1)
            live[dep] = False
        full = count >= k_max
        live &= ~full
    # coefficients: Rt x = coef on the first count entries of each support
    S = np.zeros((b, N, L))
    eye = np.eye(k_max)
    used = np.arange(k_max)[None, None, :] < count[:, :, None]  # (b, L, k)
    Rt_full = np.where(used[:, :, :, None] & used[:, :, None, :], Rt, 0.0)
    Rt_full += eye * (~used)[:, :, :, None]
    x = np.linalg.solve(Rt_full, np.where(used, coef, 0.0)[..., None])[..., 0]
    bb, ll, jj = np.nonzero(used)
    S[bb, atoms[bb, ll, jj], ll] = x[bb, ll, jj]
    resid = np.linalg.norm(R, axis=2).sum(axis=1)
    if tol >= 0:
        stop[(stop < 0) & (resid <= tol) & (count.max(axis=1) < k_max)] = _TOL
    stop[(stop < 0) & (count.max(axis=1) < k_max)] = _DEPENDENT
    return S, atoms, resid, n_iter, stop
