"""OMP/SOMP at the problem sizes people use: speed against scikit-learn, cost of tol.

Issue #35 (the greedy part).  Three kinds of figures, all on one core (cscore
``n_threads=1``, BLAS pinned to one thread by threadpoolctl):

* ``speed``: cscore.omp against scikit-learn's ``orthogonal_mp`` on one vector
  (``n_nonzero=k`` and ``tol`` set so that it stops near k atoms), and on a batch
  of 64 vectors against ``orthogonal_mp`` with ``precompute=True`` (its Gram
  path, ``orthogonal_mp_gram``), for M x N in the grid and k in {M/16, M/8, M/4}.
  The two sides are called alternately, best of ``--repeats``; the figure is
  sklearn time / cscore time.
* ``tol``: a decode stopped by ``tol`` against the same decode stopped by
  ``n_nonzero`` = the atoms it found (dense OMP one vector and a batch, SOMP,
  the operator path), alternating, best of repeats: time ratio tol / n_nonzero.
* ``memory``: peak resident memory above the inputs of one decode, each in a
  fresh subprocess (tracemalloc does not see the compiled core's allocations):
  tol against n_nonzero at the found atom count, and a partial DCT operator with
  N = 2^16, M = 8192 (and N = 2^20 with ``--big``) stopped by tol.

Columns of A are unit-norm Gaussian (scikit-learn assumes unit-norm columns);
x has k Gaussian entries on a random support; y = A x + 0.01 noise.  ``tol`` is
sklearn's squared residual norm, cscore's residual norm: the script converts.

    OMP_NUM_THREADS=1 PYTHONPATH=python python benchmarks/bench_scaling_omp.py
    ... --sizes 72x144,256x1024 --parts speed,tol --repeats 5
    ... --parts memory --big
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from functools import partial
from typing import Any, Callable

import numpy as np

import cscore
from cscore.bench import cpu_model

GRID = "72x144,256x1024,512x2048,1024x4096,2048x16384"
BATCH = 64




def _problem(M: int, N: int, k: int, B: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    X = np.zeros((N, B))
    for b in range(B):
        X[rng.choice(N, k, replace=False), b] = rng.standard_normal(k)
    Y = A @ X + 0.01 * rng.standard_normal((M, B))
    return A, Y


def _alternate(fa: Callable[[], Any], fb: Callable[[], Any], repeats: int,
               budget: float) -> tuple[float, float, float, float]:
    """Best-of wall and thread-CPU times of fa and fb called alternately (a, b, a, b, ...).

    Returns (wall a, wall b, cpu a, cpu b).  On a loaded machine the CPU time of
    this thread (both sides run on it, BLAS on one thread) is the steadier figure.
    """
    ta, tb, ca, cb = [], [], [], []
    start = time.perf_counter()
    for r in range(repeats):
        for f, wall, cpu in ((fa, ta, ca), (fb, tb, cb)):
            t0, c0 = time.perf_counter(), time.thread_time()
            f()
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - t0)
        if r >= 1 and time.perf_counter() - start > budget:
            break
    return min(ta), min(tb), min(ca), min(cb)


def speed(sizes: list[tuple[int, int]], repeats: int, budget: float, batch: bool,
          batch_max_n: int) -> None:
    from sklearn.linear_model import orthogonal_mp

    print("\n## speed: sklearn time / cscore time (>1: cscore faster), best of repeats")
    print("| M x N | k | B | rule | cscore ms | sklearn ms | ratio (wall) | ratio (CPU) |")
    print("|---|---|---|---|---|---|---|---|")
    for M, N in sizes:
        for k in (M // 16, M // 8, M // 4):
            runs = [(1, "n_nonzero"), (1, "tol")]
            if batch and N <= batch_max_n:
                runs += [(BATCH, "n_nonzero"), (BATCH, "tol")]
            for B, rule in runs:
                A, Y = _problem(M, N, k, B, seed=M + N + k)
                y = Y[:, 0] if B == 1 else Y
                pre = B > 1
                tol = 0.01 * np.sqrt(M) * 1.05  # about the noise: stops near k atoms
                if rule == "n_nonzero":
                    fc = partial(cscore.omp, A, y, n_nonzero=k, n_threads=1)
                    fs = partial(orthogonal_mp, A, y, n_nonzero_coefs=k, precompute=pre)
                else:
                    fc = partial(cscore.omp, A, y, tol=tol, n_threads=1)
                    fs = partial(orthogonal_mp, A, y, tol=tol**2, precompute=pre)
                tc, ts, cc, cs = _alternate(fc, fs, repeats, budget)
                print(f"| {M} x {N} | {k} | {B} | {rule} | {tc * 1e3:.2f} | {ts * 1e3:.2f} "
                      f"| {ts / tc:.2f}x | **{cs / cc:.2f}x** |", flush=True)


def _partial_dct(M: int, N: int, seed: int) -> Any:
    """A partial orthonormal DCT operator (rows drawn at random), M x N, unit columns
    up to the factor sqrt(M / N) (equal column norms)."""
    from scipy.fft import dct, idct
    from scipy.sparse.linalg import LinearOperator

    rows = np.sort(np.random.default_rng(seed).choice(N, M, replace=False))

    def mv(x: np.ndarray) -> np.ndarray:
        return dct(np.ravel(x), norm="ortho")[rows]

    def rmv(r: np.ndarray) -> np.ndarray:
        full = np.zeros(N)
        full[rows] = np.ravel(r)
        return idct(full, norm="ortho")

    return LinearOperator((M, N), matvec=mv, rmatvec=rmv, dtype=np.float64)


def _operator_problem(M: int, N: int, k: int, seed: int) -> tuple[Any, np.ndarray, float]:
    op = _partial_dct(M, N, seed)
    rng = np.random.default_rng(seed + 1)
    x = np.zeros(N)
    x[rng.choice(N, k, replace=False)] = rng.standard_normal(k) + np.sign(rng.standard_normal(k))
    sigma = 1e-3
    y = op.matvec(x) + sigma * rng.standard_normal(M)
    return op, y, sigma * np.sqrt(M) * 1.05


def tol_cost(sizes: list[tuple[int, int]], repeats: int, budget: float) -> None:
    print("\n## tol: time of a tol-stopped decode / the n_nonzero decode at its atom count")
    print("| case | atoms found | tol ms | n_nonzero ms | ratio (wall) | ratio (CPU) |")
    print("|---|---|---|---|---|---|")
    cases: list[tuple[str, Callable[[Any], Any], Callable[[int], Any]]] = []
    for M, N in sizes:
        k = M // 8
        for B in (1, BATCH):
            A, Y = _problem(M, N, k, B, seed=7 + M)
            y = Y[:, 0] if B == 1 else Y
            tol = 0.01 * np.sqrt(M) * 1.05
            cases.append((f"omp {M}x{N} B={B}",
                          lambda _r, A=A, y=y, tol=tol: cscore.omp(A, y, tol=tol, n_threads=1,
                                                                   return_result=True),
                          lambda n, A=A, y=y: cscore.omp(A, y, n_nonzero=n, n_threads=1)))
        rng = np.random.default_rng(3)
        S = np.zeros((N, 4))
        S[rng.choice(N, k, replace=False)] = rng.standard_normal((k, 4))
        Ys = A @ S + 0.01 * rng.standard_normal((M, 4))
        tol_s = 4 * 0.01 * np.sqrt(M) * 1.05
        cases.append((f"somp {M}x{N} L=4",
                      lambda _r, A=A, Ys=Ys, tol=tol_s: cscore.somp(A, Ys, tol=tol, n_threads=1,
                                                                    return_result=True),
                      lambda n, A=A, Ys=Ys: cscore.somp(A, Ys, n_nonzero=n, n_threads=1)))
    op, yo, tolo = _operator_problem(8192, 1 << 16, 30, seed=5)
    cases.append(("operator partial DCT 8192 x 65536",
                  lambda _r: cscore.omp(op, yo, tol=tolo, return_result=True),
                  lambda n: cscore.omp(op, yo, n_nonzero=n)))
    for name, f_tol, f_k in cases:
        res = f_tol(None)
        n = int(np.max(res.n_iter))
        if n < 1:
            continue
        tt, tk, ct, ck = _alternate(partial(f_tol, None), partial(f_k, n), repeats, budget)
        print(f"| {name} | {n} | {tt * 1e3:.2f} | {tk * 1e3:.2f} | {tt / tk:.2f} "
              f"| **{ct / ck:.2f}** |", flush=True)


_CHILD = r"""
import json, sys, numpy as np
sys.path.insert(0, {bench!r})
import bench_scaling_omp as b, cscore

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])  # kB

kind, M, N, k, B, rule, n = {args!r}
if kind == "dense":
    A, Y = b._problem(M, N, k, B, seed=11)
    y = Y[:, 0] if B == 1 else Y
    tol = 0.01 * np.sqrt(M) * 1.05
    cscore.omp(A[:8, :16].copy(), y[:8], n_nonzero=1)  # load the core
    dec = ((lambda: cscore.omp(A, y, tol=tol, n_threads=1, return_result=True)) if rule == "tol"
           else (lambda: cscore.omp(A, y, n_nonzero=n, n_threads=1, return_result=True)))
else:
    op, y, tol = b._operator_problem(M, N, k, seed=5)
    cscore.omp(op, y, n_nonzero=1)
    dec = ((lambda: cscore.omp(op, y, tol=tol, return_result=True)) if rule == "tol"
           else (lambda: cscore.omp(op, y, n_nonzero=n, return_result=True)))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak resident size (VmHWM) to the current one
before = status("VmRSS:")
r = dec()
peak = status("VmHWM:")
print(json.dumps({{"mib": (peak - before) / 1024, "n": int(np.max(r.n_iter))}}))
"""


def _peak(kind: str, M: int, N: int, k: int, B: int, rule: str, n: int = 0) -> dict[str, Any]:
    """Peak RSS (MiB) a decode adds above the resident size before it (its inputs and
    the loaded modules), in a fresh process (Linux: the peak is reset through
    /proc/self/clear_refs)."""
    code = _CHILD.format(bench=os.path.dirname(os.path.abspath(__file__)),
                         args=(kind, M, N, k, B, rule, n))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": "1",
                                          "OPENBLAS_NUM_THREADS": "1"})
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def memory(sizes: list[tuple[int, int]], big: bool) -> None:
    print("\n## memory: peak RSS added by one decode (MiB), fresh process each")
    print("| case | atoms found | tol MiB | n_nonzero MiB | ratio |")
    print("|---|---|---|---|---|")
    todo = [("dense", M, N, M // 8, B) for M, N in sizes for B in (1, BATCH)]
    todo.append(("operator", 8192, 1 << 16, 30, 1))
    for kind, M, N, k, B in todo:
        t = _peak(kind, M, N, k, B, "tol")
        nz = _peak(kind, M, N, k, B, "n_nonzero", max(t["n"], 1))
        ratio = t["mib"] / nz["mib"] if nz["mib"] > 0 else float("nan")
        print(f"| {kind} {M}x{N} B={B} | {t['n']} | {t['mib']:.1f} | {nz['mib']:.1f} "
              f"| {ratio:.2f} |", flush=True)
    if big:
        t = _peak("operator", 1 << 15, 1 << 20, 30, 1, "tol")
        print(f"| operator {1 << 15}x{1 << 20} B=1 (tol only) | {t['n']} | {t['mib']:.1f} | | |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=GRID, help="comma-separated MxN (default the grid)")
    p.add_argument("--parts", default="speed,tol,memory")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--budget", type=float, default=20.0,
                   help="seconds per point after which fewer repeats are run (at least 2)")
    p.add_argument("--no-batch", action="store_true", help="speed: one vector only")
    p.add_argument("--batch-max-n", type=int, default=4096,
                   help="speed: batches only for N up to this (sklearn's Gram is N^2)")
    p.add_argument("--big", action="store_true", help="memory: also the N = 2^20 operator")
    a = p.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in a.sizes.split(",")]
    from threadpoolctl import threadpool_limits

    print(f"CPU: {cpu_model()}; cscore ISA: {cscore.instruction_set()}; one thread "
          "(cscore n_threads=1, BLAS limited to 1); times best of repeats, ms wall; "
          f"load average {os.getloadavg()[0]:.1f}; "
          f"numpy {np.__version__}")
    with threadpool_limits(1):
        parts = a.parts.split(",")
        if "speed" in parts:
            speed(sizes, a.repeats, a.budget, not a.no_batch, a.batch_max_n)  # type: ignore[arg-type]
        if "tol" in parts:
            tol_cost(sizes, a.repeats, a.budget)  # type: ignore[arg-type]
    if "memory" in parts:
        memory(sizes, a.big)  # type: ignore[arg-type]
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
