"""Complex T-MSBL: time per decode of fixed problems, to compare two builds.

Two problem sets, decoded with ``n_threads=1``:

* ``doa``: the uniform linear array of ``examples/doa.py`` (M = 16 sensors,
  N = 181 grid angles, L = 30 snapshots, two sources 4 degrees apart, 15 dB),
  ``rtol=1e-4, max_iter=1000``; B is fixed to I (L >= 10), every iteration
  eigendecomposes the 16 x 16 matrix P.
* ``learned-b``: complex Gaussian A (M = 24, N = 80), L = 4 channels, 6 active
  rows, noise 0.05: B is learned (4 x 4 Hermitian) while more than M rows are
  kept.
* ``real-tmsbl``, ``real-tsbl``: the real parts of the ``learned-b`` problems
  with T-MSBL and T-SBL (the real instantiation of the same kernel), as a check
  that the template left the real decoders' speed alone.

It prints the median and minimum seconds per decode over ``--repeat`` passes.
Run it once per build, alternating, and compare the medians, e.g.::

    for i in 1 2 3 4 5; do
      PYTHONPATH=/path/to/old/python python benchmarks/bench_sbl_complex.py
      PYTHONPATH=python python benchmarks/bench_sbl_complex.py
    done

Results: ``benchmarks/results/sbl.md`` (section "Complex T-MSBL").
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import cscore


def doa_problems(n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The (16, 181) steering matrix and ``n`` snapshot sets (16, 30)."""
    M, L, grid = 16, 30, np.arange(-90.0, 91.0)
    A = np.exp(1j * np.pi * np.outer(np.arange(M), np.sin(np.deg2rad(grid))))
    Ys = []
    for seed in range(n):
        rng = np.random.default_rng(seed)
        first = float(rng.integers(-40, 41))
        At = np.exp(1j * np.pi * np.outer(np.arange(M), np.sin(np.deg2rad([first, first + 4]))))
        S = (rng.standard_normal((2, L)) + 1j * rng.standard_normal((2, L))) / np.sqrt(2)
        sigma = 10 ** (-15 / 20)
        E = sigma * (rng.standard_normal((M, L)) + 1j * rng.standard_normal((M, L))) / np.sqrt(2)
        Ys.append(At @ S + E)
    return A, Ys


def learned_b_problems(n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """A complex Gaussian (24, 80) matrix and ``n`` (24, 4) measurement sets."""
    rng = np.random.default_rng(123)
    M, N, L, K = 24, 80, 4, 6
    A = (rng.standard_normal((M, N)) + 1j * rng.standard_normal((M, N))) / np.sqrt(2 * M)
    Ys = []
    for _ in range(n):
        S = np.zeros((N, L), complex)
        rows = rng.choice(N, K, replace=False)
        S[rows] = rng.standard_normal((K, L)) + 1j * rng.standard_normal((K, L))
        E = 0.05 * (rng.standard_normal((M, L)) + 1j * rng.standard_normal((M, L)))
        Ys.append(A @ S + E)
    return A, Ys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", type=int, default=4, help="problems per set (default 4)")
    ap.add_argument("--repeat", type=int, default=3, help="passes over each set (default 3)")
    args = ap.parse_args()
    sets = {
        "doa": (doa_problems(args.problems), dict(rtol=1e-4, max_iter=1000)),
        "learned-b": (learned_b_problems(args.problems), dict(max_iter=200)),
    }
    A, Ys = learned_b_problems(args.problems)
    real = (A.real.copy(), [Y.real.copy() for Y in Ys])
    sets["real-tmsbl"] = (real, dict(max_iter=200))
    sets["real-tsbl"] = (real, dict(max_iter=200))
    print(f"isa={cscore.instruction_set()}")
    for name, ((A, Ys), kw) in sets.items():
        times = []
        for _ in range(args.repeat):
            for Y in Ys:
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # max_iter reached
                    decode = cscore.tsbl if name == "real-tsbl" else cscore.tmsbl
                    decode(A, Y, n_threads=1, **kw)
                times.append(time.perf_counter() - t)
        print(f"{name}: median {np.median(times) * 1e3:.2f} ms, min {np.min(times) * 1e3:.2f} ms "
              f"per decode ({len(times)} decodes)")


if __name__ == "__main__":
    main()
