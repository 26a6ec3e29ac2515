"""Issue #34, items 4, 5 and 7: scale, checked operator products, float16 with beam search.

Scale: decoding ``c Y`` gives ``c`` times the decode of ``Y``.  The factors are
powers of two, for which the decoders' normalisation (a division by a power of
two, exact) makes the equality hold bit for bit; the tests compare exactly where
no entry of the scaled result is subnormal.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

import cscore
from cscore.datasets import expected_noise_tol
from cscore.decoders.learned._lstm_common import round_to_half

# --------------------------------------------------------------------------- item 4: scale


def _mmv(M: int = 40, N: int = 80, L: int = 3, k: int = 5, seed: int = 0
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    S = np.zeros((N, L))
    S[rng.choice(N, k, replace=False)] = rng.standard_normal((k, L))
    return A, S, A @ S + 1e-3 * rng.standard_normal((M, L))


@pytest.mark.parametrize("fn", ["amp", "vamp"])
@pytest.mark.parametrize("denoiser", ["bg", "l1"])
@pytest.mark.parametrize("e", [-1000, -600, -540, 30, 520, 1000])
def test_amp_vamp_scale_equivariant_bit_for_bit(fn, denoiser, e):
    A, _, Y = _mmv()
    dec = getattr(cscore, fn)
    r0 = dec(A, Y, denoiser=denoiser, return_result=True)
    r = dec(A, np.ldexp(Y, e), denoiser=denoiser, return_result=True)
    assert np.all(np.isfinite(r.x))
    assert str(r.stop_reason) == str(r0.stop_reason)
    assert int(r.n_iter) == int(r0.n_iter)
    expect = np.ldexp(r0.x, e)
    normal = np.abs(expect) >= np.finfo(np.float64).tiny  # exact where not subnormal
    np.testing.assert_array_equal(r.x[normal], expect[normal])
    np.testing.assert_allclose(r.x, expect, rtol=0, atol=np.ldexp(1.0, -1070))
    np.testing.assert_array_equal(r.support, r0.support)


@pytest.mark.parametrize("name", ["omp", "somp", "bcs"])
def test_greedy_and_bcs_scale_equivariant_bit_for_bit(name):
    """These were equivariant before; kept so (T-SBL, T-MSBL, MT-BCS, LISTA and LAMP
    have absolute thresholds or priors by design, see their docstrings)."""
    A, _, Y = _mmv()
    kw = {"n_nonzero": 5} if name in ("omp", "somp") else {}
    dec = cscore.decoder(name, A, **kw)
    X0 = np.asarray(dec(Y))
    for e in (-1000, 1000):
        np.testing.assert_array_equal(np.asarray(dec(np.ldexp(Y, e))), np.ldexp(X0, e))


def test_learned_greedy_scale_equivariant_bit_for_bit():
    model = cscore.pretrained("mnist-m36-v2")
    rng = np.random.default_rng(4)
    S = np.abs(rng.standard_normal((144, 4))) * (rng.random((144, 4)) < 0.05)
    Y = model.A @ S + 0.005 * rng.standard_normal((36, 4))
    X0 = model.decode(Y, n_nonzero=5)
    for e in (-1000, 1000):
        np.testing.assert_array_equal(model.decode(np.ldexp(Y, e), n_nonzero=5),
                                      np.ldexp(X0, e))


def test_amp_fixed_variances_scale_with_y():
    A, _, Y = _mmv()
    r0 = cscore.amp(A, Y, noise_var=1e-6, slab_var=0.5, return_result=True)
    e = -300
    r = cscore.amp(A, np.ldexp(Y, e), noise_var=1e-6 * 4.0**e, slab_var=0.5 * 4.0**e,
                   return_result=True)
    np.testing.assert_array_equal(r.x, np.ldexp(r0.x, e))


def test_amp_batch_with_problems_of_very_different_scales():
    """Each problem of a batch is normalised on its own (its result as if alone)."""
    A, _, Y = _mmv()
    Yb = np.stack([np.ldexp(Y, -900), Y, np.ldexp(Y, 900)])
    for fn in (cscore.amp, cscore.vamp):
        Xb = fn(A, Yb)
        for b in range(3):
            np.testing.assert_array_equal(Xb[b], fn(A, Yb[b]))
        np.testing.assert_array_equal(Xb[2], np.ldexp(Xb[1], 900))


@pytest.mark.parametrize("gain", [3e4, 1e6])
def test_joint_amp_channels_of_very_different_gains(gain):
    """Two channels that differ by a gain: each reaches (about) its own accuracy."""
    rng = np.random.default_rng(1)
    M, N = 250, 500
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    S = np.zeros((N, 2))
    S[rng.choice(N, 50, replace=False)] = rng.standard_normal((50, 2))
    Y = A @ S + 1e-2 * rng.standard_normal((M, 2))
    G = np.array([1.0, gain])

    def nmse_db(X: np.ndarray, T: np.ndarray) -> np.ndarray:
        return 10 * np.log10(np.sum((X - T) ** 2, axis=0) / np.sum(T**2, axis=0))

    for fn in (cscore.amp, cscore.vamp):
        base = nmse_db(fn(A, Y), S)
        assert np.all(base < -30)
        got = nmse_db(fn(A, Y * G), S * G)
        np.testing.assert_allclose(got, base, atol=1.0)


@pytest.mark.parametrize("c", [1e-300, 1e300])
def test_sparse_a_of_extreme_scale(c):
    A, S, _ = _mmv(L=1)
    y = A @ S[:, 0]
    ref = cscore.omp(A, y, n_nonzero=5)
    As = sp.csc_matrix(A * c)
    data = As.data.copy()
    x = cscore.omp(As, y, n_nonzero=5)
    np.testing.assert_allclose(x * c, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(As.data, data)  # the caller's matrix is not rescaled


@pytest.mark.parametrize("c", [1e-300, 1e300])
def test_operator_with_y_or_a_of_extreme_scale(c):
    A, _, Y = _mmv()
    norms = np.linalg.norm(A, axis=0)
    ref = cscore.somp(A, Y, n_nonzero=5)
    X = cscore.somp(aslinearoperator(A), Y * c, n_nonzero=5, column_norms=norms)
    np.testing.assert_allclose(X / c, ref, rtol=1e-9, atol=1e-12)
    X = cscore.somp(aslinearoperator(A * c), Y, n_nonzero=5, column_norms=norms * c)
    np.testing.assert_allclose(X * c, ref, rtol=1e-9, atol=1e-12)


def test_operator_path_scale_equivariant_bit_for_bit():
    A, _, Y = _mmv()
    norms = np.linalg.norm(A, axis=0)
    op = aslinearoperator(A)
    r0 = cscore.somp(op, Y, tol=0.05, column_norms=norms, return_result=True)
    for e in (-900, 40, 900):
        r = cscore.somp(op, np.ldexp(Y, e), tol=np.ldexp(0.05, e), column_norms=norms,
                        return_result=True)
        np.testing.assert_array_equal(r.x, np.ldexp(r0.x, e))
        assert int(r.n_iter) == int(r0.n_iter)


# --------------------------------------------------------------------------- item 5: products


def _op(A: np.ndarray, **kw) -> LinearOperator:
    M, N = A.shape
    fns = {"matvec": lambda v: A @ v, "rmatvec": lambda v: A.T @ v}
    fns.update(kw)
    return LinearOperator((M, N), dtype=np.float64, **fns)


def test_operator_products_are_checked_where_they_enter():
    A, _, Y = _mmv()
    y = Y[:, 0]
    with pytest.raises(ValueError, match=r"A\.rmatmat returned NaN"):
        cscore.omp(_op(A, rmatvec=lambda v: np.full(A.shape[1], np.nan)), y, n_nonzero=3)
    with pytest.raises(ValueError, match=r"A.rmatmat returned an array of shape \(3, 80\).*"
                                         "transpose"):
        cscore.somp(_op(A, rmatmat=lambda R: (A.T @ R).T), Y, n_nonzero=3)
    with pytest.raises(ValueError, match=r"A\.matvec"):
        cscore.omp(_op(A, matvec=lambda v: (A @ v)[:-1]), y, n_nonzero=3)
    with pytest.raises(ValueError, match=r"A\.matvec returned NaN"):
        cscore.omp(_op(A, matvec=lambda v: (A @ v) * np.nan), y, n_nonzero=3)

    class Raw:  # a duck-typed operator: nothing between its products and cscore
        shape = A.shape
        dtype = np.dtype(np.float64)

        def matvec(self, v: np.ndarray) -> np.ndarray:
            return A @ v

        def rmatvec(self, v: np.ndarray) -> np.ndarray:
            return np.ones(7)

    with pytest.raises(ValueError, match=r"A.rmatvec returned an array of shape \(7,\)"):
        cscore.omp(Raw(), y, n_nonzero=3)
    Raw.rmatvec = lambda self, v: np.array(["x"] * A.shape[1])  # type: ignore[method-assign]
    with pytest.raises(ValueError, match=r"A\.rmatvec returned non-numeric"):
        cscore.omp(Raw(), y, n_nonzero=3)


def test_sparse_column_whose_norm_underflows_is_named():
    A, _, Y = _mmv(L=1)
    A[:, 4] *= 1e-300
    with pytest.raises(ValueError, match="column 4 of A has nonzero entries"):
        cscore.omp(sp.csc_matrix(A), Y[:, 0], n_nonzero=3)


# --------------------------------------------------------------------------- item 7: float16


@pytest.fixture(scope="module")
def lstm_model() -> cscore.LSTMCS:
    return cscore.pretrained("mnist-m36-v2")


def _digit_like(A: np.ndarray, B: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    M, N = A.shape
    S = np.zeros((B, N, 4))
    for b in range(B):
        for j in range(4):
            S[b, rng.choice(N, k, replace=False), j] = rng.uniform(0.5, 1.0, k)
    return np.einsum("mn,bnl->bml", A, S) + 0.005 * rng.standard_normal((B, M, 4))


def test_float16_weights_reach_the_beam_search(lstm_model):
    """float16 + beam = the float32 decode of a model whose matrices are float16 values."""
    half = cscore.LSTMCS(round_to_half(lstm_model.weights), lstm_model.A, lstm_model.spec)
    # a batch where the float32 weights' search ends differently in a few channels
    Y = _digit_like(lstm_model.A, 32, 12, seed=1)
    tol = expected_noise_tol(36, 4, 0.005)
    r16 = lstm_model.decode(Y, tol=tol, beam_width=16, weights_dtype="float16",
                            return_result=True)
    rh = half.decode(Y, tol=tol, beam_width=16, return_result=True)
    assert r16.extra["rescued"].any()
    np.testing.assert_array_equal(r16.extra["rescued"], rh.extra["rescued"])
    np.testing.assert_array_equal(r16.x, rh.x)


def test_beam_channel_tol_shape_is_checked(lstm_model):
    Y = np.zeros((3, 36, 4))
    with pytest.raises(ValueError, match=r"channel_tol must be a number or an array of shape "
                                         r"\(3,\)"):
        lstm_model.decode(Y, n_nonzero=3, beam_width=2, channel_tol=np.ones(2))
    with pytest.raises(ValueError, match="channel_tol"):
        lstm_model.decode(Y, n_nonzero=3, beam_width=2, channel_tol=np.ones((3, 1)))


# --------------------------------------------------------------------------- item 6: beam cap


def test_beam_width_is_capped_by_the_memory_limit(lstm_model, monkeypatch):
    """A width whose search would not fit is refused before anything is allocated."""
    Y = np.zeros((2, 36, 4))
    for width in (10**6, 2**31 - 1):
        with pytest.raises(ValueError, match=f"beam_width={width} would need about .* over "
                                             "the memory limit of 4 GiB"):
            lstm_model.decode(Y, tol=0.1, beam_width=width)
    monkeypatch.setenv("CSCORE_MEMORY_LIMIT", "1M")
    with pytest.raises(ValueError, match="memory limit of 1 MiB"):
        lstm_model.decode(Y, tol=0.1, beam_width=64)
    monkeypatch.setenv("CSCORE_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="CSCORE_MEMORY_LIMIT must be a positive size"):
        lstm_model.decode(Y, tol=0.1, beam_width=64)
    monkeypatch.setenv("CSCORE_MEMORY_LIMIT", "4000000T")  # the int32 bound still holds
    with pytest.raises(ValueError, match=r"beam_width must be <= 2147483647"):
        lstm_model.decode(Y, tol=0.1, beam_width=2**31)
    monkeypatch.delenv("CSCORE_MEMORY_LIMIT")
    assert lstm_model.decode(Y, tol=0.1, beam_width=64).shape == (2, 144, 4)


# --------------------------------------------------------------------------- item 5: models


def test_lamp_bg_theta_beyond_exp_range_is_refused_at_load(tmp_path):
    from cscore.decoders.learned import LAMP

    m = cscore.pretrained("lamp-bg-n500-m250")
    arrays = m.arrays()
    theta = np.array(arrays["theta"])
    theta[1, 0] = 720.0  # log psi: exp(720) is beyond float64
    with pytest.raises(ValueError, match=r"theta\[:, 0\] = 720 exceeds 709.78"):
        LAMP({**arrays, "theta": theta}, m.A, m.spec, m.arch_params())
    theta[1, 0] = 700.0  # large but in range: decodes to finite values
    ok = LAMP({**arrays, "theta": theta}, m.A, m.spec, m.arch_params())
    Y = np.random.default_rng(0).standard_normal((m.M, 1))
    assert np.all(np.isfinite(ok.decode(Y)))


@pytest.mark.parametrize("bad", ["zero", "nan"])
def test_lista_from_ista_needs_a_usable_a(bad):
    from cscore.decoders.learned import LISTA

    m = cscore.pretrained("lista-bg-n500-m250")
    A = np.zeros_like(m.A) if bad == "zero" else np.full_like(m.A, np.nan)
    with pytest.raises(ValueError, match="from_ista: A must be finite and nonzero"):
        LISTA.from_ista(A, m.spec, n_layers=3, lam=0.1)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs symlinks and FIFOs")
def test_model_paths_that_are_not_regular_files(tmp_path):
    from cscore.models import ModelFileError, load_model
    from cscore.models.registry import resolve_model

    (tmp_path / "a.npz").symlink_to(tmp_path / "b.npz")
    (tmp_path / "b.npz").symlink_to(tmp_path / "a.npz")
    os.mkfifo(tmp_path / "f.npz")
    (tmp_path / "d.npz").mkdir()
    for load in (load_model, resolve_model):
        with pytest.raises(ModelFileError, match="loop of symbolic links"):
            load(tmp_path / "a.npz")
        with pytest.raises(ModelFileError, match="is a FIFO, not a model file"):
            load(tmp_path / "f.npz")  # refused before anything opens (and blocks on) it
        with pytest.raises(ModelFileError, match="is a folder"):
            load(tmp_path / "d.npz")
        with pytest.raises(FileNotFoundError, match="model file not found"):
            load(tmp_path / "missing.npz")
