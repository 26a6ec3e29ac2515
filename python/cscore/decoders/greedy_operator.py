"""OMP and SOMP on linear operators and sparse matrices (never forming ``A``).

:func:`cscore.omp` and :func:`cscore.somp` send here every ``A`` that is a
:class:`scipy.sparse.linalg.LinearOperator`, a scipy sparse matrix/array, or
any other operator with ``shape``, ``matvec`` and ``rmatvec`` (and optionally
``rmatmat`` and ``dtype``), such as PyLops operators (older PyLops versions
subclass SciPy's class, recent ones do not); dense arrays keep the compiled
Gram-based kernel of :mod:`cscore.decoders.greedy`.

What the operator path uses
---------------------------
* **Products only.**  Each iteration applies ``A^H`` once to the residuals of a
  block of problems (``rmatmat``; one ``rmatvec`` per channel for operators
  without a block product) to get the correlations, and fetches the new atom's
  column ``a_j = A e_j`` with one ``matvec`` (cached per call: an atom selected
  by several problems of a batch is fetched once).  ``A`` is never formed; the
  cost of a k-atom decode is about ``k`` applications of ``A^H`` plus ``k`` of
  ``A``, and the memory ``O(N)`` per problem of a block plus ``M k`` for the
  selected columns.
* **Least squares** on the support by an incrementally grown QR factorization
  of the selected columns (``M x k``): each new column is orthogonalized against
  the previous ones by modified Gram-Schmidt with one re-orthogonalization, so
  the residual is an exact orthogonal projection and the coefficients come from
  one triangular solve at the end.  Internal arithmetic is float64; the
  outputs are float32 when ``A`` (its ``dtype``) and ``Y`` are float32.
* **Selection** as the dense path: the atom maximizing ``sum_c (a_j^T r_c)^2 /
  ||a_j||^2`` (first index on ties), with the same "dependent" rules (vanishing
  correlation, atom already selected, new pivot ``<= 64 eps ||a_j||^2``), the
  same ``n_nonzero``/``tol`` stopping and stop reasons.

Column norms
------------
The selection needs ``||a_j||`` for all ``N`` columns, which for an operator
costs ``N`` products.  So, for an operator, the norms are **assumed equal**
(unit) unless ``column_norms=`` is passed.  Partial Fourier operators have equal
column norms exactly and partial DCT/Hadamard ones nearly so.  The assumption
is checked cheaply: a few columns drawn with a fixed seed, and every selected
column, are compared with the first drawn one; a ``RuntimeWarning`` says so when
they differ by more than 25% (then pass ``column_norms``).  Unequal norms only
change which atoms are picked, never the least-squares values on the support.
For scipy sparse matrices the norms are computed exactly from the stored
entries.  Columns of extreme scale are not rescaled as on the dense path.

Scale
-----
The loop runs on ``A / 2**a`` and on each problem's ``Y / 2**b`` (exact: powers of
two), ``2**a`` near the largest entry of a sparse ``A`` or the largest (given or
sampled) column norm of an operator, ``2**b`` near ``max |Y|`` of the problem; the
estimate is multiplied back by ``2**(b - a)``.  So ``A`` or ``Y`` near 1e-300 or
1e300 decode as at unit scale, and ``omp(A, c Y) = c omp(A, Y)`` (bit for bit for
powers of two ``c``) wherever the result is representable.

Checked products
----------------
Every output of the operator's ``matvec``, ``rmatvec`` and ``rmatmat`` is checked
where it enters: shape ((M,) or (M, 1); (N,) or (N, 1); (N, c)), a numeric dtype
and finite values, with a ``ValueError`` naming the method (an ``rmatmat`` that
returns its (c, N) transpose is refused, not reshaped into wrong atoms).

``tol="auto"`` needs the greedy path to ``min(M - 1, N)`` atoms (one operator
application each) and is refused for operators with a ``ValueError``.

Complex data
------------
A complex operator (its ``dtype`` complex) or complex ``Y`` runs the same
algorithm in complex128: correlations ``A^H r`` (``rmatvec``/``rmatmat`` are the
adjoint, as in SciPy and PyLops; ``conj(A).T`` for sparse matrices), scores
``sum_c |a_j^H r_c|^2 / ||a_j||^2``, Gram-Schmidt and the triangular solve with
conjugate inner products, so the least squares are the Hermitian ones of the
dense complex path.  A real operator with complex ``Y`` is applied to the real
and imaginary parts separately (one block product), never to complex vectors.
Outputs follow the dtype rule of :mod:`cscore.decoders._complex` (complex64
when every input is complex64 or float32, else complex128); residual norms are
real.  An operator whose ``dtype`` is real (or missing) but whose products
return complex values is a ``TypeError``: give it a complex ``dtype``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.linalg

from ..result import STOP_REASONS
from ._complex import as_array
from ._greedy_common import DEPENDENT_MSG, GreedyLayout, checked_rows, resolve_stopping
from ._operator_products import (
    OperatorColumns,
    check_equal_norms,
    column_norms_of,
    is_operator,
    ldexp,
)

__all__ = ["is_operator", "run_operator"]

#: Entries of ``A^H R`` (``N`` x problems x channels) computed at once: 2**23
#: float64 entries = 64 MiB; larger batches are split into blocks of problems.
_BLOCK_ENTRIES = 1 << 23

#: Atoms the per-problem arrays of the greedy state have room for at first; they
#: grow (room doubled) as atoms are added.
_START_ATOMS = 32

_STOP = {name: i for i, name in enumerate(STOP_REASONS)}

_AUTO_MSG = (
    "{fn}: tol='auto' is not available when A is an operator or a sparse matrix: it "
    "needs the greedy path to min(M - 1, N) atoms, one operator application each. "
    "Pass a numeric tol or n_nonzero, or a dense array (A.toarray()) for small problems."
)


def _sqsum(subscripts: str, X: np.ndarray) -> np.ndarray:
    """``sum |X|^2`` over the axes that ``subscripts`` (``"pml->pl"``) drops; real."""
    ins, out = subscripts.split("->")
    if X.dtype.kind != "c":
        return np.einsum(f"{ins},{ins}->{out}", X, X)
    return np.einsum(f"{ins},{ins}->{out}", X.conj(), X).real


class _State:
    """The greedy state of a batch of P problems with L channels each.

    Real (float64) or complex (complex128) as ``Y``; inner products conjugate
    their first factor, so the basis ``Q`` is orthonormal in either case.
    """

    def __init__(self, Y: np.ndarray, K: int, eps: float) -> None:
        P, M, L = Y.shape
        self.Y = Y
        self.cplx = Y.dtype.kind == "c"
        self.res = Y.copy()
        # Room for `cap` atoms, grown (doubled, at most K) as atoms are added, so
        # that memory follows the atoms selected (a tol-stopped decode), not K.
        self.K = K
        cap = min(K, _START_ATOMS)
        self.Q = np.zeros((P, cap, M), dtype=Y.dtype)  # orthonormal basis of the support, by rows
        self.R = np.zeros((P, cap, cap), dtype=Y.dtype)
        self.z = np.zeros((P, cap, L), dtype=Y.dtype)
        self.n = np.zeros(P, dtype=np.int64)
        self.atoms = np.full((P, cap), -1, dtype=np.int64)
        self.stop = np.full(P, -1, dtype=np.int64)
        self.dependent = np.zeros(P, dtype=bool)
        self.ytot2 = _sqsum("pml->p", Y)
        self.eps = eps

    def _ensure(self, n: int) -> None:
        """Room for ``n + 1`` atoms (values are copied, none changes)."""
        cap = self.atoms.shape[1]
        if n < cap:
            return
        new = min(self.K, max(2 * cap, n + 1))
        P, _, M = self.Q.shape

        def grown(old: np.ndarray, shape: tuple[int, ...], fill: int = 0) -> np.ndarray:
            out = np.full(shape, fill, dtype=old.dtype)
            out[tuple(slice(0, d) for d in old.shape)] = old
            return out

        self.Q = grown(self.Q, (P, new, M))
        self.R = grown(self.R, (P, new, new))
        self.z = grown(self.z, (P, new, self.z.shape[2]))
        self.atoms = grown(self.atoms, (P, new), -1)

    def atoms_padded(self) -> np.ndarray:
        """The atoms in selection order, (P, K), -1 padded."""
        P, cap = self.atoms.shape
        if cap == self.K:
            return self.atoms
        out = np.full((P, self.K), -1, dtype=np.int64)
        out[:, :cap] = self.atoms
        return out

    def add(self, p: int, j: int, a: np.ndarray) -> bool:
        """Append atom ``j`` (column ``a``) to problem ``p``; False if dependent."""
        n = int(self.n[p])
        self._ensure(n)
        Qn = self.Q[p, :n]
        Qh = Qn.conj() if self.cplx else Qn
        w = Qh @ a
        v = a - w @ Qn
        w2 = Qh @ v  # one re-orthogonalization ("twice is enough")
        v -= w2 @ Qn
        w += w2
        # einsum, not BLAS ddot: OpenBLAS threads a long ddot, slowly on busy machines
        d = float(_sqsum("m->", v))
        if not d > 64 * self.eps * float(_sqsum("m->", a)):
            return False
        rnn = np.sqrt(d)
        q = v / rnn
        self.Q[p, n] = q
        self.R[p, :n, n] = w
        self.R[p, n, n] = rnn
        zc = np.einsum("m,ml->l", q.conj() if self.cplx else q, self.Y[p])
        self.z[p, n] = zc
        self.res[p] -= np.outer(q, zc)
        self.atoms[p, n] = j
        self.n[p] = n + 1
        return True


def _greedy(op: OperatorColumns, Y: np.ndarray, norms: np.ndarray, K: int, cap_is_k: bool,
            tol: np.ndarray) -> _State:
    """Run the greedy loop on (P, M, L) ``Y`` (float64 or complex128); the final state.

    ``tol`` is each problem's residual tolerance (negative: none).
    """
    L = Y.shape[2]
    st = _State(Y, K, float(np.finfo(op.dtype).eps))
    inv2 = 1.0 / norms**2
    vanish = (32 * st.eps) ** 2 * st.ytot2
    block = max(1, _BLOCK_ENTRIES // (op.N * L * (2 if op.cplx else 1)))
    while True:
        active = st.stop < 0
        if np.any(tol >= 0):
            measure = np.sqrt(_sqsum("pml->pl", st.res)).sum(axis=1)
            st.stop[active & (tol >= 0) & (measure <= tol)] = _STOP["tol"]
        full = (st.stop < 0) & (st.n >= K)
        st.stop[full] = _STOP["n_nonzero" if cap_is_k else "exhausted"]
        idx = np.flatnonzero(st.stop < 0)
        if idx.size == 0:
            return st
        for b0 in range(0, idx.size, block):
            ids = idx[b0:b0 + block]
            R = st.res[ids].transpose(1, 0, 2).reshape(op.M, ids.size * L)
            C = op.rmatmat(R).reshape(op.N, ids.size, L)
            score = _sqsum("npl->np", C) * inv2[:, None]
            best_j = np.argmax(score, axis=0)
            for i, p in enumerate(ids):
                j = int(best_j[i])
                if not score[j, i] > vanish[p] or j in st.atoms[p, : st.n[p]]:
                    st.stop[p], st.dependent[p] = _STOP["dependent"], True
                elif not st.add(int(p), j, op.column(j)):
                    st.stop[p], st.dependent[p] = _STOP["dependent"], True


def _prepare(
    layout: GreedyLayout, A: Any, Y: Any
) -> tuple[OperatorColumns, np.ndarray, np.ndarray]:
    """Validate; return the operator, Y (checked), and its (P, M, L) view (``op.work``)."""
    y_dtype = np.asarray(Y).dtype if Y is not None else np.dtype(np.float64)
    op = OperatorColumns(layout.fn, A, y_dtype)
    Y_arr = as_array(
        layout.y_name, Y, ndim=layout.y_ndims, dtype=op.dtype, empty_batch=layout.empty
    )
    checked_rows(layout, Y_arr.shape, (op.M, op.N))
    if layout.fn == "omp":
        Yv = Y_arr[None, :, None] if Y_arr.ndim == 1 else Y_arr.T[:, :, None]
    else:
        Yv = Y_arr[None] if Y_arr.ndim == 2 else Y_arr
    return op, Y_arr, np.array(Yv, dtype=op.work)


def run_operator(
    layout: GreedyLayout, A: Any, Y: Any, n_nonzero: Any, tol: Any, column_norms: Any
) -> dict[str, Any]:
    """OMP/SOMP with an operator or sparse ``A``; outputs as the dense path's.

    Parameters
    ----------
    layout : GreedyLayout
        The calling decoder (shapes of ``Y`` and of the outputs follow it).
    A : LinearOperator or scipy sparse matrix, shape (M, N)
        The sensing operator (real or complex).
    Y : array_like
        The measurements, shaped as :func:`cscore.omp` / :func:`cscore.somp` take them.
    n_nonzero, tol : optional
        The stopping rule (``tol="auto"`` refused).
    column_norms : array_like of shape (N,), optional
        Column norms of ``A`` for the selection (see the module docstring).

    Returns
    -------
    dict
        ``X`` (shape of the dense path's output), ``residual`` (P, L), ``n_iter``
        (P,), ``stop`` (P,) reason strings, ``atoms`` (P, max_atoms) and
        ``single`` (one problem given without a batch axis).
    """
    fn = layout.fn
    if isinstance(tol, str) and tol == "auto":
        raise ValueError(_AUTO_MSG.format(fn=fn))
    op, Y_arr, Yv = _prepare(layout, A, Y)
    K, cap_is_k, tol_value = resolve_stopping(n_nonzero, tol, op.M, op.N)
    norms = column_norms_of(op, column_norms)
    assumed = column_norms is None and not op.sparse
    # Each problem runs on Y / 2**b (exact; "Scale" in the module docstring).
    mx = np.max(np.abs(Yv), axis=(1, 2)) if Yv.size else np.zeros(Yv.shape[0])
    b = np.frexp(np.where(mx > 0.0, mx, 1.0))[1].astype(np.int64)
    Yv = ldexp(Yv, -b[:, None, None])
    with np.errstate(over="ignore"):
        tol_p = np.ldexp(tol_value, -b) if tol_value >= 0 else np.full(b.shape, -1.0)
    st = _greedy(op, Yv, norms, K, cap_is_k, tol_p)
    check_equal_norms(op, assumed)
    P, _, L = Yv.shape
    Xp = np.zeros((P, op.N, L), dtype=op.work)
    residual = np.zeros((P, L))
    warn = 0
    for p in range(P):
        n = int(st.n[p])
        r = Yv[p]
        if n:
            x = scipy.linalg.solve_triangular(st.R[p, :n, :n], st.z[p, :n])
            Xp[p, st.atoms[p, :n]] = x
            cols = np.stack([op.column(int(j)) for j in st.atoms[p, :n]], axis=1)
            r = Yv[p] - cols @ x
        residual[p] = np.linalg.norm(r, axis=0)
        if st.dependent[p] and residual[p].sum() > np.sqrt(st.eps * st.ytot2[p]):
            warn += 1
    if warn:
        warnings.warn(DEPENDENT_MSG.format(fn=fn, count=warn, total=P), RuntimeWarning,
                      stacklevel=4)
    with np.errstate(over="ignore"):  # an estimate beyond the float range is inf
        Xp = ldexp(Xp, (b - op.shift)[:, None, None])
        residual = np.ldexp(residual, b[:, None])
    X = _output_layout(fn, Xp.astype(op.dtype), Y_arr.ndim)
    return {
        "X": X,
        "residual": residual.astype(np.finfo(op.dtype).dtype),
        "n_iter": st.n.copy(),
        "stop": np.asarray(STOP_REASONS, dtype=object)[st.stop].astype(str),
        "atoms": st.atoms_padded(),
        "single": P == 1 and Y_arr.ndim == layout.single_ndim,
    }


def _output_layout(fn: str, Xp: np.ndarray, y_ndim: int) -> np.ndarray:
    """(P, N, L) solutions in the layout of the dense path's ``X``."""
    if fn == "omp":
        return np.ascontiguousarray(Xp[0, :, 0] if y_ndim == 1 else Xp[:, :, 0].T)
    return np.ascontiguousarray(Xp[0] if y_ndim == 2 else Xp)
