"""Throughput of cscore.omp / cscore.somp against SPAMS and scikit-learn, same data, same run.

Problem (the LSTM-CS paper's MNIST-like setting): A is 72 x 144 Gaussian with unit-norm
columns; OMP decodes 20,000 vectors with k = 20 nonzeros (n_nonzero = 20); SOMP decodes
5,000 MMV problems with L = 4 channels sharing a k = 20 support (n_nonzero = 20).

Peers:
* SPAMS (``spams.omp``, ``spams.somp``), GPL: imported here only if available, never a
  dependency of cscore.  It is given the same thread count as cscore (``numThreads``).
* scikit-learn ``orthogonal_mp_gram`` (OMP only; it has no SOMP), run on a subset of
  the vectors because it is slow (a Python loop over vectors); the ratio uses
  per-vector times.

BLAS threads are pinned to 1 with threadpoolctl for every library while timing, so the
thread counts compared are the decoders' own.  Each timing is the best of ``--repeats``
runs.  Usage::

    python benchmarks/bench_greedy.py [--repeats 3] [--threads 1 2] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import cscore

try:  # GPL peer: optional, benchmark only.
    import spams  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the machine
    spams = None

try:
    from sklearn.linear_model import orthogonal_mp_gram
except ImportError:  # pragma: no cover
    orthogonal_mp_gram = None


def make_data(
    seed: int, M: int, N: int, k: int, n_problems: int, L: int
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm Gaussian A and Y = A S with a joint k-sparse S per problem.

    Returns A (M, N) and Y (n_problems, M, L).
    """
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((n_problems, N, L))
    for p in range(n_problems):
        S[p, rng.choice(N, k, replace=False)] = rng.standard_normal((k, L))
    return A, A @ S


#: Process CPU time of the fastest run of the latest best_time call (all threads).
LAST_CPU = [0.0]


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Best wall time of ``repeats`` calls, and the last result.

    The process CPU time of that fastest run is left in ``LAST_CPU[0]``: on a busy
    machine, CPU / wall shows how many cores a multi-threaded run really got.
    """
    best, out = np.inf, None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if wall < best:
            best, LAST_CPU[0] = wall, cpu
    return best, out


def support_sets(X: np.ndarray) -> list[frozenset[int]]:
    """Support of each column of a (N, P) array."""
    return [frozenset(np.flatnonzero(X[:, j]).tolist()) for j in range(X.shape[1])]


def agreement(a: list[frozenset[int]], b: list[frozenset[int]]) -> float:
    return float(np.mean([x == y for x, y in zip(a, b)]))


def scaling(name: str, times: dict[int, float]) -> str:
    """One line: throughput of each thread count relative to one thread."""
    if 1 not in times:
        return ""
    parts = [f"{t} threads {times[1] / times[t]:.2f}x" for t in sorted(times) if t != 1]
    return f"{name} throughput vs 1 thread: " + (", ".join(parts) or "n/a")


def bench_omp(args: argparse.Namespace) -> list[str]:
    M, N, k, B = 72, 144, 20, args.n_omp
    A, Y3 = make_data(1, M, N, k, B, 1)
    Y = np.ascontiguousarray(Y3[:, :, 0].T)  # (M, B)
    lines = [f"## OMP: {B} vectors, M={M}, N={N}, k={k}, n_nonzero={k}", ""]
    lines += [
        "| decoder | threads | us / vector, wall (CPU) | vs SPAMS (same threads) "
        "| support = cscore |"
    ]
    lines += ["|---|---|---|---|---|"]
    ref_supp = None
    Yf, Af = np.asfortranarray(Y), np.asfortranarray(A)
    own: dict[int, float] = {}
    for t in args.threads:
        tc, X = best_time(lambda t=t: cscore.omp(A, Y, n_nonzero=k, n_threads=t), args.repeats)
        own[t], cc = tc, LAST_CPU[0]
        supp = support_sets(X)
        ref_supp = ref_supp or supp
        row_sp = ""
        ratio = ""
        if spams is not None:
            ts, Xs = best_time(lambda t=t: spams.omp(Yf, Af, L=k, numThreads=t), args.repeats)
            Xs = Xs.toarray()
            ratio = f"{ts / tc:.2f}x faster"
            row_sp = (
                f"| SPAMS omp | {t} | {ts / B * 1e6:.2f} ({LAST_CPU[0] / B * 1e6:.2f}) | 1 | "
                f"{agreement(support_sets(Xs), supp):.1%} |"
            )
        lines.append(
            f"| cscore.omp | {t} | {tc / B * 1e6:.2f} ({cc / B * 1e6:.2f}) | {ratio} | 100% |"
        )
        if row_sp:
            lines.append(row_sp)
    if orthogonal_mp_gram is not None and ref_supp is not None:
        n_sub = min(B, args.n_sklearn)
        G = A.T @ A
        Xy = A.T @ Y[:, :n_sub]
        tk, Xk = best_time(lambda: orthogonal_mp_gram(G, Xy, n_nonzero_coefs=k), 1)
        tc1, _ = best_time(lambda: cscore.omp(A, Y, n_nonzero=k, n_threads=1), 1)
        lines.append(
            f"| sklearn orthogonal_mp_gram | 1 | {tk / n_sub * 1e6:.2f} "
            f"(on {n_sub} vectors) | cscore {tk / n_sub / (tc1 / B):.0f}x faster | "
            f"{agreement(support_sets(Xk), ref_supp[:n_sub]):.1%} |"
        )
    return [*lines, "", scaling("cscore.omp", own)]


def bench_somp(args: argparse.Namespace) -> list[str]:
    M, N, k, L, B = 72, 144, 20, 4, args.n_somp
    A, Y = make_data(2, M, N, k, B, L)
    lines = [f"## SOMP: {B} problems, L={L}, M={M}, N={N}, k={k}, n_nonzero={k}", ""]
    lines += [
        "| decoder | threads | us / problem, wall (CPU) | vs SPAMS (same threads) "
        "| support = cscore |"
    ]
    lines += ["|---|---|---|---|---|"]
    Yf = np.asfortranarray(Y.transpose(1, 0, 2).reshape(M, B * L))
    Af = np.asfortranarray(A)
    groups = np.arange(0, B * L, L, dtype=np.int32)
    own: dict[int, float] = {}
    for t in args.threads:
        tc, S = best_time(lambda t=t: cscore.somp(A, Y, n_nonzero=k, n_threads=t), args.repeats)
        own[t], cc = tc, LAST_CPU[0]
        supp = [frozenset(np.flatnonzero(np.any(S[p] != 0, axis=1)).tolist()) for p in range(B)]
        ratio, row_sp = "", ""
        if spams is not None:
            ts, Ss = best_time(
                lambda t=t: spams.somp(Yf, Af, groups, L=k, numThreads=t), args.repeats
            )
            Ss = Ss.toarray()
            supp_s = [
                frozenset(np.flatnonzero(np.any(Ss[:, p * L : (p + 1) * L] != 0, axis=1)).tolist())
                for p in range(B)
            ]
            ratio = f"{ts / tc:.2f}x faster"
            row_sp = (
                f"| SPAMS somp | {t} | {ts / B * 1e6:.2f} ({LAST_CPU[0] / B * 1e6:.2f}) | 1 | "
                f"{agreement(supp_s, supp):.1%} |"
            )
        lines.append(
            f"| cscore.somp | {t} | {tc / B * 1e6:.2f} ({cc / B * 1e6:.2f}) | {ratio} | 100% |"
        )
        if row_sp:
            lines.append(row_sp)
    return [*lines, "", scaling("cscore.somp", own)]


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (a shared machine slows every timing)."""
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except (AttributeError, OSError):  # pragma: no cover - not on every platform
        return "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--n-omp", type=int, default=20000)
    ap.add_argument("--n-somp", type=int, default=5000)
    ap.add_argument("--n-sklearn", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = ap.parse_args()
    if args.quick:
        args.n_omp, args.n_somp, args.n_sklearn, args.repeats = 500, 200, 50, 1
    with threadpool_limits(limits=1):
        blas = sorted({f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info()})
        lines = [
            f"cscore {cscore.__version__} ({cscore.instruction_set()}); "
            f"SPAMS {'present' if spams else 'absent'}; "
            f"{platform.processor() or platform.machine()}; "
            f"thread pools while timing: {', '.join(blas)}; best of {args.repeats}; "
            f"load average {load_average()}",
            "",
        ]
        lines += [*bench_omp(args), "", *bench_somp(args)]
        lines += ["", f"load average at the end: {load_average()}"]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
