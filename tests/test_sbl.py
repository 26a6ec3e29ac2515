"""T-SBL / T-MSBL: agreement with the authors' programs, paper behaviour, edge cases."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import cscore
import cscore.decoders.sbl as sbl
from oracles.sbl_numpy import solve_numpy

REF = Path(__file__).with_name("reference") / "sbl_reference.npz"
#: The compiled kernel and the NumPy oracle (tests/oracles/sbl_numpy.py).
SOLVERS = {"core": sbl._SOLVE, "numpy": solve_numpy}
BACKENDS = list(SOLVERS)


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    monkeypatch.setattr(sbl, "_SOLVE", SOLVERS[request.param])
    return request.param


def ar_rows(rng, M, N, L, K, *, beta=0.99, sigma=0.0):
    """Zhang & Rao's setting: unit-norm Gaussian A, K rows that are AR(1) sequences."""
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((N, L))
    supp = rng.choice(N, K, replace=False)
    for i in supp:
        r = np.empty(L)
        r[0] = rng.standard_normal()
        for t in range(1, L):
            r[t] = beta * r[t - 1] + np.sqrt(1 - beta**2) * rng.standard_normal()
        S[i] = r
    Y = A @ S + sigma * rng.standard_normal((M, L))
    return A, S, Y, np.sort(supp)


def _call(name, A, Y, **kw):
    alg, preset = name.split("_")[:2]
    if preset != "default":
        kw["noise" if alg == "tmsbl" else "snr"] = preset
    return getattr(cscore, alg)(A, Y, **kw)


# ----------------------------------------------------------------- the originals

REF_CASES = sorted({k.split("/")[0] for k in np.load(REF).files}) if REF.exists() else []


@pytest.mark.parametrize("name", REF_CASES)
def test_matches_original_programs(name, backend):
    ref = np.load(REF)
    A, Y, X = ref[f"{name}/A"], ref[f"{name}/Y"], ref[f"{name}/X"]
    r = _call(name, A, Y, return_result=True)
    if name == "tsbl_inf":
        # lambda = 1e-10 fixed: the original's explicit (ML x ML) inverse carries rounding
        # noise of ~1e-9 in the mean, so the stopping iteration may differ by a few.
        assert np.linalg.norm(r.x - X) <= 1e-6 * np.linalg.norm(X)
        assert abs(int(r.n_iter) - int(ref[f"{name}/count"])) <= 10
    else:
        np.testing.assert_allclose(r.x, X, rtol=0, atol=1e-9 * np.abs(X).max())
        assert int(r.n_iter) == int(ref[f"{name}/count"])
        np.testing.assert_allclose(r.extra["gamma"], ref[f"{name}/gamma"], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(r.extra["B"], ref[f"{name}/B"], rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(r.support.any(axis=1), X.any(axis=1))


@pytest.mark.filterwarnings("ignore:.*max_iter:RuntimeWarning")
def test_backends_agree_when_b_is_learned(rng):
    # Many rows kept (K > M) for a while, so B is learned and non-trivial.
    A, _, Y, _ = ar_rows(rng, 15, 40, 5, 6, sigma=0.05)
    out = {}
    for b in BACKENDS:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sbl, "_SOLVE", SOLVERS[b])
            out[b] = (
                cscore.tmsbl(A, Y, max_iter=30, return_result=True),
                cscore.tsbl(A, Y, max_iter=30, prune_gamma=1e-6, return_result=True),
            )
    for i in range(2):
        c, n = out["core"][i], out["numpy"][i]
        np.testing.assert_allclose(c.x, n.x, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(c.extra["B"], n.extra["B"], rtol=1e-9, atol=1e-12)
    # T-SBL kept more than M rows, so its B is learned: not the identity, unit norm.
    B = out["core"][1].extra["B"]
    assert np.isclose(np.linalg.norm(B), 1.0) and not np.allclose(B, np.eye(5))


# ----------------------------------------------------------------- paper behaviour


def _successes(fn, seeds, **kw):
    ok = 0
    for s in seeds:
        A, _, Y, supp = ar_rows(np.random.default_rng(s), 25, 125, 4, 7)
        X = fn(A, Y, **kw)
        top = np.sort(np.argsort(-np.sum(X**2, axis=1))[:7])
        ok += np.array_equal(top, supp)
    return ok


def test_paper_noiseless_support_recovery_tmsbl():
    assert _successes(cscore.tmsbl, range(500, 520), noise="no") >= 18


def test_paper_noiseless_support_recovery_tsbl():
    assert _successes(cscore.tsbl, range(600, 620), snr="inf") >= 17


def test_noisy_recovery_and_lambda_estimate(rng):
    sigma = 0.02
    A, S, Y, supp = ar_rows(rng, 40, 100, 4, 8, sigma=sigma)
    for fn, kw in [(cscore.tmsbl, {"noise": "small"}), (cscore.tsbl, {"snr": "high"})]:
        r = fn(A, Y, return_result=True, **kw)
        top = np.sort(np.argsort(-np.sum(r.x**2, axis=1))[:8])
        assert np.array_equal(top, supp)
        assert np.linalg.norm(r.x - S) < 0.1 * np.linalg.norm(S)
        assert 0.1 * sigma**2 < float(r.extra["lambda"]) < 10 * sigma**2


# ----------------------------------------------------------------- API, shapes, dtypes


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_batch_equals_loop_and_threads(fn, rng, backend):
    probs = [ar_rows(rng, 20, 50, 3, 4, sigma=0.01) for _ in range(3)]
    A = probs[0][0]
    Yb = np.stack([A @ p[1] + 0.01 * rng.standard_normal((20, 3)) for p in probs])
    loop = np.stack([fn(A, y) for y in Yb])
    one = fn(A, Yb, n_threads=1)
    two = fn(A, Yb, n_threads=3)
    assert one.shape == (3, 50, 3)
    np.testing.assert_array_equal(one, loop)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_result_record(fn, rng):
    A, _, Y, _ = ar_rows(rng, 20, 50, 3, 4, sigma=0.01)
    r = fn(A, Y, return_result=True)
    assert isinstance(r, cscore.DecodeResult)
    np.testing.assert_array_equal(r.x, fn(A, Y))
    assert r.extra["gamma"].shape == (50,) and r.extra["B"].shape == (3, 3)
    assert np.all(r.extra["gamma"][~r.support.any(1)] == 0)
    assert r.stop_reason == "rtol" and 1 <= int(r.n_iter) < 2000
    np.testing.assert_allclose(r.residual_norm, np.linalg.norm(Y - A @ r.x, axis=0))
    rb = fn(A, np.stack([Y, Y]), return_result=True)
    assert rb.extra["gamma"].shape == (2, 50) and rb.n_iter.shape == (2,)


@pytest.mark.filterwarnings("ignore:.*max_iter:RuntimeWarning")
@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_dtypes_and_single_vector(fn, rng):
    A, _, Y, _ = ar_rows(rng, 20, 50, 3, 4, sigma=0.01)
    x64 = fn(A, Y)
    x32 = fn(A.astype(np.float32), Y.astype(np.float32))
    assert x32.dtype == np.float32 and x64.dtype == np.float64
    np.testing.assert_allclose(x32, x64, atol=1e-4 * np.abs(x64).max())
    assert fn(A.astype(np.float32), Y).dtype == np.float64
    Ai = np.round(10 * A).astype(int)
    assert fn(Ai, Ai @ np.eye(50)[:, :2], max_iter=50).dtype == np.float64
    v = fn(A, Y[:, 0])
    assert v.shape == (50,)
    np.testing.assert_allclose(v, fn(A, Y[:, :1])[:, 0])


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_bad_inputs(fn, rng):
    A, _, Y, _ = ar_rows(rng, 10, 20, 2, 2)
    bad = A.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="A"):
        fn(bad, Y)
    Yi = Y.copy()
    Yi[1, 1] = np.inf
    with pytest.raises(ValueError, match="Y"):
        fn(A, Yi)
    with pytest.raises(ValueError, match="Y"):
        fn(A, Y[:9])
    with pytest.raises(ValueError, match="Y"):
        fn(A, np.zeros((10, 0)))
    with pytest.raises(ValueError, match="A"):
        fn(np.zeros((0, 5)), Y)
    Az = A.copy()
    Az[:, 3] = 0
    with pytest.raises(ValueError, match="zero column"):
        fn(Az, Y)
    if fn is cscore.tsbl:  # T-MSBL takes complex data (tests/test_complex.py)
        with pytest.raises(TypeError, match="Y"):
            fn(A, Y.astype(complex))
    with pytest.raises(ValueError, match="Y"):
        fn(A, np.zeros((2, 2, 10, 2)))
    with pytest.raises(ValueError, match="max_iter"):
        fn(A, Y, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        fn(A, Y, rtol=-1.0)
    with pytest.raises(ValueError, match="prune_gamma"):
        fn(A, Y, prune_gamma=-1.0)
    with pytest.raises(ValueError, match="n_threads"):
        fn(A, Y, n_threads=0)


def test_bad_presets_and_matrices(rng):
    A, _, Y, _ = ar_rows(rng, 10, 20, 2, 2)
    with pytest.raises(ValueError, match="noise"):
        cscore.tmsbl(A, Y, noise="loud")
    with pytest.raises(ValueError, match="snr"):
        cscore.tsbl(A, Y, snr="medium")
    with pytest.raises(ValueError, match="fix_b"):
        cscore.tmsbl(A, Y, fix_b=np.eye(3))
    with pytest.raises(ValueError, match="fix_b"):
        cscore.tmsbl(A, Y, fix_b=-np.eye(2))
    with pytest.raises(ValueError, match="matrix_reg"):
        cscore.tmsbl(A, Y, matrix_reg=np.eye(3))
    with pytest.raises(TypeError, match="learn_lambda"):
        cscore.tmsbl(A, Y, learn_lambda="yes")


def test_presets_are_applied_and_overridable(rng):
    A, _, Y, _ = ar_rows(rng, 20, 50, 3, 4)
    r = cscore.tmsbl(A, Y, noise="no", return_result=True)
    assert float(r.extra["lambda"]) == 1e-15  # not learned under 'no'
    r = cscore.tmsbl(A, Y, noise="no", lam=1e-6, return_result=True)
    assert float(r.extra["lambda"]) == 1e-6
    r = cscore.tsbl(A, Y, snr="inf", return_result=True)
    assert float(r.extra["lambda"]) == 1e-10
    # prune_gamma is what keeps rows: an absurd threshold prunes everything.
    with pytest.warns(RuntimeWarning, match="every row was pruned"):
        x = cscore.tmsbl(A, Y, prune_gamma=10.0)
    assert not x.any()


# ----------------------------------------------------------------- numerics


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_iteration_cap_warns(fn, rng):
    A, _, Y, _ = ar_rows(rng, 20, 50, 3, 4, sigma=0.01)
    with pytest.warns(RuntimeWarning, match="max_iter"):
        r = fn(A, Y, max_iter=3, return_result=True)
    assert int(r.n_iter) == 3 and r.stop_reason == "max_iter"


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_degenerate_inputs_give_finite_output(fn, rng, backend):
    A, _, Y, _ = ar_rows(rng, 12, 30, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # zero measurements: everything is pruned, the answer is zero
        assert not fn(A, np.zeros_like(Y)).any()
        # duplicated columns and a rank-one dictionary: no NaN
        Ad = np.concatenate([A, A], axis=1)
        assert np.isfinite(fn(Ad, Y, max_iter=200)).all()
        A1 = np.outer(np.ones(12), np.arange(1, 31))
        assert np.isfinite(fn(A1, A1 @ np.ones((30, 3)), max_iter=200)).all()


def test_tmsbl_fixes_b_for_long_sequences(rng):
    A, _, Y, _ = ar_rows(rng, 20, 60, 12, 4, sigma=0.01)
    r = cscore.tmsbl(A, Y, return_result=True)
    np.testing.assert_array_equal(r.extra["B"], np.eye(12))
    B0 = 0.9 ** np.abs(np.subtract.outer(np.arange(3), np.arange(3)))
    A, _, Y, _ = ar_rows(rng, 20, 60, 3, 4, sigma=0.01)
    r = cscore.tmsbl(A, Y, fix_b=B0, return_result=True)
    np.testing.assert_allclose(r.extra["B"], B0)


def _noiseless_16x32(seed=0):
    r = np.random.default_rng(seed)
    A = r.standard_normal((16, 32))
    S = np.zeros((32, 4))
    S[[2, 9, 20]] = r.standard_normal((3, 4))
    return A, S, A @ S


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_huge_magnitude_raises_instead_of_nan(fn, backend):
    # gamma starts at 1 and the thresholds are absolute, so Y ~ 1e80 overflows
    # inside the iteration; that must be a clear error, never an all-NaN result.
    A, _S, Y = _noiseless_16x32()
    with pytest.raises(FloatingPointError, match=r"rescale|divide Y"):
        fn(A, Y * 1e80)
    with pytest.raises(FloatingPointError, match="magnitude"):
        fn(A, np.stack([Y, Y * 1e80]), max_iter=50)


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_small_magnitude_all_zero_warns(fn, backend):
    # Faithful absolute thresholds prune every row of a 1e-3-scale problem: the
    # zero result must not be silent.
    A, S, Y = _noiseless_16x32()
    with pytest.warns(RuntimeWarning, match="every row was pruned.*rescale Y"):
        r = fn(A, Y * 1e-3, return_result=True)
    assert not r.x.any() and r.stop_reason == "exhausted"
    # rescaled as the message says, it is recovered (noiseless preset)
    preset = {"noise": "no"} if fn is cscore.tmsbl else {"snr": "inf"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = fn(A, Y * 1e-3 / np.abs(Y * 1e-3).max(), **preset) * np.abs(Y * 1e-3).max()
    assert np.linalg.norm(x - S * 1e-3) < 1e-6 * np.linalg.norm(S * 1e-3)
    # an all-zero Y gives zero without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not fn(A, np.zeros_like(Y)).any()


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_rtol_zero_is_accepted_like_other_decoders(fn, rng):
    A, _S, Y = _noiseless_16x32()
    with pytest.warns(RuntimeWarning, match="max_iter=5"):
        r = fn(A, Y, rtol=0.0, max_iter=5, return_result=True)
    assert int(r.n_iter) == 5 and r.stop_reason == "max_iter"
    msgs = []
    for f in (fn, cscore.bcs, cscore.mtbcs):
        with pytest.raises(ValueError) as exc:
            f(A, Y, rtol=-1.0)
        msgs.append(str(exc.value))
    assert len(set(msgs)) == 1 and "rtol must be" in msgs[0]


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_noiseless_defaults_hit_cap_noiseless_preset_does_not(fn):
    # As in the authors' TSBL.m / TMSBL.m (checked with Octave: 2000 iterations,
    # error 4.4e-5 on this problem), the default (noisy) preset runs to the cap on
    # noiseless data; the noiseless preset converges to the exact solution.
    A, S, Y = _noiseless_16x32()
    with pytest.warns(RuntimeWarning, match="max_iter"):
        r = fn(A, Y, return_result=True)
    assert r.stop_reason == "max_iter"
    preset = {"noise": "no"} if fn is cscore.tmsbl else {"snr": "inf"}
    r = fn(A, Y, return_result=True, **preset)
    assert r.stop_reason == "rtol"
    assert np.linalg.norm(r.x - S) < 1e-9 * np.linalg.norm(S)


@pytest.mark.parametrize("fn", [cscore.tmsbl, cscore.tsbl])
def test_residual_norm_follows_input_dtype(fn):
    A, _S, Y = _noiseless_16x32()
    preset = {"noise": "no"} if fn is cscore.tmsbl else {"snr": "inf"}
    r32 = fn(A.astype(np.float32), Y.astype(np.float32), return_result=True, **preset)
    r64 = fn(A, Y, return_result=True, **preset)
    assert r32.x.dtype == r32.residual_norm.dtype == np.float32
    assert r64.residual_norm.dtype == np.float64
    assert r32.n_iter.shape == r32.stop_reason.shape == ()
