"""A short speed report for CI (issue 23): informs, never fails on a slow result.

Run after the tests (``.ci/run``); about 30 s on a 2-core machine.  It prints
what the numbers depend on (CPU model, the instruction set the kernels chose,
threads, load average, and whether the machine was idle by the two-busy-loops
control of ``bench_pipeline.spin_ratio``), then ratios measured in this same run,
so that they compare across machines better than absolute times:

* LSTM-CS batched decode (512 cells, M = 72, N = 144, L = 4, k = 20, one
  thread; random weights as in ``bench_lstm_speed.py``): its GEMM rate over a
  float32 sgemm of the decode's chunk shape, and the time of one problem per call;
* OMP and SOMP (same M, N, k): microseconds per vector, against SPAMS when it
  imports, else scikit-learn's ``orthogonal_mp_gram`` (OMP) and a NumPy SOMP;
* AMP and VAMP (N = 500, M = 250, Bernoulli-Gaussian, as ``bench_amp.py``): time
  per problem, and VAMP's SVD.

Exit status 0 whatever the speed; only a crash (an exception) fails.

Usage::

    python benchmarks/ci_speed.py          # PYTHONPATH=python for a source tree
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cscore
from bench_greedy import make_data
from bench_lstm_speed import (
    best_of,
    cpu_model,
    lstm_flops,
    problems,
    random_model,
    sgemm_rate,
)
from bench_pipeline import spin_ratio

try:  # GPL, never a dependency: compared with only where it is installed
    import spams  # type: ignore[import-not-found]
except ImportError:
    spams = None
try:
    from sklearn.linear_model import orthogonal_mp_gram
except ImportError:
    orthogonal_mp_gram = None

M, N, L, K, CELLS = 72, 144, 4, 20, 512
#: a spin ratio at least this high: two free cores (2.0 is perfect)
IDLE_SPIN = 1.8


def header() -> None:
    """What the numbers depend on: CPU, instruction set, threads, load, idleness."""
    load = os.getloadavg()
    spin = spin_ratio(4_000_000)
    idle = "idle" if spin >= IDLE_SPIN else "NOT idle (shared: times are inflated)"
    print("# cscore CI speed report (informative; never fails on speed)")
    print(f"# CPU: {cpu_model()}, {os.cpu_count()} CPUs; instruction set "
          f"{cscore.instruction_set()}; cscore threads {cscore.get_num_threads()} "
          "(decodes below: 1 thread)")
    print(f"# load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; two busy loops ran "
          f"{spin:.2f}x as fast as one (2.0 on two free cores): {idle}")


def lstm_section() -> None:
    """LSTM-CS batched decode vs a same-shape sgemm, and one problem per call."""
    rng = np.random.default_rng(20161122)
    model = random_model(rng, M, N, L, CELLS)
    Y = problems(rng, model.A, 64, L, K)
    res = model.decode(Y, n_nonzero=K, return_result=True, n_threads=1)  # warm-up
    flops = lstm_flops(model, res.n_iter)
    t, c = best_of(lambda: model.decode(Y, n_nonzero=K, n_threads=1), 3)
    G = model.weights.n_gates
    peak, peak_cpu = sgemm_rate(G * CELLS, M + CELLS, 64, 3)
    rate, rate_cpu = flops / t / 1e9, flops / c / 1e9
    one = Y[:8]

    def one_by_one() -> None:
        for b in range(len(one)):
            model.decode(one[b], n_nonzero=K, n_threads=1)

    t1, _ = best_of(one_by_one, 3)
    print(f"\n## LSTM-CS, {CELLS} cells, M={M}, N={N}, L={L}, k={K}, 1 thread")
    print(f"batch of {len(Y)}: {1e3 * t / len(Y):.2f} ms/problem, {rate:.1f} GFLOP/s; "
          f"sgemm ({G * CELLS} x {M + CELLS}) @ ({M + CELLS} x 64): {peak:.1f} GFLOP/s")
    print(f"decode / sgemm rate: {rate / peak:.2f} by wall time, "
          f"{rate_cpu / peak_cpu:.2f} by CPU time")
    print(f"one problem per call: {1e3 * t1 / len(one):.2f} ms/problem "
          f"({t1 / len(one) / (t / len(Y)):.2f}x the batched time)")


def numpy_somp(A: np.ndarray, Y: np.ndarray, k: int) -> np.ndarray:
    """Plain NumPy SOMP of one problem (M, L): the reference when SPAMS is absent."""
    support: list[int] = []
    R = Y
    coef = np.zeros((0, Y.shape[1]))
    for _ in range(k):
        score = np.linalg.norm(A.T @ R, axis=1)
        score[support] = -1.0
        support.append(int(np.argmax(score)))
        coef = np.linalg.lstsq(A[:, support], Y, rcond=None)[0]
        R = Y - A[:, support] @ coef
    S = np.zeros((A.shape[1], Y.shape[1]))
    S[support] = coef
    return S


def _us(fn: Callable[[], Any], n: int, repeats: int = 3) -> float:
    """Best wall microseconds per item of ``fn`` over ``n`` items."""
    return 1e6 * best_of(fn, repeats)[0] / n


def greedy_section() -> None:
    """OMP and SOMP, microseconds per vector, beside the available reference."""
    A, Y3 = make_data(1, M, N, K, 2000, L)
    Y1 = np.ascontiguousarray(Y3[:, :, 0].T)  # (M, 2000) independent vectors
    Yb = Y3[:200]  # (200, M, L) joint problems
    print(f"\n## OMP and SOMP, M={M}, N={N}, k={K}, 1 thread, microseconds per vector")
    omp = _us(lambda: cscore.omp(A, Y1, n_nonzero=K, n_threads=1), Y1.shape[1])
    somp = _us(lambda: cscore.somp(A, Yb, n_nonzero=K, n_threads=1), Yb.shape[0] * L)
    if spams is not None:
        Af, Yf = np.asfortranarray(A), np.asfortranarray(Y1)
        ref_omp = _us(lambda: spams.omp(Yf, Af, L=K, numThreads=1), Y1.shape[1])
        Ys = np.asfortranarray(np.concatenate(list(Yb), axis=1))
        groups = np.arange(0, Ys.shape[1], L, dtype=np.int32)
        ref_somp = _us(lambda: spams.somp(Ys, Af, groups, L=K, numThreads=1), Ys.shape[1])
        names = ("SPAMS omp", "SPAMS somp")
    else:
        ref_omp = float("nan")
        if orthogonal_mp_gram is not None:
            G, Xy = A.T @ A, A.T @ Y1[:, :500]
            ref_omp = _us(lambda: orthogonal_mp_gram(G, Xy, n_nonzero_coefs=K), 500, 1)
        n_np = 20
        ref_somp = _us(lambda: [numpy_somp(A, Y, K) for Y in Yb[:n_np]], n_np * L, 1)
        names = ("scikit-learn orthogonal_mp_gram", "NumPy SOMP")
    for name, own, ref, ref_name in (("cscore.omp", omp, ref_omp, names[0]),
                                     ("cscore.somp", somp, ref_somp, names[1])):
        vs = (f"{ref_name} {ref:.1f} us: {ref / own:.1f}x faster" if np.isfinite(ref)
              else f"no reference ({ref_name} is not installed)")
        print(f"{name}: {own:.2f} us/vector; {vs}")


def amp_section() -> None:
    """AMP and VAMP (Bernoulli-Gaussian, EM) on the LAMP paper's problem size."""
    from cscore.decoders.amp import VAMPSolver

    rng = np.random.default_rng(0)
    Ma, Na, P = 250, 500, 20
    A = rng.standard_normal((Ma, Na)) / np.sqrt(Ma)
    X = rng.standard_normal((P, Na, 1)) * (rng.random((P, Na, 1)) < 0.1)
    Z = A @ X
    Y = Z + np.sqrt(np.mean(Z**2) * 1e-4) * rng.standard_normal(Z.shape)  # 40 dB
    t_svd, solver = best_of_value(lambda: VAMPSolver(A))
    cscore.amp(A, Y[:2], n_threads=1)  # warm-up
    t_amp = best_of(lambda: cscore.amp(A, Y, n_threads=1), 3)[0]
    t_vamp = best_of(lambda: solver(Y, n_threads=1), 3)[0]
    print(f"\n## AMP / VAMP (Bernoulli-Gaussian, EM), N={Na}, M={Ma}, 40 dB, 1 thread")
    print(f"AMP {1e3 * t_amp / P:.2f} ms/problem; VAMP {1e3 * t_vamp / P:.2f} ms/problem "
          f"({t_vamp / t_amp:.2f}x AMP) plus its SVD once per matrix, {1e3 * t_svd:.1f} ms")


def best_of_value(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """(best wall seconds, the value of the last call)."""
    best, value = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> int:
    """Print the report; 0 (a slow machine is reported, not failed)."""
    start = time.perf_counter()
    header()
    with threadpool_limits(1, user_api="blas"):
        lstm_section()
        greedy_section()
        amp_section()
    print(f"\n# report took {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
