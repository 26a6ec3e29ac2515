"""Decoding on a GPU (``device=``) against the compiled CPU kernels, in one run (issue #36).

Prints the machine (GPU model, torch and CUDA versions, CPU model, cores), then
for each decoder with a device implementation:

* agreement with the compiled path on one batch: share of problems with equal
  supports, NMSE of both against the truth; and whether the device's result is
  bit-identical for a sub-batch decoded alone (batch independence);
* throughput (problems or vectors per second) on the device and with the
  compiled kernel on one core and on all cores, at the target batches;
* the crossover batches: the smallest batch of the sweep at which the device
  decodes faster than one core, and than all cores (CPU time at the larger
  batches extrapolated linearly from the largest one measured);
* a variant reported separately: TF32 matmuls (``--tf32``).  (The LSTM's least
  squares with batched sums, an internal switch, was dropped in issue 38: this
  script uses the public API only.)

It writes the tables as markdown (``--out``, default
``benchmarks/results/gpu.md``).  Targets (one H100/H200-class GPU against the
16 cores of the same machine): LSTM-CS (mnist-m72, k = 20, batch 65,536)
>= 150,000 problems/s and >= 20x all cores; OMP (72 x 144, k = 20) >= 20x all
cores at 65,536 and 4,096 vectors; AMP-BG (500 x 250) >= 20x; LISTA/LAMP
>= 50x.

Usage::

    python benchmarks/bench_gpu.py                 # on the GPU machine (well under 10 min)
    python benchmarks/bench_gpu.py --quick --device cpu   # a small smoke run anywhere
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import cscore
from cscore.bench import cpu_model

ROOT = Path(__file__).resolve().parents[1]




def sync(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], torch: Any, device: str | None, repeat: int = 1) -> float:
    """Best wall time of ``repeat`` calls (after the caller's warm-up)."""
    best = float("inf")
    for _ in range(repeat):
        if device:
            sync(torch, device)
        t0 = time.perf_counter()
        fn()
        if device:
            sync(torch, device)
        best = min(best, time.perf_counter() - t0)
    return best


def sparse(rng: np.random.Generator, B: int, N: int, L: int, k: int) -> np.ndarray:
    """(B, N, L) with k random atoms per channel, Gaussian values."""
    idx = np.argsort(rng.random((B, L, N)), axis=2)[:, :, :k]
    S = np.zeros((B, L, N))
    np.put_along_axis(S, idx, rng.standard_normal((B, L, k)), axis=2)
    return np.ascontiguousarray(S.transpose(0, 2, 1))


def threaded(fn: Callable[[np.ndarray], np.ndarray], Y: np.ndarray, n: int) -> np.ndarray:
    """``fn`` over ``n`` slices of the batch in threads (for the NumPy decoders)."""
    parts = np.array_split(np.arange(Y.shape[0]), n)
    with ThreadPoolExecutor(n) as ex:
        outs = list(ex.map(lambda ix: fn(Y[ix]), parts))
    return np.concatenate(outs)


class Case:
    """One decoder: its problems, its CPU and device calls, its agreement check."""

    def __init__(self, name: str, make: Callable[[int], tuple[np.ndarray, np.ndarray]],
                 cpu: Callable[[np.ndarray, int], Any], dev: Callable[[np.ndarray, str], Any],
                 unit: str = "problems") -> None:
        self.name, self.make, self.cpu, self.dev, self.unit = name, make, cpu, dev, unit


def cases(quick: bool) -> list[Case]:
    rng = np.random.default_rng(0)
    lstm = cscore.pretrained("mnist-m72")

    def lstm_make(B: int) -> tuple[np.ndarray, np.ndarray]:
        S = sparse(rng, B, lstm.N, lstm.L, 20)
        return np.einsum("mn,bnl->bml", lstm.A, S), S

    A_omp = rng.standard_normal((72, 144))

    def omp_make(B: int) -> tuple[np.ndarray, np.ndarray]:
        S = sparse(rng, B, 144, 1, 20)[:, :, 0]  # (B, N): B vectors
        Y = S @ A_omp.T + 0.001 * rng.standard_normal((B, 72))
        return np.ascontiguousarray(Y.T), np.ascontiguousarray(S.T)  # (M, B), (N, B)

    out = [
        Case("LSTM-CS k=20 (mnist-m72)", lstm_make,
             lambda Y, t: lstm.decode(Y, n_nonzero=20, n_threads=t, return_result=True),
             lambda Y, d: lstm.decode(Y, n_nonzero=20, device=d, return_result=True)),
        Case("OMP 72x144 k=20", omp_make,
             lambda Y, t: cscore.omp(A_omp, Y, n_nonzero=20, n_threads=t, return_result=True),
             lambda Y, d: cscore.omp(A_omp, Y, n_nonzero=20, device=d, return_result=True),
             unit="vectors"),
    ]
    A_amp = rng.standard_normal((250, 500)) / np.sqrt(250)

    def amp_make(B: int) -> tuple[np.ndarray, np.ndarray]:
        S = sparse(rng, B, 500, 1, 50)  # the Bernoulli-Gaussian benchmark, rate 0.1
        Y = np.einsum("mn,bnl->bml", A_amp, S) + 0.01 * rng.standard_normal((B, 250, 1))
        return Y, S

    out.append(Case(
        "AMP-BG 500x250", amp_make,
        lambda Y, t: cscore.amp(A_amp, Y, n_threads=t, return_result=True),
        lambda Y, d: cscore.amp(A_amp, Y, device=d, return_result=True), unit="vectors"))
    for name in ("lista-bg-n500-m250", "lamp-bg-n500-m250"):
        m = cscore.pretrained(name)

        def make(B: int, m: Any = m) -> tuple[np.ndarray, np.ndarray]:
            S = sparse(rng, B, m.N, m.L, max(1, m.N // 10))
            Y = np.einsum("mn,bnl->bml", m.A, S) + 0.01 * rng.standard_normal((B, m.M, m.L))
            return Y.astype(np.float32), S

        out.append(Case(
            f"{name} (float32)", make,
            lambda Y, t, m=m: threaded(lambda y: m.decode(y), Y, t) if t > 1 else m.decode(Y),
            lambda Y, d, m=m: m.decode(Y, device=d), unit="vectors"))
    return out


def support_of(res: Any, X: np.ndarray) -> np.ndarray:
    return res.support if hasattr(res, "support") else X != 0


def agreement(case: Case, device: str, B: int) -> dict[str, Any]:
    Y, S = case.make(B)
    r0 = case.cpu(Y, os.cpu_count() or 1)
    r1 = case.dev(Y, device)
    x0 = r0.x if hasattr(r0, "x") else r0
    x1 = r1.x if hasattr(r1, "x") else r1
    s0, s1 = support_of(r0, x0), support_of(r1, x1)
    vec = case.unit == "vectors" and x0.ndim == 2  # omp: (N, B) columns
    axes = 0 if vec else tuple(range(1, x0.ndim))
    same = float(np.mean(np.all(s0 == s1, axis=axes)))
    nm = lambda x: float(np.sum((x - S) ** 2) / np.sum(S**2))  # noqa: E731
    part = case.dev(Y[:, 3:7] if vec else Y[3:7], device)
    xp = part.x if hasattr(part, "x") else part
    ident = bool(np.array_equal(xp, x1[:, 3:7] if vec else x1[3:7]))
    return {"same": same, "nmse_cpu": nm(x0), "nmse_dev": nm(x1), "batch_independent": ident}


def sweep(case: Case, device: str, torch: Any, batches: list[int], cpu_cap_s: float,
          repeat: int) -> list[dict[str, Any]]:
    rows = []
    cores = os.cpu_count() or 1
    cpu_rate = {1: None, cores: None}  # problems/s at the largest batch measured
    for B in batches:
        Y, _ = case.make(B)
        case.dev(Y[:, :64] if case.unit == "vectors" and Y.ndim == 2 else Y[:64], device)
        t_dev = timed(lambda Y=Y: case.dev(Y, device), torch, device, repeat)
        row = {"batch": B, "dev_s": t_dev}
        for t in (1, cores):
            if cpu_rate[t] is None or B * 1.0 / cpu_rate[t] < cpu_cap_s:
                t_cpu = timed(lambda Y=Y, t=t: case.cpu(Y, t), torch, None, 1)
                cpu_rate[t] = B / t_cpu
                row[f"cpu{t}_s"] = t_cpu
            else:
                row[f"cpu{t}_s"] = B / cpu_rate[t]  # extrapolated
                row[f"cpu{t}_extrapolated"] = True
        rows.append(row)
    return rows


def crossover(rows: list[dict[str, Any]], key: str) -> int | None:
    for r in rows:
        if r["dev_s"] < r[key]:
            return int(r["batch"])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--quick", action="store_true", help="small batches (a smoke run)")
    ap.add_argument("--tf32", action="store_true", help="also time with TF32 matmuls")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gpu.md")
    args = ap.parse_args()
    import torch  # the benchmark needs it (cscore decodes with torch only on request)

    dev = args.device
    t_start = time.perf_counter()
    if args.quick:
        batches, targets, agree_B, cap, repeat = [64, 256, 1024], [1024], 256, 5.0, 1
    else:
        batches, targets, agree_B, cap, repeat = ([64, 256, 1024, 4096, 16384, 65536],
                                                  [4096, 65536], 2048, 8.0, 2)
    gpu = torch.cuda.get_device_name(torch.device(dev)) if dev.startswith("cuda") else "none"
    head = [
        f"- device: {dev} ({gpu})",
        f"- torch {torch.__version__}, CUDA {torch.version.cuda}, cscore {cscore.__version__}",
        f"- CPU: {cpu_model()}, {os.cpu_count()} cores, compiled kernels' ISA "
        f"{cscore.instruction_set()}",
        f"- command: python benchmarks/bench_gpu.py {' '.join(sys.argv[1:])}",
    ]
    print("\n".join(head), flush=True)
    lines = ["# GPU decoding (`device=`) vs the compiled CPU kernels", "", *head, ""]
    summary = ["| decoder | batch | device /s | 1 core /s | all cores /s | device / all cores |",
               "|---|---|---|---|---|---|"]
    agree = ["| decoder | supports equal | NMSE compiled | NMSE device | batch-independent |",
             "|---|---|---|---|---|"]
    cross = ["| decoder | overtakes 1 core at batch | overtakes all cores at batch |",
             "|---|---|---|"]
    for case in cases(args.quick):
        a = agreement(case, dev, agree_B)
        agree.append(f"| {case.name} | {a['same']:.4f} | {a['nmse_cpu']:.4g} | "
                     f"{a['nmse_dev']:.4g} | {a['batch_independent']} |")
        print(agree[-1], flush=True)
        rows = sweep(case, dev, torch, batches, cap, repeat)
        cores = os.cpu_count() or 1
        for r in rows:
            if r["batch"] in targets or args.quick:
                rate = lambda s, B=r["batch"]: B / s  # noqa: E731
                ex = " (extrap.)" if r.get(f"cpu{cores}_extrapolated") else ""
                summary.append(
                    f"| {case.name} | {r['batch']} | {rate(r['dev_s']):,.0f} | "
                    f"{rate(r['cpu1_s']):,.0f} | {rate(r[f'cpu{cores}_s']):,.0f}{ex} | "
                    f"{r[f'cpu{cores}_s'] / r['dev_s']:.1f}x |")
                print(summary[-1], flush=True)
        cross.append(f"| {case.name} | {crossover(rows, 'cpu1_s')} | "
                     f"{crossover(rows, f'cpu{cores}_s')} |")
    # variants, reported separately
    variants = ["| variant | decoder | batch | device /s |", "|---|---|---|---|"]
    lstm_case = cases(args.quick)[0]
    B = targets[-1]
    Y, _ = lstm_case.make(B)
    if args.tf32 and dev.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            t = timed(lambda: lstm_case.dev(Y, dev), torch, dev, 1)
            a = agreement(lstm_case, dev, agree_B)
            variants.append(f"| TF32 matmuls (supports equal {a['same']:.4f}) | "
                            f"{lstm_case.name} | {B} | {B / t:,.0f} |")
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    print("\n".join(variants[2:]), flush=True)
    lines += ["## Agreement with the compiled path", "", *agree, "",
              "## Throughput at the target batches", "", *summary, "",
              "## Crossover (smallest batch of the sweep "
              f"{batches} where the device is faster)", "", *cross, "",
              "## Variants", "", *variants, "",
              f"Run time: {time.perf_counter() - t_start:.0f} s.", ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out} in {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
