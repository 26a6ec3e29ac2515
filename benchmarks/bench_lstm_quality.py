#!/usr/bin/env python
"""LSTM-CS reconstruction quality vs SOMP / OMP on held-out MNIST digits.

    PYTHONPATH=python python benchmarks/bench_lstm_quality.py \
        [--model python/cscore/models/mnist-m72.npz] [--data ../shared/data/mnist] \
        [--ks 5,10,15,20,25,30] [--n-tuples 100] [--markdown out.md]

Protocol (the LSTM-CS paper's, see cscore.datasets.mnist): test digits are
indices 6000..7999 of the data (never used in training or model selection);
the i-th test image of digits 0, 1, 2, 3 form tuple i; each tuple gives 4 MMV
problems (its four 12x12 blocks, L = 4 channels).  For every k each block keeps
its k largest pixels (the ground truth), ``Y = A S + noise`` with fresh
Gaussian noise per problem (sigma 0.005).  NMSE = ||S_hat - S||_F / ||S||_F per
reconstructed 24x24 image, averaged over the n_tuples * 4 images.

Two stopping rules:

* ``tol``: the authors' rule, stop when the sum over channels of residual l2
  norms falls below ``tol = L * sigma * sqrt(M * L)`` -- the authors'
  ``L * norm(noise(:))`` (L times the Frobenius norm of the (M, L) noise
  matrix) with the norm replaced by its expectation, since the noise is fresh
  per problem.  LSTM-CS (Algorithm 2, exclude-selected argmax) vs SOMP, both
  capped at min(M, N) iterations.
* ``k``: exactly k atoms per channel.  LSTM-CS vs OMP run per channel.

All decoders are the package's: ``cscore.LSTMCS.decode`` (C++), ``cscore.omp`` and
``cscore.somp``; the LSTM-CS decoder is first checked against the NumPy
``reference_decode`` on 20 problems.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import cscore
from cscore.bench import run_decoder
from cscore.datasets import (
    expected_noise_tol,
    load_mnist,
    measure,
    mnist_mmv_problems,
    mnist_tuples,
    problems_to_images,
)
from cscore.decoders.learned.weights import load_model_file
from cscore.metrics import nmse_per_item

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the NumPy oracle is a test file (tests/oracles)
from oracles.reference import reference_decode  # noqa: E402

TEST_IDX = np.arange(6000, 8000)


def _decoders(weights, A, spec):
    """The shipped decoders: cscore.LSTMCS (C++ Algorithm 2), cscore.omp, cscore.somp."""
    model = cscore.LSTMCS(weights, A, spec)

    def run(Y, n_nonzero, tol):
        return np.asarray(model.decode(Y, n_nonzero=n_nonzero, tol=tol)), "cscore.LSTMCS"

    def omp(Y, k):
        return run_decoder("omp", A, Y, k=k)

    def somp(Y, tol):
        return run_decoder("somp", A, Y, tol=tol)

    return run, omp, somp


def image_nmse(S_hat: np.ndarray, S: np.ndarray, to_images) -> float:
    """Mean over reconstructed images of ||I_hat - I||_F / ||I||_F.

    For MNIST (no transform) the image is the blocks themselves; for the demo
    set the coefficients are transformed back to pixels (orthonormal DCT, so
    the same ratio).
    """
    return float(np.mean(nmse_per_item(to_images(S_hat), to_images(S))))


def main() -> int:
    ap = argparse.ArgumentParser(description="LSTM-CS quality on held-out MNIST digits")
    ap.add_argument("--model", type=Path, default=ROOT / "python/cscore/models/mnist-m72.npz")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/mnist")
    ap.add_argument("--ks", default="5,10,15,20,25,30")
    ap.add_argument("--n-tuples", type=int, default=100)
    ap.add_argument("--sigma", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=2016)
    ap.add_argument("--modes", default="tol,k")
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args()

    weights, A, spec, _info = load_model_file(args.model)
    demo = spec.dataset.startswith("pywt.data")
    if demo:  # the embedded demo set: test image aero, 8x8 DCT blocks
        from cscore.datasets import load_demo

        def problems(k: int) -> np.ndarray:
            return load_demo(k, M=spec.M, L=spec.L, image_size=spec.image_size, A=A).S_test

        def to_images(S: np.ndarray) -> np.ndarray:
            return load_demo(None, M=spec.M, L=spec.L, image_size=spec.image_size,
                             A=A).to_images(S)

        n_items = 1
    else:
        images, labels = load_mnist(args.data / "images-idx3-ubyte.gz",
                                    args.data / "labels-idx1-ubyte.gz")
        tuples = mnist_tuples(labels, TEST_IDX)[: args.n_tuples]

        def problems(k: int) -> np.ndarray:
            return mnist_mmv_problems(images, tuples, k)

        def to_images(S: np.ndarray) -> np.ndarray:
            return problems_to_images(S).reshape(-1, 24, 24)

        n_items = spec.L * len(tuples)
    ks = [int(v) for v in args.ks.split(",")]
    modes = args.modes.split(",")
    M, L = spec.M, spec.L
    tol = expected_noise_tol(M, L, args.sigma)
    lstm, omp, somp = _decoders(weights, A, spec)
    # the compiled decoder (float32 LSTM) must take the reference decoder's decisions
    S0 = problems(15)[:20]
    Y0, _ = measure(A, S0, args.sigma, seed=args.seed)
    for nn, tt in ((15, None), (None, tol)):
        ref, _ = reference_decode(weights, A, Y0, n_nonzero=nn, tol=tt)
        got, _ = lstm(Y0, nn, tt)
        same = float(np.mean((ref != 0) == (got != 0)))
        print(f"check vs reference_decode (n_nonzero={nn}, tol={tt}): support agreement "
              f"{same:.4f}, max |diff| {np.abs(ref - got).max():.2e}", flush=True)
    rows = []
    impl = ""
    t_all = time.perf_counter()
    for k in ks:
        S = problems(k)
        Y, _ = measure(A, S, args.sigma, seed=args.seed + k)
        row = {"k": k}
        if "tol" in modes:
            S_l, impl = lstm(Y, None, tol)
            row["lstm_tol"] = image_nmse(S_l, S, to_images)
            row["somp_tol"] = image_nmse(somp(Y, tol), S, to_images)
        if "k" in modes:
            S_l, impl = lstm(Y, k, None)
            row["lstm_k"] = image_nmse(S_l, S, to_images)
            row["omp_k"] = image_nmse(omp(Y, k), S, to_images)
        rows.append(row)
        print(" ".join(f"{key}={v:.4f}" if isinstance(v, float) else f"{key}={v}"
                       for key, v in row.items()), flush=True)
    seconds = time.perf_counter() - t_all

    if demo:
        where = (f"demo test image aero ({spec.image_size}x{spec.image_size}, "
                 f"{S.shape[0]} problems of {L} 8x8 DCT blocks, 1 image) per k")
    else:
        where = (f"{len(tuples)} test tuples (MNIST indices 6000..7999) -> {4 * len(tuples)} "
                 f"problems and {n_items} images per k")
    lines = [
        f"Model `{args.model.name}` (M={M}, N={spec.N}, L={L}, {weights.n_cells} cells, "
        f"cell={weights.cell}); LSTM-CS decoded by {impl}.",
        f"{where}; sigma={args.sigma}, fresh noise per problem "
        f"(seed {args.seed} + k); tol = L*sigma*sqrt(M*L) = {tol:.4f}. Run time {seconds:.0f} s.",
        "",
    ]
    if "tol" in modes:
        lines += ["Stopped by the paper's rule (sum_j ||r_j|| <= tol):", "",
                  "| k | LSTM-CS | SOMP | LSTM/SOMP |", "|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['k']} | {r['lstm_tol']:.4f} | {r['somp_tol']:.4f} | "
                         f"{r['lstm_tol'] / r['somp_tol']:.3f} |")
        lines.append("")
    if "k" in modes:
        lines += ["Stopped at k atoms per channel:", "",
                  "| k | LSTM-CS | OMP | LSTM/OMP |", "|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['k']} | {r['lstm_k']:.4f} | {r['omp_k']:.4f} | "
                         f"{r['lstm_k'] / r['omp_k']:.3f} |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
