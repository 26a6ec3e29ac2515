"""Cost and accuracy of ``tol="auto"`` beside the oracle ``tol`` rule (issue 23).

The grid of ``cscore bench sparsity`` in benchmarks/results/bench.md: MNIST
digits the models never saw (indices 6000 on), M = 72 with the shipped
``mnist-m72`` LSTM-CS model and its A, ``--problems`` image tuples (4 problems
each) per point, sigma in {0.005, 0.01, 0.05}, k = 10..30.  LSTM-CS and SOMP run
with the oracle rule (``tol`` = the expected noise level) and with
``tol="auto"`` on the same problems, in the same process, one after the other;
each time is the best of ``--repeats`` runs of the whole batch.  Usage::

    python benchmarks/bench_auto.py --data-dir ../shared/data/mnist [--problems 100]
        [--sigma 0.005 0.01 0.05] [--k 10 15 20 25 30] [--repeats 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

import cscore
from cscore.bench import mnist_problems, run_decoder
from cscore.metrics import nmse_per_item


def timed(fn: Any, repeats: int) -> tuple[float, Any]:
    """Best wall time of ``repeats`` calls and the last result."""
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--model", default="mnist-m72")
    ap.add_argument("--problems", type=int, default=100, help="image tuples per point")
    ap.add_argument("--sigma", type=float, nargs="+", default=[0.005, 0.01, 0.05])
    ap.add_argument("--k", type=int, nargs="+", default=[10, 15, 20, 25, 30])
    ap.add_argument("--decoders", nargs="+", default=["lstm-cs", "somp"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="cscore threads (default 1)")
    args = ap.parse_args()
    cscore.set_num_threads(args.threads)
    model = cscore.pretrained(args.model)
    A = np.asarray(model.A)
    print(f"cscore {cscore.__version__}; {platform.processor() or platform.machine()}; "
          f"instruction set {cscore.instruction_set()}; threads {cscore.get_num_threads()}; "
          f"load average {os.getloadavg()[0]:.2f}; best of {args.repeats}")
    print()
    print("| decoder | sigma | k | NMSE tol | NMSE auto | auto/tol NMSE | ms/problem tol "
          "| ms/problem auto | auto/tol time |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst: dict[str, list[float]] = {d: [0.0, 0.0] for d in args.decoders}
    totals: dict[str, list[float]] = {d: [0.0, 0.0] for d in args.decoders}
    with threadpool_limits(limits=1):
        for sigma in args.sigma:
            for k in args.k:
                ps = mnist_problems(args.data_dir, A, k, sigma=sigma, n_tuples=args.problems)
                P = ps.Y.shape[0]
                for name in args.decoders:
                    mdl = model if name == "lstm-cs" else None
                    res = {}
                    for rule, tol in (("tol", ps.tol), ("auto", "auto")):
                        t, S = timed(
                            lambda tol=tol, name=name, ps=ps, mdl=mdl: run_decoder(
                                name, ps.A, ps.Y, tol=tol, model=mdl
                            ),
                            args.repeats,
                        )
                        err = float(np.nanmean(nmse_per_item(np.asarray(S), ps.S, zero="nan")))
                        res[rule] = (t, err)
                    (tt, et), (ta, ea) = res["tol"], res["auto"]
                    worst[name][0] = max(worst[name][0], ea / et)
                    worst[name][1] = max(worst[name][1], ta / tt)
                    totals[name][0] += tt
                    totals[name][1] += ta
                    print(f"| {name} | {sigma} | {k} | {et:.4f} | {ea:.4f} | {ea / et:.2f} | "
                          f"{tt / P * 1e3:.3f} | {ta / P * 1e3:.3f} | {ta / tt:.2f} |", flush=True)
    print()
    for name in args.decoders:
        print(f"{name}: worst NMSE ratio {worst[name][0]:.2f}, worst time ratio "
              f"{worst[name][1]:.2f}, total time ratio {totals[name][1] / totals[name][0]:.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
