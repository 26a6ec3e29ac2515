"""Argument checks for the decoders that accept complex data (OMP, SOMP, T-MSBL).

The shared checks of :mod:`cscore._validation` accept real arrays only; these
wrappers extend them to complex64/complex128 without changing anything for real
input (a real call goes straight to the shared helper, so its conversions,
messages and results are unchanged).

Dtype rule
----------
With no complex input the result is :func:`cscore._validation.common_float_dtype`
(float32 when every input is float32, else float64).  With any complex input
the computation is complex: complex64 when every input is complex64 or float32
(a real float32 ``A`` with a complex64 ``Y``, say, is promoted to complex64),
otherwise complex128 -- as NumPy promotes, but integers count as float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import (
    as_float_array,
    check_finite,
    check_matrix,
    check_no_zero_column,
    common_float_dtype,
)

__all__ = [
    "as_array",
    "checked_matrix",
    "complex_dtype",
    "decode_dtype",
    "from_inline",
    "inline_parts",
    "is_complex",
    "real_only_error",
]

_SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))


def is_complex(x: Any) -> bool:
    """Whether ``x`` (an array_like; None is not) holds complex values.

    Parameters
    ----------
    x : array_like or None

    Returns
    -------
    bool
    """
    if x is None:
        return False
    dt = getattr(x, "dtype", None)
    if dt is not None:
        try:
            return np.dtype(dt).kind == "c"
        except TypeError:
            return False
    try:
        return np.asarray(x).dtype.kind == "c"
    except (TypeError, ValueError):
        return False


def decode_dtype(*arrays: Any) -> np.dtype:
    """The working dtype of a call with these inputs (see the module docstring).

    Parameters
    ----------
    *arrays : array_like or None
        The numeric inputs of one call (None entries are ignored).

    Returns
    -------
    numpy.dtype
        float32, float64, complex64 or complex128.
    """
    present = [a for a in arrays if a is not None]
    if not any(is_complex(a) for a in present):
        return common_float_dtype(*present)
    single = all(_dtype_of(a) in _SINGLE for a in present)
    return np.dtype(np.complex64 if single else np.complex128)


def _dtype_of(x: Any) -> np.dtype:
    dt = getattr(x, "dtype", None)
    return np.dtype(dt) if dt is not None else np.asarray(x).dtype


def as_array(
    name: str, x: Any, *, ndim: int | tuple[int, ...], dtype: np.dtype | type,
    empty_batch: tuple[int, int] | None = None,
) -> np.ndarray:
    """:func:`cscore._validation.as_float_array`, also for a complex ``dtype``.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    x : array_like
        The input (real or complex).
    ndim : int or tuple of int
        Allowed numbers of dimensions.
    dtype : dtype
        Target dtype: float32/float64 (real input only) or complex64/complex128.
    empty_batch : (int, int), optional
        As in ``as_float_array``.

    Returns
    -------
    numpy.ndarray
        A C-contiguous array of ``dtype``, finite.

    Raises
    ------
    TypeError
        Boolean, masked, object or string arrays; complex input with a real
        target dtype.
    ValueError
        Wrong number of dimensions, empty, NaN or infinity (in either part).
    """
    target = np.dtype(dtype)
    if target.kind != "c":
        return as_float_array(name, x, ndim=ndim, dtype=target, empty_batch=empty_batch)
    arr = x if x is None or isinstance(x, np.ma.MaskedArray) else np.asarray(x)
    # The shared checks (None, masks, dtype kind, rank, emptiness) on the real part.
    real_part = arr.real if arr is not None and arr.dtype.kind == "c" else arr
    as_float_array(name, real_part, ndim=ndim, finite=False, empty_batch=empty_batch)
    out = np.ascontiguousarray(arr, dtype=target)
    check_finite(name, out)
    return out


def checked_matrix(name: str, A: Any, *, dtype: np.dtype | type) -> np.ndarray:
    """:func:`cscore._validation.check_matrix`, also for a complex ``dtype``.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    A : array_like
        The sensing matrix.
    dtype : dtype
        Target dtype (real or complex).

    Returns
    -------
    numpy.ndarray
        ``A`` as a C-contiguous 2-D array: finite, non-empty, no all-zero column.
    """
    if np.dtype(dtype).kind != "c":
        return check_matrix(name, A, dtype=dtype)
    out = as_array(name, A, ndim=2, dtype=dtype)
    check_no_zero_column(name, np.any(out != 0, axis=0))
    return out


def complex_dtype(x: Any) -> np.dtype:
    """complex64 for complex64 ``x``, complex128 for any other (complex) ``x``.

    Parameters
    ----------
    x : array_like

    Returns
    -------
    numpy.dtype
    """
    single = _dtype_of(x) == np.complex64
    return np.dtype(np.complex64 if single else np.complex128)


def real_only_error(decoder: str, name: str, x: Any, complex_ok: list[str]) -> TypeError:
    """The error for complex data given to a decoder that takes real data only.

    Parameters
    ----------
    decoder : str
        The decoder's registry name.
    name : str
        The argument (``"A"``, ``"Y"``).
    x : array_like
        The complex argument.
    complex_ok : list of str
        The decoders that take complex data (named in the message).

    Returns
    -------
    TypeError
    """
    return TypeError(
        f"decoder {decoder!r} takes real data only; {name} is complex ({_dtype_of(x)}). "
        f"Decoders for complex data: {', '.join(complex_ok) or 'none'}"
    )


def inline_parts(A: np.ndarray) -> dict[str, Any]:
    """A complex matrix as two JSON lists: ``{"data": real parts, "imag": imaginary parts}``.

    Parameters
    ----------
    A : numpy.ndarray
        A complex array.

    Returns
    -------
    dict
    """
    return {"data": A.real.tolist(), "imag": A.imag.tolist()}


def from_inline(ref: dict[str, Any], dtype: np.dtype) -> np.ndarray:
    """The complex array of :func:`inline_parts`' lists (exact: parts set, not summed).

    Parameters
    ----------
    ref : dict
        Holds ``"data"`` (real parts) and ``"imag"`` (imaginary parts).
    dtype : numpy.dtype
        The complex dtype of the result.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        ``"imag"`` missing, or the two parts of different shapes.
    KeyError
        ``"data"`` missing.
    """
    if "imag" not in ref:
        raise ValueError(f"an inline A of dtype {dtype} needs 'imag' (its imaginary parts)")
    part = np.finfo(dtype).dtype
    re = np.asarray(ref["data"], dtype=part)
    im = np.asarray(ref["imag"], dtype=part)
    if re.shape != im.shape:
        raise ValueError(f"'data' has shape {re.shape} but 'imag' has shape {im.shape}")
    out = np.empty(re.shape, dtype=dtype)
    out.real, out.imag = re, im
    return out
