"""OMP/SOMP at fixed points, this tree against another build, alternately (issue #35).

Each point runs in a fresh process (``PYTHONPATH`` set to the tree measured), one
thread, and reports the best of 5 CPU times; the two trees alternate point by point
for ``--rounds`` rounds, so that both see the same machine state.  The points are
those of ``benchmarks/results/omp_speed.md`` section 8.2: one vector (512 x 2048,
k = 1 and 64; 1024 x 4096, k = 128; 2048 x 16384, k = 128), a batch of 64 at
1024 x 4096 (``n_nonzero`` and ``tol``), and the paper's point (OMP, 20,000
vectors; SOMP, 5,000 problems with L = 4; microseconds per problem).

    PYTHONPATH=python python benchmarks/bench_greedy_ab.py --baseline /path/to/old/python
    PYTHONPATH=python python benchmarks/bench_greedy_ab.py --points one512k64,paper_somp --rounds 3

Prints the CPU model, the instruction set the kernels chose, the load, and one line
per round and tree; ratios are baseline / this (> 1: this tree faster).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from cscore.bench import cpu_model

HERE = Path(__file__).resolve().parents[1] / "python"

#: name -> (kind, M, N, k, B, decodes per timing, unit)
POINTS: dict[str, tuple[str, int, int, int, int, int, str]] = {
    "one512k1": ("one", 512, 2048, 1, 1, 20, "ms"),
    "one512k64": ("one", 512, 2048, 64, 1, 5, "ms"),
    "one1024k128": ("one", 1024, 4096, 128, 1, 2, "ms"),
    "one2048k128": ("one", 2048, 16384, 128, 1, 1, "ms"),
    "batch1024k64": ("batch", 1024, 4096, 64, 64, 1, "ms"),
    "batch1024tol": ("batch_tol", 1024, 4096, 64, 64, 1, "ms"),
    "paper_omp": ("paper_omp", 72, 144, 20, 20000, 1, "us/problem"),
    "paper_somp": ("paper_somp", 72, 144, 20, 5000, 1, "us/problem"),
}

_CHILD = r"""
import sys, time
import numpy as np
import cscore
kind, M, N, k, B, reps = sys.argv[1], *(int(v) for v in sys.argv[2:7])
rng = np.random.default_rng(0)
A = rng.standard_normal((M, N))
A /= np.linalg.norm(A, axis=0)
L = 4 if kind == "paper_somp" else 1
S = np.zeros((B, N, L))
for b in range(B):
    S[b, rng.choice(N, k, replace=False)] = rng.standard_normal((k, L))
noise = 0.0 if kind.startswith("paper") else 0.01
Y = np.einsum("mn,bnl->bml", A, S) + noise * rng.standard_normal((B, M, L))
tol = 0.01 * np.sqrt(M) * 1.05
if kind == "one":
    y = np.ascontiguousarray(Y[0, :, 0])
    run = lambda: cscore.omp(A, y, n_nonzero=k, n_threads=1)
elif kind in ("batch", "batch_tol", "paper_omp"):
    Yb = np.ascontiguousarray(Y[:, :, 0].T)
    if kind == "batch_tol":
        run = lambda: cscore.omp(A, Yb, tol=tol, n_threads=1)
    else:
        run = lambda: cscore.omp(A, Yb, n_nonzero=k, n_threads=1)
else:
    run = lambda: cscore.somp(A, Y, n_nonzero=k, n_threads=1)
best = float("inf")
for _ in range(5):
    t = time.process_time()
    for _ in range(reps):
        run()
    best = min(best, (time.process_time() - t) / reps)
print(best * 1e6 / B if kind.startswith("paper") else best * 1e3)
"""


def _time(tree: Path, name: str) -> float:
    kind, M, N, k, B, reps, _ = POINTS[name]
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-c", _CHILD, kind, *(str(v) for v in (M, N, k, B, reps))]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, default=None,
                    help="the python/ folder of the other build (default: only this tree)")
    ap.add_argument("--tree", type=Path, default=HERE,
                    help="the python/ folder measured (default: this one)")
    ap.add_argument("--points", default=",".join(POINTS),
                    help="comma-separated: " + ", ".join(POINTS))
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    names = [p for p in args.points.split(",") if p]
    unknown = [p for p in names if p not in POINTS]
    if unknown:
        ap.error(f"unknown point(s) {unknown}; choose from {list(POINTS)}")
    probe = [sys.executable, "-c", "import cscore; print(cscore.instruction_set())"]
    isa = subprocess.run(probe, env=dict(os.environ, PYTHONPATH=str(args.tree)),
                         capture_output=True, text=True, check=True).stdout.strip()
    print(f"CPU: {cpu_model()}; ISA chosen: {isa}; one thread; load {os.getloadavg()[0]:.1f}")
    trees = [("this", args.tree)]
    if args.baseline:
        trees.insert(0, ("baseline", args.baseline))
    results: dict[str, dict[str, list[float]]] = {
        label: {n: [] for n in names} for label, _ in trees
    }
    for r in range(1, args.rounds + 1):
        for name in names:
            for label, tree in trees:
                results[label][name].append(_time(tree, name))
        for label, _ in trees:
            line = " ".join(f"{n} {results[label][n][-1]:.2f}" for n in names)
            print(f"round {r} {label}: {line}")
    if args.baseline:
        for name in names:
            ratios = [b / t for b, t in zip(results["baseline"][name], results["this"][name])]
            unit = POINTS[name][-1]
            print(f"{name} ({unit}): baseline / this {min(ratios):.2f}-{max(ratios):.2f}x")
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
