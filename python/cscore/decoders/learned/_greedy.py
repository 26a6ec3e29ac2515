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

from dataclasses import dataclass
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


@dataclass
class _Chunk:
    """The state of a chunk of ``b`` problems of ``L`` channels during the greedy loop.

    Per-channel bookkeeping; with joint supports all channels share the atoms.
    """

    R: np.ndarray  # (b, L, M) residuals
    Q: np.ndarray  # (b, L, M, k_max) orthonormal basis of each support
    Rt: np.ndarray  # (b, L, k_max, k_max) triangular factor: support = Q Rt
    coef: np.ndarray  # (b, L, k_max) residual coordinates on the basis
    count: np.ndarray  # (b, L) atoms in each support
    selected: np.ndarray  # (b, L, N) atoms in each support, as a mask
    live: np.ndarray  # (b, L) channel may still take atoms
    atoms: np.ndarray  # (b, L, k_max) atoms in selection order, -1 padded
    n_iter: np.ndarray  # (b,)
    stop: np.ndarray  # (b,) stop code, -1 while undecided
    running: np.ndarray  # (b,)

    @classmethod
    def start(cls, Y: np.ndarray, N: int, k_max: int) -> _Chunk:
        """The state before the first iteration, for ``Y`` (b, M, L)."""
        b, M, L = Y.shape
        return cls(
            R=Y.transpose(0, 2, 1).copy(),
            Q=np.zeros((b, L, M, k_max)),
            Rt=np.zeros((b, L, k_max, k_max)),
            coef=np.zeros((b, L, k_max)),
            count=np.zeros((b, L), dtype=np.int64),
            selected=np.zeros((b, L, N), dtype=bool),
            live=np.ones((b, L), dtype=bool),
            atoms=np.full((b, L, k_max), -1, dtype=np.int64),
            n_iter=np.zeros(b, dtype=np.int64),
            stop=np.full(b, -1, dtype=np.int64),
            running=np.ones(b, dtype=bool),
        )


def _chunk(
    A: np.ndarray,
    col_norms: np.ndarray,
    Y: np.ndarray,
    score: Callable[[np.ndarray], np.ndarray],
    joint: bool,
    k_max: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`greedy_decode` on the problems ``Y`` (b, M, L) of one chunk."""
    N = A.shape[1]
    st = _Chunk.start(Y, N, k_max)
    for _ in range(k_max):
        idx = _still_running(st, tol)
        if idx.size == 0:
            break
        pick = _pick_atoms(st, idx, score, joint)
        st.n_iter[idx] += 1
        _add_atoms(st, A, col_norms, idx, pick, k_max)
        if joint:
            # a problem whose atom was dependent (for its channels) stops
            dep = st.running & ~st.live.all(axis=1)
            st.live[dep] = False
        full = st.count >= k_max
        st.live &= ~full
    S = _coefficients(st, N, k_max)
    resid = np.linalg.norm(st.R, axis=2).sum(axis=1)
    stop, count = st.stop, st.count
    if tol >= 0:
        stop[(stop < 0) & (resid <= tol) & (count.max(axis=1) < k_max)] = _TOL
    stop[(stop < 0) & (count.max(axis=1) < k_max)] = _DEPENDENT
    return S, st.atoms, resid, st.n_iter, stop


def _still_running(st: _Chunk, tol: float) -> np.ndarray:
    """Stop the problems that met ``tol`` or have no live channel; the others' indices."""
    if tol >= 0:
        hit = st.running & (np.linalg.norm(st.R, axis=2).sum(axis=1) <= tol)
        st.stop[hit] = _TOL
        st.running &= ~hit
    dead = st.running & ~st.live.any(axis=1)
    st.stop[dead] = _DEPENDENT
    st.running &= ~dead
    return np.flatnonzero(st.running)


def _pick_atoms(
    st: _Chunk, idx: np.ndarray, score: Callable[[np.ndarray], np.ndarray], joint: bool
) -> np.ndarray:
    """The best-scoring atom not yet selected, (n, L), for the running problems ``idx``."""
    _, L, M = st.R.shape
    X = normalize_maxabs(st.R[idx].reshape(-1, M)).reshape(idx.size, L, M)
    sc = np.array(score(X), dtype=np.float64, copy=True)
    if joint:
        sc[st.selected[idx, 0]] = -np.inf
        return np.repeat(np.argmax(sc, axis=1)[:, None], L, axis=1)  # (n, L)
    sc[st.selected[idx]] = -np.inf
    return np.argmax(sc, axis=2)  # (n, L)


def _add_atoms(
    st: _Chunk, A: np.ndarray, col_norms: np.ndarray, idx: np.ndarray, pick: np.ndarray,
    k_max: int,
) -> None:
    """Add ``pick`` to the support of every live channel of ``idx``, updating its QR.

    The new atom is orthogonalized (twice) against the channel's basis; an atom
    that is linearly dependent on it (or already selected) ends the channel.
    """
    Q, Rt, R = st.Q, st.Rt, st.R
    bi, li = np.nonzero(st.live[idx])
    pi = idx[bi]
    at = pick[bi, li]
    t = st.count[pi, li]
    a = A[:, at].T.copy()  # (c, M)
    kk = int(t.max()) if t.size else 0  # basis columns in use
    proj = np.zeros((pi.size, k_max))
    Qs = Q[pi, li, :, :kk]  # (c, M, kk)
    for _rep in range(2):
        c = np.einsum("cmk,cm->ck", Qs, a)
        a -= np.einsum("cmk,ck->cm", Qs, c)
        proj[:, :kk] += c
    nrm = np.linalg.norm(a, axis=1)
    ok = (nrm > _DEP_RTOL * col_norms[at]) & ~st.selected[pi, li, at]
    st.live[pi[~ok], li[~ok]] = False
    pi, li, at, t, a, nrm, proj = pi[ok], li[ok], at[ok], t[ok], a[ok], nrm[ok], proj[ok]
    q = a / nrm[:, None]
    Q[pi, li, :, t] = q
    Rt[pi, li, :, t] = proj
    Rt[pi, li, t, t] = nrm
    c_new = np.einsum("cm,cm->c", q, R[pi, li])
    st.coef[pi, li, t] = c_new
    R[pi, li] -= q * c_new[:, None]
    st.atoms[pi, li, t] = at
    st.selected[pi, li, at] = True
    st.count[pi, li] += 1


def _coefficients(st: _Chunk, N: int, k_max: int) -> np.ndarray:
    """The solutions (b, N, L): ``Rt x = coef`` on the first ``count`` entries of each support."""
    b, L, _ = st.R.shape
    count, atoms = st.count, st.atoms
    S = np.zeros((b, N, L))
    eye = np.eye(k_max)
    used = np.arange(k_max)[None, None, :] < count[:, :, None]  # (b, L, k)
    Rt_full = np.where(used[:, :, :, None] & used[:, :, None, :], st.Rt, 0.0)
    Rt_full += eye * (~used)[:, :, :, None]
    x = np.linalg.solve(Rt_full, np.where(used, st.coef, 0.0)[..., None])[..., 0]
    bb, ll, jj = np.nonzero(used)
    S[bb, atoms[bb, ll, jj], ll] = x[bb, ll, jj]
    return S
