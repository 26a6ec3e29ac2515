"""OMP on a partial-DCT operator: time and memory against N, never forming A.

The operator is M rows, drawn at random, of the orthonormal DCT-II of size N,
applied with ``scipy.fft.dct`` (``A x``) and ``scipy.fft.idct`` on the
zero-padded vector (``A^T y``); a dense A would take ``8 M N`` bytes (1 GiB for
N = 2**16, M = 2**11).  The signal has k = 20 nonzeros of random sign and
magnitude in [1, 2]; ``cscore.omp(op, y, n_nonzero=k)`` decodes it.

Printed per N (M = N / 32): the time of one ``A^T`` and one ``A`` application
(best of 5), the OMP time (best of ``--repeats``), the ratio of the OMP time to
``k * (t(A^T) + t(A))`` (the cost model: one adjoint per iteration and one
product per selected column), whether the support was recovered and the
relative error, and the peak memory that the decode allocated through NumPy
(``tracemalloc``, a separate run).  First, the target case N = 2**16, M = 2**11
also reports the growth of the process's peak resident memory
(``resource.getrusage``) over the decode.  Usage::

    python benchmarks/bench_operator.py [--max-log2n 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
import tracemalloc
from typing import Any

import numpy as np
import scipy.fft
from scipy.sparse.linalg import LinearOperator

import cscore

K = 20


class PartialDCT(LinearOperator):
    """Rows ``rows`` of the orthonormal DCT-II of size N."""

    def __init__(self, N: int, rows: np.ndarray) -> None:
        super().__init__(dtype=np.float64, shape=(rows.size, N))
        self.rows = rows

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return scipy.fft.dct(np.ravel(x), norm="ortho")[self.rows]

    def _rmatvec(self, y: np.ndarray) -> np.ndarray:
        z = np.zeros(self.shape[1])
        z[self.rows] = np.ravel(y)
        return scipy.fft.idct(z, norm="ortho")


def make_problem(log2n: int, seed: int = 0) -> tuple[PartialDCT, np.ndarray, np.ndarray]:
    """The operator (M = N / 32), a K-sparse signal and its measurements."""
    rng = np.random.default_rng(seed)
    N = 1 << log2n
    M = N // 32
    op = PartialDCT(N, np.sort(rng.choice(N, M, replace=False)))
    x = np.zeros(N)
    x[rng.choice(N, K, replace=False)] = rng.choice([-1.0, 1.0], K) * rng.uniform(1, 2, K)
    return op, x, op.matvec(x)


def best_time(fn: Any, repeats: int) -> float:
    """Best wall time of ``repeats`` calls of ``fn``."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def check(x_hat: np.ndarray, x: np.ndarray) -> tuple[bool, float]:
    """(support recovered exactly, relative l2 error)."""
    same = np.array_equal(np.flatnonzero(x_hat), np.flatnonzero(x))
    return same, float(np.linalg.norm(x_hat - x) / np.linalg.norm(x))


def target_case() -> None:
    """N = 2**16, M = 2**11, k = 20: recovery and memory above the input."""
    op, x, y = make_problem(16)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    x_hat = cscore.omp(op, y, n_nonzero=K)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    same, err = check(x_hat, x)
    print(f"target N=2^16 M=2^11 k={K}: support equal {same}, relative error {err:.2e}, "
          f"NumPy peak above input {peak / 2**20:.1f} MiB, process peak RSS growth "
          f"{(rss1 - rss0) / 1024:.1f} MiB (dense A would be "
          f"{8 * op.shape[0] * op.shape[1] / 2**30:.2f} GiB)")


def sweep(max_log2n: int, repeats: int) -> None:
    """The table of times and memory against N."""
    print("| N | M | t(A^T) ms | t(A) ms | OMP ms | OMP / (k (t(A^T)+t(A))) "
          "| support | rel. error | NumPy peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for log2n in range(12, max_log2n + 1):
        op, x, y = make_problem(log2n)
        t_adj = best_time(lambda op=op, y=y: op.rmatvec(y), 5)
        t_fwd = best_time(lambda op=op, x=x: op.matvec(x), 5)
        t_omp = best_time(lambda op=op, y=y: cscore.omp(op, y, n_nonzero=K), repeats)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        x_hat = cscore.omp(op, y, n_nonzero=K)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        same, err = check(x_hat, x)
        ratio = t_omp / (K * (t_adj + t_fwd))
        print(f"| 2^{log2n} | {op.shape[0]} | {1e3 * t_adj:.3f} | {1e3 * t_fwd:.3f} | "
              f"{1e3 * t_omp:.1f} | {ratio:.2f} | {same} | {err:.1e} | {peak / 2**20:.1f} |")


def main() -> None:
    """Parse the arguments and print the target case and the sweep."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-log2n", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"cscore {cscore.__version__}, numpy {np.__version__}, "
          f"{platform.machine()} {platform.python_version()}, k = {K}, M = N / 32")
    target_case()
    sweep(args.max_log2n, args.repeats)


if __name__ == "__main__":
    main()
