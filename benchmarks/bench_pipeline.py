"""Pipeline targets of issue 10: Dask scaling, kills, memory, streaming latency.

Problems: MNIST test tuples (digits 0-3, L = 4) as in the LSTM-CS paper, blocks
12 x 12 kept to their k = 20 largest pixels, measured with the pretrained
``mnist-m72`` model's A and sigma = 0.005 fresh noise per problem; repeated
(with fresh noise) to the size asked.  Decoder: ``cscore.decoder("lstm-cs",
model="mnist-m72", tol=L * sigma * sqrt(M L), n_threads=1)`` (the tol rule).

Usage (each prints its numbers; see benchmarks/results/pipeline.md)::

    PYTHONPATH=python python benchmarks/bench_pipeline.py dask [--problems 20000]
    PYTHONPATH=python python benchmarks/bench_pipeline.py kill-worker
    PYTHONPATH=python python benchmarks/bench_pipeline.py sigkill [--kills 5]
    PYTHONPATH=python python benchmarks/bench_pipeline.py sigint
    PYTHONPATH=python python benchmarks/bench_pipeline.py memory [--gb 2]
    PYTHONPATH=python python benchmarks/bench_pipeline.py stream [--rates 100,200,400,800]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import cscore
from cscore.bench import MNIST_SPLITS, heldout_mnist
from cscore.datasets import expected_noise_tol, measure

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "mnist"
SIGMA = 0.005
K = 20


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _spin(n: int) -> float:
    s = 0
    for i in range(n):
        s += i * i
    return float(s > 0)


def spin_ratio(n: int = 20_000_000) -> float:
    """Throughput of 2 busy processes over 1: how much of 2 cores we get right now.

    A control for the scaling figures on a shared machine: 2.0 on two free cores.
    """
    import multiprocessing as mp

    t = time.perf_counter()
    _spin(n)
    t1 = time.perf_counter() - t
    with mp.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [1000, 1000])  # start-up outside the clock
        t = time.perf_counter()
        pool.map(_spin, [n, n])
        t2 = time.perf_counter() - t
    return 2 * t1 / t2


def lstm_decoder() -> cscore.Decoder:
    model = cscore.pretrained("mnist-m72")
    tol = expected_noise_tol(model.M, model.L, SIGMA)
    return cscore.decoder("lstm-cs", model="mnist-m72", tol=tol, n_threads=1)


def mnist_problems(dec: cscore.Decoder, n: int, seed: int = 2016) -> np.ndarray:
    """``n`` measurement sets Y (n, M, L) from MNIST test tuples, fresh noise each."""
    first, end = MNIST_SPLITS["test"]
    S = heldout_mnist(DATA, first_index=first, end_index=end).signals(K)
    reps = -(-n // len(S))
    S = np.concatenate([S] * reps)[:n]
    Y, _ = measure(dec.A, S, SIGMA, seed=seed)
    return np.ascontiguousarray(Y)


def _cluster(n_workers: int) -> Any:
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=50,
        env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )


def cmd_dask(args: argparse.Namespace) -> None:
    import dask.array as da
    from distributed import Client, wait

    from cscore import dask as cdask

    dec = lstm_decoder()
    Y = mnist_problems(dec, args.problems)
    print(f"{len(Y)} problems, load {load_avg()}; control: 2 busy processes vs 1: "
          f"{spin_ratio():.2f}x (2.00 on two free cores)", flush=True)
    t = time.perf_counter()
    ref = dec(Y)
    t_in = time.perf_counter() - t
    print(f"in-process dec(Y), 1 thread: {t_in:.2f} s ({len(Y) / t_in:.0f} problems/s)")
    times = {}
    for n in (1, 2):
        with _cluster(n) as cluster, Client(cluster) as client:
            client.wait_for_workers(n)
            # the measurements live on the workers before the clock starts
            Yd = da.from_array(Y, chunks=(args.block, dec.M, dec.L)).persist()
            wait(Yd)
            S = cdask.decode(dec, Yd, client=client)
            best = np.inf
            for _ in range(args.repeats):
                t = time.perf_counter()
                got = S.compute()
                best = min(best, time.perf_counter() - t)
            cpu = client.run(lambda: time.process_time())
            same = bool(np.array_equal(got, ref))
            times[n] = best
            print(f"LocalCluster {n} worker(s) x 1 thread: {best:.2f} s "
                  f"({len(Y) / best:.0f} problems/s), bit-equal to dec(Y): {same}, "
                  f"worker CPU s {sorted(round(v, 1) for v in cpu.values())}, "
                  f"load {load_avg()}", flush=True)
    print(f"speed-up 2 workers / 1 worker: {times[1] / times[2]:.2f}x; control: 2 busy "
          f"processes vs 1 right after: {spin_ratio():.2f}x (2.00 on two free cores)")


def cmd_kill_worker(args: argparse.Namespace) -> None:
    import dask.array as da
    from distributed import Client

    from cscore import dask as cdask

    dec = lstm_decoder()
    Y = mnist_problems(dec, args.problems)
    ref = dec(Y)
    with _cluster(2) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        pids = client.run(os.getpid)
        S = cdask.decode(dec, da.from_array(Y, chunks=(args.block, dec.M, dec.L)),
                         client=client)
        fut = client.compute(S)
        n_blocks = len(S.chunks[0])
        while sum(len(w) for w in client.has_what().values()) < n_blocks // 3:
            time.sleep(0.01)
        victim_addr, victim = next(iter(pids.items()))
        done_before = fut.done()
        os.kill(victim, signal.SIGKILL)
        t = time.perf_counter()
        got = fut.result(timeout=600)
        print(f"killed worker {victim_addr} (pid {victim}) with SIGKILL after ~1/3 of "
              f"{n_blocks} blocks (run finished before the kill: {done_before}); the run "
              f"completed {time.perf_counter() - t:.1f} s later; bit-equal to dec(Y): "
              f"{bool(np.array_equal(got, ref))}")


def _run_cli(cfg: Path, inp: Path, out: Path, chunk: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, "-m", "cscore", "decode", "--config", str(cfg), "--input", str(inp),
         "--output", str(out), "--chunk", str(chunk), "--no-progress"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def cmd_sigkill(args: argparse.Namespace) -> None:
    import zarr

    dec = lstm_decoder()
    Y = mnist_problems(dec, args.problems)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="cscore-bench-") as tmp:
        d = Path(tmp)
        np.save(d / "Y.npy", Y)
        cfg = dec.save(d / "dec.json")
        t = time.perf_counter()
        p = _run_cli(cfg, d / "Y.npy", d / "ref.zarr", args.chunk)
        assert p.wait() == 0, p.stderr.read().decode()  # type: ignore[union-attr]
        t_full = time.perf_counter() - t
        ref = zarr.open_array(str(d / "ref.zarr"), mode="r")[:]
        print(f"uninterrupted run: {t_full:.1f} s, {len(Y)} problems, chunk {args.chunk}")
        out = d / "out.zarr"
        man_path = out / "cscore-manifest.json"
        n_chunks = -(-len(Y) // args.chunk)
        per_chunk = t_full / n_chunks
        for i in range(args.kills):
            # spread the kills over the run: wait for the i-th share of the chunks,
            # then kill at a random moment within the next chunk's decoding
            target = round(n_chunks * (i + 1) / (args.kills + 1))
            p = _run_cli(cfg, d / "Y.npy", out, args.chunk)
            t = time.perf_counter()
            while p.poll() is None:
                if man_path.is_file() and len(json.loads(man_path.read_text())["done"]) >= target:
                    break
                time.sleep(0.002)
            time.sleep(rng.uniform(0, per_chunk))
            delay = time.perf_counter() - t
            finished = p.poll() is not None
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            man = json.loads(man_path.read_text())
            arr = zarr.open_array(str(out), mode="r")
            bad = [c for c in man["done"]
                   if not np.array_equal(arr[c * args.chunk:(c + 1) * args.chunk],
                                         ref[c * args.chunk:(c + 1) * args.chunk])]
            partial = list(out.rglob("*.partial"))
            print(f"kill {i + 1}: SIGKILL {delay:.2f} s after start "
                  f"({'after it had finished!' if finished else 'mid-run'}); "
                  f"{len(man['done'])}/{n_chunks} chunks "
                  f"recorded, recorded chunks differing from the reference: {len(bad)}, "
                  f"leftover .partial files: {len(partial)}", flush=True)
        p = _run_cli(cfg, d / "Y.npy", out, args.chunk)
        assert p.wait() == 0, p.stderr.read().decode()  # type: ignore[union-attr]
        got = zarr.open_array(str(out), mode="r")[:]
        print(f"final run: output identical to the uninterrupted run: "
              f"{bool(np.array_equal(got, ref))}; equal to in-process dec(Y): "
              f"{bool(np.array_equal(got, dec(Y)))}")


def cmd_sigint(args: argparse.Namespace) -> None:
    """Ctrl-C on `cscore decode`: time from SIGINT to exit, and what was kept."""
    dec = lstm_decoder()
    Y = mnist_problems(dec, args.problems)
    with tempfile.TemporaryDirectory(prefix="cscore-bench-") as tmp:
        d = Path(tmp)
        np.save(d / "Y.npy", Y)
        cfg = dec.save(d / "dec.json")
        out = d / "out.zarr"
        man_path = out / "cscore-manifest.json"
        for i in range(args.times):
            p = _run_cli(cfg, d / "Y.npy", out, args.chunk)
            n0 = len(json.loads(man_path.read_text())["done"]) if man_path.is_file() else 0
            while p.poll() is None:
                if man_path.is_file() and len(json.loads(man_path.read_text())["done"]) > n0:
                    break
                time.sleep(0.002)
            time.sleep(random.uniform(0.0, 0.5))
            t = time.perf_counter()
            p.send_signal(signal.SIGINT)
            _, err = p.communicate()
            dt = time.perf_counter() - t
            done = len(json.loads(man_path.read_text())["done"])
            print(f"SIGINT {i + 1}: exit {p.returncode} after {dt * 1e3:.0f} ms; "
                  f"{done} chunks recorded; says: {err.decode().strip()[-90:]!r}; "
                  f"load {load_avg()}", flush=True)


def cmd_memory(args: argparse.Namespace) -> None:
    """Decode a ``--gb`` GB .npy in a child process and report its peak RSS."""
    dec = cscore.decoder("somp", cscore.pretrained("mnist-m72").A, n_nonzero=2, n_threads=1)
    per = dec.M * 4 * 8
    B = int(args.gb * 2**30) // per
    with tempfile.TemporaryDirectory(prefix="cscore-bench-", dir=args.tmp) as tmp:
        d = Path(tmp)
        path = d / "Y.npy"
        mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(B, dec.M, 4))
        step = 50_000
        rng = np.random.default_rng(0)
        for i in range(0, B, step):
            mm[i:i + step] = rng.standard_normal((min(step, B - i), dec.M, 4))
        mm.flush()
        del mm
        size = path.stat().st_size
        cfg = dec.save(d / "dec.json")
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), OMP_NUM_THREADS="1")
        t = time.perf_counter()
        # The child reports its own peak (VmHWM starts afresh at exec; ru_maxrss of
        # children would carry this parent's peak over the fork).
        code = ("import sys; from cscore.cli import main; r = main(sys.argv[1:]); "
                "s = open('/proc/self/status').read(); "
                "print('HWM', int(s.split('VmHWM:')[1].split()[0]), file=sys.stderr); "
                "sys.exit(r)")
        p = subprocess.run(
            [sys.executable, "-c", code, "decode", "--config", str(cfg), "--input",
             str(path), "--output", str(d / "S.zarr"), "--no-progress"],
            env=env, capture_output=True, text=True,
        )
        wall = time.perf_counter() - t
        rss_mb = int(p.stderr.split("HWM ")[-1].split()[0]) / 1024 if "HWM " in p.stderr else -1
        print(f"input {size / 1e9:.2f} GB ({B} problems M=72 L=4 float64), somp n_nonzero=2; "
              f"exit {p.returncode}; {wall:.0f} s; peak RSS of `cscore decode` "
              f"{rss_mb:.0f} MB; load {load_avg()}")
        if p.returncode:
            print(p.stderr[-2000:])


def cmd_stream(args: argparse.Namespace) -> None:
    dec = lstm_decoder()
    Y = mnist_problems(dec, 3200)
    dec(Y[:64])  # warm-up
    print(f"batch={args.batch}, max_latency={args.max_latency * 1e3:.0f} ms, "
          f"workers={args.workers} (decoder n_threads=1), "
          f"{args.seconds:.0f} s per rate; load {load_avg()}")
    print("| offered frames/s | frames | p50 ms | p99 ms | max ms | lost/reordered |")
    print("|---:|---:|---:|---:|---:|---|")
    rows = []
    for rate in [float(r) for r in args.rates.split(",")]:
        n = int(rate * args.seconds)
        emitted = np.zeros(n)

        def source(n: int = n, rate: float = rate, emitted: np.ndarray = emitted) -> Any:
            t0 = time.perf_counter()
            for i in range(n):
                due = t0 + i / rate
                now = time.perf_counter()
                if due > now:
                    time.sleep(due - now)
                emitted[i] = time.perf_counter()
                yield Y[i % len(Y)]

        lat = np.zeros(n)
        got = []
        for i, r in enumerate(cscore.stream(dec, source(), batch=args.batch,
                                            max_latency=args.max_latency,
                                            workers=args.workers)):
            lat[i] = time.perf_counter() - emitted[i]
            got.append(r)
        # order check: each result against its own frame decoded alone (float32 LSTM
        # GEMMs over other batch sizes may round differently, so compare with a tolerance)
        idx = range(0, n, 7)
        match = np.mean([np.allclose(got[i], dec(Y[i % len(Y)][None])[0], atol=1e-5)
                         for i in idx]) if len(got) == n else 0.0
        ok = len(got) == n and match > 0.95
        p50, p99, mx = (float(np.percentile(lat, 50) * 1e3), float(np.percentile(lat, 99) * 1e3),
                        float(lat.max() * 1e3))
        rows.append((rate, n, p50, p99, mx))
        print(f"| {rate:.0f} | {n} | {p50:.1f} | {p99:.1f} | {mx:.1f} | "
              f"{'none' if ok else 'MISMATCH'} ({match:.0%} match) |", flush=True)
    print(f"load after: {load_avg()}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        r = np.array(rows)
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.plot(r[:, 0], r[:, 2], "o-", label="p50")
        ax.plot(r[:, 0], r[:, 3], "s-", label="p99")
        ax.axhline(100, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.set_xticks(r[:, 0])
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(ScalarFormatter())
            axis.set_minor_formatter(NullFormatter())
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("offered frames/s")
        ax.set_ylabel("latency (ms)")
        ax.set_title("cscore.stream, LSTM-CS mnist-m72")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=90)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("dask")
    q.add_argument("--problems", type=int, default=20000)
    q.add_argument("--block", type=int, default=512, help="problems per dask block")
    q.add_argument("--repeats", type=int, default=2)
    q = sub.add_parser("kill-worker")
    q.add_argument("--problems", type=int, default=8000)
    q.add_argument("--block", type=int, default=256)
    q = sub.add_parser("sigkill")
    q.add_argument("--problems", type=int, default=6400)
    q.add_argument("--chunk", type=int, default=256)
    q.add_argument("--kills", type=int, default=5)
    q.add_argument("--seed", type=int, default=0)
    q = sub.add_parser("sigint")
    q.add_argument("--problems", type=int, default=6400)
    q.add_argument("--chunk", type=int, default=1024)
    q.add_argument("--times", type=int, default=3)
    q = sub.add_parser("memory")
    q.add_argument("--gb", type=float, default=2.0)
    q.add_argument("--tmp", default=None)
    q = sub.add_parser("stream")
    q.add_argument("--rates", default="50,100,200,400,800,1600")
    q.add_argument("--seconds", type=float, default=5.0)
    q.add_argument("--batch", type=int, default=32)
    q.add_argument("--max-latency", type=float, default=0.01)
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--plot", default=None)
    args = p.parse_args()
    {"dask": cmd_dask, "kill-worker": cmd_kill_worker, "sigkill": cmd_sigkill, "sigint": cmd_sigint,
     "memory": cmd_memory, "stream": cmd_stream}[args.cmd](args)


if __name__ == "__main__":
    main()
