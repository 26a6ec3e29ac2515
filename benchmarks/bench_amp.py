"""AMP and VAMP on the problem of Borgerding, Schniter & Rangan (IEEE TSP 2017).

Problem: N = 500, M = 250, Bernoulli-Gaussian x (rate 0.1, N(0, 1) nonzeros),
y = A x + w at SNR 40 dB (``E||A x||^2 / E||w||^2``), two matrices:

* ``iid``: A i.i.d. N(0, 1/M);
* ``cond15``: A = U diag(s) V^T with Haar U, V and geometrically spaced singular
  values of condition number 15, scaled to ``||A||_F^2 = N``.

Decoders (all from ``cscore.decoders.amp``, defaults unless stated): AMP-BG and
VAMP-BG (prior and noise learned by EM), VAMP-BG matched (prior and noise fixed
to the truth), AMP-l1 and VAMP-l1 (soft threshold, minimax alpha; AMP-l1 also
with a fixed alpha = 1.4), and the
support oracle: the LMMSE estimate given the true support, slab variance and
noise variance (a lower bound for every decoder here).

NMSE is ``10 log10(sum_p ||x_hat_p - x_p||^2 / sum_p ||x_p||^2)`` over the
problems.  Time per problem: best of ``--repeats`` runs of the whole batch on
one thread (``n_threads=1``, BLAS pinned to one thread), divided by the number of
problems; VAMP's SVD (once per matrix) is timed separately.  The per-iteration
table runs each decoder with ``max_iter=t, rtol=0`` (the t-th iterate).  Usage::

    python benchmarks/bench_amp.py [--problems 50] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import cscore
from cscore.bench import cpu_model
from cscore.decoders.amp import VAMPSolver, amp, minimax_alpha

N, M, RATE, SNR_DB = 500, 250, 0.1, 40.0


def make_problem(
    seed: int, n_problems: int, cond: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A (M, N), X (P, N, 1), Y (P, M, 1) and the noise variance."""
    rng = np.random.default_rng(seed)
    if cond is None:
        A = rng.standard_normal((M, N)) / np.sqrt(M)
    else:
        U, _ = np.linalg.qr(rng.standard_normal((M, M)))
        V, _ = np.linalg.qr(rng.standard_normal((N, M)))
        s = cond ** (-np.arange(M) / (M - 1))
        s *= np.sqrt(N / np.sum(s**2))
        A = (U * s) @ V.T
    X = rng.standard_normal((n_problems, N, 1)) * (rng.random((n_problems, N, 1)) < RATE)
    Z = A @ X
    var = float(np.mean(Z**2) * 10 ** (-SNR_DB / 10))
    return A, X, Z + np.sqrt(var) * rng.standard_normal(Z.shape), var


def nmse_db(X_hat: np.ndarray, X: np.ndarray) -> float:
    return float(10 * np.log10(np.sum((X_hat - X) ** 2) / np.sum(X**2)))


def oracle(A: np.ndarray, X: np.ndarray, Y: np.ndarray, var: float) -> np.ndarray:
    """LMMSE on the true support with the true slab (1) and noise variances."""
    out = np.zeros_like(X)
    for p in range(X.shape[0]):
        S = np.flatnonzero(X[p, :, 0])
        As = A[:, S]
        out[p, S] = np.linalg.solve(As.T @ As + var * np.eye(S.size), As.T @ Y[p])
    return out


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out




def run_setting(name: str, cond: float | None, args: argparse.Namespace) -> list[str]:
    A, X, Y, var = make_problem(args.seed, args.problems, cond)
    P = X.shape[0]
    t_svd, solver = best_time(lambda: VAMPSolver(A), args.repeats)

    def run_amp(**kw: Any) -> Any:
        return amp(A, Y, n_threads=1, return_result=True, **kw)

    def run_vamp(**kw: Any) -> Any:
        return solver(Y, n_threads=1, return_result=True, **kw)

    matched = {"sparsity": RATE, "slab_var": 1.0, "noise_var": var}
    decoders: list[tuple[str, Callable[..., Any]]] = [
        ("AMP-BG (EM)", run_amp),
        ("VAMP-BG (EM)", run_vamp),
        ("VAMP-BG matched", lambda **kw: run_vamp(**matched, **kw)),
        ("AMP-l1 (minimax)", lambda **kw: run_amp(denoiser="l1", **kw)),
        ("AMP-l1 (alpha 1.4)", lambda **kw: run_amp(denoiser="l1", alpha=1.4, **kw)),
        ("VAMP-l1 (minimax)", lambda **kw: run_vamp(denoiser="l1", **kw)),
    ]
    for _, fn in decoders:  # warm-up: imports, the minimax rule, BLAS buffers
        fn(max_iter=2)
    cond_str = f"{np.linalg.cond(A):.1f}"
    lines = [
        f"### {name}: N={N}, M={M}, rate {RATE}, {SNR_DB:g} dB, cond(A) = {cond_str}, {P} problems",
        "",
        "| decoder | NMSE (dB) | worst problem (dB) | iterations (median / max) | stops "
        "| final damping (max) | ms per problem |",
        "|---|---|---|---|---|---|---|",
    ]
    curves: dict[str, list[float]] = {}
    for label, fn in decoders:
        t, r = best_time(fn, args.repeats)
        per = [nmse_db(r.x[p], X[p]) for p in range(P)]
        reasons, counts = np.unique(r.stop_reason, return_counts=True)
        stops = ", ".join(f"{a} {b}" for a, b in zip(reasons, counts))
        lines.append(
            f"| {label} | {nmse_db(r.x, X):.2f} | {max(per):.2f} | "
            f"{int(np.median(r.n_iter))} / {int(np.max(r.n_iter))} | {stops} | "
            f"{float(np.max(r.extra['damping'])):.3g} | {1e3 * t / P:.2f} |"
        )
        curves[label] = [nmse_db(fn(max_iter=k, rtol=0.0).x, X) for k in args.iters]
    X_or = oracle(A, X, Y, var)
    worst = max(nmse_db(X_or[p], X[p]) for p in range(P))
    lines.append(
        f"| support oracle (LMMSE) | {nmse_db(X_or, X):.2f} | {worst:.2f} | - | - | - | - |"
    )
    lines += [
        "",
        f"VAMP's SVD of A: {1e3 * t_svd:.1f} ms once per matrix (not in the per-problem "
        f"times).  AMP-l1 alpha = {minimax_alpha(M / N):.4f}.",
        "",
        "NMSE (dB) after t iterations (``max_iter=t, rtol=0``):",
        "",
        "| decoder | " + " | ".join(f"t={k}" for k in args.iters) + " |",
        "|---|" + "---|" * len(args.iters),
    ]
    for label, c in curves.items():
        lines.append(f"| {label} | " + " | ".join(f"{v:.1f}" for v in c) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2017)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = ap.parse_args()
    args.iters = [1, 2, 5, 10, 20, 50, 100]
    if args.quick:
        args.problems, args.repeats, args.iters = 4, 1, [1, 10]
    with threadpool_limits(limits=1):
        blas = sorted({f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info()})
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        lines = [
            f"cscore {cscore.__version__}; CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; "
            f"decoder threads 1, thread pools while timing: {', '.join(blas)}; "
            f"best of {args.repeats}; load average at start {load:.2f}",
            "",
        ]
        lines += run_setting("i.i.d. Gaussian A", None, args)
        lines += ["", *run_setting("condition number 15", 15.0, args)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
