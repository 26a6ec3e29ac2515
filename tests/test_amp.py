"""AMP and VAMP (python/cscore/decoders/amp.py, cpp/include/cscore/amp.hpp).

The accuracy tests use the problem of Borgerding, Schniter & Rangan (2017) at its
own size: N = 500, M = 250, A i.i.d. N(0, 1/M), Bernoulli-Gaussian rate 0.1 with
N(0, 1) nonzeros, SNR 40 dB; four problems per matrix.  Measured on these seeds
(mean of the per-problem NMSE in dB): AMP-BG -45.3, VAMP-BG -45.3, support
oracle (LMMSE on the true support) -45.6, AMP-l1 (minimax threshold) -36.3; on
the condition-number-15 matrix after 40 iterations VAMP-BG -45.7 and AMP-BG
-36.2 (damped by the safeguard).  Row-sparse MMV (M = 150, rate 0.15, L = 4):
joint BG about -39.7, per-channel BG -5 to -10.  The thresholds below leave
3-6 dB of margin.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from cscore.decoders.amp import VAMPSolver, amp, minimax_alpha, vamp
from cscore.result import DecodeResult

N, M, RATE, SNR_DB = 500, 250, 0.1, 40.0


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """NumPy's own QR/SVD on one thread: a multi-threaded BLAS crawls on a busy
    2-core machine (the decoders pin it to one thread themselves)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@cache
def bsr_problem(
    seed: int, B: int = 4, *, cond: float | None = None, m: int = M, rate: float = RATE, L: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(A, X (B, N, L), Y (B, m, L), noise variance) of the Borgerding et al. kind.

    ``cond`` gives A = U diag(s) V^T with Haar U, V and geometric singular values
    of that condition number, scaled to ||A||_F^2 = N.  With L > 1 the rows of X
    are jointly sparse.
    """
    rng = np.random.default_rng(seed)
    if cond is None:
        A = rng.standard_normal((m, N)) / np.sqrt(m)
    else:
        U, _ = np.linalg.qr(rng.standard_normal((m, m)))
        V, _ = np.linalg.qr(rng.standard_normal((N, m)))
        s = cond ** (-np.arange(m) / (m - 1))
        s *= np.sqrt(N / np.sum(s**2))
        A = (U * s) @ V.T
    X = rng.standard_normal((B, N, L)) * (rng.random((B, N, 1)) < rate)
    Z = A @ X
    var = float(np.mean(Z**2) * 10 ** (-SNR_DB / 10))
    Y = Z + np.sqrt(var) * rng.standard_normal(Z.shape)
    for a in (A, X, Y):
        a.flags.writeable = False
    return A, X, Y, var


def nmse_db(X_hat: np.ndarray, X: np.ndarray) -> np.ndarray:
    """NMSE in dB per problem (over the last two axes)."""
    err = np.sum((X_hat - X) ** 2, axis=(-2, -1))
    return 10 * np.log10(err / np.sum(X**2, axis=(-2, -1)))


def oracle(A: np.ndarray, X: np.ndarray, Y: np.ndarray, var: float) -> np.ndarray:
    """LMMSE estimate knowing the support, the slab variance 1 and the noise."""
    out = np.zeros_like(X)
    for b in range(X.shape[0]):
        S = np.flatnonzero(np.any(X[b] != 0, axis=1))
        As = A[:, S]
        out[b][S] = np.linalg.solve(As.T @ As + var * np.eye(S.size), As.T @ Y[b])
    return out


@cache
def iid_results() -> dict[str, DecodeResult]:
    A, _, Y, _ = bsr_problem(0)
    return {
        "amp": amp(A, Y, return_result=True),
        "vamp": vamp(A, Y, return_result=True),
        "amp_l1": amp(A, Y, denoiser="l1", return_result=True),
    }


# -- accuracy on the Borgerding-Schniter-Rangan problem ---------------------------------


@pytest.mark.parametrize("name", ["amp", "vamp"])
def test_bg_reaches_the_support_oracle(name: str) -> None:
    A, X, Y, var = bsr_problem(0)
    res = iid_results()[name]
    err = nmse_db(res.x, X)
    bound = nmse_db(oracle(A, X, Y, var), X)
    assert err.mean() < -42.0 and err.max() < -38.0, err
    assert err.mean() - bound.mean() < 1.5, (err, bound)
    assert np.all(res.stop_reason == "rtol") and np.all(res.n_iter < 60)


def test_bg_learns_prior_and_noise() -> None:
    _, X, _, var = bsr_problem(0)
    for name in ("amp", "vamp"):
        ex = iid_results()[name].extra
        assert np.all(np.abs(ex["sparsity"] - RATE) < 0.03), ex["sparsity"]
        assert np.all((ex["slab_var"] > 0.4) & (ex["slab_var"] < 1.6)), ex["slab_var"]
        ratio = ex["noise_var"][:, 0] / var
        assert np.all((ratio > 0.7) & (ratio < 1.4)), ratio
        # support = posterior activity > 0.5: a handful of errors among 500 rows
        res = iid_results()[name]
        wrong = np.sum(res.support[:, :, 0] != (X[:, :, 0] != 0), axis=1)
        assert np.all(wrong <= 5), wrong
        assert np.array_equal(res.support[:, :, 0], ex["activity"] > 0.5)


def test_l1_is_the_lasso_level_and_worse_than_bg() -> None:
    _, X, _, _ = bsr_problem(0)
    res = iid_results()
    l1 = nmse_db(res["amp_l1"].x, X)
    bg = nmse_db(res["amp"].x, X)
    # the tuned LASSO's published level is -36.7 dB
    assert -39.5 < l1.mean() < -33.0, l1
    assert np.all(bg < l1 - 6.0)
    assert res["amp_l1"].extra["alpha"] == pytest.approx(minimax_alpha(0.5))
    assert np.array_equal(res["amp_l1"].support, res["amp_l1"].x != 0)


def test_vamp_converges_on_ill_conditioned_matrix() -> None:
    A, X, Y, _ = bsr_problem(1, cond=15.0)
    solver = VAMPSolver(A)
    s = solver.singular_values
    assert s[0] / s[-1] == pytest.approx(15.0, rel=1e-6)
    v = solver(Y, max_iter=40, return_result=True)
    err_v = nmse_db(v.x, X)
    assert err_v.mean() < -40.0 and err_v.max() < -35.0, err_v
    assert np.all(v.extra["damping"] == 0.0)
    # AMP with the same budget: undamped it diverges at once; the safeguard damps
    # it (and NaN never escapes), but it is far from converged after 40 iterations.
    a = amp(A, Y, max_iter=40, return_result=True)
    assert np.all(np.isfinite(a.x))
    assert np.all(a.extra["damping"] >= 0.5)
    assert nmse_db(a.x, X).mean() > err_v.mean() + 4.0


@pytest.mark.parametrize("fn", [amp, vamp])
def test_joint_mmv_beats_per_channel(fn) -> None:
    # Row-sparse X (4 channels), M = 150, rate 0.15: past the single-channel
    # BG phase transition, within the joint one.
    A, X, Y, _ = bsr_problem(2, 2, m=150, rate=0.15, L=4)
    joint = nmse_db(fn(A, Y), X)
    alone = nmse_db(fn(A, Y, joint=False), X)
    assert np.all(joint < -33.0), joint
    assert np.all(alone > joint + 15.0), (joint, alone)
    # the group soft threshold beats per-channel soft thresholding too
    g = nmse_db(fn(A, Y, denoiser="l1"), X)
    s = nmse_db(fn(A, Y, denoiser="l1", joint=False), X)
    assert g.mean() < s.mean() - 2.0, (g, s)


def test_joint_false_is_per_channel() -> None:
    A, _, Y, _ = bsr_problem(2, 2, m=150, rate=0.15, L=4)
    Y = Y[:1]
    for fn in (amp, vamp):
        full = fn(A, Y, joint=False, return_result=True)
        for c in range(Y.shape[2]):
            one = fn(A, Y[0, :, c], return_result=True)
            assert np.array_equal(full.x[0, :, c], one.x)
            assert full.extra["noise_var"][0, c] == one.extra["noise_var"]
            assert full.extra["sparsity"][0, c] == one.extra["sparsity"]
        assert full.extra["sparsity"].shape == (1, 4)


def test_iterate_count_is_exact() -> None:
    A, X, Y, _ = bsr_problem(0)
    y = Y[0, :, 0]
    errs = []
    for t in (1, 3, 10):
        for fn in (amp, vamp):
            r = fn(A, y, max_iter=t, rtol=0.0, return_result=True)
            assert int(r.n_iter) == t and str(r.stop_reason) == "max_iter"
            errs.append(float(nmse_db(r.x[:, None], X[0])))
        # the same call twice: the t-th iterate is a function of the inputs
        assert np.array_equal(amp(A, y, max_iter=t, rtol=0.0), amp(A, y, max_iter=t, rtol=0.0))
    assert errs[4] < errs[0] - 20.0 and errs[5] < errs[1] - 20.0, errs


# -- batches, threads, dtypes, degenerate input -----------------------------------------


@pytest.mark.parametrize("fn", [amp, vamp])
@pytest.mark.parametrize("kw", [{}, {"denoiser": "l1"}, {"joint": False}])
def test_threads_and_batches_bit_identical(fn, kw) -> None:
    A, _, Y, _ = bsr_problem(3, 5, m=120, L=2)
    Y = np.array(Y)
    Y[2] = 0.0  # a zero problem in the middle of the batch
    one = fn(A, Y, n_threads=1, **kw)
    for t in (2, 3, 8):
        assert np.array_equal(fn(A, Y, n_threads=t, **kw), one)
    serial = np.stack([fn(A, y, n_threads=1, **kw) for y in Y])
    assert np.array_equal(serial, one)
    assert np.array_equal(fn(A, Y[1:4], n_threads=2, **kw), one[1:4])
    assert not np.any(one[2])


def test_float32_in_float32_out() -> None:
    A, X, Y, _ = bsr_problem(0)
    A32, Y32 = A.astype(np.float32), Y[:2].astype(np.float32)
    for fn in (amp, vamp):
        r = fn(A32, Y32, return_result=True)
        assert r.x.dtype == np.float32 and r.residual_norm.dtype == np.float32
        assert np.all(nmse_db(r.x, X[:2]) < -40.0)
        assert fn(A32, Y32[0, :, 0]).dtype == np.float32
        assert fn(A, Y32).dtype == np.float64 and fn(A32, Y[:2]).dtype == np.float64


@pytest.mark.parametrize("fn", [amp, vamp])
@pytest.mark.parametrize("denoiser", ["bg", "l1"])
def test_zero_measurements_give_zeros(fn, denoiser) -> None:
    A = bsr_problem(0)[0][:, :100]
    for shape, out in [((M,), (100,)), ((M, 3), (100, 3)), ((2, M, 3), (2, 100, 3))]:
        r = fn(A, np.zeros(shape), denoiser=denoiser, return_result=True)
        assert r.x.shape == out
        assert not np.any(r.x) and not np.any(r.support)
        assert np.all(r.n_iter == 0) and np.all(r.stop_reason == "rtol")


@pytest.mark.parametrize("fn", [amp, vamp])
def test_shapes(fn) -> None:
    A, _, Y, _ = bsr_problem(3, 5, m=120, L=2)
    assert fn(A, Y[0, :, 0]).shape == (N,)
    assert fn(A, Y[0]).shape == (N, 2)
    assert fn(A, Y).shape == (5, N, 2)
    r = fn(A, Y[0, :, 0], return_result=True)
    assert r.support.shape == (N,) and r.residual_norm.shape == () and r.n_iter.shape == ()
    assert r.extra["noise_var"].shape == ()
    assert r.residual_norm == pytest.approx(np.linalg.norm(Y[0, :, 0] - A @ r.x))
    r = fn(A, Y, return_result=True)
    assert r.support.shape == (5, N, 2) and r.residual_norm.shape == (5, 2)
    assert r.extra["noise_var"].shape == (5, 2) and r.extra["activity"].shape == (5, N)
    empty = fn(A, np.zeros((0, 120, 2)), return_result=True)
    assert empty.x.shape == (0, N, 2) and empty.n_iter.shape == (0,)


def test_no_nan_on_hostile_input() -> None:
    rng = np.random.default_rng(7)
    A = rng.standard_normal((40, 80))
    U, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    V, _ = np.linalg.qr(rng.standard_normal((80, 40)))
    bad = (U * np.logspace(0, -12, 40)) @ V.T
    cases = [
        (A, rng.standard_normal((40, 3))),  # pure noise
        (A * 1e150, rng.standard_normal(40) * 1e-150),
        (A * 1e-150, rng.standard_normal(40) * 1e150),
        (bad, bad @ rng.standard_normal(80)),
        (np.outer(rng.standard_normal(40), rng.standard_normal(80)), rng.standard_normal(40)),
    ]
    for Ai, Yi in cases:
        for fn in (amp, vamp):
            for kw in ({}, {"denoiser": "l1"}, {"damping": 0.9}):
                r = fn(Ai, Yi, max_iter=60, return_result=True, **kw)
                assert np.all(np.isfinite(r.x)), (fn.__name__, kw)
                assert set(np.ravel(r.stop_reason)) <= {"rtol", "max_iter", "diverged"}


def test_vamp_svd_cache_and_solver() -> None:
    A, _, Y, _ = bsr_problem(3, 5, m=120, L=2)
    solver = VAMPSolver(A)
    assert solver.shape == (120, N)
    assert solver.singular_values.shape == (120,)
    ref = solver(Y)
    assert np.array_equal(vamp(A, Y), ref)
    assert np.array_equal(vamp(solver, Y), ref)
    # the cache is keyed by content: a changed matrix gets its own SVD
    A2 = np.array(A)
    A2[0, 0] += 1.0
    assert not np.array_equal(vamp(A2, Y), ref)


def test_fixed_parameters_are_kept() -> None:
    A, X, Y, var = bsr_problem(0)
    r = vamp(A, Y[:2], sparsity=RATE, slab_var=1.0, noise_var=var, return_result=True)
    assert np.all(r.extra["sparsity"] == RATE) and np.allclose(r.extra["slab_var"], 1.0)
    assert np.allclose(r.extra["noise_var"], var)
    assert np.all(nmse_db(r.x, X[:2]) < -40.0)


def test_minimax_rule() -> None:
    from scipy.stats import norm

    # L = 1: the closed-form l1 phase transition of Donoho, Maleki & Montanari
    delta = 0.5
    c = np.linspace(0.01, 4, 40001)
    m = (1 + c**2) * norm.cdf(-c) - c * norm.pdf(c)
    rho = np.max((1 - 2 / delta * m) / (1 + c**2 - 2 * m))
    from cscore.decoders._amp_common import initial_sparsity

    assert initial_sparsity(250, 500) == pytest.approx(delta * rho, rel=1e-6)
    assert minimax_alpha(0.5) == pytest.approx(0.8769, abs=1e-3)
    # larger groups need larger thresholds; fewer measurements too
    assert minimax_alpha(0.5) < minimax_alpha(0.5, 4) < minimax_alpha(0.5, 16)
    assert minimax_alpha(0.2) > minimax_alpha(0.5)


# -- argument checks -------------------------------------------------------------------


@pytest.mark.parametrize("fn", [amp, vamp])
def test_bad_arguments_name_the_argument(fn) -> None:
    A, _, Y, _ = bsr_problem(3, 5, m=120, L=2)
    y = Y[0, :, 0]
    with pytest.raises(ValueError, match="Y"):
        fn(A, np.ones(119))
    with pytest.raises(ValueError, match="Y"):
        fn(A, np.ones((2, 119, 3)))
    with pytest.raises(ValueError, match="Y"):
        fn(A, np.ones((1, 2, 120, 3)))
    with pytest.raises(ValueError, match="Y"):
        fn(A, np.full(120, np.nan))
    with pytest.raises(ValueError, match="A"):
        fn(np.ones(120), y)
    with pytest.raises(ValueError, match="A"):
        fn(np.zeros((120, 4)), y)
    for kw, name in [
        ({"denoiser": "lasso"}, "denoiser"),
        ({"damping": 1.0}, "damping"),
        ({"damping": -0.1}, "damping"),
        ({"max_iter": 0}, "max_iter"),
        ({"rtol": -1.0}, "rtol"),
        ({"sparsity": 1.5}, "sparsity"),
        ({"slab_var": 0.0}, "slab_var"),
        ({"noise_var": -1.0}, "noise_var"),
        ({"snr0": 0.0}, "snr0"),
        ({"alpha": 1.4}, "alpha"),  # bg has no threshold
        ({"denoiser": "l1", "alpha": -1.0}, "alpha"),
        ({"denoiser": "l1", "alpha": "max"}, "alpha"),
        ({"denoiser": "l1", "sparsity": 0.1}, "sparsity"),
        ({"n_threads": 0}, "n_threads"),
    ]:
        with pytest.raises(ValueError, match=name):
            fn(A, y, **kw)
    with pytest.raises(TypeError, match="joint"):
        fn(A, y, joint="yes")
    with pytest.raises(TypeError, match="Y"):
        fn(A, y > 0)


def test_amp_l1_refuses_noise_var() -> None:
    A, _, Y, _ = bsr_problem(3, 5, m=120, L=2)
    with pytest.raises(ValueError, match="noise_var"):
        amp(A, Y[0], denoiser="l1", noise_var=1e-3)
    vamp(A, Y[0], denoiser="l1", noise_var=1e-3)  # VAMP's LMMSE stage uses it
