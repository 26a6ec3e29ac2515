"""Complex A and Y in OMP, SOMP and T-MSBL (issue 28), and the DOA example."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import cscore
from cscore.decoders import sbl as sbl_mod
from oracles.sbl_numpy import solve_numpy

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _cn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _problem(seed: int, M: int = 24, N: int = 60, L: int = 4, k: int = 4, noise: float = 0.0):
    rng = np.random.default_rng(seed)
    A = _cn(rng, M, N) * rng.uniform(0.5, 2.0, N)  # unequal column norms
    X = np.zeros((N, L), complex)
    X[rng.choice(N, k, replace=False)] = _cn(rng, k, L) + 1.5
    Y = A @ X + noise * _cn(rng, M, L)
    return A, X, Y


def _somp_reference(A: np.ndarray, Y: np.ndarray, k: int) -> tuple[list[int], np.ndarray]:
    """Plain SOMP: select argmax_j sum_c |a_j^H r_c|^2 / ||a_j||^2, least squares."""
    norms = np.linalg.norm(A, axis=0)
    support: list[int] = []
    R = Y.copy()
    for _ in range(k):
        score = np.sum(np.abs(A.conj().T @ R) ** 2, axis=1) / norms**2
        support.append(int(np.argmax(score)))
        coef, *_ = np.linalg.lstsq(A[:, support], Y, rcond=None)
        R = Y - A[:, support] @ coef
    X = np.zeros((A.shape[1], Y.shape[1]), complex)
    X[support] = coef
    return support, X


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_somp_matches_numpy_reference(seed):
    A, _, Y = _problem(seed, noise=0.3)
    support, X_ref = _somp_reference(A, Y, 5)
    res = cscore.somp(A, Y, n_nonzero=5, return_result=True)
    assert res.extra["atoms"].tolist() == support
    np.testing.assert_allclose(res.x, X_ref, rtol=0, atol=1e-10 * np.abs(X_ref).max())
    np.testing.assert_allclose(res.residual_norm,
                               np.linalg.norm(Y - A @ X_ref, axis=0), rtol=1e-10)
    assert res.residual_norm.dtype == np.float64


@pytest.mark.parametrize("seed", [3, 4])
def test_omp_matches_numpy_reference_per_column(seed):
    A, _, Y = _problem(seed, noise=0.2)
    X = cscore.omp(A, Y, n_nonzero=4)
    assert X.dtype == np.complex128
    for c in range(Y.shape[1]):
        _, x_ref = _somp_reference(A, Y[:, [c]], 4)
        np.testing.assert_allclose(X[:, c], x_ref[:, 0], atol=1e-10 * np.abs(x_ref).max())


def test_complex64_matches_reference_within_float32_tolerance():
    A, _, Y = _problem(5, noise=0.1)
    support, X_ref = _somp_reference(A, Y, 4)
    res = cscore.somp(A.astype(np.complex64), Y.astype(np.complex64), n_nonzero=4,
                      return_result=True)
    assert res.x.dtype == np.complex64 and res.residual_norm.dtype == np.float32
    assert sorted(res.extra["atoms"].tolist()) == sorted(support)
    np.testing.assert_allclose(res.x, X_ref, atol=1e-4 * np.abs(X_ref).max())


def test_exact_recovery_noiseless():
    A, X, Y = _problem(6, k=5)
    np.testing.assert_allclose(cscore.somp(A, Y, n_nonzero=5), X, atol=1e-12)
    np.testing.assert_allclose(cscore.omp(A, Y[:, 0], n_nonzero=5), X[:, 0], atol=1e-12)
    res = cscore.somp(A, Y, tol=1e-9, return_result=True)
    assert res.stop_reason == "tol" and res.n_iter == 5
    S = cscore.tmsbl(A, Y, noise="no")
    assert set(np.flatnonzero(np.abs(S).sum(1) > 1e-3)) == set(np.flatnonzero(X.any(1)))
    np.testing.assert_allclose(S, X, atol=1e-6)


@pytest.mark.parametrize(
    "a_dt, y_dt, want",
    [
        (np.complex64, np.complex64, np.complex64),
        (np.complex64, np.float32, np.complex64),
        (np.float32, np.complex64, np.complex64),
        (np.complex64, np.float64, np.complex128),
        (np.float64, np.complex128, np.complex128),
        (np.complex128, np.int64, np.complex128),
    ],
)
def test_dtype_rules(a_dt, y_dt, want):
    A, _, Y = _problem(7)
    A = (A.real if np.dtype(a_dt).kind != "c" else A).astype(a_dt)
    Y = (np.round(Y.real) if np.dtype(y_dt).kind != "c" else Y).astype(y_dt)
    assert cscore.somp(A, Y, n_nonzero=3).dtype == want
    assert cscore.omp(A, Y, n_nonzero=3).dtype == want
    assert cscore.tmsbl(A, Y, max_iter=5, rtol=1e30).dtype == want  # stops after 1 iteration


def test_threaded_equals_serial_and_batch_equals_single():
    rng = np.random.default_rng(8)
    A = _cn(rng, 20, 50)
    Ys = np.stack(  # 70 problems: more than two chunks of 32
[A @ _problem(s, M=20, N=50)[1] + 0.05 * _cn(rng, 20, 4) for s in range(70)])
    one = cscore.somp(A, Ys, n_nonzero=4, n_threads=1)
    two = cscore.somp(A, Ys, n_nonzero=4, n_threads=2)
    assert np.array_equal(one, two)
    for b in (0, 33, 69):
        assert np.array_equal(one[b], cscore.somp(A, Ys[b], n_nonzero=4))
    cols = Ys[:, :, 0].T
    assert np.array_equal(cscore.omp(A, cols, n_nonzero=3, n_threads=1),
                          cscore.omp(A, cols, n_nonzero=3, n_threads=2))
    t1 = cscore.tmsbl(A, Ys[:4], n_threads=1, rtol=1e-6)
    t2 = cscore.tmsbl(A, Ys[:4], n_threads=2, rtol=1e-6)
    assert np.array_equal(t1, t2)
    assert np.array_equal(t1[2], cscore.tmsbl(A, Ys[2], rtol=1e-6))


@pytest.mark.parametrize("kw", [{}, {"noise": "small"}, {"enhance_lambda": False},
                                {"matrix_reg": 0.5}, {"fix_b": np.eye(4) + 0.2}])
def test_tmsbl_core_matches_numpy_reference(kw, monkeypatch):
    A, _, Y = _problem(9, M=16, N=40, noise=0.05)
    core = cscore.tmsbl(A, Y, return_result=True, rtol=1e-7, **kw)
    monkeypatch.setattr(sbl_mod, "_SOLVE", solve_numpy)
    ref = cscore.tmsbl(A, Y, return_result=True, rtol=1e-7, **kw)
    assert core.n_iter == ref.n_iter and core.stop_reason == ref.stop_reason
    np.testing.assert_allclose(core.x, ref.x, atol=1e-9)
    np.testing.assert_allclose(core.extra["gamma"], ref.extra["gamma"], atol=1e-9)
    B = core.extra["B"]
    np.testing.assert_allclose(B, B.conj().T, atol=1e-12)  # Hermitian


def test_tmsbl_learns_a_hermitian_b():
    # Many rows kept (K > M) after one iteration: B is learned from the complex mean.
    A, _, Y = _problem(10, M=8, N=40, L=3, noise=0.5)
    with pytest.warns(RuntimeWarning, match="max_iter"):
        res = cscore.tmsbl(A, Y, max_iter=1, return_result=True, prune_gamma=0.0)
    B = res.extra["B"]
    assert np.iscomplexobj(B) and np.abs(B.imag).max() > 0
    np.testing.assert_allclose(B, B.conj().T, atol=1e-12)
    assert np.isclose(np.linalg.norm(B), 1.0)


def test_bad_complex_inputs():
    A, _, Y = _problem(11)
    with pytest.raises(ValueError, match="rows"):
        cscore.somp(A[:-1], Y, n_nonzero=2)
    with pytest.raises(ValueError, match="2-D"):
        cscore.omp(A[:, 0], Y[:, 0], n_nonzero=1)
    with pytest.raises(ValueError, match="rows"):
        cscore.tmsbl(A[:-1], Y)
    for name, bad in (("A", A.copy()), ("Y", Y.copy())):
        bad[1, 1] = complex(1.0, np.nan)
        args = (bad, Y) if name == "A" else (A, bad)
        with pytest.raises(ValueError, match=f"{name} contains NaN"):
            cscore.somp(*args, n_nonzero=2)
        with pytest.raises(ValueError, match=f"{name} contains NaN"):
            cscore.tmsbl(*args)
    Az = A.copy()
    Az[:, 3] = 0
    with pytest.raises(ValueError, match="all-zero column"):
        cscore.somp(Az, Y, n_nonzero=2)
    with pytest.raises(TypeError, match="boolean"):
        cscore.somp(A, Y.real > 0, n_nonzero=2)
    with pytest.raises(TypeError, match="tmsbl"):
        cscore.tsbl(A, Y)
    with pytest.raises(TypeError, match="auto"):
        cscore.somp(A, Y, tol="auto")


def test_real_inputs_unchanged():
    A, _, Y = _problem(12, noise=0.1)
    Ar, Yr = A.real.copy(), Y.real.copy()
    x = cscore.somp(Ar, Yr, n_nonzero=4)
    assert x.dtype == np.float64
    assert cscore.somp(Ar.astype(np.float32), Yr.astype(np.float32), n_nonzero=4).dtype \
        == np.float32
    # The same real problem given as complex (zero imaginary parts): same answer.
    xc = cscore.somp(Ar + 0j, Yr + 0j, n_nonzero=4)
    np.testing.assert_allclose(xc.real, x, atol=1e-12)
    assert not xc.imag.any()
    with pytest.raises(TypeError, match="real"):  # T-SBL's real checks untouched
        cscore.tsbl(Ar, Yr.astype(complex))


def _load_doa():
    spec = importlib.util.spec_from_file_location("doa_example", ROOT / "examples" / "doa.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["doa_example"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_doa_example_resolves_two_sources():
    doa = _load_doa()
    # The documented scene: M = 16, L = 30, SNR 15 dB.  4 degrees apart (below
    # the array's beamwidth): T-MSBL and MUSIC resolve, SOMP does not.
    for seed in (0, 1):
        t = doa.run_trial(seed, separation=4.0)
        assert t.error("T-MSBL") <= 1.0 and t.error("MUSIC") <= 1.0
        assert t.error("SOMP") > 1.0
    # 10 degrees apart: SOMP resolves too.
    for seed in (0, 1):
        t = doa.run_trial(seed, separation=10.0)
        assert t.error("SOMP") <= 1.0 and t.error("T-MSBL") <= 1.0
