"""Argument checks shared by every public entry point.

Every helper names the offending argument in its message, so an error raised deep
inside a pipeline still says which input was wrong.  Checks run once, at the
public function; the compiled kernels assume checked, C-contiguous input.

Conversion policy
-----------------
* float64 and float32 arrays are used as they are (float32 stays float32 only
  when *all* float inputs of a call are float32; otherwise everything is
  promoted to float64).
* Integer arrays are converted to float64.
* Boolean arrays (``Y > 0`` by mistake) and masked arrays (whose mask would be
  silently dropped) are refused with a ``TypeError``: convert or fill them
  explicitly.
* Complex, object, string and other dtypes are refused with a ``TypeError``.
* Non-contiguous arrays (slices, transposes) are copied to C order.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import _core

__all__ = [
    "as_float_array",
    "check_finite",
    "check_matrix",
    "check_no_zero_column",
    "check_nonnegative_float",
    "check_positive_float",
    "check_positive_int",
    "common_float_dtype",
    "transposed_hint",
]


def _dtype_kind_ok(name: str, arr: np.ndarray) -> None:
    if arr.dtype.kind in "fiu":
        return
    if arr.dtype.kind == "b":
        raise TypeError(
            f"{name} is a boolean array; boolean arrays are not measurements; "
            f"convert explicitly (e.g. {name}.astype(float))"
        )
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must be real; got complex dtype {arr.dtype}")
    raise TypeError(f"{name} must be a real numeric array; got dtype {arr.dtype}")


def common_float_dtype(*arrays: Any) -> np.dtype:
    """Return float32 when every array is float32, float64 otherwise.

    Parameters
    ----------
    *arrays : array_like or None
        The float inputs of one call (None entries are ignored).

    Returns
    -------
    numpy.dtype
        ``float32`` or ``float64``.
    """
    dtypes = [np.asarray(a).dtype for a in arrays if a is not None]
    if dtypes and all(dt == np.float32 for dt in dtypes):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def as_float_array(
    name: str,
    x: Any,
    *,
    ndim: int | tuple[int, ...],
    dtype: np.dtype | type | None = None,
    allow_empty: bool = False,
    finite: bool = True,
    empty_batch: tuple[int, int] | None = None,
) -> np.ndarray:
    """Convert ``x`` to a C-contiguous float array after checking it.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    x : array_like
        The input.
    ndim : int or tuple of int
        Allowed numbers of dimensions.
    dtype : dtype, optional
        Target float dtype; by default float32 stays float32 and anything else
        becomes float64.
    allow_empty : bool, default False
        Whether a zero-size array is accepted.
    finite : bool, default True
        Refuse NaN and infinite entries.
    empty_batch : (int, int), optional
        ``(ndim, axis)``: a ``ndim``-D array whose only zero-length axis is
        ``axis`` (a batch of zero problems) is accepted even without
        ``allow_empty``.

    Returns
    -------
    numpy.ndarray
        A C-contiguous float32/float64 array (a copy only when needed).
    """
    if x is None:
        raise TypeError(f"{name} must be an array, got None")
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(
            f"{name} is a masked array; its mask would be ignored. Fill it explicitly "
            f"(e.g. {name}.filled(0.0)) or pass {name}.data"
        )
    arr = np.asarray(x)
    _dtype_kind_ok(name, arr)
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if arr.ndim not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise ValueError(f"{name} must be {want}; got an array of shape {arr.shape}")
    if not allow_empty and arr.size == 0 and not _is_empty_batch(arr, empty_batch):
        raise ValueError(f"{name} must not be empty; got shape {arr.shape}")
    if dtype is None:
        target = np.dtype(np.float32) if arr.dtype == np.float32 else np.dtype(np.float64)
    else:
        target = np.dtype(dtype)
        if target.kind != "f":
            raise TypeError(f"internal: target dtype for {name} must be float, got {target}")
    out = np.ascontiguousarray(arr, dtype=target)
    if finite:
        check_finite(name, out)
    return out


def _is_empty_batch(arr: np.ndarray, empty_batch: tuple[int, int] | None) -> bool:
    if empty_batch is None or arr.ndim != empty_batch[0]:
        return False
    axis = empty_batch[1] % arr.ndim
    return arr.shape[axis] == 0 and all(n > 0 for i, n in enumerate(arr.shape) if i != axis)


def transposed_hint(A_shape: tuple[int, ...], rows: int, cols: int | None = None) -> str:
    """The hint appended to a row-count error when ``A`` looks transposed.

    ``A`` looks transposed when the measurement count the data needs (``rows``,
    e.g. Y's row count) is A's column count and not its row count; with ``cols``
    (the expected atom count) its row count must also be ``cols``.

    Parameters
    ----------
    A_shape : tuple of int
        The shape of ``A`` as the user passed it.
    rows : int
        The number of measurements per channel that the data (or model) has.
    cols : int, optional
        The expected number of atoms N, when it is known (a model's spec).

    Returns
    -------
    str
        ``""`` or ``"; did you pass A transposed? A must be (M, N) ..."``, to
        append to the message.
    """
    if len(A_shape) != 2:
        return ""
    a0, a1 = (int(s) for s in A_shape)
    if rows != a1 or rows == a0 or (cols is not None and a0 != cols):
        return ""
    return (
        f"; did you pass A transposed? A must be (M, N) = (measurements, atoms), "
        f"here ({a1}, {a0}): transpose it"
    )


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise ``ValueError`` if ``arr`` holds NaN or infinity.

    Parameters
    ----------
    name : str
        Argument name used in the message.
    arr : ndarray
        The array to check (its first bad index is reported).
    """
    if arr.size and not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} contains NaN or infinity (first at index {tuple(int(i) for i in bad)})"
        )


def check_matrix(name: str, A: Any, *, dtype: np.dtype | type | None = None) -> np.ndarray:
    """Check a sensing matrix: 2-D, non-empty, finite, no all-zero column.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    A : array_like
        The matrix.
    dtype : dtype, optional
        Target float dtype (see :func:`as_float_array`).

    Returns
    -------
    numpy.ndarray
        ``A`` as a C-contiguous float array.
    """
    return check_matrix_scales(name, A, dtype=dtype)[0]


def check_matrix_scales(
    name: str, A: Any, *, dtype: np.dtype | type | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`check_matrix`, and the largest ``|a_ij|`` of each column.

    The checks and the column maxima come from one pass over ``A`` (the
    compiled core's ``_column_abs_max``); the first non-finite entry is then
    located only when there is one.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    A : array_like
        The matrix.
    dtype : dtype, optional
        Target float dtype (see :func:`as_float_array`).

    Returns
    -------
    numpy.ndarray
        ``A`` as a C-contiguous float array.
    numpy.ndarray of float64, shape (N,)
        ``max_i |a_ij|`` per column (exact).
    """
    out = as_float_array(name, A, ndim=2, dtype=dtype, finite=False)
    col_max, finite = _core._column_abs_max(out)
    if not finite:
        check_finite(name, out)
    # Exact test (a norm would underflow to 0 for columns of tiny, nonzero entries).
    check_no_zero_column(name, col_max > 0)
    return out, col_max


def check_no_zero_column(name: str, nonzero: np.ndarray) -> None:
    """``ValueError`` naming the all-zero columns of the matrix ``name``, if any.

    Parameters
    ----------
    name : str
        The matrix's name in the message.
    nonzero : numpy.ndarray of bool, shape (N,)
        Whether each column has a nonzero entry.
    """
    zero = np.flatnonzero(~np.asarray(nonzero, dtype=bool))
    if zero.size:
        raise ValueError(
            f"{name} has {zero.size} all-zero column(s) (first: column {int(zero[0])}); "
            "a zero column can never be selected and makes the problem ill-posed"
        )


def check_positive_int(
    name: str, value: Any, *, upper: int | None = None, upper_desc: str | None = None
) -> int:
    """Return ``value`` as int after checking ``1 <= value <= upper``.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    value : int
        A Python or numpy integer (bools are refused).
    upper : int, optional
        Largest allowed value.
    upper_desc : str, optional
        What ``upper`` is, quoted in the message (e.g. "min(M, N)").

    Returns
    -------
    int
        ``value`` as a Python int.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    if upper is not None and value > upper:
        desc = f" ({upper_desc})" if upper_desc else ""
        raise ValueError(f"{name} must be <= {upper}{desc}, got {value}")
    return value


def check_nonnegative_float(name: str, value: Any) -> float:
    """Return ``value`` as float after checking it is finite and >= 0.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    value : float
        A real number (bools are refused).

    Returns
    -------
    float
        ``value`` as a Python float.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    out = float(value)
    if not np.isfinite(out) or out < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return out


def check_positive_float(name: str, value: Any) -> float:
    """Return ``value`` as float after checking it is finite and > 0.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    value : float
        A real number (bools are refused).

    Returns
    -------
    float
        ``value`` as a Python float.
    """
    out = check_nonnegative_float(name, value)
    if out == 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return out


#: Upper bound on iteration caps (``max_iter``): far beyond any useful run, and
#: within the compiled core's 32-bit counters.
MAX_ITER_LIMIT = 10_000_000


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (Python or NumPy); raise ``TypeError`` otherwise.

    Parameters
    ----------
    name : str
        Argument name used in the message.
    value : object
        The value to check (strings such as ``"no"`` are refused, not truthy).

    Returns
    -------
    bool
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")


def renamed_measurements(func: str, Y: Any, y: Any) -> Any:
    """The measurements from ``Y``, or from the deprecated keyword ``y``.

    Every cscore decoder calls its measurements ``Y``; :func:`cscore.omp` and
    :func:`cscore.bcs` called them ``y``, which still works as a keyword with a
    ``DeprecationWarning``.

    Parameters
    ----------
    func : str
        The decoder's name, for the messages.
    Y, y : object
        The values given under each name (``None`` when not given).

    Returns
    -------
    object
        The measurements.

    Raises
    ------
    TypeError
        Neither or both given.
    """
    if y is None:
        if Y is None:
            raise TypeError(f"{func}: Y must be an array of measurements, got None")
        return Y
    if Y is not None:
        raise TypeError(f"{func}: pass the measurements once, as Y (y= is its old name)")
    import warnings

    warnings.warn(f"{func}(y=...) is deprecated: the measurements are Y in every cscore "
                  "decoder", DeprecationWarning, stacklevel=3)
    return y
