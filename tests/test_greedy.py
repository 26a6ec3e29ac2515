"""OMP and SOMP: recovery, agreement with plain NumPy references, stopping rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cscore

from conftest import make_problem

# --------------------------------------------------------------------------------------
# Plain-NumPy references (deliberately naive: a fresh lstsq per step).


def ref_somp(A: np.ndarray, Y: np.ndarray, k: int) -> tuple[np.ndarray, list[int]]:
    """SOMP with a fresh least-squares fit per step; Y is (M, L)."""
    An = A / np.linalg.norm(A, axis=0)
    R = Y.copy()
    support: list[int] = []
    coef = np.zeros((0, Y.shape[1]))
    for _ in range(k):
        score = ((An.T @ R) ** 2).sum(axis=1)
        support.append(int(np.argmax(score)))
        coef = np.linalg.lstsq(A[:, support], Y, rcond=None)[0]
        R = Y - A[:, support] @ coef
    S = np.zeros((A.shape[1], Y.shape[1]))
    S[support] = coef
    return S, support


def ref_omp(A: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, list[int]]:
    S, support = ref_somp(A, y[:, None], k)
    return S[:, 0], support


def residual_norms(A: np.ndarray, Y: np.ndarray, S: np.ndarray) -> np.ndarray:
    return np.linalg.norm(Y - A @ S, axis=0)


# --------------------------------------------------------------------------------------
# Exact recovery.


@pytest.mark.parametrize("M,N,k", [(20, 40, 2), (30, 60, 4), (72, 144, 8), (40, 200, 4)])
def test_omp_exact_recovery_noiseless(rng, M, N, k):
    A, S, Y = make_problem(rng, M, N, L=6, k=k, joint=False)
    X = cscore.omp(A, Y, n_nonzero=k)
    assert X.shape == (N, 6)
    np.testing.assert_allclose(X, S, atol=1e-10)
    x0 = cscore.omp(A, Y[:, 0], n_nonzero=k)
    assert x0.shape == (N,)
    np.testing.assert_allclose(x0, S[:, 0], atol=1e-10)


@pytest.mark.parametrize("M,N,k,L", [(20, 40, 3, 1), (30, 60, 6, 3), (72, 144, 12, 4)])
def test_somp_exact_recovery_noiseless(rng, M, N, k, L):
    batch = [make_problem(rng, M, N, L=L, k=k) for _ in range(3)]
    A = batch[0][0]
    Ss = np.stack([A_S_Y[1] for A_S_Y in batch])
    Ys = np.stack([A @ S for S in Ss])
    out = cscore.somp(A, Ys, n_nonzero=k)
    assert out.shape == (3, N, L)
    np.testing.assert_allclose(out, Ss, atol=1e-10)
    one = cscore.somp(A, Ys[1], n_nonzero=k)
    assert one.shape == (N, L)
    np.testing.assert_allclose(one, Ss[1], atol=1e-10)


# --------------------------------------------------------------------------------------
# Agreement with the NumPy references (noisy, badly scaled columns included).


@pytest.mark.parametrize("scaled", [False, True])
def test_omp_matches_reference(rng, scaled):
    A, _, Y = make_problem(rng, 25, 50, L=8, k=4, joint=False, sigma=0.05)
    if scaled:
        A = A * np.logspace(-3, 3, A.shape[1])[rng.permutation(A.shape[1])]
    res = cscore.omp(A, Y, n_nonzero=7, return_result=True)
    for b in range(Y.shape[1]):
        x_ref, supp_ref = ref_omp(A, Y[:, b], 7)
        assert list(res.extra["atoms"][b]) == supp_ref
        # Coefficients for the A as given (not the normalized one).
        np.testing.assert_allclose(res.x[:, b], x_ref, rtol=1e-10, atol=1e-10 * np.abs(x_ref).max())
        np.testing.assert_allclose(
            res.residual_norm[b], np.linalg.norm(Y[:, b] - A @ x_ref), rtol=1e-9
        )


@pytest.mark.parametrize("scaled", [False, True])
def test_somp_matches_reference(rng, scaled):
    A, _, _ = make_problem(rng, 30, 70, L=1, k=1)
    if scaled:
        A = A * np.logspace(-2, 4, A.shape[1])
    Ys = np.stack([make_problem(rng, 30, 70, L=5, k=5, sigma=0.05)[2] for _ in range(4)])
    Ys = np.stack([A @ np.linalg.lstsq(A, Yb, rcond=None)[0] + 0.01 * Yb for Yb in Ys])
    res = cscore.somp(A, Ys, n_nonzero=9, return_result=True)
    for b in range(Ys.shape[0]):
        S_ref, supp_ref = ref_somp(A, Ys[b], 9)
        assert list(res.extra["atoms"][b]) == supp_ref
        np.testing.assert_allclose(res.x[b], S_ref, rtol=1e-10, atol=1e-10 * np.abs(S_ref).max())
        np.testing.assert_allclose(res.residual_norm[b], residual_norms(A, Ys[b], S_ref), rtol=1e-9)
        assert res.support[b].shape == (70, 5)
        assert set(np.flatnonzero(res.support[b][:, 0])) == set(supp_ref)


# N = 3 (no full vector of 4 atoms), 7 (one vector and a tail), 21 (a 16-atom
# block, a vector and a tail), 45 (a 24-atom block, a 16-atom block, a vector and a
# tail): every part of the AVX2 kernel's one-pass step.
@pytest.mark.parametrize("N,L", [(3, 2), (7, 3), (21, 2), (45, 6)])
def test_somp_matches_reference_all_block_sizes(rng, N, L):
    M = 12
    A = rng.standard_normal((M, N))
    k = min(N, 8) - 1
    Ys = rng.standard_normal((3, M, L))
    res = cscore.somp(A, Ys, n_nonzero=k, return_result=True)
    for b in range(Ys.shape[0]):
        S_ref, supp_ref = ref_somp(A, Ys[b], k)
        assert list(res.extra["atoms"][b]) == supp_ref
        np.testing.assert_allclose(res.x[b], S_ref, rtol=1e-9, atol=1e-9 * np.abs(S_ref).max())
        np.testing.assert_allclose(res.residual_norm[b], residual_norms(A, Ys[b], S_ref), rtol=1e-9)


def test_coefficients_are_least_squares_on_support(rng):
    A, _, Y = make_problem(rng, 40, 90, L=5, k=6, joint=False, sigma=0.1)
    A = A * rng.uniform(0.01, 100.0, A.shape[1])
    X = cscore.omp(A, Y, n_nonzero=10)
    for b in range(Y.shape[1]):
        supp = np.flatnonzero(X[:, b])
        assert supp.size == 10
        ls = np.linalg.lstsq(A[:, supp], Y[:, b], rcond=None)[0]
        np.testing.assert_allclose(X[supp, b], ls, rtol=1e-10, atol=1e-12)


def test_somp_with_one_channel_is_omp(rng):
    A, _, Y = make_problem(rng, 30, 60, L=5, k=4, joint=False, sigma=0.02)
    X = cscore.omp(A, Y, n_nonzero=6)
    S = cscore.somp(A, Y.T[:, :, None], n_nonzero=6)
    np.testing.assert_array_equal(S[:, :, 0].T, X)


# --------------------------------------------------------------------------------------
# Batches and dtypes.


def test_omp_batch_equals_loop(rng):
    A, _, Y = make_problem(rng, 30, 64, L=12, k=5, joint=False, sigma=0.01)
    X = cscore.omp(A, Y, n_nonzero=8)
    for b in range(Y.shape[1]):
        np.testing.assert_array_equal(X[:, b], cscore.omp(A, Y[:, b], n_nonzero=8))


def test_somp_batch_equals_loop(rng):
    A, _, _ = make_problem(rng, 30, 64, L=1, k=1)
    Ys = rng.standard_normal((6, 30, 3))
    S = cscore.somp(A, Ys, tol=2.0, n_nonzero=20)
    for b in range(Ys.shape[0]):
        np.testing.assert_array_equal(S[b], cscore.somp(A, Ys[b], tol=2.0, n_nonzero=20))


def test_float32_native(rng):
    A, S, Y = make_problem(rng, 40, 80, L=4, k=5, joint=False)
    X64 = cscore.omp(A, Y, n_nonzero=5)
    X32 = cscore.omp(A.astype(np.float32), Y.astype(np.float32), n_nonzero=5)
    assert X32.dtype == np.float32
    np.testing.assert_allclose(X32, X64, atol=1e-4)
    np.testing.assert_allclose(X32, S, atol=1e-4)
    S32 = cscore.somp(A.astype(np.float32), Y.astype(np.float32)[None], n_nonzero=20)
    assert S32.dtype == np.float32
    res = cscore.somp(A.astype(np.float32), Y.astype(np.float32), n_nonzero=20, return_result=True)
    assert res.residual_norm.dtype == np.float32
    # Mixed precision is promoted to float64.
    assert cscore.omp(A.astype(np.float32), Y, n_nonzero=5).dtype == np.float64
    assert cscore.somp(A, Y.astype(np.float32), n_nonzero=5).dtype == np.float64


def test_integer_and_noncontiguous_inputs(rng):
    A = rng.integers(-5, 6, size=(20, 45))
    A[:, np.abs(A).sum(axis=0) == 0] = 1
    x = np.zeros(45, dtype=np.int64)
    x[[2, 30]] = [3, -2]
    y = A @ x
    out = cscore.omp(A, y, n_nonzero=2)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, x, atol=1e-10)
    Af, _, Yf = make_problem(rng, 20, 45, L=4, k=3)
    big = np.zeros((40, 90))
    big[::2, ::2] = Af
    Ybig = np.zeros((20, 8))
    Ybig[:, ::2] = Yf
    np.testing.assert_array_equal(
        cscore.omp(big[::2, ::2], Ybig[:, ::2], n_nonzero=3), cscore.omp(Af, Yf, n_nonzero=3)
    )
    Yt = np.asfortranarray(np.stack([Yf, Yf]))
    np.testing.assert_array_equal(
        cscore.somp(Af, Yt, n_nonzero=3), cscore.somp(Af, np.stack([Yf, Yf]), n_nonzero=3)
    )


# --------------------------------------------------------------------------------------
# Stopping rules.


def test_tol_stops_at_first_atom_count_below_tol(rng):
    A, _, Y = make_problem(rng, 30, 60, L=10, k=6, joint=False, sigma=0.05)
    tol = 0.5
    res = cscore.omp(A, Y, tol=tol, return_result=True)
    for b in range(Y.shape[1]):
        n = int(res.n_iter[b])
        assert res.stop_reason[b] == "tol"
        assert res.residual_norm[b] <= tol
        np.testing.assert_allclose(res.residual_norm[b], np.linalg.norm(Y[:, b] - A @ res.x[:, b]))
        if n > 0:
            x_prev, _ = ref_omp(A, Y[:, b], n - 1) if n > 1 else (np.zeros(60), [])
            assert np.linalg.norm(Y[:, b] - A @ x_prev) > tol


def test_somp_tol_is_sum_of_channel_norms(rng):
    A, _, Y = make_problem(rng, 30, 60, L=4, k=6, sigma=0.05)
    tol = 1.0
    res = cscore.somp(A, Y, tol=tol, return_result=True)
    n = int(res.n_iter)
    assert res.stop_reason == "tol"
    total = residual_norms(A, Y, res.x).sum()
    np.testing.assert_allclose(res.extra["residual_total"], total, rtol=1e-10)
    assert total <= tol
    S_prev, _ = ref_somp(A, Y, n - 1)
    assert residual_norms(A, Y, S_prev).sum() > tol


def test_tol_and_n_nonzero_whichever_first(rng):
    A, _, Y = make_problem(rng, 30, 60, L=2, k=8, joint=False, sigma=0.01)
    res = cscore.omp(A, Y, n_nonzero=3, tol=1e-6, return_result=True)
    assert list(res.stop_reason) == ["n_nonzero", "n_nonzero"]
    assert list(res.n_iter) == [3, 3]
    res = cscore.omp(A, Y, n_nonzero=20, tol=1.0, return_result=True)
    assert list(res.stop_reason) == ["tol", "tol"]
    assert (res.n_iter < 20).all() and (res.residual_norm <= 1.0).all()


def test_default_n_nonzero(rng):
    A, _, Y = make_problem(rng, 30, 60, L=2, k=3, joint=False, sigma=0.1)
    res = cscore.omp(A, Y, return_result=True)
    assert list(res.n_iter) == [6, 6]  # max(1, int(0.1 * 60))
    A2 = rng.standard_normal((4, 5))
    assert int(cscore.omp(A2, rng.standard_normal(4), return_result=True).n_iter) == 1
    res = cscore.somp(A, Y, return_result=True)
    assert int(res.n_iter) == 6


def test_tol_alone_runs_to_min_m_n(rng):
    A = rng.standard_normal((10, 20))
    y = rng.standard_normal(10)
    res = cscore.omp(A, y, tol=0.0, return_result=True)
    assert int(res.n_iter) == 10
    assert res.stop_reason in ("exhausted", "tol")
    assert res.residual_norm < 1e-12


def test_result_record(rng):
    A, _, Y = make_problem(rng, 20, 40, L=3, k=2, joint=False)
    r1 = cscore.omp(A, Y[:, 0], n_nonzero=2, return_result=True)
    assert isinstance(r1, cscore.DecodeResult)
    assert r1.support.shape == (40,) and r1.support.dtype == bool
    assert r1.residual_norm.shape == () and r1.n_iter.shape == () and r1.stop_reason.shape == ()
    assert str(r1.stop_reason) == "n_nonzero"
    assert r1.extra["atoms"].shape == (2,)
    rb = cscore.omp(A, Y, n_nonzero=2, return_result=True)
    assert rb.x.shape == rb.support.shape == (40, 3)
    assert rb.residual_norm.shape == rb.n_iter.shape == rb.stop_reason.shape == (3,)
    assert (rb.support == (rb.x != 0)).all()
    rs = cscore.somp(A, np.stack([Y, Y]), n_nonzero=4, return_result=True)
    assert rs.x.shape == rs.support.shape == (2, 40, 3)
    assert rs.residual_norm.shape == (2, 3) and rs.n_iter.shape == (2,)
    assert "nnz" in str(rs)


# --------------------------------------------------------------------------------------
# Properties.


@st.composite
def problems(draw):
    M = draw(st.integers(3, 16))
    N = draw(st.integers(M, 2 * M + 4))
    L = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    k = draw(st.integers(1, M))
    g = np.random.default_rng(seed)
    A = g.standard_normal((M, N)) * g.uniform(0.1, 10.0, N)
    Y = g.standard_normal((M, L))
    return A, Y, k


@settings(max_examples=40, deadline=None)
@given(problems())
def test_properties(case):
    A, Y, k = case
    res = cscore.somp(A, Y, n_nonzero=k, return_result=True)
    S = res.x
    atoms = res.extra["atoms"]
    n = int(res.n_iter)
    # Support size <= n_nonzero, and the atoms are distinct.
    assert n <= k
    assert len(set(atoms[:n].tolist())) == n and (atoms[n:] == -1).all()
    assert np.count_nonzero(np.any(S != 0, axis=1)) <= n
    # Reported residual norms are the true ones.
    R = Y - A @ S
    scale = np.linalg.norm(Y) + 1.0
    np.testing.assert_allclose(res.residual_norm, np.linalg.norm(R, axis=0), atol=1e-9 * scale)
    # Residual orthogonal to the selected columns (least-squares optimality).
    An = A / np.linalg.norm(A, axis=0)
    assert np.abs(An[:, atoms[:n]].T @ R).max(initial=0.0) <= 1e-8 * scale
    # Monotone residual along the greedy path, and the path is nested.
    prev = np.inf
    for j in range(1, n + 1):
        rj = cscore.somp(A, Y, n_nonzero=j, return_result=True)
        assert (rj.extra["atoms"] == atoms[:j]).all()
        total = float(rj.extra["residual_total"])
        assert total <= prev + 1e-10 * scale
        prev = total


# --------------------------------------------------------------------------------------
# The chunked OMP kernel: memory layout, chunk and batch boundaries never change a bit.


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_omp_layout_chunks_and_batches_do_not_change_bits(rng, dtype):
    # 75 problems: two full chunks of 32 and a partial one; N = 90 is no multiple
    # of the kernel's 32/16/8-wide blocks, so every tail path runs.
    A, _, Y = make_problem(rng, 40, 90, L=75, k=6, joint=False, sigma=0.01)
    A, Y = A.astype(dtype), Y.astype(dtype)
    ref = cscore.omp(A, Y, n_nonzero=12, return_result=True)
    for other in (
        cscore.omp(A, np.asfortranarray(Y), n_nonzero=12, return_result=True),
        cscore.omp(A, Y, n_nonzero=12, n_threads=3, return_result=True),
    ):
        np.testing.assert_array_equal(other.x, ref.x)
        np.testing.assert_array_equal(other.residual_norm, ref.residual_norm)
        np.testing.assert_array_equal(other.extra["atoms"], ref.extra["atoms"])
    # a batch cut across chunk boundaries
    cuts = (slice(0, 7), slice(7, 40), slice(40, 75))
    parts = [cscore.omp(A, Y[:, s], n_nonzero=12) for s in cuts]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), ref.x)
    for b in (0, 31, 32, 74):
        np.testing.assert_array_equal(cscore.omp(A, Y[:, b], n_nonzero=12), ref.x[:, b])


def test_omp_picks_the_first_of_tied_atoms(rng):
    # Duplicate columns tie exactly: the lower index wins, as in a plain scan.
    A = rng.standard_normal((20, 40))
    A[:, 33] = A[:, 5]
    A[:, 38] = A[:, 21]
    y = 3.0 * A[:, 33] - 2.0 * A[:, 38] + 0.5 * A[:, 10]
    res = cscore.omp(A, np.stack([y] * 5, axis=1), n_nonzero=3, return_result=True)
    assert set(res.extra["atoms"][0].tolist()) == {5, 21, 10}
