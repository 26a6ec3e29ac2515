"""Tests for cscore.bcs (BCS) and cscore.mtbcs (MT-BCS)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import cscore

from conftest import make_problem

REF = Path(__file__).resolve().parent / "reference" / "bcs_reference.npz"


@pytest.fixture(scope="module")
def ref() -> dict[str, np.ndarray]:
    with np.load(REF) as z:
        return {k: z[k] for k in z.files}


def _cases(ref: dict[str, np.ndarray], prefix: str) -> list[str]:
    return sorted({k.split("/")[0] for k in ref if k.startswith(prefix)})


def nmse(x: np.ndarray, x0: np.ndarray) -> float:
    return float(np.sum((x - x0) ** 2) / np.sum(x0**2))


# ---------------------------------------------------------------- originals


@pytest.mark.parametrize("case", ["bcs_noisy", "bcs_noiseless", "bcs_hard"])
def test_bcs_matches_original(ref, case):
    """Same weights, same atoms in the same order, same noise re-estimate as BCS_fast_rvm.m."""
    A, Y, X = ref[f"{case}/A"], ref[f"{case}/Y"], ref[f"{case}/X"]
    div = float(ref[f"{case}/divisor"])
    nv = np.var(Y, axis=0, ddof=1) / div
    r = cscore.bcs(A, Y, noise_var=nv, return_result=True)
    for col in range(Y.shape[1]):
        err = np.linalg.norm(r.x[:, col] - X[:, col]) / np.linalg.norm(X[:, col])
        assert err < 1e-8, (case, col, err)
        np.testing.assert_array_equal(r.extra["indices"][col], ref[f"{case}/used_{col}"])
    np.testing.assert_allclose(r.extra["noise_var"], ref[f"{case}/noise_var"], rtol=1e-6)
    assert set(r.stop_reason) == {"rtol"}


def test_bcs_default_noise_var_is_the_demo_value(ref):
    """noise_var=None is std(y)^2/100 (MATLAB std), i.e. the 'bcs_noisy' reference run."""
    A, Y, X = ref["bcs_noisy/A"], ref["bcs_noisy/Y"], ref["bcs_noisy/X"]
    r = cscore.bcs(A, Y, return_result=True)
    np.testing.assert_allclose(r.extra["noise_var_init"], np.std(Y, axis=0, ddof=1) ** 2 / 100)
    np.testing.assert_allclose(r.x, X, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("case", ["mt_shared", "mt_single", "mt_hard"])
def test_mtbcs_matches_original(ref, case):
    """Same weights and the same per-iteration likelihood gains (ML) as mt_CS.m."""
    A, Y, X, ML = ref[f"{case}/A"], ref[f"{case}/Y"], ref[f"{case}/X"], ref[f"{case}/ML"]
    r = cscore.mtbcs(A, Y, return_result=True)
    err = np.linalg.norm(r.x - X) / np.linalg.norm(X)
    assert err < 1e-8, (case, err)
    assert r.extra["ml"].shape == ML.shape
    np.testing.assert_allclose(r.extra["ml"], ML, rtol=1e-8, atol=1e-8)
    assert int(r.n_iter) == ML.size
    np.testing.assert_array_equal(r.support, X != 0)


def test_reference_cases_cover_every_move(ref):
    """The stored cases exercise add, re-estimate and delete (else the check above is weak)."""
    moves = cscore.mtbcs(ref["mt_hard/A"], ref["mt_hard/Y"], return_result=True).extra["moves"]
    assert moves["add"] > 0 and moves["reestimate"] > 0 and moves["delete"] > 0
    A, Y = ref["bcs_hard/A"], ref["bcs_hard/Y"]
    bm = cscore.bcs(A, Y, return_result=True).extra["moves"]
    assert bm["delete"].sum() > 0 and bm["reestimate"].min() > 0


# ---------------------------------------------------------------- behaviour


def test_bcs_exact_recovery_noiseless(rng):
    A, S, Y = make_problem(rng, M=50, N=128, L=3, k=8, joint=False)
    nv = np.var(Y, axis=0, ddof=1) / 1e6  # the authors' setting for noiseless data
    r = cscore.bcs(A, Y, noise_var=nv, return_result=True)
    np.testing.assert_array_equal(r.support, S != 0)
    assert nmse(r.x, S) < 1e-8
    # the default (std^2/100) still finds the support, with a small bias
    x = cscore.bcs(A, Y)
    np.testing.assert_array_equal(x != 0, S != 0)
    assert nmse(x, S) < 1e-3


def test_mtbcs_exact_recovery_noiseless(rng):
    A, S, Y = make_problem(rng, M=40, N=128, L=4, k=10, joint=True)
    r = cscore.mtbcs(A, Y, return_result=True)
    np.testing.assert_array_equal(r.support, S != 0)
    assert nmse(r.x, S) < 1e-6
    assert np.all(r.extra["noise_var"] > 0)


def test_mtbcs_beats_bcs_on_shared_support():
    """With a shared support MT-BCS needs fewer measurements (Ji, Dunson & Carin 2009, Fig. 2-3)."""
    e_st, e_mt = [], []
    for seed in range(6):
        A, S, Y = make_problem(
            np.random.default_rng(seed), M=40, N=128, L=4, k=14, joint=True, sigma=0.005
        )
        e_st.append(nmse(cscore.bcs(A, Y), S))
        e_mt.append(nmse(cscore.mtbcs(A, Y), S))
    assert np.mean(e_st) > 0.05  # single-task BCS is failing at this sparsity
    assert np.mean(e_mt) < 0.2 * np.mean(e_st)
    assert np.median(e_mt) < 1e-2


def test_bcs_noise_reestimate_formula(rng):
    """noise_var is BCS_fast_rvm.m's re-estimate ||y - A x||^2 / (M - m + sum alpha_i Sigma_ii)."""
    A, _S, Y = make_problem(rng, M=80, N=160, L=2, k=8, sigma=0.05)
    r = cscore.bcs(A, Y, return_result=True)
    for col in range(2):
        al, eb = r.extra["alpha"][col], r.extra["errbars"][col]
        assert np.all(eb > 0)
        m = al.size
        want = r.residual_norm[col] ** 2 / (80 - m + np.sum(al * eb**2))
        np.testing.assert_allclose(r.extra["noise_var"][col], want, rtol=1e-10)


def test_result_contents(rng):
    A, _S, Y = make_problem(rng, M=30, N=60, L=2, k=4)
    r = cscore.bcs(A, Y[:, 0], return_result=True)
    assert isinstance(r, cscore.DecodeResult)
    assert r.x.shape == (60,) and r.support.shape == (60,)
    idx = r.extra["indices"]
    np.testing.assert_array_equal(np.sort(idx), np.flatnonzero(r.x))
    np.testing.assert_allclose(r.extra["gamma"], 1 / r.extra["alpha"])
    assert r.residual_norm.shape == (1,)
    np.testing.assert_allclose(r.residual_norm[0], np.linalg.norm(Y[:, 0] - A @ r.x))
    plain = cscore.bcs(A, Y[:, 0])
    assert isinstance(plain, np.ndarray)
    np.testing.assert_array_equal(plain, r.x)
    rm = cscore.mtbcs(A, Y, return_result=True)
    assert rm.x.shape == (60, 2) and rm.residual_norm.shape == (2,)
    assert rm.extra["noise_var"].shape == (2,)
    np.testing.assert_array_equal(np.sort(rm.extra["indices"]), np.flatnonzero(rm.x[:, 0]))


# ---------------------------------------------------------------- batches, threads, dtypes


def test_bcs_batch_equals_loop_and_threads(rng):
    A, _S, Y = make_problem(rng, M=30, N=70, L=7, k=5, joint=False, sigma=0.01)
    X = cscore.bcs(A, Y, n_threads=1)
    for col in range(Y.shape[1]):
        np.testing.assert_array_equal(X[:, col], cscore.bcs(A, Y[:, col]))
    np.testing.assert_array_equal(X, cscore.bcs(A, Y, n_threads=2))
    np.testing.assert_array_equal(X, cscore.bcs(A, Y, n_threads=5))


def test_mtbcs_batch_equals_loop_and_threads(rng):
    probs = [make_problem(rng, M=30, N=70, L=3, k=5, sigma=0.01) for _ in range(5)]
    A = probs[0][0]
    Yb = np.stack([A @ p[1] + 0.01 * rng.standard_normal((30, 3)) for p in probs])
    Sb = cscore.mtbcs(A, Yb, n_threads=1)
    assert Sb.shape == (5, 70, 3)
    for i in range(5):
        np.testing.assert_array_equal(Sb[i], cscore.mtbcs(A, Yb[i]))
    np.testing.assert_array_equal(Sb, cscore.mtbcs(A, Yb, n_threads=2))
    with cscore.num_threads(3):
        np.testing.assert_array_equal(Sb, cscore.mtbcs(A, Yb))


@pytest.mark.filterwarnings("ignore:mtbcs.*all-zero estimate:RuntimeWarning")
def test_mtbcs_batch_with_mixed_scales(rng):
    """Problems of very different magnitudes in one batch decode as they do alone."""
    A, _S, Y = make_problem(rng, M=30, N=70, L=2, k=5, sigma=0.01)
    Yb = np.stack([Y, Y * 1e-3, Y * 3e5, np.zeros_like(Y)])
    r = cscore.mtbcs(A, Yb, return_result=True)
    for i in range(4):
        one = cscore.mtbcs(A, Yb[i], return_result=True)
        np.testing.assert_array_equal(r.x[i], one.x)
        np.testing.assert_array_equal(r.extra["noise_var"][i], one.extra["noise_var"])
        np.testing.assert_array_equal(r.extra["indices"][i], one.extra["indices"])
        assert r.stop_reason[i] == one.stop_reason
    assert r.stop_reason[3] == "exhausted" and np.all(r.x[3] == 0)


def test_float32_and_integer_inputs(rng):
    A, _S, Y = make_problem(rng, M=30, N=60, L=2, k=4)
    x64 = cscore.bcs(A, Y)
    x32 = cscore.bcs(A.astype(np.float32), Y.astype(np.float32))
    assert x32.dtype == np.float32
    np.testing.assert_allclose(x32, x64, atol=1e-4)
    s32 = cscore.mtbcs(A.astype(np.float32), Y.astype(np.float32))
    assert s32.dtype == np.float32
    np.testing.assert_allclose(s32, cscore.mtbcs(A, Y), atol=1e-4)
    # mixed precision -> float64
    assert cscore.bcs(A.astype(np.float32), Y).dtype == np.float64
    Ai = rng.integers(-3, 4, size=(20, 40))
    Ai[0, :] = 1  # no zero column
    yi = Ai[:, [2, 7]] @ np.array([2, -3])
    xi = cscore.bcs(Ai, yi, noise_var=1e-8)
    assert xi.dtype == np.float64
    np.testing.assert_allclose(xi[[2, 7]], [2, -3], atol=1e-4)
    assert cscore.mtbcs(Ai, yi[:, None]).dtype == np.float64


# ---------------------------------------------------------------- edge cases / safety


def test_zero_measurements_give_zero(rng):
    A, _, _ = make_problem(rng, M=20, N=40)
    r = cscore.bcs(A, np.zeros((20, 2)), return_result=True)
    assert np.all(r.x == 0) and not np.any(np.isnan(r.x))
    assert set(r.stop_reason) == {"exhausted"}
    rm = cscore.mtbcs(A, np.zeros((20, 2)), return_result=True)
    assert np.all(rm.x == 0) and not np.any(np.isnan(rm.x))


def test_duplicate_and_collinear_columns_stay_finite(rng):
    A, _S, Y = make_problem(rng, M=25, N=50, L=3, k=4, sigma=0.01)
    A2 = np.hstack([A, A[:, :10], A[:, 10:20] * (1 + 1e-12)])
    x = cscore.bcs(A2, Y)
    s = cscore.mtbcs(A2, Y)
    assert np.all(np.isfinite(x)) and np.all(np.isfinite(s))
    assert nmse(A2 @ s, Y) < 0.05


def test_pure_noise_and_large_scale_stay_finite(rng):
    A, _, _ = make_problem(rng, M=30, N=80)
    noise = rng.standard_normal((30, 3))
    x1, s1 = cscore.bcs(A, noise), cscore.mtbcs(A, noise, b=1.0)
    for scale in (2.0**-400, 2.0**400):
        x = cscore.bcs(A, noise * scale)
        s = cscore.mtbcs(A, noise * scale, b=scale**2)  # the same model, rescaled
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(s))
        np.testing.assert_allclose(x / scale, x1, rtol=1e-12, atol=0)
        np.testing.assert_allclose(s / scale, s1, rtol=1e-12, atol=0)


def test_tiny_noise_variance(rng):
    """sigma2 << signal: the in-model quantities must not cancel to garbage."""
    A, S, Y = make_problem(rng, M=30, N=60, L=2, k=5, unit_norm=False)
    r = cscore.bcs(A * 10, Y * 10, noise_var=1e-10, return_result=True)
    np.testing.assert_array_equal(r.support, S != 0)
    assert nmse(r.x, S) < 1e-12
    assert set(r.stop_reason) == {"rtol"}


def test_max_iter_warns(rng):
    A, _S, Y = make_problem(rng, M=40, N=100, L=2, k=8, sigma=0.005)
    with pytest.warns(RuntimeWarning, match="max_iter=3"):
        r = cscore.bcs(A, Y, max_iter=3, return_result=True)
    assert list(r.stop_reason) == ["max_iter", "max_iter"]
    assert np.all(np.isfinite(r.x))
    with pytest.warns(RuntimeWarning, match="max_iter"):
        rm = cscore.mtbcs(A, Y, max_iter=4, return_result=True)
    assert rm.stop_reason.shape == () and rm.stop_reason == "max_iter"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cscore.bcs(A, Y)
        cscore.mtbcs(A, Y)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda A, y: cscore.bcs(A[:, :0], y), ValueError, "A must not be empty"),
        (
            lambda A, y: cscore.bcs(np.where(A == A[3, 4], np.nan, A), y),
            ValueError,
            "A contains NaN",
        ),
        (lambda A, y: cscore.bcs(A, np.r_[y[:-1], np.inf]), ValueError, "y contains NaN"),
        (lambda A, y: cscore.bcs(A, y[:-1]), ValueError, "y has 19 measurements"),
        (lambda A, y: cscore.bcs(A, y[None, :, None]), ValueError, "y must be 1-D or 2-D"),
        (lambda A, y: cscore.bcs(A[0], y), ValueError, "A must be 2-D"),
        (lambda A, y: cscore.bcs(np.c_[A, 0 * A[:, 0]], y), ValueError, "zero column"),
        (lambda A, y: cscore.bcs(A, y + 1j), TypeError, "y must be real"),
        (lambda A, y: cscore.bcs(A, y, noise_var=-1.0), ValueError, "noise_var"),
        (lambda A, y: cscore.bcs(A, y, noise_var=[1.0, 2.0]), ValueError, "noise_var"),
        (lambda A, y: cscore.bcs(A, y, rtol=-1.0), ValueError, "rtol"),
        (lambda A, y: cscore.bcs(A, y, max_iter=0), ValueError, "max_iter"),
        (lambda A, y: cscore.bcs(A, y, max_iter=2.5), TypeError, "max_iter"),
        (lambda A, y: cscore.bcs(A, y, n_threads=0), ValueError, "n_threads"),
        (lambda A, y: cscore.bcs(A, y[:1], noise_var=None), ValueError, "measurements"),
        (lambda A, y: cscore.mtbcs(A, y), ValueError, "Y must be 2-D or 3-D"),
        (lambda A, y: cscore.mtbcs(A, y[:-1, None]), ValueError, "Y has 19 measurements"),
        (lambda A, y: cscore.mtbcs(A, y[None, :-1, None]), ValueError, "Y has 19"),
        (lambda A, y: cscore.mtbcs(A, y[:, None], a=0.0), ValueError, "a must be > 0"),
        (lambda A, y: cscore.mtbcs(A, y[:, None], b=np.inf), ValueError, "b must be finite"),
        (lambda A, y: cscore.mtbcs(A, np.empty((20, 0))), ValueError, "Y must not be empty"),
        (lambda A, y: cscore.mtbcs(A, y[:, None], rtol=np.nan), ValueError, "rtol"),
        (lambda A, y: cscore.mtbcs(None, y[:, None]), TypeError, "A must be an array"),
    ],
)
def test_bad_inputs(rng, call, exc, match):
    A, _, Y = make_problem(rng, M=20, N=40, k=3)
    with pytest.raises(exc, match=match):
        call(A, Y[:, 0])


def _noiseless_16x32(seed=0):
    r = np.random.default_rng(seed)
    A = r.standard_normal((16, 32))
    S = np.zeros((32, 4))
    S[[2, 9, 20]] = r.standard_normal((3, 4))
    return A, S, A @ S


@pytest.mark.parametrize("scale", [1e-250, 1e-200, 1e-100, 1e100, 1e200, 1e250])
def test_bcs_extreme_magnitudes(scale):
    # The default noise variance is computed after the power-of-two rescaling:
    # std(y)^2 of y ~ 1e200 overflows, of y ~ 1e-200 underflows.
    A, _S, Y = _noiseless_16x32()
    ref = cscore.bcs(A, Y, return_result=True)
    r = cscore.bcs(A, Y * scale, return_result=True)
    assert np.all(np.isfinite(r.x))
    np.testing.assert_allclose(r.x / scale, ref.x, rtol=1e-8, atol=1e-8 * np.abs(ref.x).max())
    for ind, ind0 in zip(r.extra["indices"], ref.extra["indices"]):
        np.testing.assert_array_equal(ind, ind0)
    assert not np.any(np.isnan(r.extra["noise_var"]))
    assert not np.any(np.isnan(r.extra["noise_var_init"]))
    # a power-of-two scale changes no rounding at all
    assert np.all(np.isfinite(r.residual_norm))
    p = cscore.bcs(A, Y * 2.0**300, return_result=True)
    np.testing.assert_array_equal(p.x, ref.x * 2.0**300)
    np.testing.assert_array_equal(p.extra["noise_var_init"], ref.extra["noise_var_init"] * 2.0**600)


def test_mtbcs_huge_magnitudes():
    # b / c^2 used to underflow to 0 ("a and b must be > 0").  The Gamma(a, b)
    # prior is absolute, so for huge Y it is negligible: the result is that of
    # the unit-scale problem with b -> 0 (clamped to the smallest normal double).
    A, S, Y = _noiseless_16x32()
    for scale in (1e200, 1e250):
        r = cscore.mtbcs(A, Y * scale, return_result=True)
        assert np.all(np.isfinite(r.x)) and np.all(np.isfinite(r.residual_norm))
        assert np.linalg.norm(r.x / scale - S) < 1e-8 * np.linalg.norm(S)
    p = cscore.mtbcs(A, Y * 2.0**700)
    q = cscore.mtbcs(A, Y, b=np.finfo(np.float64).tiny)
    np.testing.assert_array_equal(p, q * 2.0**700)


@pytest.mark.parametrize("scale", [1e-3, 1e-200])
def test_mtbcs_small_magnitude_all_zero_warns(scale):
    # The Gamma(a, b) noise prior is absolute (as in mt_CS.m): small Y is all
    # "noise" and decodes to zero -- not silently.
    A, S, Y = _noiseless_16x32()
    with pytest.warns(RuntimeWarning, match=r"all-zero estimate.*rescale Y"):
        r = cscore.mtbcs(A, Y * scale, return_result=True)
    assert not r.x.any() and r.stop_reason == "exhausted"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = cscore.mtbcs(A, Y)  # at unit scale it recovers
        assert not cscore.mtbcs(A, np.zeros_like(Y)).any()  # zero Y: no warning
    assert np.linalg.norm(x - S) < 1e-3 * np.linalg.norm(S)


def test_result_shapes_dtypes_and_extra_types():
    A, _S, Y = _noiseless_16x32()
    A32, Y32 = A.astype(np.float32), Y.astype(np.float32)
    r = cscore.mtbcs(A, Y, return_result=True)
    assert r.n_iter.shape == () and r.stop_reason.shape == ()  # like somp / tsbl
    assert r.residual_norm.shape == (4,)
    rb = cscore.mtbcs(A, np.stack([Y, 2 * Y]), return_result=True)
    assert rb.n_iter.shape == rb.stop_reason.shape == (2,)
    for res in (cscore.mtbcs(A32, Y32, return_result=True),
                cscore.bcs(A32, Y32, return_result=True),
                cscore.bcs(A32, Y32[:, 0], return_result=True)):
        assert res.x.dtype == res.residual_norm.dtype == np.float32
    assert cscore.bcs(A, Y, return_result=True).residual_norm.dtype == np.float64
    # per-problem records: arrays for one problem, lists of arrays for a batch,
    # the same for bcs and mtbcs
    one_b = cscore.bcs(A, Y[:, 0], return_result=True).extra
    bat_b = cscore.bcs(A, Y, return_result=True).extra
    bat_m = rb.extra
    for key in ("indices", "alpha", "gamma", "ml"):
        assert isinstance(one_b[key], np.ndarray) and isinstance(r.extra[key], np.ndarray)
        for rec in (bat_b, bat_m):
            assert isinstance(rec[key], list)
            assert all(isinstance(v, np.ndarray) for v in rec[key])


def test_mismatched_rows_report_the_users_shape():
    A, _S, Y = _noiseless_16x32()
    with pytest.raises(ValueError, match=r"shape \(15, 4\)"):
        cscore.mtbcs(A, Y[:15])
    with pytest.raises(ValueError, match=r"shape \(2, 15, 4\)"):
        cscore.mtbcs(A, np.stack([Y[:15], Y[:15]]))
    with pytest.raises(ValueError, match=r"shape \(15,\)"):
        cscore.bcs(A, Y[:15, 0])
    with pytest.raises(ValueError, match=r"shape \(15, 4\)"):
        cscore.bcs(A, Y[:15])
