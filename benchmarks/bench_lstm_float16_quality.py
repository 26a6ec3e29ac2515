#!/usr/bin/env python
"""Held-out NMSE of LSTM-CS with ``weights_dtype="float16"`` against float32.

    PYTHONPATH=python python benchmarks/bench_lstm_float16_quality.py \
        [--models mnist-m72,mnist-m36] [--data ../shared/data/mnist] \
        [--ks 5,10,15,20,25,30] [--n-tuples 100]

The protocol of ``benchmarks/bench_lstm_quality.py`` (test digits 6000..7999,
tuples of digits 0..3, four 12x12 blocks per tuple, the k largest pixels per
block, sigma 0.005 with fresh noise per problem, seed 2016 + k), at every k of
its table and with both stopping rules (the paper's ``tol`` and exactly k
atoms).  Each problem set is decoded twice by the same model, with the LSTM's
matrices in float32 (the default) and rounded to float16; printed: the mean
image NMSE of each, their ratio, and the share of problems whose supports
differ.  The option may only become the default if every ratio is within 2%.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import cscore
from cscore.bench import MNIST_SPLITS, heldout_mnist
from cscore.datasets import expected_noise_tol, measure
from cscore.metrics import nmse_per_item

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print a markdown table per model.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 when every NMSE ratio is within 2%, 1 otherwise.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mnist-m72,mnist-m36")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/mnist")
    ap.add_argument("--ks", default="5,10,15,20,25,30")
    ap.add_argument("--n-tuples", type=int, default=100)
    ap.add_argument("--sigma", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=2016)
    args = ap.parse_args(argv)

    first, end = MNIST_SPLITS["test"]
    held = heldout_mnist(args.data, first_index=first, end_index=end, n_tuples=args.n_tuples)
    tuples = held.tuples
    ks = [int(v) for v in args.ks.split(",")]
    worst = 0.0
    t0 = time.perf_counter()
    for name in args.models.split(","):
        model = cscore.pretrained(name)
        M, L = model.M, model.L
        tol = expected_noise_tol(M, L, args.sigma)
        print(
            f"\nModel `{name}` (M={M}, N={model.N}, L={L}, {model.n_cells} cells); "
            f"{len(tuples)} test tuples -> {4 * len(tuples)} problems per k; "
            f"instruction set {cscore.instruction_set()}\n"
        )
        print("| k | rule | NMSE float32 | NMSE float16 | ratio | problems with other supports |")
        print("|---|---|---:|---:|---:|---:|")
        for k in ks:
            S = held.signals(k)
            Y, _ = measure(model.A, S, args.sigma, seed=args.seed + k)
            for rule, kw in (("tol", {"tol": tol}), ("k", {"n_nonzero": k})):
                out = {
                    wd: np.asarray(model.decode(Y, weights_dtype=wd, **kw))
                    for wd in ("float32", "float16")
                }
                nm = {
                    wd: float(
                        np.mean(
                            nmse_per_item(
                                held.to_images(s),
                                held.to_images(S),
                            )
                        )
                    )
                    for wd, s in out.items()
                }
                differ = np.any((out["float32"] != 0) != (out["float16"] != 0), axis=(1, 2))
                ratio = nm["float16"] / nm["float32"]
                worst = max(worst, abs(ratio - 1.0))
                print(
                    f"| {k} | {rule} | {nm['float32']:.4f} | {nm['float16']:.4f} | "
                    f"{ratio:.4f} | {differ.mean():.1%} |",
                    flush=True,
                )
    print(f"\nlargest |ratio - 1|: {worst:.4f}; run time {time.perf_counter() - t0:.0f} s")
    return 0 if worst <= 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
