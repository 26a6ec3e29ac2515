#!/usr/bin/env python
"""LISTA and LAMP-BG on Borgerding, Schniter and Rangan's benchmark, NMSE per layer.

    OMP_NUM_THREADS=1 PYTHONPATH=python nice -n 10 python benchmarks/bench_unrolled.py \
        [--layers 8] [--budget 600] [--train 20000] [--test 1000] [--threads 1] \
        [--save-dir DIR] [--markdown benchmarks/results/unrolled.md]

Setting (Borgerding et al., IEEE TSP 2017, Sec. V): N = 500, M = 250, A iid
N(0, 1/M) (``gaussian_matrix(250, 500, 0, unit_norm=False)``), x Bernoulli-Gaussian
(rate 0.1, N(0, 1) on the support), SNR = E||Ax||^2 / E||w||^2 = 40 dB.  Training
problems: ``cscore.training.unrolled.train_bg_benchmark`` (data seed 0, 5%
validation, Adam, layer-wise then joint, ``--budget`` seconds of training per
network); test: ``--test`` fresh vectors (seed 2026).  NMSE = sum ||x_hat - x||^2 /
sum ||x||^2 over the test set, in dB.

Reference rows computed here on the same test vectors: the support oracle (the
MMSE estimate given the true support, prior and noise), AMP-l1 (the soft
threshold alpha * ||v|| / sqrt(M), alpha the best of a grid on the training
problems; at many iterations this is the tuned LASSO), matched BG-AMP (AMP with
the true Bernoulli-Gaussian prior: LAMP-BG's initialisation with the true rate
and variance), ISTA (LISTA's initialisation, its l1 weight fitted on the
training problems).  Published levels are printed next to them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from cscore.decoders.learned import LAMP
from cscore.problem import ProblemSpec
from cscore.training.unrolled import (
    BG_BENCHMARK,
    bg_benchmark_source,
    initial_model,
    nmse_db,
    train_bg_benchmark,
)

#: Published reference levels (dB) quoted by the issue / the LAMP paper.
PUBLISHED = {
    "support oracle": -45.97,
    "LASSO / AMP-l1 (converged)": -36.7,
    "matched VAMP, 10-15 iterations": -45.5,
    "LAMP-BG, 10+ layers (paper)": -43.0,
}


def support_oracle(A: np.ndarray, X: np.ndarray, Y: np.ndarray, sigma: float) -> np.ndarray:
    """MMSE estimate of each vector given its true support (prior N(0, 1) on it)."""
    out = np.zeros_like(X)
    for b in range(X.shape[0]):
        s = np.flatnonzero(X[b, :, 0])
        As = A[:, s]
        G = As.T @ As + sigma**2 * np.eye(s.size)
        out[b, s, 0] = np.linalg.solve(G, As.T @ Y[b, :, 0])
    return out


def per_layer(model, Y: np.ndarray, X: np.ndarray) -> list[float]:
    return [nmse_db(Xt, X) for Xt in model.decode_layers(Y)]


def references(source, X, Y, n_layers: int, n_ref: int) -> dict[str, list[float]]:
    A = source.A
    spec = ProblemSpec(M=A.shape[0], N=A.shape[1], L=1)
    Xtr, Ytr = source.draw(500, seed=0)  # training-distribution problems for the grids
    rho = BG_BENCHMARK["rate"]
    bg = LAMP.from_amp(A, spec, n_layers=n_ref, shrinkage="bg",
                       theta=(0.0, math.log(rho / (1 - rho))))
    l1 = initial_model("lamp", A, spec, Xtr, Ytr, n_layers=n_ref, shrinkage="soft")
    ista = initial_model("lista", A, spec, Xtr, Ytr, n_layers=n_layers)
    return {"matched BG-AMP": per_layer(bg, Y, X), "AMP-l1 (tuned alpha)": per_layer(l1, Y, X),
            "ISTA (tuned lambda)": per_layer(ista, Y, X)}


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def table(curves: dict[str, list[float]], n_rows: int) -> list[str]:
    names = list(curves)
    lines = ["| layer / iteration | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for t in range(n_rows):
        cells = [_fmt(curves[n][t]) if t < len(curves[n]) else "" for n in names]
        lines.append(f"| {t + 1} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8, help="layers T of LISTA and LAMP")
    ap.add_argument("--budget", type=float, default=600.0,
                    help="training seconds per network")
    ap.add_argument("--train", type=int, default=20000, help="training problems drawn")
    ap.add_argument("--test", type=int, default=1000, help="fresh test vectors")
    ap.add_argument("--ref-iters", type=int, default=30, help="iterations of the AMP rows")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--archs", default="lista,lamp")
    ap.add_argument("--save-dir", type=Path, default=None, help="write the trained models here")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    source = bg_benchmark_source(seed_A=0)
    X, Y = source.draw(args.test, seed=2026)
    sigma = source.noise_sigma
    oracle = nmse_db(support_oracle(source.A, X, Y, sigma), X)
    print(f"support oracle: {oracle:.2f} dB (published {PUBLISHED['support oracle']})",
          flush=True)
    curves = references(source, X, Y, args.layers, args.ref_iters)
    trained: dict[str, dict] = {}
    for arch in args.archs.split(","):
        t0 = time.perf_counter()
        path = None
        if args.save_dir is not None:
            args.save_dir.mkdir(parents=True, exist_ok=True)
            path = args.save_dir / f"{arch}{'-bg' if arch == 'lamp' else ''}-n500-m250.npz"
        res = train_bg_benchmark(arch, n_layers=args.layers, max_seconds=args.budget,
                                 n_train=args.train, n_threads=args.threads,
                                 progress=not args.no_progress, path=path)
        wall = time.perf_counter() - t0
        name = "LAMP-BG (trained)" if arch == "lamp" else "LISTA (trained)"
        curves[name] = per_layer(res.model, Y, X)
        t1 = time.perf_counter()
        res.model.decode(Y)
        dec_s = time.perf_counter() - t1
        trained[name] = {"train_wall_s": round(wall, 1), "train_stage_s": round(res.seconds, 1),
                         "steps": sum(h["steps"] for h in res.history),
                         "val_nmse_db": [round(v, 2) for v in res.val_nmse_db],
                         "decode_us_per_vector": round(1e6 * dec_s / args.test, 1),
                         "file": str(path) if path else None}
        print(f"{name}: {curves[name][-1]:.2f} dB after {args.layers} layers; "
              f"{trained[name]}", flush=True)
    n_rows = max(len(c) for c in curves.values())
    lines = [f"Support oracle: **{oracle:.2f} dB** (published {PUBLISHED['support oracle']}).",
             "", *table(curves, n_rows), "",
             "Published: " + "; ".join(f"{k} {v} dB" for k, v in PUBLISHED.items()) + "."]
    for name, rec in trained.items():
        lines.append(f"\n{name}: {rec}")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.json:
        args.json.write_text(json.dumps({"oracle_db": oracle, "curves": curves,
                                         "trained": trained, "args": vars(args)},
                                        default=str, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
