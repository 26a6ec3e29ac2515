"""Threaded greedy decodes are bit-identical to serial ones."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cscore

from conftest import make_problem


def _fields(res: cscore.DecodeResult) -> list[np.ndarray]:
    return [res.x, res.support, res.residual_norm, res.n_iter, res.stop_reason,
            res.extra["atoms"]]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_omp_threads_identical(rng, dtype):
    A, _, Y = make_problem(rng, 24, 48, L=61, k=4, joint=False, sigma=0.01, dtype=dtype)
    runs = [
        cscore.omp(A, Y, n_nonzero=10, tol=0.05, n_threads=t, return_result=True)
        for t in (1, 2, 3, 7)
    ]
    for other in runs[1:]:
        for a, b in zip(_fields(runs[0]), _fields(other)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_somp_threads_identical(rng, dtype):
    A, _, _ = make_problem(rng, 24, 48, L=1, k=1, dtype=dtype)
    Ys = rng.standard_normal((23, 24, 3)).astype(dtype)
    runs = [cscore.somp(A, Ys, tol=3.0, n_threads=t, return_result=True) for t in (1, 2, 5)]
    for other in runs[1:]:
        for a, b in zip(_fields(runs[0]), _fields(other)):
            np.testing.assert_array_equal(a, b)


def test_default_thread_setting_is_used(rng):
    A, _, Y = make_problem(rng, 20, 40, L=9, k=3, joint=False, sigma=0.01)
    ref = cscore.omp(A, Y, n_nonzero=5, n_threads=1)
    for t in (1, 2, 4):
        with cscore.num_threads(t):
            np.testing.assert_array_equal(cscore.omp(A, Y, n_nonzero=5), ref)


def test_concurrent_python_threads(rng):
    # The GIL is released inside the kernel: concurrent calls from Python threads
    # must not interfere with each other.
    A, _, Y = make_problem(rng, 30, 60, L=40, k=4, joint=False, sigma=0.01)
    Ys = np.stack([Y[:, i : i + 4] for i in range(0, 40, 4)])
    serial_o = [cscore.omp(A, Y * s, n_nonzero=6, n_threads=1) for s in (1.0, 2.0, 3.0)]
    serial_s = cscore.somp(A, Ys, n_nonzero=6, n_threads=1)
    with ThreadPoolExecutor(max_workers=4) as ex:
        futs_o = [
            ex.submit(cscore.omp, A, Y * s, n_nonzero=6, n_threads=2) for s in (1.0, 2.0, 3.0)
        ]
        fut_s = ex.submit(cscore.somp, A, Ys, n_nonzero=6, n_threads=2)
        for f, ref in zip(futs_o, serial_o):
            np.testing.assert_array_equal(f.result(), ref)
        np.testing.assert_array_equal(fut_s.result(), serial_s)


def test_portable_path_matches_avx2_path(rng, tmp_path):
    # The kernel picks an AVX2 build of itself at run time; CSCORE_DISABLE_AVX2
    # forces the portable one (BLAS gemv based).  Both must agree to rounding.
    import os
    import subprocess
    import sys
    from pathlib import Path

    A, _, Y = make_problem(rng, 30, 64, L=12, k=4, joint=False, sigma=0.01)
    Ys = rng.standard_normal((5, 30, 3))
    np.savez(tmp_path / "in.npz", A=A, Y=Y, Ys=Ys)
    code = (
        "import numpy as np, cscore, sys; d = np.load(sys.argv[1] + '/in.npz'); "
        "np.savez(sys.argv[1] + '/out.npz', "
        "x=cscore.omp(d['A'], d['Y'], n_nonzero=9), "
        "s=cscore.somp(d['A'], d['Ys'], tol=1.5), "
        "f=cscore.omp(d['A'].astype('f4'), d['Y'].astype('f4'), n_nonzero=4))"
    )
    env = dict(os.environ, CSCORE_DISABLE_AVX2="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(cscore.__file__).parents[1]), env.get("PYTHONPATH", "")]
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, check=True)
    out = np.load(tmp_path / "out.npz")
    np.testing.assert_allclose(out["x"], cscore.omp(A, Y, n_nonzero=9), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["s"], cscore.somp(A, Ys, tol=1.5), rtol=1e-10, atol=1e-12)
    f32 = cscore.omp(A.astype("f4"), Y.astype("f4"), n_nonzero=4)
    np.testing.assert_array_equal(out["f"] != 0, f32 != 0)
    np.testing.assert_allclose(out["f"], f32, rtol=1e-4, atol=1e-5)


def test_gram_on_demand_identical(rng, monkeypatch):
    # Large dictionaries do not store the Gram matrix; force that path here.
    from cscore import greedy

    A, _, Y = make_problem(rng, 30, 64, L=7, k=4, joint=False, sigma=0.01)
    Ys = rng.standard_normal((6, 30, 5))  # 6 * 9 atoms >= 64 / 2: G is stored
    ref_o = cscore.omp(A, Y, tol=0.05, n_nonzero=12)
    ref_s = cscore.somp(A, Ys, n_nonzero=9)
    monkeypatch.setattr(greedy, "_GRAM_LIMIT", 0)
    np.testing.assert_array_equal(cscore.omp(A, Y, tol=0.05, n_nonzero=12), ref_o)
    np.testing.assert_array_equal(cscore.somp(A, Ys, n_nonzero=9), ref_s)
