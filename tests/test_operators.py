"""OMP and SOMP on operators and sparse matrices (cscore.decoders.greedy_operator)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.fft
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

import cscore


class PartialDCT(LinearOperator):
    """Rows ``rows`` of the orthonormal DCT-II of size N, counting its products."""

    def __init__(self, N: int, rows: np.ndarray) -> None:
        super().__init__(dtype=np.float64, shape=(rows.size, N))
        self.rows = rows
        self.n_matvec = 0
        self.n_rmatvec = 0

    def _matvec(self, x):
        self.n_matvec += 1
        return scipy.fft.dct(np.ravel(x), norm="ortho")[self.rows]

    def _rmatvec(self, y):
        self.n_rmatvec += 1
        z = np.zeros(self.shape[1])
        z[self.rows] = np.ravel(y)
        return scipy.fft.idct(z, norm="ortho")


def _problem(rng, M=30, N=80, B=5, k=4):
    A = rng.standard_normal((M, N)) * rng.uniform(0.5, 2.0, N)
    X = np.zeros((N, B))
    for b in range(B):
        X[rng.choice(N, k, replace=False), b] = rng.standard_normal(k)
    return A, X


def _operator_forms(A):
    norms = np.linalg.norm(A, axis=0)
    return [
        ("csr", sp.csr_matrix(A), {}),
        ("csc_array", sp.csc_array(A), {}),
        ("aslinearoperator", aslinearoperator(A), {"column_norms": norms}),
    ]


@pytest.mark.parametrize("rule", [{"n_nonzero": 6}, {"tol": 1e-6}, {"n_nonzero": 3, "tol": 0.5}])
def test_omp_matches_dense_path(rule):
    rng = np.random.default_rng(1)
    A, X = _problem(rng)
    Y = A @ X + 0.01 * rng.standard_normal((A.shape[0], X.shape[1]))
    dense = cscore.omp(A, Y, return_result=True, **rule)
    for name, op, kw in _operator_forms(A):
        out = cscore.omp(op, Y, return_result=True, **rule, **kw)
        np.testing.assert_allclose(out.x, dense.x, rtol=0, atol=1e-10, err_msg=name)
        np.testing.assert_array_equal(out.extra["atoms"], dense.extra["atoms"], err_msg=name)
        np.testing.assert_array_equal(out.support, dense.support)
        np.testing.assert_array_equal(out.stop_reason, dense.stop_reason)
        np.testing.assert_array_equal(out.n_iter, dense.n_iter)
        np.testing.assert_allclose(out.residual_norm, dense.residual_norm, atol=1e-10)
    # one vector: shape (N,)
    x1 = cscore.omp(sp.csr_matrix(A), Y[:, 0], **rule)
    assert x1.shape == (A.shape[1],)
    np.testing.assert_allclose(x1, dense.x[:, 0], atol=1e-10)


def test_somp_matches_dense_path():
    rng = np.random.default_rng(2)
    A, _ = _problem(rng)
    S = np.zeros((3, 80, 4))
    for b in range(3):
        S[b, rng.choice(80, 3, replace=False)] = rng.standard_normal((3, 4)) + 1
    Y = A @ S + 0.01 * rng.standard_normal((3, 30, 4))
    for rule in ({"n_nonzero": 5}, {"tol": 0.2}):
        dense = cscore.somp(A, Y, return_result=True, **rule)
        for name, op, kw in _operator_forms(A):
            out = cscore.somp(op, Y, return_result=True, **rule, **kw)
            np.testing.assert_allclose(out.x, dense.x, atol=1e-10, err_msg=name)
            np.testing.assert_array_equal(out.extra["atoms"], dense.extra["atoms"])
            np.testing.assert_array_equal(out.stop_reason, dense.stop_reason)
            np.testing.assert_allclose(out.extra["residual_total"],
                                       dense.extra["residual_total"], atol=1e-10)
    single = cscore.somp(sp.csr_matrix(A), Y[0], n_nonzero=3)
    np.testing.assert_allclose(single, cscore.somp(A, Y[0], n_nonzero=3), atol=1e-10)


def test_float32_kept():
    rng = np.random.default_rng(3)
    A, X = _problem(rng)
    A32, Y32 = A.astype(np.float32), (A @ X).astype(np.float32)
    dense = cscore.omp(A32, Y32, n_nonzero=4)
    for _, op, kw in _operator_forms(A32):
        out = cscore.omp(op, Y32, n_nonzero=4, **kw)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, dense, atol=1e-4)
    # float64 measurements promote
    assert cscore.omp(sp.csr_matrix(A32), Y32.astype(np.float64), n_nonzero=4).dtype == np.float64


def test_partial_dct_recovers_with_k_applications():
    rng = np.random.default_rng(4)
    N, M, k = 2**12, 2**8, 20
    op = PartialDCT(N, np.sort(rng.choice(N, M, replace=False)))
    x = np.zeros(N)
    supp = rng.choice(N, k, replace=False)
    x[supp] = rng.choice([-1, 1], k) * rng.uniform(1, 2, k)
    y = op.matvec(x)
    op.n_matvec = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the columns pass the equal-norm check
        res = cscore.omp(op, y, n_nonzero=k, return_result=True)
    assert set(np.flatnonzero(res.support)) == set(supp)
    assert np.linalg.norm(res.x - x) / np.linalg.norm(x) < 1e-8
    # one adjoint application per iteration, one product per atom (+ the norm check)
    assert op.n_rmatvec == k
    assert op.n_matvec <= k + 4
    # tol alone stops at the exact fit
    res = cscore.omp(op, y, tol=1e-8 * np.linalg.norm(y), return_result=True)
    assert res.stop_reason == "tol" and res.n_iter == k


def test_partial_dct_somp_and_batches():
    rng = np.random.default_rng(5)
    N, M = 2**10, 2**7
    op = PartialDCT(N, np.sort(rng.choice(N, M, replace=False)))
    S = np.zeros((N, 3))
    S[rng.choice(N, 6, replace=False)] = rng.standard_normal((6, 3)) + 2
    Y = op.matmat(S)
    np.testing.assert_allclose(cscore.somp(op, Y, n_nonzero=6), S, atol=1e-9)
    # a batch of 2 problems x 3 channels: one block adjoint per iteration
    op.n_rmatvec = 0
    out = cscore.somp(op, np.stack([Y, -Y]), n_nonzero=6)
    np.testing.assert_allclose(out, np.stack([S, -S]), atol=1e-9)
    assert op.n_rmatvec == 6 * 6  # rmatmat falls back to one rmatvec per column


def test_errors_and_warnings():
    rng = np.random.default_rng(6)
    A, X = _problem(rng)
    Y = A @ X
    op = aslinearoperator(A)
    with pytest.raises(ValueError, match="tol='auto' is not available"):
        cscore.omp(op, Y, tol="auto")
    with pytest.raises(ValueError, match="tol='auto' is not available"):
        cscore.somp(sp.csr_matrix(A), Y, tol="auto")
    with pytest.warns(RuntimeWarning, match="column_norms="):
        cscore.omp(op, Y, n_nonzero=3)  # columns of unequal norms
    with pytest.raises(ValueError, match=r"column_norms must have shape \(80,\)"):
        cscore.omp(op, Y, n_nonzero=3, column_norms=np.ones(5))
    with pytest.raises(ValueError, match="column_norms must be > 0"):
        cscore.omp(op, Y, n_nonzero=3, column_norms=np.zeros(80))
    A0 = A.copy()
    A0[:, 7] = 0
    with pytest.raises(ValueError, match="all-zero column"):
        cscore.omp(sp.csr_matrix(A0), Y, n_nonzero=3)
    lying = LinearOperator(A.shape, matvec=lambda v: A @ v + 0j, rmatvec=lambda v: A.T @ v + 0j,
                           dtype=np.float64)  # a real dtype, complex products
    with pytest.raises(TypeError, match=r"\bA\b has a real dtype .* complex"):
        cscore.omp(lying, Y, n_nonzero=3, column_norms=np.ones(80))
    with pytest.raises(ValueError, match="M = 30 rows"):
        cscore.omp(op, Y[:20], n_nonzero=3)
    with pytest.raises(ValueError, match="n_nonzero must be <= 30"):
        cscore.omp(sp.csr_matrix(A), Y, n_nonzero=31)
    with pytest.raises(ValueError, match="NaN"):
        cscore.omp(sp.csr_matrix(A), np.full(30, np.nan), n_nonzero=3)


def test_empty_batch_and_zero_measurements():
    rng = np.random.default_rng(7)
    A, _ = _problem(rng)
    assert cscore.omp(sp.csr_matrix(A), np.zeros((30, 0)), n_nonzero=2).shape == (80, 0)
    assert cscore.somp(sp.csr_matrix(A), np.zeros((0, 30, 2)), n_nonzero=2).shape == (0, 80, 2)
    res = cscore.omp(sp.csr_matrix(A), np.zeros(30), n_nonzero=2, return_result=True)
    dense = cscore.omp(A, np.zeros(30), n_nonzero=2, return_result=True)
    assert not res.x.any() and res.n_iter == 0 and res.stop_reason == dense.stop_reason


class DuckOperator:
    """An operator that is not a SciPy LinearOperator (as recent PyLops ones)."""

    def __init__(self, A):
        self.A, self.shape, self.dtype = A, A.shape, A.dtype

    def matvec(self, x):
        return self.A @ x

    def rmatvec(self, y):
        return self.A.T @ y


def test_duck_typed_operator():
    rng = np.random.default_rng(8)
    A, X = _problem(rng)
    Y = A @ X
    norms = np.linalg.norm(A, axis=0)
    dense = cscore.omp(A, Y, n_nonzero=5)
    np.testing.assert_allclose(cscore.omp(DuckOperator(A), Y, n_nonzero=5, column_norms=norms),
                               dense, atol=1e-10)
    S = cscore.somp(DuckOperator(A), Y[:, :3], n_nonzero=4, column_norms=norms)
    np.testing.assert_allclose(S, cscore.somp(A, Y[:, :3], n_nonzero=4), atol=1e-10)
