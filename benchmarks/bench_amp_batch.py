#!/usr/bin/env python
"""Batched AMP-BG against the machine's dgemm rate, per instruction set (issue 35).

    PYTHONPATH=python python benchmarks/bench_amp_batch.py [--batch 256] [--rounds 5] \
        [--isa avx2,avx512] [--baseline /path/to/other/python]

The BG benchmark of the AMP/LAMP papers (``cscore.bench.bg.bg_problems``: N = 500,
M = 250, A i.i.d. N(0, 1/M), Bernoulli-Gaussian rate 0.1, 40 dB), ``--batch``
single-vector problems decoded in one call on one thread.  Each AMP iteration does
two products with A (2 M N multiply-adds per vector), so a vector that ran ``t``
iterations needs ``2 M N t`` of them; the script measures, in the same process and
alternating with the decodes, the rate of SciPy's ``dgemm`` (one thread) on the
same shapes (A times N x batch), and reports

    ratio = (AMP time per vector) / (its multiply-adds / dgemm rate)

(the target of issue 35: <= 1.5), with CPU time (``time.process_time``, robust to a
busy machine) and wall time, best of ``--rounds``.  Each instruction set runs in its
own process with ``CSCORE_ISA``; with ``avx2`` also ``OPENBLAS_CORETYPE=Haswell``
(unless that is set, or ``--no-match-blas``), so that the dgemm reference, and the
BLAS that a baseline's per-problem path calls, run OpenBLAS's AVX2 kernel as on an
AVX2-only machine; the table names the kernel OpenBLAS ran.  ``--baseline`` times
the same decode with another cscore tree (its ``python`` folder, e.g. main's) in
the same way, for the speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

_CHILD = r"""
import json, sys, time
import numpy as np
from scipy.linalg.blas import dgemm
from threadpoolctl import threadpool_info, threadpool_limits
import cscore
from cscore.bench.bg import bg_problems

batch, rounds = int(sys.argv[1]), int(sys.argv[2])
P = bg_problems(batch, seed=0)
A, X, Y = P.A, P.X, P.Y
M, N = A.shape
with threadpool_limits(1):
    Af = np.asfortranarray(A)
    Xf = np.asfortranarray(np.random.default_rng(1).standard_normal((N, batch)))
    res = cscore.amp(A, Y, n_threads=1, return_result=True)
    macs = float(np.sum(2.0 * M * N * np.asarray(res.n_iter, dtype=float)))
    best = {"dgemm_cpu": 1e9, "dgemm_wall": 1e9, "amp_cpu": 1e9, "amp_wall": 1e9}
    for _ in range(rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(10):
            dgemm(1.0, Af, Xf)
        best["dgemm_cpu"] = min(best["dgemm_cpu"], (time.process_time() - c0) / 10)
        best["dgemm_wall"] = min(best["dgemm_wall"], (time.perf_counter() - w0) / 10)
        c0, w0 = time.process_time(), time.perf_counter()
        out = cscore.amp(A, Y, n_threads=1)
        best["amp_cpu"] = min(best["amp_cpu"], time.process_time() - c0)
        best["amp_wall"] = min(best["amp_wall"], time.perf_counter() - w0)
nmse = 10 * np.log10(np.sum((np.asarray(out) - X) ** 2) / np.sum(X ** 2))
# the kernel OpenBLAS chose (OPENBLAS_CORETYPE forces one): SciPy's, which dgemm and
# cscore's BLAS calls use, first
blas = sorted({f"{i.get('architecture')}" for i in threadpool_info()
               if i.get("internal_api") == "openblas" and "scipy.libs" in i.get("filepath", "")})
print(json.dumps({"isa": cscore.instruction_set(), "blas": "/".join(blas) or "?", "macs": macs,
                  "M": M, "N": N, "iters": float(np.mean(res.n_iter)), "nmse": float(nmse),
                  **best}))
"""


#: OpenBLAS's kernel for the same instruction set as cscore's, so that the dgemm
#: rate AMP is compared with is the one an AVX2-only machine would measure.
_CORETYPE = {"avx2": "Haswell"}


def _run(isa: str | None, pythonpath: str, batch: int, rounds: int, match: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=pythonpath, OMP_NUM_THREADS="1")
    if isa:
        env["CSCORE_ISA"] = isa
        if match and isa in _CORETYPE and "OPENBLAS_CORETYPE" not in os.environ:
            env["OPENBLAS_CORETYPE"] = _CORETYPE[isa]
    r = subprocess.run([sys.executable, "-c", _CHILD, str(batch), str(rounds)], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256, help="vectors per call (default 256)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds, best kept")
    ap.add_argument("--isa", default="avx2,avx512", help="instruction sets (CSCORE_ISA)")
    ap.add_argument("--baseline", default=None,
                    help="another cscore 'python' folder to time the same way")
    ap.add_argument("--no-match-blas", action="store_true",
                    help="leave OpenBLAS on its own kernel choice (by default --isa avx2 "
                         "runs with OPENBLAS_CORETYPE=Haswell unless that is set)")
    args = ap.parse_args()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
    sys.path.insert(0, here)
    from cscore.bench import cpu_model
    print(f"CPU {cpu_model()}, {os.cpu_count()} logical CPUs, one thread per decode, "
          f"load average {os.getloadavg()[0]:.1f} at the start; batch {args.batch}, "
          f"best of {args.rounds} alternating rounds")
    rows = []
    for isa in [s.strip() for s in args.isa.split(",") if s.strip()]:
        rows.append(("this tree", _run(isa, here, args.batch, args.rounds, not args.no_match_blas)))
        if args.baseline:
            rows.append(("baseline", _run(isa, args.baseline, args.batch, args.rounds,
                                             not args.no_match_blas)))
    print("| tree | ISA | OpenBLAS kernel | iterations | NMSE dB | dgemm GMAC/s (CPU) "
          "| AMP us/vector CPU (wall) | ratio CPU | ratio wall |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        per = r["macs"] / args.batch
        rate_c = r["M"] * r["N"] * args.batch / r["dgemm_cpu"]
        rate_w = r["M"] * r["N"] * args.batch / r["dgemm_wall"]
        ratio_c = (r["amp_cpu"] / args.batch) / (per / rate_c)
        ratio_w = (r["amp_wall"] / args.batch) / (per / rate_w)
        print(f"| {name} | {r['isa']} | {r['blas']} | {r['iters']:.1f} | {r['nmse']:.2f} "
              f"| {rate_c / 1e9:.1f} | "
              f"{1e6 * r['amp_cpu'] / args.batch:.0f} ({1e6 * r['amp_wall'] / args.batch:.0f}) "
              f"| {ratio_c:.2f} | {ratio_w:.2f} |")
    print(f"load average {os.getloadavg()[0]:.1f} at the end, {time.strftime('%Y-%m-%d %H:%M')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
