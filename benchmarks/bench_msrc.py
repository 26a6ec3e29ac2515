#!/usr/bin/env python
"""LSTM-CS and BLSTM-CS on held-out MSRC images vs SOMP, T-MSBL and MT-BCS.

    PYTHONPATH=python python benchmarks/bench_msrc.py \
        [--models-dir python/cscore/models] [--data ../shared/data/msrc-v2] \
        [--classes buildings,cows,flowers] [--transforms dct,haar] [--ks 4-16] \
        [--markdown benchmarks/results/msrc.md]

Protocol (Palangi's thesis, section 4.4.2, with the conventions of
cscore.datasets): the held-out test images of cscore.datasets.msrc (5 per
class, never used for training or model selection) as 64x64 grayscale, cut
into 8x8 blocks, each block transformed (2-D DCT or 3-level Haar) and reduced
to its k largest coefficients; L = 4 consecutive blocks form one MMV problem
(16 problems per image).  ``Y = A S + noise``, A the models' matrix
(``paper_matrix(32, 64, seed=0)``), fresh Gaussian noise per problem, sigma
0.005.  The greedy decoders stop by the paper's rule, ``sum_j ||r_j|| <= tol``
with ``tol = L * sigma * sqrt(M * L)`` (cscore.datasets.expected_noise_tol),
capped at min(M, N) iterations; T-MSBL and MT-BCS use their own rules
(defaults of cscore.tmsbl / cscore.mtbcs).  NMSE = ||S_hat - S||_F / ||S||_F
per image (the transforms are orthonormal, so the same in pixels), averaged
over the images, then over k.

Decode time: the LSTM-CS and BLSTM-CS decodes of all problems of a run (one
thread, the shipped float32 decoders), per problem, and their ratio.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cscore.bench import run_decoder
from cscore.datasets import expected_noise_tol, image_mmv_problems, measure
from cscore.datasets.msrc import load_msrc_split
from cscore.decoders.learned import LSTMCS
from cscore.metrics import nmse_per_item

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ("somp", "tmsbl", "mtbcs")


def _ks(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(v) for v in text.split(",")]


def image_nmse(S_hat: np.ndarray, S: np.ndarray, per_image: int) -> np.ndarray:
    """NMSE of every image: ``per_image`` consecutive problems form one image."""
    P, N, L = S.shape
    return nmse_per_item(S_hat.reshape(P // per_image, per_image * N * L),
                         S.reshape(P // per_image, per_image * N * L))


def run(args: argparse.Namespace) -> dict:
    _, _, test, _ = load_msrc_split(args.data, 64)
    results: dict = {}
    sigma, M, L = args.sigma, 32, 4
    tol = expected_noise_tol(M, L, sigma)
    for transform in args.transforms:
        models = {a: LSTMCS.load(args.models_dir / f"msrc-buildings-{transform}-m32-{a}.npz")
                  for a in ("lstm", "blstm")}
        A = models["lstm"].A
        assert np.array_equal(A, models["blstm"].A)
        assert models["lstm"].spec.transform == transform == models["blstm"].spec.transform
        for cls in args.classes:
            imgs = test[cls]
            rows = []
            t_dec = {"lstm": 0.0, "blstm": 0.0}
            n_prob = 0
            for k in args.ks:
                S = image_mmv_problems(imgs, block_size=8, transform=transform, k=k, L=L)
                Y, _ = measure(A, S, sigma, seed=args.seed + 100 * k)
                row = {"k": k}
                for a, model in models.items():
                    t0 = time.perf_counter()
                    S_hat = np.asarray(model.decode(Y, tol=tol, n_threads=1))
                    t_dec[a] += time.perf_counter() - t0
                    row[a] = float(image_nmse(S_hat, S, 16).mean())
                for name in args.baselines:
                    S_hat = run_decoder(name, A, Y, tol=tol)
                    row[name] = float(image_nmse(S_hat, S, 16).mean())
                n_prob += S.shape[0]
                rows.append(row)
                print(transform, cls, row, flush=True)
            results[(transform, cls)] = {
                "rows": rows,
                "time_per_problem": {a: t / n_prob for a, t in t_dec.items()},
                "n_images": int(imgs.shape[0]),
            }
    return results


def _best_decode_seconds(model: Any, Y: np.ndarray, repeats: int) -> float:
    """Best of ``repeats`` times of ``model.decode(Y)`` (k = 10, one thread) after a warm-up."""
    model.decode(Y[:64], n_nonzero=10, n_threads=1)  # warm-up
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.decode(Y, n_nonzero=10, n_threads=1)
        best = min(best, time.perf_counter() - t0)
    return best


def speed(args: argparse.Namespace) -> dict:
    """Decode time per problem, LSTM vs BLSTM, same problems, fixed k and tol runs."""
    out = {}
    _, _, test, _ = load_msrc_split(args.data, 64)
    for transform in args.transforms:
        models = {a: LSTMCS.load(args.models_dir / f"msrc-buildings-{transform}-m32-{a}.npz")
                  for a in ("lstm", "blstm")}
        A = models["lstm"].A
        S = image_mmv_problems(np.concatenate(list(test.values())), block_size=8,
                               transform=transform, k=10, L=4)
        S = np.concatenate([S] * 8)  # 1920 problems
        Y, _ = measure(A, S, args.sigma, seed=args.seed)
        t = {a: _best_decode_seconds(model, Y, args.repeats) / S.shape[0]
             for a, model in models.items()}
        out[transform] = {"problems": int(S.shape[0]), **t,
                          "cells": {a: m.n_cells for a, m in models.items()}}
        print("speed", transform, out[transform], flush=True)
    # the same number of cells in both (random weights of the shipped shapes, H = 256):
    # the cost of the second direction alone
    from cscore.decoders.learned import BLSTMCS, BLSTMCSWeights, LSTMCSWeights

    rng = np.random.default_rng(0)
    H, m0 = 256, models["lstm"]

    def g(*shape: int) -> np.ndarray:
        return (0.1 * rng.standard_normal(shape)).astype(np.float32)

    same = {
        "lstm": LSTMCS(LSTMCSWeights(W=g(3 * H, 32), R=g(3 * H, H), b=g(3 * H), U=g(64, H),
                                     c_out=g(64)), m0.A, m0.spec),
        "blstm": BLSTMCS(BLSTMCSWeights(W=g(3 * H, 32), R=g(3 * H, H), b=g(3 * H),
                                        Wb=g(3 * H, 32), Rb=g(3 * H, H), bb=g(3 * H),
                                        U=g(64, 2 * H), c_out=g(64)), m0.A, m0.spec),
    }
    t = {a: _best_decode_seconds(model, Y, args.repeats) / Y.shape[0]
         for a, model in same.items()}
    out["equal cells (random weights)"] = {"problems": int(Y.shape[0]), **t,
                                           "cells": {"lstm": H, "blstm": H}}
    print("speed equal cells", out["equal cells (random weights)"], flush=True)
    return out


def markdown(args: argparse.Namespace, res: dict, sp: dict, seconds: float) -> str:
    names = ["lstm", "blstm", *args.baselines]
    label = {"lstm": "LSTM-CS", "blstm": "BLSTM-CS", "somp": "SOMP", "tmsbl": "T-MSBL",
             "mtbcs": "MT-BCS"}
    lines = [
        "# LSTM-CS and BLSTM-CS on held-out MSRC images",
        "",
        "Made by:",
        "",
        "```",
        "PYTHONPATH=python python benchmarks/bench_msrc.py " + " ".join(sys.argv[1:]),
        "```",
        "",
        f"Machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}; run time {seconds:.0f} s (shared 2-core machine, "
        "timings are indicative).",
        "",
        "Protocol: see the docstring of `benchmarks/bench_msrc.py`.  Test images: the",
        "held-out files of `cscore.datasets.msrc` (5 per class; never used for training",
        "or model selection).  sigma = "
        f"{args.sigma}, tol = L*sigma*sqrt(M*L) = "
        f"{expected_noise_tol(32, 4, args.sigma):.4f}, k = {args.ks[0]}..{args.ks[-1]}.",
        "",
        "## Mean NMSE over k",
        "",
        "| transform | class | " + " | ".join(label[n] for n in names)
        + " | LSTM / best baseline | BLSTM / LSTM |",
        "|---|---|" + "---|" * (len(names) + 2),
    ]
    for (transform, cls), r in res.items():
        mean = {n: float(np.mean([row[n] for row in r["rows"]])) for n in names}
        best = min(mean[n] for n in args.baselines)
        lines.append(f"| {transform} | {cls} | " + " | ".join(f"{mean[n]:.4f}" for n in names)
                     + f" | {mean['lstm'] / best:.3f} | {mean['blstm'] / mean['lstm']:.3f} |")
    lines += ["", "## NMSE per k", ""]
    for (transform, cls), r in res.items():
        lines += [f"### {transform}, {cls} ({r['n_images']} images)", "",
                  "| k | " + " | ".join(label[n] for n in names) + " |",
                  "|---|" + "---|" * len(names)]
        for row in r["rows"]:
            lines.append(f"| {row['k']} | " + " | ".join(f"{row[n]:.4f}" for n in names) + " |")
        tp = r["time_per_problem"]
        lines += ["", f"Decode time per problem (tol rule, 1 thread): LSTM-CS "
                  f"{tp['lstm'] * 1e6:.0f} us, BLSTM-CS {tp['blstm'] * 1e6:.0f} us "
                  f"(ratio {tp['blstm'] / tp['lstm']:.2f}).", ""]
    if sp:
        lines += ["## Decode speed, BLSTM-CS vs LSTM-CS", "",
                  "Held-out images of all three classes, k = 10, `n_nonzero=10`, 1 thread, "
                  f"best of {args.repeats} runs.", "",
                  "| transform | problems | cells (LSTM / BLSTM per direction) "
                  "| LSTM-CS us/problem | BLSTM-CS us/problem | ratio |",
                  "|---|---|---|---|---|---|"]
        for transform, s in sp.items():
            lines.append(f"| {transform} | {s['problems']} | {s['cells']['lstm']} / "
                         f"{s['cells']['blstm']} | {s['lstm'] * 1e6:.1f} | "
                         f"{s['blstm'] * 1e6:.1f} | {s['blstm'] / s['lstm']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", type=Path, default=ROOT / "python/cscore/models")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/msrc-v2")
    ap.add_argument("--classes", default="buildings,cows,flowers")
    ap.add_argument("--transforms", default="dct,haar")
    ap.add_argument("--baselines", default=",".join(BASELINES))
    ap.add_argument("--ks", default="4-16")
    ap.add_argument("--sigma", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=2016)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args()
    args.classes = args.classes.split(",")
    args.transforms = args.transforms.split(",")
    args.baselines = [b for b in args.baselines.split(",") if b]
    args.ks = _ks(args.ks)
    t0 = time.perf_counter()
    res = run(args)
    sp = {} if args.no_speed else speed(args)
    text = markdown(args, res, sp, time.perf_counter() - t0)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
