"""Threaded greedy decodes are bit-identical to serial ones."""

from __future__ import annotations

import warnings
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
    from cscore.decoders import _greedy_dense as greedy  # the dense driver holds _GRAM_LIMIT

    A, _, Y = make_problem(rng, 30, 64, L=7, k=4, joint=False, sigma=0.01)
    Ys = rng.standard_normal((6, 30, 5))  # 6 * 9 atoms >= 64 / 2: G is stored
    ref_o = cscore.omp(A, Y, tol=0.05, n_nonzero=12)
    ref_s = cscore.somp(A, Ys, n_nonzero=9)
    monkeypatch.setattr(greedy, "_GRAM_LIMIT", 0)
    np.testing.assert_array_equal(cscore.omp(A, Y, tol=0.05, n_nonzero=12), ref_o)
    np.testing.assert_array_equal(cscore.somp(A, Ys, n_nonzero=9), ref_s)


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]


def test_overlapping_sbl_calls_restore_blas_threads_and_match_serial(rng):
    # Each call limits the process-wide BLAS to one thread.  Overlapping calls
    # share that limit (first in saves, last out restores): a per-call
    # save/restore would leave the BLAS single-threaded for good.  Every call runs
    # with exactly one BLAS thread -- also on worker threads, where OpenBLAS
    # (0.3.30) can ignore the process-wide setting -- so concurrent results equal
    # serial ones bit for bit.
    threadpoolctl = pytest.importorskip("threadpoolctl")
    A, _, Y = make_problem(rng, 24, 48, L=4, k=5, joint=True, sigma=0.05)
    scales = [1.0, 2.0, 0.5, 3.0]
    jobs = [(fn, scales[i % 4]) for i in range(32) for fn in (cscore.tsbl, cscore.tmsbl)]
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        assert before and all(n == 2 for n in before)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # max_iter=60 is reached
            serial = [fn(A, Y * s, max_iter=60, return_result=True) for fn, s in jobs]
            with ThreadPoolExecutor(max_workers=4) as ex:
                par = list(ex.map(lambda j: j[0](A, Y * j[1], max_iter=60,
                                                 return_result=True), jobs))
        assert _blas_threads() == before
    for r0, r1 in zip(serial, par):
        for f in ("x", "residual_norm", "n_iter", "stop_reason"):
            np.testing.assert_array_equal(getattr(r0, f), getattr(r1, f))
        np.testing.assert_array_equal(r0.extra["gamma"], r1.extra["gamma"])


def test_single_threaded_blas_is_shared_across_threads(monkeypatch):
    # Overlapping blocks from several threads: the first in limits, the last out
    # restores the original count, whatever the order of entry and exit.
    import threading

    import cscore._blas as cb

    class FakeLib:
        def __init__(self) -> None:
            self.n = 4
            self.log: list[int] = []

        def get_num_threads(self) -> int:
            return self.n

        def set_num_threads(self, n: int) -> None:
            self.n = n
            self.log.append(n)

    lib = FakeLib()
    monkeypatch.setattr(cb, "_BLAS_LIBS", [lib])
    monkeypatch.setattr(cb, "_LOCAL_SETTERS", [])
    inside: list[int] = []
    enter = threading.Barrier(3)
    leave = [threading.Event() for _ in range(3)]

    def worker(i: int) -> None:
        with cb.single_threaded_blas():
            enter.wait()
            inside.append(lib.n)
            leave[i].wait()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for i in (1, 0, 2):  # leave in another order than entry
        leave[i].set()
        ts[i].join()
        if i != 2:
            assert lib.n == 1
    assert inside == [1, 1, 1]
    assert lib.n == 4 and lib.log == [1, 4]
    with cb.single_threaded_blas():
        with cb.single_threaded_blas():
            assert lib.n == 1
        assert lib.n == 1
    assert lib.n == 4
