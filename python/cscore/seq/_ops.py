"""Numerical building blocks of the echo state network (chapter 2 of the thesis).

Conventions (row-major frames, every sequence's frames concatenated):

* ``X`` (F, D) inputs (context window and a bias column already added), sequence
  ``s`` covers frames ``offsets[s]:offsets[s+1]``.
* ``W`` (D, N) input weights, ``W_rec`` (N, N) sparse recurrent weights in CSR;
  row ``i`` of ``W_rec`` holds the weights *into* unit ``i``.
* ``h_f = sigmoid(x_f W + W_rec h_{f-1})`` with ``h = 0`` before every sequence
  (eq. 2.1 with ``W_fb = 0``, written for row vectors).
* The readout sees ``[h_f, x_f]`` (eq. 2.7: direct input-to-output connections);
  ``U`` is the ridge solution of eq. 2.9.

The compiled kernels (``cscore._core.esn_*``) do the recursions; the ``*_numpy``
functions are the plain references they are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.sparse
import scipy.sparse.linalg

from .._config import get_num_threads

__all__ = [
    "SparseRec",
    "backward",
    "backward_numpy",
    "forward",
    "forward_numpy",
    "rec_grad",
    "rec_grad_numpy",
    "ridge_readout",
    "spectral_radius",
]


@dataclass
class SparseRec:
    """A square CSR matrix with a fixed sparsity pattern (only ``data`` is learned)."""

    indptr: np.ndarray  # (N+1,) int64
    indices: np.ndarray  # (nnz,) int64
    data: np.ndarray  # (nnz,) float64

    @property
    def n(self) -> int:
        return int(self.indptr.shape[0] - 1)

    def to_scipy(self) -> scipy.sparse.csr_matrix:
        return scipy.sparse.csr_matrix(
            (self.data, self.indices, self.indptr), shape=(self.n, self.n)
        )

    def dense(self) -> np.ndarray:
        return np.asarray(self.to_scipy().toarray())

    @classmethod
    def random(
        cls, n: int, n_connections: int, rng: np.random.Generator
    ) -> SparseRec:
        """Each unit receives ``n_connections`` distinct inputs, weights N(0, 1)."""
        k = min(n_connections, n)
        cols = np.empty((n, k), dtype=np.int64)
        for i in range(n):
            cols[i] = np.sort(rng.choice(n, size=k, replace=False))
        indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
        data = rng.standard_normal(n * k)
        return cls(indptr, cols.reshape(-1), data)


def spectral_radius(rec: SparseRec) -> float:
    """Largest eigenvalue magnitude of ``W_rec`` (dense for N <= 200, ARPACK otherwise).

    ARPACK starts from a fixed vector, so the value is reproducible.
    """
    n = rec.n
    if n <= 200:
        return float(np.max(np.abs(np.linalg.eigvals(rec.dense()))))
    v0 = np.ones(n) / np.sqrt(n)
    try:
        vals = scipy.sparse.linalg.eigs(
            rec.to_scipy(), k=1, which="LM", v0=v0, return_eigenvectors=False, tol=1e-6,
            maxiter=20 * n,
        )
        return float(np.max(np.abs(vals)))
    except scipy.sparse.linalg.ArpackNoConvergence:  # pragma: no cover - rare
        return float(np.max(np.abs(np.linalg.eigvals(rec.dense()))))


def _threads(n_threads: int | None) -> int:
    return get_num_threads() if n_threads is None else int(n_threads)


# ---------------------------------------------------------------- references
def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)))


def forward_numpy(A: np.ndarray, rec: SparseRec, offsets: np.ndarray) -> np.ndarray:
    """Reference recursion: ``H[f] = sigmoid(A[f] + W_rec H[f-1])`` (``A = X W``)."""
    R = rec.to_scipy()
    H = np.empty_like(A)
    for s in range(len(offsets) - 1):
        h = np.zeros(A.shape[1])
        for f in range(int(offsets[s]), int(offsets[s + 1])):
            z = A[f] + (R @ h if f > offsets[s] else 0.0)
            h = 1.0 / (1.0 + np.exp(-z))
            H[f] = h
    return H


def backward_numpy(
    H: np.ndarray, G: np.ndarray, rec: SparseRec, offsets: np.ndarray, m: int
) -> np.ndarray:
    """Reference for :func:`backward`."""
    R = rec.to_scipy()
    sp = H * (1.0 - H)
    D = sp * G
    for s in range(len(offsets) - 1):
        a, b = int(offsets[s]), int(offsets[s + 1])
        cur = D[a:b].copy()
        for _ in range(m):
            nxt = np.zeros_like(cur)
            if b - a > 1:
                nxt[:-1] = (R.T @ cur[1:].T).T * sp[a : b - 1]
            D[a:b] += nxt
            cur = nxt
    return D


def rec_grad_numpy(
    D: np.ndarray, H: np.ndarray, rec: SparseRec, offsets: np.ndarray
) -> np.ndarray:
    """Reference for :func:`rec_grad`: ``(D^T H_prev)`` sampled on the pattern."""
    Hp = np.zeros_like(H)
    Hp[1:] = H[:-1]
    Hp[offsets[:-1]] = 0.0
    full = D.T @ Hp
    rows = np.repeat(np.arange(rec.n), np.diff(rec.indptr))
    return np.asarray(full[rows, rec.indices])


# ---------------------------------------------------------------- dispatch
def forward(
    A: np.ndarray, rec: SparseRec, offsets: np.ndarray, n_threads: int | None = None
) -> np.ndarray:
    """Reservoir states for all frames (compiled kernel)."""
    from .. import _core

    return np.asarray(
        _core.esn_forward(A, rec.indptr, rec.indices, rec.data, offsets, _threads(n_threads))
    )


#: Most work (frames x steps x nonzeros of ``W_rec``) of one compiled backward call;
#: larger passes are split between sequences so that Ctrl-C is seen between calls.
BACKWARD_WORK_PER_CALL = 2_000_000_000


def backward(
    H: np.ndarray,
    G: np.ndarray,
    rec: SparseRec,
    offsets: np.ndarray,
    m: int,
    n_threads: int | None = None,
) -> np.ndarray:
    """``sum_{k=0..m} Delta^(k)``: pre-activation gradients with m steps of dependency.

    ``Delta^(0)_f = sigma'_f * G_f`` and ``Delta^(k)_f = sigma'_f * (Delta^(k-1)_{f+1}
    W_rec)``, zero past the end of a sequence; ``G = dE/dH``.  Sequences are
    independent: a pass of more than :data:`BACKWARD_WORK_PER_CALL` is made of
    several compiled calls over groups of whole sequences (same result), so that
    Python sees signals (Ctrl-C) between them.
    """
    from .. import _core

    def call(a: int, b: int, off: np.ndarray) -> np.ndarray:
        return np.asarray(
            _core.esn_backward(
                H[a:b], G[a:b], rec.indptr, rec.indices, rec.data, off, int(m),
                _threads(n_threads),
            )
        )

    offs = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offs)
    steps = np.minimum(np.maximum(lengths - 1, 0), max(int(m), 0))
    work = lengths * steps * max(int(rec.indices.size), 1)
    if int(work.sum()) <= BACKWARD_WORK_PER_CALL or lengths.size < 2:
        return call(0, H.shape[0], offsets)
    groups, start, acc = [], 0, 0
    for s in range(lengths.size):  # consecutive sequences, at most the budget each
        if s > start and acc + int(work[s]) > BACKWARD_WORK_PER_CALL:
            groups.append((start, s))
            start, acc = s, 0
        acc += int(work[s])
    groups.append((start, lengths.size))
    D = np.empty((H.shape[0], H.shape[1]))
    for s0, s1 in groups:
        a, b = int(offs[s0]), int(offs[s1])
        D[a:b] = call(a, b, offs[s0 : s1 + 1] - a)
    return D


def rec_grad(
    D: np.ndarray,
    H: np.ndarray,
    rec: SparseRec,
    offsets: np.ndarray,
    n_threads: int | None = None,
) -> np.ndarray:
    """Gradient on the nonzeros of ``W_rec``: ``sum_f D[f, i] H[f-1, j]``."""
    from .. import _core

    return np.asarray(
        _core.esn_rec_grad(D, H, rec.indptr, rec.indices, rec.data, offsets, _threads(n_threads))
    )


def ridge_readout(Hc: np.ndarray, T: np.ndarray, mu: float) -> np.ndarray:
    """``U = (Hc^T Hc + mu I)^{-1} Hc^T T`` (eq. 2.9 for row-major frames).

    The Gram matrix is one BLAS ``syrk`` (upper triangle) and the solve a
    Cholesky factorization; a singular system (``mu`` tiny) falls back to
    least squares.
    """
    # Hc is C-ordered, so Hc.T is Fortran-ordered: syrk(Hc.T) = Hc^T Hc without a copy
    gram = scipy.linalg.blas.dsyrk(1.0, np.ascontiguousarray(Hc).T, trans=0, lower=0)
    gram.flat[:: gram.shape[0] + 1] += mu
    rhs = Hc.T @ T
    try:
        c = scipy.linalg.cho_factor(gram, lower=False, overwrite_a=True, check_finite=False)
        return np.asarray(scipy.linalg.cho_solve(c, rhs, check_finite=False))
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        full = Hc.T @ Hc
        full.flat[:: full.shape[0] + 1] += mu
        return np.asarray(np.linalg.lstsq(full, rhs, rcond=None)[0])


@dataclass
class Module:
    """One fitted module: input weights, sparse recurrent matrix, readout, cost history."""

    W: np.ndarray  # (D_in, N)
    rec: SparseRec
    U: np.ndarray  # (N + D_in, C)
    history: list[float]
