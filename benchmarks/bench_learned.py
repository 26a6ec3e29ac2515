#!/usr/bin/env python
"""NWSOMP and CDSN-CS against SOMP (and LSTM-CS) on held-out data.

    PYTHONPATH=python python benchmarks/bench_learned.py \
        [--models python/cscore/models] [--data ../shared/data] \
        [--n-tuples 100] [--markdown benchmarks/results/learned.md]

MNIST (nwsomp-mnist-m72 vs mnist-m72, the LSTM-CS paper's Fig. 4.4 setting):
test digits are indices 6000..7999 (never used for training or selection); the
i-th test image of digits 0..3 form tuple i (4 problems of L = 4 channels each);
every block keeps its k largest pixels, ``Y = A S + noise`` (sigma 0.005, fresh
per problem), all decoders stop by the paper's rule ``sum_j ||r_j|| <= tol``
with ``tol = L * sigma * sqrt(M * L)`` (capped at min(M, N) iterations).

MSRC (cdsn-msrc-dct-m25, section 4.7's setting): buildings 18..22 of
../shared/data/msrc-v2 (held out from training and validation: the split of
cscore.training.data.cdsn_msrc_training_data), 64x64
grayscale, 8x8 DCT blocks, L = 8 consecutive blocks per problem, M = 25; k
largest DCT coefficients kept per block; same noise and stopping rule; three
noise draws per k.  NMSE = ||I_hat - I||_F / ||I||_F per reconstructed image,
averaged.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import cscore
from cscore.bench import MNIST_SPLITS, heldout_mnist
from cscore.datasets import (
    expected_noise_tol,
    image_mmv_problems,
    load_image_folder,
    measure,
    problems_to_natural_images,
)
from cscore.metrics import nmse_per_item
from cscore.models import load_model
from cscore.training.data import CDSN_MSRC_TEST_BUILDINGS

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = np.asarray(fn(*a, **kw))
    return out, time.perf_counter() - t0


def mnist_part(args: argparse.Namespace) -> list[str]:
    nw = load_model(args.models / "nwsomp-mnist-m72.npz")
    lstm = load_model(args.models / "mnist-m72.npz")
    A = nw.A
    if not np.array_equal(A, lstm.A):
        raise SystemExit("nwsomp-mnist-m72 and mnist-m72 use different sensing matrices")
    d = args.data / "mnist"
    first, end = MNIST_SPLITS["test"]
    held = heldout_mnist(d, first_index=first, end_index=end, n_tuples=args.n_tuples)
    tuples = held.tuples
    M, L = nw.M, nw.L
    tol = expected_noise_tol(M, L, args.sigma)
    rows = []
    times = {"somp": 0.0, "nwsomp": 0.0, "lstm": 0.0}
    n_prob = 0
    for k in range(5, 31, 5):
        S = held.signals(k)
        Y, _ = measure(A, S, args.sigma, seed=args.seed + k)
        res = {}
        for name, fn in (("somp", lambda Y: cscore.somp(A, Y, tol=tol)),
                         ("nwsomp", lambda Y: nw.decode(Y, tol=tol)),
                         ("lstm", lambda Y: lstm.decode(Y, tol=tol))):
            S_hat, dt = _timed(fn, Y)
            times[name] += dt
            res[name] = float(np.mean(nmse_per_item(held.to_images(S_hat),
                                                    held.to_images(S))))
        n_prob += S.shape[0]
        rows.append((k, res))
        print(k, res, flush=True)
    avg = {n: float(np.mean([r[n] for _, r in rows])) for n in ("somp", "nwsomp", "lstm")}
    between = sum(r["lstm"] <= r["nwsomp"] <= r["somp"] for _, r in rows)
    lines = [
        "## NWSOMP on MNIST, M = 72 (Fig. 4.4 setting)", "",
        f"Models `nwsomp-mnist-m72` ({nw.n_hidden} hidden units) and `mnist-m72` (LSTM-CS, "
        f"{lstm.n_cells} cells), same A; {len(tuples)} test tuples (MNIST indices 6000..7999) "
        f"-> {4 * len(tuples)} problems and {L * len(tuples)} images per k; sigma = {args.sigma}, "
        f"fresh noise (seed {args.seed} + k); tol = L*sigma*sqrt(M*L) = {tol:.4f}.", "",
        "| k | SOMP | NWSOMP | LSTM-CS | NWSOMP/SOMP | between |", "|---|---|---|---|---|---|",
    ]
    for k, r in rows:
        ok = "yes" if r["lstm"] <= r["nwsomp"] <= r["somp"] else "no"
        lines.append(f"| {k} | {r['somp']:.4f} | {r['nwsomp']:.4f} | {r['lstm']:.4f} | "
                     f"{r['nwsomp'] / r['somp']:.3f} | {ok} |")
    lines += [f"| mean | {avg['somp']:.4f} | {avg['nwsomp']:.4f} | {avg['lstm']:.4f} | "
              f"{avg['nwsomp'] / avg['somp']:.3f} | {between}/{len(rows)} |", "",
              "Decode time per problem (tol rule, all k): " + ", ".join(
                  f"{n} {1e3 * t / n_prob:.2f} ms" for n, t in times.items())
              + " (NWSOMP: vectorized NumPy; SOMP and LSTM-CS: C++).", ""]
    return lines


def msrc_part(args: argparse.Namespace) -> list[str]:
    model = load_model(args.models / "cdsn-msrc-dct-m25.npz")
    A, M, L, spec = model.A, model.M, model.L, model.spec
    imgs, names = load_image_folder(args.data / "msrc-v2" / "buildings", spec.image_size)
    test = np.stack([im for im, nm in zip(imgs, names) if nm in CDSN_MSRC_TEST_BUILDINGS])
    tol = expected_noise_tol(M, L, args.sigma)

    def to_img(S: np.ndarray) -> np.ndarray:
        return problems_to_natural_images(S, spec.image_size, block_size=8, transform="dct")

    rows = []
    for k in range(4, 17, 2):
        S = image_mmv_problems(test, block_size=8, transform="dct", k=k, L=L)
        res: dict[str, list[float]] = {"somp": [], "tmsbl": [], "mtbcs": [], "cdsn": []}
        for rep in range(3):
            Y, _ = measure(A, S, args.sigma, seed=args.seed + 100 * rep + k)
            for name, S_hat in (("somp", cscore.somp(A, Y, tol=tol)),
                                ("tmsbl", cscore.tmsbl(A, Y)), ("mtbcs", cscore.mtbcs(A, Y)),
                                ("cdsn", model.decode(Y, tol=tol))):
                res[name].append(float(np.mean(nmse_per_item(to_img(np.asarray(S_hat)),
                                                             to_img(S)))))
        r = {n: float(np.mean(v)) for n, v in res.items()}
        rows.append((k, r))
        print(k, r, flush=True)
    avg = {n: float(np.mean([r[n] for _, r in rows])) for n in ("somp", "tmsbl", "mtbcs", "cdsn")}
    lines = [
        "## CDSN-CS on held-out MSRC buildings, M = 25, L = 8 (section 4.7 setting)", "",
        f"Model `cdsn-msrc-dct-m25` (window {model.window}, {model.n_modules} modules x "
        f"{model.n_hidden}); test images buildings {', '.join(CDSN_MSRC_TEST_BUILDINGS)} "
        f"({test.shape[0]} images, {S.shape[0]} problems per k), 8x8 DCT blocks; "
        f"sigma = {args.sigma}, 3 noise draws per k; tol = {tol:.4f}.", "",
        "SOMP and CDSN-CS stop by the tol rule; T-MSBL and MT-BCS by their own "
        "convergence rules (cscore defaults).", "",
        "| k | SOMP | T-MSBL | MT-BCS | CDSN-CS | CDSN/SOMP |", "|---|---|---|---|---|---|",
    ]
    for k, r in [*rows, ("mean", avg)]:
        lines.append(f"| {k} | {r['somp']:.4f} | {r['tmsbl']:.4f} | {r['mtbcs']:.4f} | "
                     f"{r['cdsn']:.4f} | {r['cdsn'] / r['somp']:.3f} |")
    lines.append("")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description="NWSOMP and CDSN-CS vs SOMP and LSTM-CS")
    ap.add_argument("--models", type=Path, default=ROOT / "python/cscore/models")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data")
    ap.add_argument("--n-tuples", type=int, default=100)
    ap.add_argument("--sigma", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=2013)
    ap.add_argument("--parts", default="mnist,msrc")
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args()
    lines: list[str] = []
    if "mnist" in args.parts:
        lines += mnist_part(args)
    if "msrc" in args.parts:
        lines += msrc_part(args)
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
