"""Speed of the compiled LSTM-CS decoder (Algorithm 2).

A 512-cell model with random weights (the paper's MNIST setting: N = 144,
M = 72, L = 4), decoding k = 20 atoms per channel.  Reported in one run:

* time per problem, 1 and 2 threads, on a batch and one problem at a time,
  next to ``cscore.somp`` at the same k when that decoder is present;
* the decode's FLOP rate (LSTM GEMM flops only) against a float32 matrix
  product of the same shape (numpy/OpenBLAS sgemm, one thread): the machine's
  practical limit;
* ablations: problems per LSTM batch (chunk) and OpenBLAS threading inside the
  decoder (limited to one thread, the default, or left free).

Timings are the best of ``--repeats`` runs (wall clock), plus the process CPU
time of that best run, because the machine may be shared.

``--latency`` measures only one problem per call (a stream's frames), in one
run: the public ``decode`` (the few-problems path, float32 weights and the
``weights_dtype="float16"`` option) next to the batch kernel given the same
single problem (the compiled call without the panel layout: what one problem
per call ran on before the few-problems path), with a check that both give the
same bits.  Run it once per instruction set (``CSCORE_ISA=generic|avx2|avx512``).

Usage::

    PYTHONPATH=python python benchmarks/bench_lstm_speed.py [--batch 256] [--repeats 5]
    PYTHONPATH=python python benchmarks/bench_lstm_speed.py --latency [--single 16]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable

import numpy as np

import cscore
import cscore._blas as blas_mod
from cscore.bench.report import cpu_model
from cscore.decoders.learned import LSTMCS, LSTMCSWeights
from cscore.problem import ProblemSpec

#: The authors' MATLAB decoder under GNU Octave, per problem (quoted in the task
#: brief, measured on this machine by the lead; not re-measured here).
MATLAB_MS_PER_PROBLEM = 52.0


def random_model(rng: np.random.Generator, M: int, N: int, L: int, H: int) -> LSTMCS:
    """A paper-cell LSTM-CS model with Glorot-scaled random weights."""
    G = 3

    def f32(scale: float, shape: tuple[int, ...]) -> np.ndarray:
        return rng.normal(scale=scale, size=shape).astype(np.float32)

    w = LSTMCSWeights(
        W=f32(1 / np.sqrt(M), (G * H, M)),
        R=f32(1 / np.sqrt(H), (G * H, H)),
        b=f32(0.1, (G * H,)),
        U=f32(2 / np.sqrt(H), (N, H)),
        c_out=f32(0.1, (N,)),
    )
    A = rng.normal(size=(M, N))
    A /= np.linalg.norm(A, axis=0)
    return LSTMCS(w, A, ProblemSpec(M=M, N=N, L=L, dataset="random"))


def problems(rng: np.random.Generator, A: np.ndarray, B: int, L: int, k: int) -> np.ndarray:
    """B problems Y (B, M, L), each channel k-sparse with its own support, 46 dB noise."""
    M, N = A.shape
    S = np.zeros((B, N, L))
    for b in range(B):
        for j in range(L):
            S[b, rng.choice(N, k, replace=False), j] = rng.normal(size=k)
    return np.einsum("mn,bnl->bml", A, S) + 0.005 * rng.normal(size=(B, M, L))


def best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of that run)."""
    best = (np.inf, np.inf)
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        t, c = time.perf_counter() - t0, time.process_time() - c0
        if t < best[0]:
            best = (t, c)
    return best




def lstm_flops(model: LSTMCS, n_iter: np.ndarray) -> float:
    """GEMM flops of the LSTM over the iterations run (R v skipped at channel 0)."""
    G, H, M, N, L = model.weights.n_gates, model.n_cells, model.M, model.N, model.L
    per_iter = (2 * G * H * M + 2 * N * H) + (L - 1) * (2 * G * H * (M + H) + 2 * N * H)
    return float(per_iter * np.sum(n_iter))


def sgemm_rate(m: int, k: int, n: int, repeats: int) -> tuple[float, float]:
    """GFLOP/s (by wall time, by CPU time) of a float32 (m, k) @ (k, n) product
    with one BLAS thread."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(1)
    a = rng.normal(size=(m, k)).astype(np.float32)
    b = rng.normal(size=(k, n)).astype(np.float32)
    reps = max(1, int(2e9 / (2 * m * k * n)))
    with threadpool_limits(1, user_api="blas"):

        def run() -> None:
            for _ in range(reps):
                a @ b

        t, c = best_of(run, repeats)
    fl = 2 * m * k * n * reps
    return fl / t / 1e9, fl / c / 1e9


def latency(model: LSTMCS, Y: np.ndarray, k: int, repeats: int) -> None:
    """One problem per call: ms per call of the public decode (float32 and
    float16 weights) and of the batch kernel on the same problems (same bits
    as the float32 decode, checked)."""
    from cscore import _core

    prep = model._prep(np.float32)
    fn = getattr(_core, f"_{model._kernel}_decode_f32")
    singles = [np.ascontiguousarray(Y[b : b + 1]) for b in range(Y.shape[0])]

    def batch_kernel(y: np.ndarray) -> tuple[Any, ...]:
        args = (model._At, model._norms, y, k, -1.0, True, True, 1, 64)
        return tuple(fn(*prep.args(), *args))

    for y in singles:  # the few-problems path gives the batch kernel's bits
        fast = model.decode(y, n_nonzero=k, n_threads=1, return_result=True)
        assert np.array_equal(fast.x, batch_kernel(y)[0]), "paths differ"
    runs: dict[str, Callable[[], Any]] = {
        "decode, one problem per call (few-problems path)": lambda: [
            model.decode(y, n_nonzero=k, n_threads=1) for y in singles
        ],
        'decode, one problem per call, weights_dtype="float16"': lambda: [
            model.decode(y, n_nonzero=k, n_threads=1, weights_dtype="float16")
            for y in singles
        ],
        "batch kernel, one problem per call (before)": lambda: [
            batch_kernel(y) for y in singles
        ],
    }
    for fn_ in runs.values():  # warm-up (prepared layouts, caches)
        fn_()
    print("| one problem per call | ms/call (wall) | CPU ms/call |")
    print("|---|---:|---:|")
    res: dict[str, float] = {}
    for name, fn_ in runs.items():
        t, c = best_of(fn_, repeats)
        res[name] = 1e3 * t / len(singles)
        print(f"| {name} | {res[name]:.2f} | {1e3 * c / len(singles):.2f} |")
    names = list(runs)
    print(
        f"speed-up over the batch kernel: {res[names[2]] / res[names[0]]:.1f}x (float32), "
        f"{res[names[2]] / res[names[1]]:.1f}x (float16); target <= 3 ms, stretch 1.5 ms"
    )
    print(f"load average after the run: {os.getloadavg()[0]:.2f}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=256, help="problems per batch")
    p.add_argument("--single", type=int, default=16, help="problems decoded one at a time")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--cells", type=int, default=512)
    p.add_argument(
        "--no-ablations",
        action="store_true",
        help="only the batch decode on 1 thread and the sgemm reference (short run)",
    )
    p.add_argument(
        "--latency",
        action="store_true",
        help="only one problem per call (--single problems): few-problems path vs batch kernel",
    )
    args = p.parse_args(argv)
    load_before = os.getloadavg()

    M, N, L, H, k = 72, 144, 4, args.cells, args.k
    rng = np.random.default_rng(20161122)
    model = random_model(rng, M, N, L, H)
    Y = problems(rng, model.A, args.single if args.latency else args.batch, L, k)
    B = Y.shape[0]
    what = "one problem per call" if args.latency else f"batch {B}"
    print(f"# LSTM-CS decode speed: {H} cells, M={M}, N={N}, L={L}, k={k}, {what}")
    print(
        f"# {cpu_model()}, {os.cpu_count()} CPUs, instruction set "
        f"{cscore.instruction_set()}, decode threads 1 (and 2 where stated), "
        f"best of {args.repeats} (wall), CPU time of the best run in brackets"
    )
    idle = load_before[0] < 0.5
    print(
        f"# load average before the run: {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f} ({'idle' if idle else 'NOT idle: machine shared'})"
    )
    if args.latency:
        return latency(model, Y, k, args.repeats)

    res = model.decode(Y, n_nonzero=k, return_result=True, n_threads=1)
    flops = lstm_flops(model, res.n_iter)
    print(f"LSTM GEMM work: {flops / B / 1e6:.1f} MFLOP per problem")

    rows: list[tuple[str, float, float, float]] = []  # name, ms/problem, cpu ms, GFLOP/s

    def record(name: str, fn: Callable[[], Any], n_prob: int, fl: float | None) -> float:
        t, c = best_of(fn, args.repeats)
        rate = fl / t / 1e9 if fl else float("nan")
        rows.append((name, 1e3 * t / n_prob, 1e3 * c / n_prob, rate))
        cpu_ms[name] = 1e3 * c / n_prob
        return 1e3 * t / n_prob

    cpu_ms: dict[str, float] = {}

    lstm_1 = record(
        "lstm-cs batch, 1 thread", lambda: model.decode(Y, n_nonzero=k, n_threads=1), B, flops
    )
    if args.no_ablations:
        return report_short(args, model, B, rows, cpu_ms, flops, lstm_1)
    lstm_2 = record(
        "lstm-cs batch, 2 threads", lambda: model.decode(Y, n_nonzero=k, n_threads=2), B, flops
    )
    ns = min(args.single, B)
    fl_single = flops * ns / B

    def one_by_one() -> None:
        for b in range(ns):
            model.decode(Y[b], n_nonzero=k, n_threads=1)

    record("lstm-cs one problem per call", one_by_one, ns, fl_single)

    for chunk in (32, 128):
        record(
            f"  ablation: chunk {chunk} (default 64), 1 thread",
            lambda c=chunk: model._with_kernel_options(chunk=c).decode(Y, n_nonzero=k, n_threads=1),
            B,
            flops,
        )
    blas_mod.LIMIT_BLAS_THREADS = False
    try:
        record(
            "  ablation: OpenBLAS threads free, 1 cscore thread",
            lambda: model.decode(Y, n_nonzero=k, n_threads=1),
            B,
            flops,
        )
        record(
            "  ablation: OpenBLAS threads free, 2 cscore threads",
            lambda: model.decode(Y, n_nonzero=k, n_threads=2),
            B,
            flops,
        )
    finally:
        blas_mod.LIMIT_BLAS_THREADS = True

    somp_1 = None
    if hasattr(cscore, "somp"):
        Ys = Y
        for th in (1, 2):
            try:
                t = record(
                    f"cscore.somp, {th} thread(s)",
                    lambda th=th: cscore.somp(model.A, Ys, n_nonzero=k, n_threads=th),
                    B,
                    None,
                )
            except TypeError as exc:  # pragma: no cover - API drift
                print(f"cscore.somp could not be called: {exc}")
                break
            if th == 1:
                somp_1 = t
    else:
        print("cscore.somp is missing on this branch (the lead re-runs after the merge)")

    G = model.weights.n_gates
    peak_big, peak_big_cpu = sgemm_rate(G * H, M + H, 1024, args.repeats)
    peak_chunk, peak_chunk_cpu = sgemm_rate(G * H, M + H, 64, args.repeats)

    print()
    print(
        f"| {'decoder':52s} | ms/problem | CPU ms/problem | LSTM GFLOP/s | "
        "LSTM GFLOP/s (CPU time) |"
    )
    print(f"|{'-' * 54}|-----------:|---------------:|-------------:|------------------------:|")
    for name, ms, cpu, rate in rows:
        ok = np.isfinite(rate)
        r = f"{rate:12.1f}" if ok else f"{'':12s}"
        rc = f"{rate * ms / cpu:23.1f}" if ok else f"{'':23s}"
        print(f"| {name:52s} | {ms:10.2f} | {cpu:14.2f} | {r} | {rc} |")
    print()
    shape = f"sgemm ({G * H} x {M + H}) @ ({M + H} x"
    print(f"{shape} 1024), 1 thread: {peak_big:.1f} GFLOP/s ({peak_big_cpu:.1f} by CPU time)")
    print(f"{shape} 64), 1 thread:   {peak_chunk:.1f} GFLOP/s ({peak_chunk_cpu:.1f} by CPU time)")
    rate_1 = flops / (lstm_1 * 1e-3 * B) / 1e9
    rate_1_cpu = flops / (cpu_ms["lstm-cs batch, 1 thread"] * 1e-3 * B) / 1e9
    print(
        f"decode (1 thread) / big sgemm: {rate_1 / peak_big:.2f} by wall time, "
        f"{rate_1_cpu / peak_big_cpu:.2f} by CPU time (target >= 0.6)"
    )
    print(
        f"decode (1 thread) / chunk-shape sgemm: {rate_1 / peak_chunk:.2f} by wall time, "
        f"{rate_1_cpu / peak_chunk_cpu:.2f} by CPU time"
    )
    print(
        f"decode 1 thread: {lstm_1:.2f} ms/problem "
        f"({cpu_ms['lstm-cs batch, 1 thread']:.2f} CPU ms); target <= 3 CPU ms; "
        f"MATLAB/Octave {MATLAB_MS_PER_PROBLEM:.0f} ms (quoted) -> "
        f"{MATLAB_MS_PER_PROBLEM / lstm_1:.1f}x faster"
    )
    print(f"2 threads speed-up: {lstm_1 / lstm_2:.2f}x")
    if somp_1 is not None:
        print(f"lstm-cs / somp time ratio (1 thread): {lstm_1 / somp_1:.1f}")


def report_short(
    args: argparse.Namespace,
    model: LSTMCS,
    B: int,
    rows: list[tuple[str, float, float, float]],
    cpu_ms: dict[str, float],
    flops: float,
    lstm_1: float,
) -> None:
    """The short report of ``--no-ablations``: batch decode (1 thread) against
    sgemm of the gate product's shape (chunk 64 and 1024 columns), one thread."""
    G, H, M = model.weights.n_gates, model.n_cells, model.M
    peak_big_cpu = sgemm_rate(G * H, M + H, 1024, args.repeats)[1]
    peak_chunk_cpu = sgemm_rate(G * H, M + H, 64, args.repeats)[1]
    cpu = cpu_ms["lstm-cs batch, 1 thread"]
    rate_cpu = flops / (cpu * 1e-3 * B) / 1e9
    print(
        "| ISA | ms/problem | CPU ms/problem | decode GFLOP/s (CPU) | "
        "sgemm x64 GFLOP/s (CPU) | sgemm x1024 GFLOP/s (CPU) | ratio x64 | ratio x1024 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {cscore.instruction_set()} | {lstm_1:.2f} | {cpu:.2f} | {rate_cpu:.1f} | "
        f"{peak_chunk_cpu:.1f} | {peak_big_cpu:.1f} | {rate_cpu / peak_chunk_cpu:.2f} | "
        f"{rate_cpu / peak_big_cpu:.2f} |"
    )
    print(f"load average after the run: {os.getloadavg()[0]:.2f} ({len(rows)} decode rows)")


if __name__ == "__main__":
    main()
