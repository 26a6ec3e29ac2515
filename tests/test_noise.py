"""tol="auto": noise estimated from the measurements (cscore.decoders.stopping)."""

from __future__ import annotations

import numpy as np
import pytest

import cscore
from cscore.datasets import expected_noise_tol
from cscore.decoders.stopping import auto_stop, rrt_thresholds


def _batch(rng, B=40, M=48, N=96, L=4, k=6, sigma=0.02, joint=True):
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((B, N, L))
    for b in range(B):
        rows = rng.choice(N, k, replace=False)
        for c in range(L):
            r = rows if joint else rng.choice(N, k, replace=False)
            v = rng.standard_normal(k)
            S[b, r, c] = v + 0.5 * np.sign(v)
    Y = np.einsum("mn,bnl->bml", A, S) + sigma * rng.standard_normal((B, M, L))
    return A, S, Y


def _nmse(X, S):
    return float(np.mean(np.linalg.norm(X - S, axis=(-2, -1)) / np.linalg.norm(S, axis=(-2, -1))))


def test_thresholds_are_probabilities_that_grow_with_alpha():
    g1 = rrt_thresholds(40, 80, 4, 20, 0.01)
    g2 = rrt_thresholds(40, 80, 4, 20, 0.5)
    assert np.all((g1 > 0) & (g1 < 1))
    assert np.all(g2 > g1)
    # per-channel atoms: many more choices, stricter threshold
    assert np.all(rrt_thresholds(40, 80, 4, 20, 0.1, joint=False) < rrt_thresholds(40, 80, 4, 20))


@pytest.mark.parametrize("sigma", [0.005, 0.05])
def test_somp_auto_estimates_sigma_and_matches_oracle(rng, sigma):
    A, S, Y = _batch(rng, sigma=sigma)
    oracle = cscore.somp(A, Y, tol=expected_noise_tol(48, 4, sigma))
    res = cscore.somp(A, Y, tol="auto", return_result=True)
    est = np.median(res.extra["sigma_hat"])
    assert abs(est / sigma - 1) < 0.2
    assert res.extra["sigma_hat"].shape == (40,)
    assert _nmse(res.x, S) <= 1.5 * _nmse(oracle, S)
    ref = cscore.somp(A, Y, n_nonzero=6, return_result=True)
    assert res.x.shape == ref.x.shape and res.residual_norm.shape == ref.residual_norm.shape
    assert res.support.shape == ref.support.shape and res.n_iter.shape == ref.n_iter.shape


def test_somp_auto_equals_the_path_cut_where_it_stopped(rng):
    A, _, Y = _batch(rng, B=8)
    res = cscore.somp(A, Y, tol="auto", return_result=True)
    for b in range(8):
        direct = cscore.somp(A, Y[b], n_nonzero=int(res.n_iter[b]))
        np.testing.assert_allclose(res.x[b], direct, rtol=1e-8, atol=1e-10)


def test_omp_auto_per_column(rng):
    A, S, Y = _batch(rng, B=30, L=1, k=5, sigma=0.01)
    y = Y[:, :, 0].T  # (M, B)
    res = cscore.omp(A, y, tol="auto", return_result=True)
    assert res.x.shape == (96, 30)
    assert abs(np.median(res.extra["sigma_hat"]) / 0.01 - 1) < 0.25
    oracle = cscore.omp(A, y, tol=0.01 * np.sqrt(48))
    err = lambda X: np.mean(np.linalg.norm(X - S[:, :, 0].T, axis=0))  # noqa: E731
    assert err(res.x) <= 1.5 * err(oracle)
    single = cscore.omp(A, y[:, 3], tol="auto")
    np.testing.assert_allclose(single, res.x[:, 3], rtol=1e-10, atol=1e-12)


def test_noiseless_auto_is_exact(rng):
    A, S, Y = _batch(rng, B=10, sigma=0.0)
    np.testing.assert_allclose(cscore.somp(A, Y, tol="auto"), S, atol=1e-8)


def test_auto_with_n_nonzero_cap(rng):
    A, _, Y = _batch(rng, B=5)
    res = cscore.somp(A, Y, tol="auto", n_nonzero=3, return_result=True)
    assert np.all(res.n_iter <= 3)


def test_auto_float32(rng):
    A, _, Y = _batch(rng, B=5)
    assert cscore.somp(A.astype(np.float32), Y.astype(np.float32), tol="auto").dtype == np.float32


def test_bad_tol_string(rng):
    A, _, Y = _batch(rng, B=2)
    with pytest.raises(TypeError, match="tol must be a real number"):
        cscore.somp(A, Y, tol="automatic")
    with pytest.raises(TypeError, match="'auto'"):
        cscore.omp(A, Y[0], tol="x")


def test_lstm_auto_per_channel_supports(rng):
    from cscore.decoders.learned import LSTMCSWeights
    from cscore.problem import ProblemSpec

    M, N, L, H = 48, 96, 4, 8
    A, _, Y = _batch(rng, B=20, M=M, N=N, L=L, k=5, sigma=0.01, joint=False)
    w = LSTMCSWeights(
        W=rng.normal(size=(3 * H, M)) * 0.1, R=rng.normal(size=(3 * H, H)) * 0.1,
        b=np.zeros(3 * H), U=rng.normal(size=(N, H)) * 0.1, c_out=np.zeros(N),
    )  # fmt: skip
    model = cscore.LSTMCS(w, A, ProblemSpec(M=M, N=N, L=L))
    res = model.decode(Y, tol="auto", return_result=True)
    ref = model.decode(Y, n_nonzero=5, return_result=True)
    assert res.x.shape == ref.x.shape and res.extra["atoms"].shape[:2] == (20, L)
    # the auto stop is a cut of the decoder's own path
    for b in (0, 7):
        n = int(res.n_iter[b])
        if n:
            np.testing.assert_allclose(
                res.x[b], model.decode(Y[b], n_nonzero=n), rtol=1e-7, atol=1e-9
            )
    tol_rule = model.decode(Y, tol=float(np.median(res.extra["tol_auto"])))
    assert np.isfinite(tol_rule).all()


def test_auto_stop_on_pure_noise_keeps_little(rng):
    A, _, _ = _batch(rng, B=1)
    Y = 0.1 * rng.standard_normal((20, 48, 4))
    path = cscore.somp(A, Y, n_nonzero=47, return_result=True)
    st = auto_stop(A, Y, path.extra["atoms"])
    assert np.median(st.n_iter) <= 2
    assert abs(np.median(st.sigma) / 0.1 - 1) < 0.2


def test_auto_errors_name_the_argument_and_the_users_shape(rng):
    A, _, _ = _batch(rng, B=1)
    with pytest.raises(ValueError, match=r"n_nonzero"):
        cscore.somp(A, np.zeros((48, 4)), tol="auto", n_nonzero=0)
    with pytest.raises(ValueError, match=r"shape \(47, 4\)"):
        cscore.somp(A, np.zeros((47, 4)), tol="auto")
    with pytest.raises(ValueError, match="NaN"):
        cscore.omp(A, np.full(48, np.nan), tol="auto")


def test_auto_on_zero_measurements_gives_zero(rng):
    A, _, _ = _batch(rng, B=1)
    res = cscore.somp(A, np.zeros((3, 48, 4)), tol="auto", return_result=True)
    assert not res.x.any() and np.all(res.n_iter == 0)


# -- the compiled tol="auto" of omp / somp and the learned decoders' path fits --------


def test_compiled_auto_equals_rrt_on_the_somp_path(rng):
    """somp(tol="auto") (one compiled decode) == auto_stop on SOMP's full path."""
    A, _, Y = _batch(rng, B=30, sigma=0.03)
    res = cscore.somp(A, Y, tol="auto", return_result=True)
    path = cscore.somp(A, Y, n_nonzero=47, return_result=True)
    st = auto_stop(A, Y, path.extra["atoms"])
    np.testing.assert_array_equal(res.extra["n_signal"], st.n_signal)
    np.testing.assert_array_equal(res.n_iter, st.n_iter)
    np.testing.assert_allclose(res.extra["sigma_hat"], st.sigma, rtol=1e-9)
    np.testing.assert_allclose(res.x, st.x, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res.residual_norm, st.residual, rtol=1e-8, atol=1e-12)


def test_compiled_auto_does_not_depend_on_batch_or_threads(rng):
    A, _, Y = _batch(rng, B=70, sigma=0.02)
    ref = cscore.somp(A, Y, tol="auto", return_result=True)
    two = cscore.somp(A, Y, tol="auto", n_threads=2, return_result=True)
    np.testing.assert_array_equal(two.x, ref.x)
    np.testing.assert_array_equal(two.extra["sigma_hat"], ref.extra["sigma_hat"])
    for b in (0, 33, 69):
        one = cscore.somp(A, Y[b], tol="auto", return_result=True)
        np.testing.assert_array_equal(one.x, ref.x[b])
        assert one.extra["sigma_hat"] == ref.extra["sigma_hat"][b]
    cols = np.ascontiguousarray(Y[:, :, 0].T)
    o = cscore.omp(A, cols, tol="auto", return_result=True)
    for b in (0, 69):
        np.testing.assert_array_equal(cscore.omp(A, cols[:, b], tol="auto"), o.x[:, b])


def test_auto_path_fits_agree_with_least_squares(rng):
    """auto_stop's compiled fits along a given path equal NumPy least squares."""
    A, _, Y = _batch(rng, B=6, sigma=0.05, joint=False)
    atoms = rng.permuted(np.tile(np.arange(96), (6, 4, 1)), axis=2)[:, :, :20]
    st = auto_stop(A, Y, atoms, max_atoms=20)
    for b in range(6):
        for c in range(4):
            kept = st.atoms[b, c][st.atoms[b, c] >= 0]
            assert np.array_equal(kept, atoms[b, c, : kept.size])
            ref = np.zeros(96)
            if kept.size:
                ref[kept] = np.linalg.lstsq(A[:, kept], Y[b, :, c], rcond=None)[0]
            np.testing.assert_allclose(st.x[b, :, c], ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sigma", [0.01, 0.05])
@pytest.mark.parametrize("k", [6, 12])
def test_auto_nmse_within_1_5x_of_the_oracle_rule(rng, sigma, k):
    """The issue-23 accuracy property: tol="auto" NMSE <= 1.5 x the oracle tol rule's."""
    A, S, Y = _batch(rng, B=40, M=48, N=96, k=k, sigma=sigma)
    tol = expected_noise_tol(48, 4, sigma)
    assert _nmse(cscore.somp(A, Y, tol="auto"), S) <= 1.5 * _nmse(cscore.somp(A, Y, tol=tol), S)
    model = cscore.pretrained("mnist-m72")
    Am = np.asarray(model.A)
    Sm = np.zeros((20, 144, 4))
    for b in range(20):
        for c in range(4):
            Sm[b, rng.choice(144, k, replace=False), c] = rng.uniform(0.3, 1.0, k)
    Ym = np.einsum("mn,bnl->bml", Am, Sm) + sigma * rng.standard_normal((20, 72, 4))
    oracle = _nmse(model.decode(Ym, tol=expected_noise_tol(72, 4, sigma)), Sm)
    assert _nmse(model.decode(Ym, tol="auto"), Sm) <= 1.5 * oracle
