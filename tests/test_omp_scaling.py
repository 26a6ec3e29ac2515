"""OMP/SOMP whose cost follows the atoms found (issue #35, the greedy part).

A decode stopped by ``tol`` must give the decode stopped by ``n_nonzero`` at the
atom count it found, whatever way the kernel obtains its Gram columns (stored,
cached per batch, formed on demand for one problem) and however many atoms its
work arrays first had room for (they grow as atoms are added).  These ways run
the same operations in the same order (cscore's own kernels, no BLAS), so the
comparisons are bit for bit.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.sparse.linalg import aslinearoperator

import cscore
from cscore import _core
from cscore.decoders import _greedy_dense as greedy  # the dense driver holds _GRAM_LIMIT


def _problem(rng: np.random.Generator, M: int, N: int, k: int, B: int, noise: float = 0.01
             ) -> tuple[np.ndarray, np.ndarray]:
    A = rng.standard_normal((M, N))
    X = np.zeros((N, B))
    for b in range(B):
        X[rng.choice(N, k, replace=False), b] = rng.standard_normal(k) + 2 * np.sign(
            rng.standard_normal(k))
    return A, A @ X + noise * rng.standard_normal((M, B))


@pytest.mark.parametrize("B", [1, 7])
def test_omp_tol_equals_n_nonzero_at_found_count(rng, B):
    M, N, k = 60, 200, 12
    A, Y = _problem(rng, M, N, k, B)
    y = Y[:, 0] if B == 1 else Y
    tol = 0.01 * np.sqrt(M) * 1.2
    r = cscore.omp(A, y, tol=tol, return_result=True)
    counts = np.atleast_1d(r.n_iter)
    assert np.all(np.atleast_1d(r.stop_reason) == "tol")
    X_tol = np.asarray(r.x).reshape(N, -1)
    for b, n in enumerate(counts):
        x_k = cscore.omp(A, Y[:, b], n_nonzero=int(n))
        np.testing.assert_array_equal(X_tol[:, b], x_k)


def test_omp_tol_beyond_the_first_room_grows_the_workspace(rng):
    # More atoms than the work arrays first have room for (64): they grow.
    M, N, k = 200, 300, 90
    A, Y = _problem(rng, M, N, k, 3, noise=1e-9)
    r = cscore.omp(A, Y, tol=1e-6, return_result=True)
    assert np.all(r.n_iter >= 80)
    for b in range(3):
        n = int(r.n_iter[b])
        np.testing.assert_array_equal(r.x[:, b], cscore.omp(A, Y[:, b], n_nonzero=n))
        # and the coefficients are the least-squares fit on the support (LAPACK:
        # a tolerance, its rounding differs from the kernel's)
        supp = np.flatnonzero(r.x[:, b])
        ls = np.linalg.lstsq(A[:, supp], Y[:, b], rcond=None)[0]
        np.testing.assert_allclose(r.x[supp, b], ls, rtol=1e-7, atol=1e-9)


def test_somp_tol_equals_n_nonzero_at_found_count(rng):
    M, N, k, L = 50, 160, 8, 3
    A = rng.standard_normal((M, N))
    S = np.zeros((4, N, L))
    for b in range(4):
        S[b, rng.choice(N, k, replace=False)] = rng.standard_normal((k, L)) + 2
    Y = A @ S + 0.01 * rng.standard_normal((4, M, L))
    r = cscore.somp(A, Y, tol=L * 0.01 * np.sqrt(M) * 1.2, return_result=True)
    assert np.all(r.stop_reason == "tol")
    for b in range(4):
        np.testing.assert_array_equal(r.x[b], cscore.somp(A, Y[b], n_nonzero=int(r.n_iter[b])))


@pytest.mark.parametrize("B", [1, 5, 64])
def test_gram_strategies_give_the_same_bits(rng, B, monkeypatch):
    # N = 512, k = 4: a batch of 64 stores G (2 B k >= N), 5 problems form their
    # columns on demand (n_nonzero) or keep them (tol), one problem forms them on
    # demand with its correlations from the atoms; with the Gram limit at 0
    # nothing is stored or kept.  Every way: the same bits.
    M, N, k = 64, 512, 4
    A, Y = _problem(rng, M, N, k, B)
    tol = 0.01 * np.sqrt(M) * 1.2
    x_k = cscore.omp(A, Y, n_nonzero=k, n_threads=1)
    x_t = cscore.omp(A, Y, tol=tol, n_threads=1)
    loop_k = np.stack([cscore.omp(A, Y[:, b], n_nonzero=k) for b in range(B)], axis=1)
    loop_t = np.stack([cscore.omp(A, Y[:, b], tol=tol) for b in range(B)], axis=1)
    np.testing.assert_array_equal(x_k, loop_k)
    np.testing.assert_array_equal(x_t, loop_t)
    monkeypatch.setattr(greedy, "_GRAM_LIMIT", 0)
    np.testing.assert_array_equal(cscore.omp(A, Y, n_nonzero=k, n_threads=1), x_k)
    np.testing.assert_array_equal(cscore.omp(A, Y, tol=tol, n_threads=1), x_t)


def test_cached_gram_columns_thread_independent(rng):
    # A tol-stopped batch whose first problem finds too few atoms to repay G
    # (2 B n0 < N) shares its cached Gram columns between threads (3 chunks).
    M, N, k, B = 40, 3000, 6, 70
    A, Y = _problem(rng, M, N, k, B)
    tol = 0.01 * np.sqrt(M) * 1.2
    r1 = cscore.omp(A, Y, tol=tol, n_threads=1, return_result=True)
    for threads in (2, 3):
        r = cscore.omp(A, Y, tol=tol, n_threads=threads, return_result=True)
        np.testing.assert_array_equal(r.x, r1.x)
        np.testing.assert_array_equal(r.residual_norm, r1.residual_norm)
        np.testing.assert_array_equal(r.n_iter, r1.n_iter)


def test_float32_tol_equals_n_nonzero(rng):
    M, N, k = 48, 150, 6
    A, Y = _problem(rng, M, N, k, 3)
    A32, Y32 = A.astype(np.float32), Y.astype(np.float32)
    r = cscore.omp(A32, Y32, tol=0.01 * np.sqrt(M) * 1.3, return_result=True)
    for b in range(3):
        np.testing.assert_array_equal(r.x[:, b], cscore.omp(A32, Y32[:, b],
                                                            n_nonzero=int(r.n_iter[b])))


def test_operator_tol_beyond_the_first_room(rng):
    # The operator path's state starts with room for 32 atoms and grows.
    M, N, k = 120, 260, 45
    A, Y = _problem(rng, M, N, k, 2, noise=1e-10)
    op = aslinearoperator(A / np.linalg.norm(A, axis=0))
    An = A / np.linalg.norm(A, axis=0)
    rb = cscore.omp(op, Y, tol=1e-7, return_result=True)
    assert rb.extra["atoms"].shape == (2, min(M, N))
    for b in range(2):
        r = cscore.omp(op, Y[:, b], tol=1e-7, return_result=True)
        n = int(r.n_iter)
        assert n >= 40
        rk = cscore.omp(op, Y[:, b], n_nonzero=n, return_result=True)
        np.testing.assert_array_equal(r.x, rk.x)
        np.testing.assert_array_equal(r.extra["atoms"][:n], rk.extra["atoms"])
        assert np.all(r.extra["atoms"][n:] == -1)
        # the batch takes its correlations by one block product (BLAS gemm,
        # rounded differently from gemv): same atoms, values to rounding
        np.testing.assert_array_equal(rb.extra["atoms"][b], r.extra["atoms"])
        np.testing.assert_allclose(rb.x[:, b], r.x, rtol=0, atol=1e-9 * np.max(np.abs(r.x)))
        # the dense kernel on the same (unit-column) matrix: same support and,
        # through different arithmetic (QR by Gram-Schmidt vs Cholesky), the
        # same least squares to rounding
        xd = cscore.omp(An, Y[:, b], n_nonzero=n)
        np.testing.assert_array_equal(np.flatnonzero(xd), np.flatnonzero(rk.x))
        np.testing.assert_allclose(rk.x, xd, rtol=0, atol=1e-9 * np.max(np.abs(xd)))


def test_tol_batch_that_repays_g_stores_it(rng):
    # A tol-stopped batch decodes its first problem alone; when 2 B n0 >= N it
    # stores G for the others (as a batch with a known count does).  The same
    # bits as the problems decoded one by one (columns on demand), whatever
    # the thread count.
    M, N, k, B = 48, 400, 5, 90
    A, Y = _problem(rng, M, N, k, B)
    tol = 0.01 * np.sqrt(M) * 1.2
    r1 = cscore.omp(A, Y, tol=tol, n_threads=1, return_result=True)
    assert 2 * B * int(r1.n_iter[0]) >= N
    for b in range(0, B, 11):
        np.testing.assert_array_equal(r1.x[:, b], cscore.omp(A, Y[:, b], tol=tol))
    np.testing.assert_array_equal(cscore.omp(A, Y, tol=tol, n_threads=3), r1.x)


@pytest.mark.parametrize("L", [1, 3])
def test_columns_formed_ahead_give_the_same_bits(rng, L):
    # A dictionary of 2 MiB and more (here 256 x 1024 float64) forms one
    # problem's Gram columns ahead: the pass that forms the selected atom's
    # column also forms those of the next best candidates (greedy_ahead.hpp).
    # Decoded one at a time (columns on demand, formed ahead) or as a batch of
    # 64 that stores G: the same bits, for OMP and SOMP, by n_nonzero and tol.
    M, N, k, B = 256, 1024, 48, 64
    A = rng.standard_normal((M, N))
    S = np.zeros((B, N, L))
    for b in range(B):
        S[b, rng.choice(N, k, replace=False)] = rng.standard_normal((k, L)) + 2
    Y = A @ S + 0.01 * rng.standard_normal((B, M, L))
    if L == 1:
        Yb = np.ascontiguousarray(Y[:, :, 0].T)  # omp's (M, B)
        stored = cscore.omp(A, Yb, n_nonzero=k, n_threads=1)
        for b in range(0, B, 9):
            np.testing.assert_array_equal(cscore.omp(A, Yb[:, b], n_nonzero=k), stored[:, b])
        tol = 0.01 * np.sqrt(M) * 1.2
        r = cscore.omp(A, Yb[:, :4], tol=tol, return_result=True, n_threads=1)
        for b in range(4):
            one = cscore.omp(A, Yb[:, b], n_nonzero=int(r.n_iter[b]))
            np.testing.assert_array_equal(one, r.x[:, b])
    else:
        stored = cscore.somp(A, Y, n_nonzero=k, n_threads=1)
        for b in range(0, B, 9):
            np.testing.assert_array_equal(cscore.somp(A, Y[b], n_nonzero=k), stored[b])


_ISA_SCRIPT = """
import sys
import numpy as np
import cscore
rng = np.random.default_rng(7)
A = rng.standard_normal((256, 1024))
S = np.zeros((1024, 40))
for b in range(40):
    S[rng.choice(1024, 30, replace=False), b] = rng.standard_normal(30) + 1
Y = A @ S + 0.01 * rng.standard_normal((256, 40))
np.savez(sys.argv[1], isa=cscore.instruction_set(),
         one=cscore.omp(A, Y[:, 0], n_nonzero=40),
         batch=cscore.omp(A, Y, n_nonzero=30, n_threads=1),
         tol=cscore.omp(A, Y, tol=0.2, n_threads=1))
"""


@pytest.mark.skipif(_core.cpu_isa_supported() != "avx512", reason="the CPU has no AVX-512")
def test_avx512_gram_tiles_equal_the_avx2_ones(tmp_path):
    # With AVX-512 the Gram columns (formed ahead for one vector, stored for a
    # batch, stored after the probe of a tol batch) hold two entries per
    # register; CSCORE_ISA=avx2 runs the four-lane tiles: the same bits.
    out = {}
    for isa in ("avx512", "avx2"):
        path = tmp_path / f"{isa}.npz"
        env = dict(os.environ, CSCORE_ISA=isa)
        subprocess.run([sys.executable, "-c", _ISA_SCRIPT, str(path)], env=env, check=True)
        out[isa] = np.load(path)
        assert str(out[isa]["isa"]) == isa
    for key in ("one", "batch", "tol"):
        np.testing.assert_array_equal(out["avx512"][key], out["avx2"][key], err_msg=key)
