"""Products with an operator or a sparse ``A``, checked where they enter.

What OMP/SOMP on operators (:mod:`cscore.decoders.greedy_operator`) and the
input-kind handling of :class:`~cscore.decoders.Decoder` and AMP share:
:func:`is_operator` (which ``A`` goes to the operator path),
:class:`OperatorColumns` (``A^H R`` products and cached columns, each product's
shape, dtype and values checked, on ``A / 2**shift``), the column norms the
selection uses (:func:`column_norms_of`, :func:`check_equal_norms`: the
equal-norm assumption and its warning) and :func:`ldexp` (exact scaling of real
or complex arrays).  The rules are described in
:mod:`cscore.decoders.greedy_operator`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .._validation import as_float_array, check_finite, check_no_zero_column

__all__ = [
    "OperatorColumns",
    "check_equal_norms",
    "column_norms_of",
    "is_operator",
    "ldexp",
]

#: Columns drawn to check the equal-norm assumption of an operator.
_NORM_SAMPLES = 4
#: Relative spread of column norms tolerated before the equal-norm warning.
_NORM_RTOL = 0.25

_SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))

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


class OperatorColumns:
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
        #: The loop uses A / 2**shift (see "Scale" in :mod:`cscore.decoders.greedy_operator`).
        self.shift = 0
        if self.sparse:
            self.S = sp.csc_matrix(A, dtype=self.in_dtype)
            check_finite("A", np.asarray(self.S.data))
            if self.S.nnz:
                self.shift = _pow2_exponent(float(np.max(np.abs(self.S.data))))
                self.S.data = ldexp(np.asarray(self.S.data), -self.shift)
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
        return out if self.sparse or not self.shift else ldexp(out, -self.shift)

    def set_shift(self, shift: int) -> None:
        """Use ``A / 2**shift`` from now on (columns fetched so far rescaled, exactly)."""
        for j, col in self.cache.items():
            self.cache[j] = ldexp(col, self.shift - shift)
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
                    col = ldexp(col, -self.shift)
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


def ldexp(X: np.ndarray, e: Any) -> np.ndarray:
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
    return math.ldexp(float(np.linalg.norm(ldexp(v, -e))), e)


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
    check_no_zero_column("A", norms != 0)


def column_norms_of(op: OperatorColumns, column_norms: Any) -> np.ndarray:
    """The N column norms the selection uses ("Column norms" in ``greedy_operator``)."""
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


def check_equal_norms(op: OperatorColumns, assumed: bool) -> None:
    """Warn when the operator's fetched columns do not have near-equal norms."""
    if not assumed or not op.norms_seen:
        return
    lo, hi = min(op.norms_seen), max(op.norms_seen)
    if not hi <= (1 + _NORM_RTOL) * lo:
        warnings.warn(_NORMS_MSG.format(fn=op.fn, lo=lo, hi=hi), RuntimeWarning, stacklevel=5)
