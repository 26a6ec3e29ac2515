"""Greedy decoders on bad input and degenerate problems."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cscore

from conftest import make_problem


@pytest.fixture
def prob(rng):
    A, _, Y = make_problem(rng, 10, 20, L=3, k=2)
    return A, Y


# --------------------------------------------------------------------------------------
# Bad input: clear errors naming the argument.


@pytest.mark.parametrize("fn", ["omp", "somp"])
def test_shape_mismatch(prob, fn):
    A, Y = prob
    with pytest.raises(ValueError, match="must have M = 10 rows"):
        getattr(cscore, fn)(A, Y[:-1], n_nonzero=2)


def test_wrong_ndim(prob):
    A, Y = prob
    with pytest.raises(ValueError, match="y must be 1-D or 2-D"):
        cscore.omp(A, np.stack([Y, Y]), n_nonzero=2)
    with pytest.raises(ValueError, match="Y must be 2-D or 3-D"):
        cscore.somp(A, Y[:, 0], n_nonzero=2)
    with pytest.raises(ValueError, match="Y must be 2-D or 3-D"):
        cscore.somp(A, Y[None, None], n_nonzero=2)
    with pytest.raises(ValueError, match="A must be 2-D"):
        cscore.omp(A[0], Y[:, 0], n_nonzero=2)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite(prob, bad):
    A, Y = prob
    A2 = A.copy()
    A2[3, 4] = bad
    with pytest.raises(ValueError, match="A contains NaN or infinity"):
        cscore.omp(A2, Y, n_nonzero=2)
    Y2 = Y.copy()
    Y2[1, 1] = bad
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        cscore.omp(A, Y2, n_nonzero=2)
    with pytest.raises(ValueError, match="Y contains NaN or infinity"):
        cscore.somp(A, Y2, n_nonzero=2)


def test_empty(prob):
    A, Y = prob
    with pytest.raises(ValueError, match="A must not be empty"):
        cscore.omp(np.zeros((10, 0)), Y, n_nonzero=1)
    with pytest.raises(ValueError, match="y must not be empty"):
        cscore.omp(A, np.zeros(0), n_nonzero=1)
    with pytest.raises(ValueError, match="Y must not be empty"):
        cscore.somp(A, np.zeros((10, 0)), n_nonzero=1)
    with pytest.raises(ValueError, match="Y must not be empty"):
        cscore.somp(A, np.zeros((2, 10, 0)), n_nonzero=1)
    # a batch of zero problems is not an error (issue 10): numpy-style empty result
    assert cscore.omp(A, np.zeros((10, 0)), n_nonzero=1).shape == (A.shape[1], 0)
    assert cscore.somp(A, np.zeros((0, 10, 3)), n_nonzero=1).shape == (0, A.shape[1], 3)


@pytest.mark.parametrize("fn", ["omp", "somp"])
def test_n_nonzero_range(prob, fn):
    A, Y = prob
    f = getattr(cscore, fn)
    with pytest.raises(ValueError, match=r"n_nonzero must be <= 10 \(min\(M, N\)"):
        f(A, Y, n_nonzero=11)
    with pytest.raises(ValueError, match="n_nonzero must be >= 1"):
        f(A, Y, n_nonzero=0)
    with pytest.raises(TypeError, match="n_nonzero must be an integer"):
        f(A, Y, n_nonzero=2.5)
    with pytest.raises(TypeError, match="n_nonzero must be an integer"):
        f(A, Y, n_nonzero=True)
    # Tall A: the cap is N.
    At = np.random.default_rng(0).standard_normal((12, 5))
    with pytest.raises(ValueError, match="n_nonzero must be <= 5"):
        f(At, np.ones((12, 1)), n_nonzero=6)


@pytest.mark.parametrize("tol", [-1e-3, np.nan, np.inf])
def test_bad_tol(prob, tol):
    A, Y = prob
    with pytest.raises(ValueError, match="tol must be finite and >= 0"):
        cscore.omp(A, Y, tol=tol)
    with pytest.raises(ValueError, match="tol must be finite and >= 0"):
        cscore.somp(A, Y, tol=tol)


def test_bad_types(prob):
    A, Y = prob
    with pytest.raises(TypeError, match="tol must be a real number"):
        cscore.omp(A, Y, tol="1")
    # complex A is complex data (tests/test_complex.py), not a type error
    assert np.iscomplexobj(cscore.omp(A.astype(complex), Y, n_nonzero=1))
    with pytest.raises(TypeError, match="y must be a real numeric array"):
        cscore.omp(A, Y.astype(object), n_nonzero=1)
    with pytest.raises(TypeError, match="Y must be an array"):
        cscore.omp(A, None, n_nonzero=1)
    with pytest.raises(ValueError, match="n_threads"):
        cscore.omp(A, Y, n_nonzero=1, n_threads=0)


def test_zero_column(prob):
    A, Y = prob
    A2 = A.copy()
    A2[:, 7] = 0.0
    with pytest.raises(ValueError, match=r"A has 1 all-zero column\(s\) \(first: column 7\)"):
        cscore.omp(A2, Y, n_nonzero=2)
    with pytest.raises(ValueError, match="all-zero column"):
        cscore.somp(A2, Y, n_nonzero=2)


# --------------------------------------------------------------------------------------
# Degenerate problems.


def test_zero_signal_gives_zeros(rng):
    A, _, Y = make_problem(rng, 15, 30, L=4, k=2, joint=False)
    Y[:, 2] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = cscore.omp(A, Y, n_nonzero=3, return_result=True)
        r0 = cscore.omp(A, np.zeros(15), n_nonzero=3, return_result=True)
        s0 = cscore.somp(A, np.zeros((15, 2)), tol=0.1, return_result=True)
    assert (res.x[:, 2] == 0).all() and res.n_iter[2] == 0 and res.residual_norm[2] == 0
    assert res.stop_reason[2] == "dependent"
    # The noiseless k = 2 signals are fitted exactly after 2 atoms; the third atom
    # would only fit rounding noise, so they stop (quietly) as well.
    assert (res.n_iter[[0, 1, 3]] == 2).all()
    assert res.residual_norm.max() < 1e-12
    assert (r0.x == 0).all() and int(r0.n_iter) == 0
    assert (s0.x == 0).all() and int(s0.n_iter) == 0 and s0.stop_reason == "tol"


def test_duplicate_columns_stop_cleanly(rng):
    # A = [B, B]: rank 5 with 10 columns; asking for 8 atoms must stop at 5.
    B = rng.standard_normal((12, 5))
    A = np.hstack([B, B])
    y = rng.standard_normal(12)
    with pytest.warns(RuntimeWarning, match="1 of 1 problem"):
        res = cscore.omp(A, y, n_nonzero=8, return_result=True)
    assert res.stop_reason == "dependent"
    assert int(res.n_iter) == 5
    fit = B @ np.linalg.lstsq(B, y, rcond=None)[0]
    np.testing.assert_allclose(A @ res.x, fit, atol=1e-10)
    # Each duplicate pair contributes through one column only.
    assert np.count_nonzero(res.x) == 5


def test_exact_duplicate_column_is_never_picked_twice(rng):
    A, _, y = make_problem(rng, 20, 30, L=1, k=3)
    A = np.hstack([A, A[:, :5]])
    x = cscore.omp(A, y[:, 0], n_nonzero=3)
    np.testing.assert_allclose(A @ x, y[:, 0], atol=1e-10)


def test_nearly_dependent_atom_pivot_stops(rng):
    a0, a1, u = rng.standard_normal((3, 10))
    A = np.stack([a0, a1, a0 + a1 + 1e-9 * u], axis=1)
    y = rng.standard_normal(10)
    with pytest.warns(RuntimeWarning, match="linearly dependent"):
        res = cscore.omp(A, y, n_nonzero=3, return_result=True)
    assert res.stop_reason == "dependent" and int(res.n_iter) == 2
    assert np.isfinite(res.x).all()
    chosen = res.extra["atoms"][:2]
    ls = np.linalg.lstsq(A[:, chosen], y, rcond=None)[0]
    np.testing.assert_allclose(res.x[chosen], ls, rtol=1e-8)


def test_warning_once_per_call(rng):
    B = rng.standard_normal((12, 4))
    A = np.hstack([B, 2 * B])
    Y = rng.standard_normal((12, 5))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = cscore.omp(A, Y, n_nonzero=6, return_result=True)
        cscore.somp(A, np.stack([Y, Y]), n_nonzero=6)
    assert (res.stop_reason == "dependent").all()
    msgs = [str(w.message) for w in rec if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 2
    assert msgs[0].startswith("omp: 5 of 5") and msgs[1].startswith("somp: 2 of 2")


def test_n_nonzero_equals_m(rng):
    A = rng.standard_normal((15, 40))
    Y = rng.standard_normal((15, 3))
    res = cscore.omp(A, Y, n_nonzero=15, return_result=True)
    assert (res.n_iter == 15).all()
    assert res.residual_norm.max() < 1e-10
    for b in range(3):
        supp = res.extra["atoms"][b]
        ls = np.linalg.solve(A[:, supp], Y[:, b])
        np.testing.assert_allclose(res.x[supp, b], ls, rtol=1e-7, atol=1e-9)
    rs = cscore.somp(A, Y, n_nonzero=15, return_result=True)
    assert rs.residual_norm.max() < 1e-10


def test_tall_matrix_full_least_squares(rng):
    A = rng.standard_normal((30, 6)) * np.array([1e-3, 1, 10, 1e3, 5, 0.2])
    y = rng.standard_normal(30)
    x = cscore.omp(A, y, n_nonzero=6)
    np.testing.assert_allclose(x, np.linalg.lstsq(A, y, rcond=None)[0], rtol=1e-9)


def test_single_column_and_single_row(rng):
    A = rng.standard_normal((5, 1))
    y = 3.0 * A[:, 0]
    np.testing.assert_allclose(cscore.omp(A, y, n_nonzero=1), [3.0])
    A1 = rng.standard_normal((1, 6))
    res = cscore.omp(A1, np.array([2.0]), n_nonzero=1, return_result=True)
    assert res.residual_norm < 1e-14 and np.count_nonzero(res.x) == 1


def test_read_only_inputs(rng):
    A, _, Y = make_problem(rng, 12, 24, L=3, k=2)
    ref = cscore.omp(A, Y, n_nonzero=2)
    A.setflags(write=False)
    Y.setflags(write=False)
    np.testing.assert_array_equal(cscore.omp(A, Y, n_nonzero=2), ref)
    np.testing.assert_array_equal(cscore.omp(A, Y[:, 1], n_nonzero=2), ref[:, 1])
    cscore.somp(A, Y, n_nonzero=2)
    Ys = np.stack([Y, Y])
    Ys.setflags(write=False)
    cscore.somp(A, Ys, n_nonzero=2)


def test_inputs_not_modified(rng):
    A, _, Y = make_problem(rng, 12, 24, L=3, k=2)
    A0, Y0 = A.copy(), Y.copy()
    cscore.omp(A, Y, n_nonzero=4)
    cscore.somp(A, Y, tol=0.1)
    np.testing.assert_array_equal(A, A0)
    np.testing.assert_array_equal(Y, Y0)


def test_extreme_column_scales(rng):
    A, S, Y = make_problem(rng, 20, 40, L=2, k=3, joint=False)
    scale = np.where(np.arange(40) % 2 == 0, 1e-150, 1e150)
    X = cscore.omp(A * scale, Y, n_nonzero=3)
    np.testing.assert_allclose(X * scale[:, None], S, rtol=1e-9, atol=1e-10)


def test_float32_tol_and_zero(rng):
    A, _, Y = make_problem(rng, 20, 40, L=3, k=3, joint=False, dtype=np.float32)
    res = cscore.omp(A, Y, tol=1e-3, return_result=True)
    assert res.x.dtype == np.float32
    assert (res.residual_norm <= 1e-3).all()
    assert (cscore.omp(A, np.zeros(20, np.float32), n_nonzero=2) == 0).all()


def test_dependent_stop_right_after_a_close_tol_check(rng):
    # tol just below the 2-atom residual: the tol test at n = 2 needs the explicit
    # residual, then the third (nearly dependent) atom fails its pivot.  The
    # solution must still be the least-squares fit on the two atoms.
    a0, a1, u = rng.standard_normal((3, 10))
    A = np.stack([a0, a1, a0 + a1 + 1e-9 * u], axis=1)
    y = rng.standard_normal(10)
    with pytest.warns(RuntimeWarning):
        two = cscore.omp(A, y, n_nonzero=3, return_result=True)
    tol = float(two.residual_norm) * (1 - 1e-10)
    with pytest.warns(RuntimeWarning):
        res = cscore.omp(A, y, tol=tol, return_result=True)
    assert res.stop_reason == "dependent" and int(res.n_iter) == 2
    np.testing.assert_array_equal(res.x, two.x)
    assert float(res.residual_norm) > tol


@pytest.mark.parametrize(
    "dtype,power", [(np.float64, 600), (np.float64, -600), (np.float32, 70), (np.float32, -70)]
)
def test_extreme_signal_scales(rng, dtype, power):
    # Squares of such entries overflow/underflow; results must simply scale.
    A, _, Y = make_problem(rng, 20, 40, L=3, k=3, joint=False, sigma=0.01, dtype=dtype)
    s = dtype(2.0**power)
    ref = cscore.omp(A, Y, n_nonzero=4, return_result=True)
    big = cscore.omp(A, Y * s, n_nonzero=4, return_result=True)
    np.testing.assert_array_equal(big.x, ref.x * s)
    np.testing.assert_array_equal(big.residual_norm, ref.residual_norm * s)
    tol = 0.5 * float(ref.residual_norm.max()) + 1e-3
    ref_t = cscore.somp(A, np.stack([Y, Y]), tol=tol, return_result=True)
    big_t = cscore.somp(A, np.stack([Y, Y]) * s, tol=tol * float(s), return_result=True)
    np.testing.assert_array_equal(big_t.n_iter, ref_t.n_iter)
    np.testing.assert_array_equal(big_t.x, ref_t.x * s)
