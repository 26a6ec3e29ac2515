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

import math
import warnings
from typing import Any, Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._validation import as_float_array, check_finite, transposed_hint
from ..result import STOP_REASONS
from ._complex import as_array

__all__ = ["is_operator", "run_operator"]

#: Entries of ``A^H R`` (``N`` x problems x channels) computed at once: 2**23
#: float64 entries = 64 MiB; larger batches are split into blocks of problems.
_BLOCK_ENTRIES = 1 << 23
#: Columns drawn to check the equal-norm assumption of an operator.
_NORM_SAMPLES = 4
#: Relative spread of column norms tolerated before the equal-norm warning.
_NORM_RTOL = 0.25

_STOP = {name: i for i, name in enumerate(STOP_REASONS)}
_SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))

_AUTO_MSG = (
    "{fn}: tol='auto' is not available when A is an operator or a sparse matrix: it "
    "needs the greedy path to min(M - 1, N) atoms, one operator application each. "
    "Pass a numeric tol or n_nonzero, or a dense array (A.toarray()) for small problems."
)

_NORMS_MSG = (
    "{fn}: the columns of the operator A do not have (nearly) equal norms (sampled "
    "norms from {lo:.4g} to {hi:.4g}); OMP on an operator assumes equal norms unless "
    "column_norms= is given, so the atom selection may be biased. Pass "
    "column_norms=<the N column norms of A>."
)


def is_operator(A: Any) -> bool:
    """Whether ``A`` goes to the operator path (operator or scipy sparse matrix).

    Parameters
    ----------
    A : object
        The sensing matrix argument of :func:`cscore.omp` / :func:`cscore.somp`.

    Returns
    -------
    bool
        True for a :class:`scipy.sparse.linalg.LinearOperator`, a scipy sparse
        matrix/array, or any other object with ``shape``, ``matvec`` and
        ``rmatvec`` (recent PyLops operators do not subclass SciPy's); False
        for NumPy arrays and other array_likes.
    """
    if isinstance(A, LinearOperator) or sp.issparse(A):
        return True
    if isinstance(A, np.ndarray):
        return False
    return all(hasattr(A, name) for name in ("shape", "matvec", "rmatvec"))


class _Op:
    """Products with ``A`` and ``A^H`` and cached columns, in float64/complex128 out.

    ``dtype`` is the output dtype, ``work`` the internal one (float64 or
    complex128), ``in_dtype`` the dtype of the vectors given to the operator.
    """

    def __init__(self, fn: str, A: Any, y_dtype: np.dtype) -> None:
        self.fn = fn
        self.sparse = sp.issparse(A)
        if len(A.shape) != 2:
            raise ValueError(f"A must be 2-D; got shape {A.shape}")
        self.M, self.N = (int(s) for s in A.shape)
        if self.M == 0 or self.N == 0:
            raise ValueError(f"A must not be empty; got shape {A.shape}")
        a_dt = getattr(A, "dtype", None)
        a_dtype = np.dtype(a_dt) if a_dt is not None else np.dtype(np.float64)
        _check_kind("A", a_dtype)
        self.a_complex = a_dtype.kind == "c"
        self.cplx = self.a_complex or y_dtype.kind == "c"
        self.dtype: np.dtype[Any]
        self.work: np.dtype[Any]
        if self.cplx:
            single = a_dtype in _SINGLE and y_dtype in _SINGLE
            self.dtype = np.dtype(np.complex64 if single else np.complex128)
            self.work = np.dtype(np.complex128)
            part = np.dtype(np.float32 if single else np.float64)
            self.in_dtype = self.dtype if self.a_complex else part
        else:
            single = a_dtype == np.float32 and y_dtype == np.float32
            self.dtype = np.dtype(np.float32) if single else np.dtype(np.float64)
            self.work = np.dtype(np.float64)
            self.in_dtype = self.dtype
        self.cache: dict[int, np.ndarray] = {}
        self.norms_seen: list[float] = []
        #: The loop uses A / 2**shift (see "Scale" in the module docstring).
        self.shift = 0
        if self.sparse:
            self.S = sp.csc_matrix(A, dtype=self.in_dtype)
            check_finite("A", np.asarray(self.S.data))
            if self.S.nnz:
                self.shift = _pow2_exponent(float(np.max(np.abs(self.S.data))))
                self.S.data = _ldexp(np.asarray(self.S.data), -self.shift)
            if self.a_complex:
                self.SH = self.S.conj().T.tocsr()
                sq = abs(self.S).power(2)
            else:
                sq = self.S.multiply(self.S)
            self.col_norms: np.ndarray | None = np.sqrt(
                np.asarray(sq.sum(axis=0), dtype=np.float64).ravel()
            )
            _check_no_zero_column(self.col_norms, self.S)
        else:
            self.L: Any = A
            self.col_norms = None

    def rmatmat(self, R: np.ndarray) -> np.ndarray:
        """``A^H R`` for ``R`` of shape (M, c), as (N, c) of the ``work`` dtype."""
        if self.cplx and not self.a_complex:  # real A: its transpose on both parts
            c = R.shape[1]
            parts = self._adjoint(np.concatenate([R.real, R.imag], axis=1))
            out = np.empty((self.N, c), dtype=self.work)
            out.real, out.imag = parts[:, :c], parts[:, c:]
            return out
        return self._adjoint(R)

    def _adjoint(self, R: np.ndarray) -> np.ndarray:
        R = np.ascontiguousarray(R, dtype=self.in_dtype)
        c = R.shape[1]
        if self.sparse:
            out = np.asarray((self.SH if self.a_complex else self.S.T) @ R)
        elif hasattr(self.L, "rmatmat"):
            out = _checked("A.rmatmat", _call("A.rmatmat", self.L.rmatmat, R), (self.N, c),
                           self.a_complex)
        else:
            out = np.stack(
                [_checked("A.rmatvec", _call("A.rmatvec", self.L.rmatvec, v), (self.N,),
                          self.a_complex)
                 for v in R.T], axis=1,
            )  # fmt: skip
        col_dt = self.work if self.a_complex else np.float64
        out = out.astype(col_dt, copy=False).reshape(self.N, c)
        return out if self.sparse or not self.shift else _ldexp(out, -self.shift)

    def set_shift(self, shift: int) -> None:
        """Use ``A / 2**shift`` from now on (columns fetched so far rescaled, exactly)."""
        for j, col in self.cache.items():
            self.cache[j] = _ldexp(col, self.shift - shift)
        self.norms_seen = [math.ldexp(v, self.shift - shift) for v in self.norms_seen]
        self.shift = shift

    def column(self, j: int) -> np.ndarray:
        """Column ``j`` of ``A`` (shape (M,)), fetched once per call.

        float64, or complex128 for a complex ``A``.
        """
        col = self.cache.get(j)
        if col is None:
            if self.sparse:
                col = self.S[:, [j]].toarray().ravel()
            else:
                e = np.zeros(self.N, dtype=self.in_dtype)
                e[j] = 1
                col = _checked("A.matvec", _call("A.matvec", self.L.matvec, e), (self.M,),
                               self.a_complex)
                if self.shift:
                    col = _ldexp(col, -self.shift)
            col_dt = self.work if self.a_complex else np.float64
            col = col.astype(col_dt, copy=False).reshape(self.M)
            check_finite(f"column {j} of A", col)
            self.cache[j] = col
            self.norms_seen.append(_norm(col))
        return col


_REAL_DTYPE_MSG = (
    "A has a real dtype (or none) but its {what} returned {dt} values; give a complex "
    "operator a complex dtype"
)


def _check_kind(name: str, dtype: np.dtype) -> None:
    if dtype.kind == "b":
        raise TypeError(f"{name} is boolean; convert explicitly (e.g. {name}.astype(float))")
    if dtype.kind not in "fiuc":
        raise TypeError(f"{name} must be a numeric operator/matrix; got dtype {dtype}")


def _pow2_exponent(v: float) -> int:
    """``e`` with ``2**(e-1) <= v < 2**e`` (0 for ``v = 0``)."""
    return int(np.frexp(v)[1]) if v > 0.0 else 0


def _ldexp(X: np.ndarray, e: Any) -> np.ndarray:
    """``X * 2**e`` exactly (``e`` broadcast), for real or complex ``X``."""
    if X.dtype.kind != "c":
        return np.ldexp(X, e).astype(X.dtype, copy=False)
    out = np.empty_like(X)
    out.real, out.imag = np.ldexp(X.real, e), np.ldexp(X.imag, e)
    return out


def _norm(v: np.ndarray) -> float:
    """``||v||`` without over- or underflow of the squares."""
    m = float(np.max(np.abs(v))) if v.size else 0.0
    if not m > 0.0:
        return 0.0
    e = _pow2_exponent(m)
    return math.ldexp(float(np.linalg.norm(_ldexp(v, -e))), e)


def _call(method: str, fn: Callable[[np.ndarray], Any], v: np.ndarray) -> Any:
    """``fn(v)``, a ``ValueError`` raised inside it named for ``method``.

    SciPy's ``LinearOperator`` reshapes its products itself, so a product of the
    wrong size surfaces as NumPy's reshape error; this says which method gave it.
    """
    try:
        return fn(v)
    except ValueError as err:
        raise ValueError(f"{method} failed on an input of shape {v.shape}: {err}") from err


def _checked(method: str, out: Any, shape: tuple[int, ...], a_complex: bool) -> np.ndarray:
    """An operator's product as an array, refused unless of ``shape`` (or ``shape + (1,)``).

    Raises ``ValueError`` naming ``method`` for a wrong shape, a non-numeric dtype or
    NaN/infinity, and ``TypeError`` for complex values from a real operator.
    """
    arr = np.asarray(out)
    also = (shape[0], 1) if len(shape) == 1 or shape[1] == 1 else shape
    if arr.shape not in (shape, also, shape[:1]):
        hint = " (its transpose?)" if arr.shape == shape[::-1] and len(shape) == 2 else ""
        raise ValueError(
            f"{method} returned an array of shape {arr.shape}; expected {shape}{hint}"
        )
    if arr.dtype.kind not in "fiuc":
        raise ValueError(f"{method} returned non-numeric values (dtype {arr.dtype})")
    if arr.dtype.kind == "c" and not a_complex:
        what = "product" if method == "A.matvec" else "adjoint"
        raise TypeError(_REAL_DTYPE_MSG.format(what=what, dt=arr.dtype))
    if not np.isfinite(arr).all():
        raise ValueError(f"{method} returned NaN or infinity")
    return arr


def _check_no_zero_column(norms: np.ndarray, S: Any = None) -> None:
    zero = np.flatnonzero(norms == 0)
    if zero.size and S is not None:
        stored = np.flatnonzero(np.asarray(abs(S).max(axis=0).todense()).ravel()[zero] > 0)
        if stored.size:
            j = int(zero[stored[0]])
            raise ValueError(
                f"column {j} of A has nonzero entries but a norm that underflows next to "
                "the largest entry of A (columns of extreme scale, e.g. 1e-300 next to 1, "
                "are not rescaled on the sparse path); scale that column"
            )
    if zero.size:
        raise ValueError(
            f"A has {zero.size} all-zero column(s) (first: column {int(zero[0])}); "
            "a zero column can never be selected and makes the problem ill-posed"
        )


def _column_norms(op: _Op, column_norms: Any) -> np.ndarray:
    """The N column norms used for the selection (see the module docstring)."""
    if column_norms is not None:
        norms = as_float_array("column_norms", column_norms, ndim=1, dtype=np.float64)
        if norms.shape != (op.N,):
            raise ValueError(
                f"column_norms must have shape ({op.N},) for A of shape {(op.M, op.N)}; "
                f"got {norms.shape}"
            )
        if np.any(norms <= 0):
            raise ValueError("column_norms must be > 0 (A has no all-zero column)")
        if not op.sparse:
            op.set_shift(_pow2_exponent(float(np.max(norms))))
        return np.ldexp(norms, -op.shift)
    if op.col_norms is not None:
        return op.col_norms
    rng = np.random.default_rng(0)
    for j in rng.choice(op.N, size=min(_NORM_SAMPLES, op.N), replace=False):
        op.column(int(j))
    op.set_shift(_pow2_exponent(max(op.norms_seen)))
    return np.ones(op.N)


def _check_equal_norms(op: _Op, assumed: bool) -> None:
    """Warn when the operator's fetched columns do not have near-equal norms."""
    if not assumed or not op.norms_seen:
        return
    lo, hi = min(op.norms_seen), max(op.norms_seen)
    if not hi <= (1 + _NORM_RTOL) * lo:
        warnings.warn(_NORMS_MSG.format(fn=op.fn, lo=lo, hi=hi), RuntimeWarning, stacklevel=4)


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
        self.Q = np.zeros((P, K, M), dtype=Y.dtype)  # orthonormal basis of the support, by rows
        self.R = np.zeros((P, K, K), dtype=Y.dtype)
        self.z = np.zeros((P, K, L), dtype=Y.dtype)
        self.n = np.zeros(P, dtype=np.int64)
        self.atoms = np.full((P, K), -1, dtype=np.int64)
        self.stop = np.full(P, -1, dtype=np.int64)
        self.dependent = np.zeros(P, dtype=bool)
        self.ytot2 = _sqsum("pml->p", Y)
        self.eps = eps

    def add(self, p: int, j: int, a: np.ndarray) -> bool:
        """Append atom ``j`` (column ``a``) to problem ``p``; False if dependent."""
        n = int(self.n[p])
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


def _greedy(op: _Op, Y: np.ndarray, norms: np.ndarray, K: int, cap_is_k: bool,
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


def _prepare(fn: str, A: Any, Y: Any, y_name: str, y_ndims: tuple[int, ...]
             ) -> tuple[_Op, np.ndarray, np.ndarray]:
    """Validate; return the operator, Y (checked), and its (P, M, L) view (``op.work``)."""
    y_dtype = np.asarray(Y).dtype if Y is not None else np.dtype(np.float64)
    op = _Op(fn, A, y_dtype)
    empty = (2, 1) if fn == "omp" else (3, 0)
    Y_arr = as_array(y_name, Y, ndim=y_ndims, dtype=op.dtype, empty_batch=empty)
    if Y_arr.shape[-2 if fn == "somp" else 0] != op.M:
        axis = "the second-to-last axis" if fn == "somp" else "the first axis"
        raise ValueError(
            f"{y_name} must have M = {op.M} rows (A has shape {(op.M, op.N)}) along {axis}; "
            f"got {y_name} of shape {Y_arr.shape}"
            + transposed_hint((op.M, op.N), Y_arr.shape[-2 if fn == "somp" else 0])
        )
    if fn == "omp":
        Yv = Y_arr[None, :, None] if Y_arr.ndim == 1 else Y_arr.T[:, :, None]
    else:
        Yv = Y_arr[None] if Y_arr.ndim == 2 else Y_arr
    return op, Y_arr, np.array(Yv, dtype=op.work)


def run_operator(
    fn: str,
    A: Any,
    Y: Any,
    y_name: str,
    y_ndims: tuple[int, ...],
    n_nonzero: Any,
    tol: Any,
    column_norms: Any,
    resolve_stopping: Callable[[Any, Any, int, int], tuple[int, bool, float]],
    dependent_msg: str,
) -> dict[str, Any]:
    """OMP/SOMP with an operator or sparse ``A``; outputs as the dense path's.

    Parameters
    ----------
    fn : {"omp", "somp"}
        The calling decoder (shapes of ``Y`` and of the outputs follow it).
    A : LinearOperator or scipy sparse matrix, shape (M, N)
        The sensing operator (real or complex).
    Y : array_like
        The measurements, shaped as :func:`cscore.omp` / :func:`cscore.somp` take them.
    y_name : str
        Name of ``Y`` in error messages.
    y_ndims : tuple of int
        Allowed numbers of dimensions of ``Y``.
    n_nonzero, tol : optional
        The stopping rule, resolved by ``resolve_stopping`` (``tol="auto"`` refused).
    column_norms : array_like of shape (N,), optional
        Column norms of ``A`` for the selection (see the module docstring).
    resolve_stopping : callable
        ``(n_nonzero, tol, M, N) -> (max_atoms, cap_is_n_nonzero, tol or -1)``.
    dependent_msg : str
        Template of the warning for problems stopped "dependent".

    Returns
    -------
    dict
        ``X`` (shape of the dense path's output), ``residual`` (P, L), ``n_iter``
        (P,), ``stop`` (P,) reason strings, ``atoms`` (P, max_atoms) and
        ``single`` (one problem given without a batch axis).
    """
    if isinstance(tol, str) and tol == "auto":
        raise ValueError(_AUTO_MSG.format(fn=fn))
    op, Y_arr, Yv = _prepare(fn, A, Y, y_name, y_ndims)
    K, cap_is_k, tol_value = resolve_stopping(n_nonzero, tol, op.M, op.N)
    norms = _column_norms(op, column_norms)
    assumed = column_norms is None and not op.sparse
    # Each problem runs on Y / 2**b (exact; "Scale" in the module docstring).
    mx = np.max(np.abs(Yv), axis=(1, 2)) if Yv.size else np.zeros(Yv.shape[0])
    b = np.frexp(np.where(mx > 0.0, mx, 1.0))[1].astype(np.int64)
    Yv = _ldexp(Yv, -b[:, None, None])
    with np.errstate(over="ignore"):
        tol_p = np.ldexp(tol_value, -b) if tol_value >= 0 else np.full(b.shape, -1.0)
    st = _greedy(op, Yv, norms, K, cap_is_k, tol_p)
    _check_equal_norms(op, assumed)
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
        warnings.warn(dependent_msg.format(fn=fn, count=warn, total=P), RuntimeWarning,
                      stacklevel=3)
    with np.errstate(over="ignore"):  # an estimate beyond the float range is inf
        Xp = _ldexp(Xp, (b - op.shift)[:, None, None])
        residual = np.ldexp(residual, b[:, None])
    X = _output_layout(fn, Xp.astype(op.dtype), Y_arr.ndim)
    return {
        "X": X,
        "residual": residual.astype(np.finfo(op.dtype).dtype),
        "n_iter": st.n.copy(),
        "stop": np.asarray(STOP_REASONS, dtype=object)[st.stop].astype(str),
        "atoms": st.atoms,
        "single": P == 1 and Y_arr.ndim == (1 if fn == "omp" else 2),
    }


def _output_layout(fn: str, Xp: np.ndarray, y_ndim: int) -> np.ndarray:
    """(P, N, L) solutions in the layout of the dense path's ``X``."""
    if fn == "omp":
        return np.ascontiguousarray(Xp[0, :, 0] if y_ndim == 1 else Xp[:, :, 0].T)
    return np.ascontiguousarray(Xp[0] if y_ndim == 2 else Xp)
