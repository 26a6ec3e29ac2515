"""Numbers for benchmarks/results/reliability.md (issue 12, issue 10 Ctrl-C).

* Ctrl-C latency: each long batched call is interrupted (SIGINT) 0.3 s after it
  starts; the time from the signal to KeyboardInterrupt, and the native thread
  count afterwards.
* Damaged model files: the generated corpus of tests/test_model_files.py, the
  slowest load and the largest Python-visible peak allocation.
* Batch independence: LSTM-CS problems decoded alone vs inside a batch.

    PYTHONPATH=python python benchmarks/bench_reliability.py [--problems 2000]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

import cscore

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def _threads() -> int:
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("Threads:")).split()[1])


def ctrl_c() -> None:
    from test_reliability import _long_calls

    base = _threads()
    print("| call | signal -> KeyboardInterrupt (s) | threads left |")
    print("|---|---:|---:|")
    for name, call in _long_calls().items():
        lat = []
        for _ in range(3):
            fired: list[float] = []

            def fire(fired: list[float] = fired) -> None:
                fired.append(time.perf_counter())
                os.kill(os.getpid(), signal.SIGINT)

            t = threading.Timer(0.3, fire)
            t.start()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    call()  # type: ignore[operator]
                    time.sleep(2)
            except KeyboardInterrupt:
                lat.append(time.perf_counter() - fired[0])
            t.join()
        time.sleep(0.05)
        left = _threads() - base
        print(f"| {name} | max {max(lat):.3f} (median {np.median(lat):.3f}) | {left} |")


def corpus() -> None:
    import test_model_files as tm

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        model = tm._model()
        good = folder / "good.npz"
        model.save(good)
        cases = tm._corpus(tm._entries(good), good.read_bytes())
        worst_t, worst_m, refused = 0.0, 0, 0
        for name, content in cases.items():
            p = folder / f"{name}.npz"
            p.write_bytes(content)
            tracemalloc.start()
            t0 = time.perf_counter()
            try:
                cscore.LSTMCS.load(p)
            except tm.ModelFileError:
                refused += 1
            dt = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            worst_t, worst_m = max(worst_t, dt), max(worst_m, peak)
        print(
            f"damaged files: {len(cases)} generated, {refused} refused with "
            f"ModelFileError; slowest {worst_t * 1e3:.1f} ms, largest peak "
            f"{worst_m / 2**20:.1f} MiB"
        )


def batch_independence(n: int) -> None:
    model = cscore.pretrained("mnist-m72")
    rng = np.random.default_rng(0)
    S = np.zeros((n, model.N, model.L))
    for b in range(n):
        S[b, rng.choice(model.N, 10, replace=False)] = rng.standard_normal((10, model.L))
    Y = np.einsum("mn,bnl->bml", model.A, S) + 0.01 * rng.standard_normal((n, model.M, model.L))
    for kw in ({"tol": 0.05}, {"n_nonzero": 18}):
        full = model.decode(Y, **kw)
        diff = sum(not np.array_equal(model.decode(Y[b], **kw), full[b]) for b in range(n))
        sizes = [1, 2, 3, 7, 33, 64, 65]
        diff_sub = 0
        for s in sizes:
            for start in range(0, n - s, max(1, n // 10)):
                diff_sub += not np.array_equal(model.decode(Y[start : start + s], **kw),
                                               full[start : start + s])  # fmt: skip
        print(f"batch independence {kw}: {n} problems alone vs in the batch: {diff} differ; "
              f"sub-batches of sizes {sizes}: {diff_sub} differ")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--problems", type=int, default=2000)
    args = p.parse_args()
    ctrl_c()
    corpus()
    batch_independence(args.problems)


if __name__ == "__main__":
    main()
