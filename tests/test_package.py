"""Package-level behaviour: import, BLAS bridge, thread settings, validation helpers."""

from __future__ import annotations

import numpy as np
import pytest

import cscore
from cscore import _core
from cscore._validation import (
    as_float_array,
    check_matrix,
    check_nonnegative_float,
    check_positive_int,
    common_float_dtype,
)


def test_blas_registered():
    names = _core._blas_names()
    assert "dgemm" in names and "sgemm" in names


def test_num_threads_roundtrip():
    old = cscore.get_num_threads()
    with cscore.num_threads(1):
        assert cscore.get_num_threads() == 1
    assert cscore.get_num_threads() == old
    with pytest.raises(ValueError, match="positive"):
        cscore.set_num_threads(0)


def test_as_float_array_policy():
    assert as_float_array("y", np.arange(3), ndim=1).dtype == np.float64
    assert as_float_array("y", np.ones(3, np.float32), ndim=1).dtype == np.float32
    x = np.ones((4, 3))[:, ::2]
    assert as_float_array("y", x, ndim=2).flags.c_contiguous
    with pytest.raises(TypeError, match="y must be real"):
        as_float_array("y", np.ones(3, complex), ndim=1)
    with pytest.raises(ValueError, match="y must be 1-D"):
        as_float_array("y", np.ones((2, 2)), ndim=1)
    with pytest.raises(ValueError, match="empty"):
        as_float_array("y", np.ones(0), ndim=1)
    with pytest.raises(ValueError, match="NaN"):
        as_float_array("y", np.array([1.0, np.nan]), ndim=1)


def test_check_matrix_zero_column():
    A = np.ones((3, 4))
    A[:, 2] = 0
    with pytest.raises(ValueError, match="column 2"):
        check_matrix("A", A)


def test_scalar_checks():
    assert check_positive_int("k", np.int64(3), upper=5) == 3
    with pytest.raises(ValueError, match="k must be <= 5"):
        check_positive_int("k", 6, upper=5)
    with pytest.raises(TypeError):
        check_positive_int("k", 2.0)
    with pytest.raises(ValueError):
        check_nonnegative_float("tol", -1.0)
    assert common_float_dtype(np.ones(2, np.float32), np.ones(2, np.float32)) == np.float32
    assert common_float_dtype(np.ones(2, np.float32), np.ones(2)) == np.float64
