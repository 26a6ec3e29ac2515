"""Batched AMP (amp_products.hpp, the slots of amp.hpp) and AMP on operators
(python/cscore/decoders/amp_operator.py).

A batch advances its runs together and does the products for all of them at once;
each run's result must equal its result alone, bit for bit, whatever the batch,
the slots it passes through, the thread count, and whether the products run with
AVX2 or AVX-512 (both use one FMA per step of the same chain).  The operator path
runs the same iteration in NumPy, so it agrees with the dense kernel to rounding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import aslinearoperator

from cscore import _core
from cscore.bench.scaling import partial_dct_operator
from cscore.decoders.amp import amp


def _problems(seed: int, B: int, M: int, N: int, L: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A (M, N) and Y (B, M, L) with sparsities and noise levels that vary over the
    batch, so that the runs stop after different numbers of iterations."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    X = np.zeros((B, N, L))
    for b in range(B):
        k = 1 + b % max(2, M // 3)
        X[b, rng.choice(N, k, replace=False)] = rng.standard_normal((k, L))
    Y = A @ X
    noise = 10.0 ** -(1.0 + np.arange(B) % 4)
    Y += noise[:, None, None] * rng.standard_normal(Y.shape)
    return A, Y


@pytest.mark.parametrize("kw", [{}, {"denoiser": "l1"}, {"joint": False}])
def test_every_run_equals_its_solo_run(kw) -> None:
    # 70 problems: more than a worker's 32 slots, so finished runs hand their slot on;
    # M, N not multiples of any panel height.
    A, Y = _problems(1, 70, 37, 83, L=2)
    Y[5] = 0.0
    res = amp(A, Y, n_threads=1, return_result=True, **kw)
    assert len(set(np.asarray(res.n_iter).tolist())) > 3  # the runs do stop apart
    for b in (0, 5, 6, 33, 64, 69):
        solo = amp(A, Y[b], n_threads=1, return_result=True, **kw)
        assert np.array_equal(solo.x, res.x[b])
        assert int(solo.n_iter) == int(res.n_iter[b])
        for key in ("noise_var", "sparsity", "slab_var"):
            if key in res.extra:
                assert np.array_equal(np.asarray(solo.extra[key]), np.asarray(res.extra[key])[b])
    perm = np.random.default_rng(0).permutation(70)
    assert np.array_equal(amp(A, Y[perm], n_threads=2, **kw), res.x[perm])


def _ill_conditioned(
    seed: int, B: int, M: int, N: int, cond: float
) -> tuple[np.ndarray, np.ndarray]:
    """A with singular values spread over `cond` (undamped AMP diverges on it, so the
    guard restores best iterates and raises the damping) and Y (B, M, 2)."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((M, M)))
    V, _ = np.linalg.qr(rng.standard_normal((N, M)))
    A = (U * np.geomspace(1.0, cond, M)) @ V.T
    X = np.zeros((B, N, 2))
    for b in range(B):
        X[b, rng.choice(N, N // 10, replace=False)] = rng.standard_normal((N // 10, 2))
    return A, A @ X + 0.01 * rng.standard_normal((B, M, 2))


@pytest.mark.parametrize("kw", [{}, {"denoiser": "l1", "joint": False}])
def test_runs_the_guard_restores_equal_their_solo_runs(kw) -> None:
    # The best iterate is kept by swapping buffers, not copied: a run that falls
    # back to it must still get its solo result, in a batch whose runs fall back at
    # different iterations or not at all (at this condition number, some of each).
    A, Y = _ill_conditioned(6, 12, 57, 131, cond=4.0)
    res = amp(A, Y, max_iter=60, n_threads=1, return_result=True, **kw)
    damping = np.asarray(res.extra["damping"]).reshape(12, -1)
    assert np.any(damping > 0.0) and np.any(damping == 0.0)  # some restored, some not
    for b in range(12):
        solo = amp(A, Y[b], max_iter=60, n_threads=1, return_result=True, **kw)
        assert np.array_equal(solo.x, res.x[b])
        assert np.array_equal(np.ravel(solo.extra["damping"]), damping[b])


@pytest.mark.skipif(_core.cpu_isa_supported() != "avx512", reason="needs an AVX-512 CPU")
def test_avx2_and_avx512_give_the_same_bits() -> None:
    # AMP, AMP whose guard restores best iterates, and VAMP (its steps are compiled
    # per instruction set as AMP's are)
    code = (
        "import json, numpy as np, cscore\n"
        "rng = np.random.default_rng(4)\n"
        "A = rng.standard_normal((45, 101)) / 7\n"
        "Y = rng.standard_normal((11, 45, 1))\n"
        "U, _ = np.linalg.qr(rng.standard_normal((45, 45)))\n"
        "V, _ = np.linalg.qr(rng.standard_normal((101, 45)))\n"
        "B = (U * np.geomspace(1.0, 25.0, 45)) @ V.T\n"
        "out = [cscore.amp(A, Y), cscore.amp(B, Y, max_iter=50), cscore.vamp(A, Y),\n"
        "       cscore.vamp(A, Y, denoiser='l1')]\n"
        "print(json.dumps([cscore.instruction_set(), [o.tobytes().hex() for o in out]]))\n"
    )
    outs = {}
    for isa in ("avx2", "avx512"):
        env = dict(os.environ, CSCORE_ISA=isa)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True)
        got_isa, hexbits = json.loads(r.stdout.strip().splitlines()[-1])
        assert got_isa == isa
        outs[isa] = hexbits
    assert outs["avx2"] == outs["avx512"]


@pytest.mark.parametrize("kw", [{}, {"denoiser": "l1"}, {"joint": False}, {"damping": 0.3}])
def test_operator_and_sparse_paths_match_the_dense_kernel(kw) -> None:
    A, Y = _problems(2, 6, 60, 130, L=2)
    A[np.abs(A) < 0.05] = 0.0  # some structural zeros for the sparse matrix
    dense = amp(A, Y, return_result=True, **kw)
    for op in (aslinearoperator(A), sp.csr_matrix(A)):
        got = amp(op, Y, return_result=True, **kw)
        scale = np.max(np.abs(dense.x))
        # rounding only: the products differ in the last bits (BLAS / sparse vs the kernel)
        assert np.max(np.abs(got.x - dense.x)) <= 1e-8 * scale
        assert np.array_equal(got.n_iter, dense.n_iter)
        assert np.allclose(got.residual_norm, dense.residual_norm, rtol=1e-8, atol=0)
        assert list(got.stop_reason) == list(dense.stop_reason)


def test_operator_path_single_vector_and_zero() -> None:
    A, Y = _problems(3, 2, 40, 90)
    op = aslinearoperator(A)
    x = amp(op, Y[0, :, 0])
    assert x.shape == (90,)
    assert np.allclose(x, amp(A, Y[0, :, 0]), rtol=0, atol=1e-9 * np.max(np.abs(x)))
    assert not np.any(amp(op, np.zeros(40)))


def test_operator_path_refuses_complex_products() -> None:
    from scipy.sparse.linalg import LinearOperator

    op = LinearOperator((4, 6), matvec=lambda x: np.ones(4) * 1j, rmatvec=lambda y: np.ones(6),
                        dtype=np.complex128)
    with pytest.raises(TypeError, match="real"):
        amp(op, np.ones(4))


def test_partial_dct_operator_of_n_65536_in_linear_memory() -> None:
    N, M, k = 1 << 16, 1 << 14, 400
    rng = np.random.default_rng(5)
    op = partial_dct_operator(M, N, seed=1)
    x = np.zeros(N)
    x[rng.choice(N, k, replace=False)] = rng.standard_normal(k)
    y = op.matvec(x)
    y = y + 1e-2 * np.sqrt(np.mean(y**2)) * rng.standard_normal(M)
    tracemalloc.start()
    try:
        x_hat = amp(op, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 10 * np.log10(np.sum((x_hat - x) ** 2) / np.sum(x**2)) < -30.0
    # O(N): a few dozen vectors of length N (the dense A would be M N * 8 = 8 GiB)
    assert peak < 64 * N * 8, peak
