#!/usr/bin/env python
"""Learned decoders at the frontier (issue 25): image NMSE per k against the oracle.

    PYTHONPATH=python python benchmarks/bench_frontier.py mnist --split val \
        --models mnist-m36 /path/mnist-m36-r.npz ... [--ks 5,10,15,20] [--baselines tmsbl]
    PYTHONPATH=python python benchmarks/bench_frontier.py msrc --split val \
        --transform haar --models msrc-buildings-haar-m32-lstm /path/...-r.npz

Every model (a pretrained name or a file) must share one sensing matrix.

MNIST (the LSTM-CS paper's protocol, as benchmarks/bench_lstm_quality.py): digits
0-3, channel j = digit j, 24x24 images cut into four 12x12 blocks; ``--split val``
uses images 5400..5999 (the models' validation images: choose with these),
``--split test`` images 6000..7999 (never used for training or choosing; score
each shipped model once).  MSRC (as benchmarks/bench_msrc.py): 64x64 grayscale,
8x8 blocks, DCT or 3-level Haar, L = 4; ``--split val`` the split's 20
validation images (one per class), ``--split test`` the 5 held-out images of
``--classes``.  Each block keeps its k largest entries; ``Y = A S + noise`` with
sigma 0.005, fresh per problem (seed + k); learned greedy decoders and SOMP stop
by the paper's rule ``sum_j ||r_j|| <= L sigma sqrt(M L)``; LISTA/LAMP run their
layers; T-MSBL its own rule.  Oracle: least squares on the true support of
each channel.  NMSE = ||I_hat - I||_F / ||I||_F per image, averaged.

Decode time: CPU milliseconds per problem on one thread (the batch of a k at
once; with ``--repeats R`` the models' decodes alternate R times and each keeps
its least time).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import cscore
from cscore.bench import MNIST_SPLITS, heldout_mnist, run_decoder
from cscore.datasets import (
    expected_noise_tol,
    image_mmv_problems,
    measure,
)
from cscore.metrics import nmse_per_item
from cscore.models.registry import resolve_model

ROOT = Path(__file__).resolve().parents[1]


def oracle(A: np.ndarray, Y: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Least squares of every channel on its true support."""
    out = np.zeros_like(S)
    for b in range(S.shape[0]):
        for j in range(S.shape[2]):
            s = np.flatnonzero(S[b, :, j])
            if s.size:
                out[b, s, j] = np.linalg.lstsq(A[:, s], Y[b, :, j], rcond=None)[0]
    return out


def decode(model: Any, Y: np.ndarray, tol: float, **beam: Any) -> np.ndarray:
    """A learned model's decode: the tol rule where the model has one."""
    try:
        return np.asarray(model.decode(Y, tol=tol, n_threads=1, **beam))
    except TypeError:  # LISTA / LAMP: a fixed number of layers
        return np.asarray(model.decode(Y))


def problem_sets(args: argparse.Namespace) -> tuple[Any, Any, int, str]:
    """``problems(k) -> S`` and ``to_images(S) -> images`` of the chosen data and split."""
    if args.data_kind == "mnist":
        first, end = MNIST_SPLITS[args.split]
        held = heldout_mnist(args.mnist, first_index=first, end_index=end,
                             n_tuples=args.n_tuples)
        return (held.signals, held.to_images, len(held.tuples),
                f"MNIST {args.split} {first}..{end - 1}")
    from cscore.datasets.msrc import load_msrc_split

    _, val, test, _ = load_msrc_split(args.msrc, 64)
    imgs = val if args.split == "val" else np.concatenate([test[c] for c in args.classes])

    def problems_m(k: int) -> np.ndarray:
        return image_mmv_problems(imgs, block_size=8, transform=args.transform, k=k, L=4)

    def blocks(S: np.ndarray) -> np.ndarray:  # orthonormal transforms: NMSE of coefficients
        return S.reshape(imgs.shape[0], -1)

    what = "val (20 images, one per class)" if args.split == "val" else f"test {args.classes}"
    return problems_m, blocks, imgs.shape[0], f"MSRC {args.transform} {what}"


def run(
    args: argparse.Namespace,
) -> tuple[list[dict[str, Any]], dict[str, float], dict[int, dict[str, float]], str]:
    stems = [Path(str(m)).stem for m in args.models]
    labels = [s if stems.count(s) == 1 else f"{Path(str(m)).parent.name}/{s}"
              for s, m in zip(stems, args.models)]  # files of one name: their folders tell
    models = {lab: resolve_model(m)[0] for lab, m in zip(labels, args.models)}
    A = next(iter(models.values())).A
    runs: dict[str, tuple[Any, dict[str, Any]]] = {lab: (m, {}) for lab, m in models.items()}
    for spec in args.beam:  # LSTM-CS with the beam-search rescue, next to the greedy decode
        width, cands, *factor = (float(v) for v in spec.split(":"))
        for lab, m in models.items():
            if type(m) is cscore.LSTMCS:
                kw: dict[str, Any] = {"beam_width": int(width), "beam_candidates": int(cands)}
                if factor:  # channel_tol as a multiple of sigma * sqrt(M)
                    kw["channel_tol"] = factor[0] * args.sigma * np.sqrt(A.shape[0])
                runs[f"{lab}+beam{spec}"] = (m, kw)
    for name, m in models.items():
        if not np.array_equal(m.A, A):
            raise SystemExit(f"{name} was trained for another sensing matrix")
    M, L = A.shape[0], 4
    tol = expected_noise_tol(M, L, args.sigma)
    problems, to_images, n, what = problem_sets(args)
    rows, secs, n_prob = [], dict.fromkeys(runs, 0.0), 0
    per_k: dict[int, dict[str, float]] = {}  # ms / problem of each decode, per k
    for k in args.ks:
        S = problems(k)
        Y, _ = measure(A, S, args.sigma, seed=args.seed + k)
        row: dict[str, Any] = {"k": k}
        best = dict.fromkeys(runs, np.inf)
        estimates: dict[str, np.ndarray] = {}
        for _ in range(args.repeats):  # the decodes alternate; each keeps its least CPU time
            for name, (model, kw) in runs.items():
                t0 = time.process_time()
                estimates[name] = decode(model, Y, tol, **kw)
                best[name] = min(best[name], time.process_time() - t0)
        for name, sec in best.items():
            secs[name] += sec
            per_k.setdefault(k, {})[name] = 1e3 * sec / S.shape[0]
            row[name] = float(np.mean(nmse_per_item(to_images(estimates[name]), to_images(S))))
        for b in args.baselines:
            S_hat = run_decoder(b, A, Y, tol=tol) if b == "somp" else run_decoder(b, A, Y)
            row[b] = float(np.mean(nmse_per_item(to_images(S_hat), to_images(S))))
        row["oracle"] = float(np.mean(nmse_per_item(to_images(oracle(A, Y, S)), to_images(S))))
        n_prob += S.shape[0]
        rows.append(row)
        print(" ".join(f"{c}={v:.4f}" if isinstance(v, float) else f"{c}={v}"
                       for c, v in row.items()), flush=True)
    ms = {m: 1e3 * s / n_prob for m, s in secs.items()}
    return rows, ms, per_k, f"{what}, {n} image groups"


def markdown(args: argparse.Namespace, rows: list[dict[str, Any]], ms: dict[str, float],
             per_k: dict[int, dict[str, float]], what: str) -> str:
    cols = [c for c in rows[0] if c != "k"]
    lines = [f"{what}; sigma {args.sigma}, seed {args.seed} + k; NMSE per image, mean. "
             f"CPU {platform.processor() or platform.machine()}, kernels "
             f"{cscore.instruction_set()}, 1 thread, load average "
             f"{os.getloadavg()[0]:.1f}.", "",
             "| k | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for r in rows:
        lines.append(f"| {r['k']} | " + " | ".join(f"{r[c]:.4f}" for c in cols) + " |")
    lines += ["", f"| model | CPU ms / problem (1 thread, least of {args.repeats}) |", "|---|---|"]
    lines += [f"| {m} | {v:.2f} |" for m, v in ms.items()]
    if per_k:
        names = list(ms)
        lines += ["", "| k | " + " | ".join(f"{m} ms" for m in names) + " |",
                  "|---" * (len(names) + 1) + "|"]
        lines += [f"| {k} | " + " | ".join(f"{v[m]:.2f}" for m in names) + " |"
                  for k, v in per_k.items()]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_kind", choices=["mnist", "msrc"], help="which data set")
    ap.add_argument("--models", nargs="+", required=True, help="pretrained names or model files")
    ap.add_argument("--split", choices=["val", "test"], default="val",
                    help="validation images (choose) or test images (score once)")
    ap.add_argument("--ks", default="5,10,15,20,25,30,35,40", help="comma-separated k values")
    ap.add_argument("--baselines", default="", help="comma-separated, e.g. somp,tmsbl")
    ap.add_argument("--n-tuples", type=int, default=100, help="MNIST tuples at most")
    ap.add_argument("--transform", default="dct", choices=["dct", "haar"], help="MSRC transform")
    ap.add_argument("--classes", default="buildings", help="MSRC test classes")
    ap.add_argument("--sigma", type=float, default=0.005, help="noise standard deviation")
    ap.add_argument("--seed", type=int, default=2016, help="seed of the noise (plus k)")
    ap.add_argument("--mnist", type=Path, default=ROOT.parent / "shared/data/mnist",
                    help="MNIST folder")
    ap.add_argument("--msrc", type=Path, default=ROOT.parent / "shared/data/msrc-v2",
                    help="MSRC-v2 folder")
    ap.add_argument("--beam", nargs="*", default=[],
                    help="WIDTH:CANDIDATES[:FACTOR]: also decode every LSTM-CS model with "
                         "the beam-search rescue (channel_tol = FACTOR sigma sqrt(M))")
    ap.add_argument("--repeats", type=int, default=1,
                    help="decode each k this many times, the models alternating; the "
                         "least CPU time counts (steadier on a busy machine)")
    ap.add_argument("--markdown", type=Path, default=None, help="append the table here")
    args = ap.parse_args()
    args.ks = [int(v) for v in args.ks.split(",")]
    args.baselines = [b for b in args.baselines.split(",") if b]
    args.classes = args.classes.split(",")
    rows, ms, per_k, what = run(args)
    text = markdown(args, rows, ms, per_k, what)
    print(text)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
