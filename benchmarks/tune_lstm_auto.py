"""Choose LSTM-CS's ``tol="auto"`` path end (issue 23) on MNIST validation digits.

The compiled kernel ends a problem's path once the residual-ratio test has
taken a step for signal and ``patience`` steps in a row had no ratio below the
looser threshold of level ``reset_alpha`` (see cscore/decoders/path_stop.py).
This script runs every problem's full path once (the kernel with a patience
past the path's end), then replays the rule for every pair (patience,
reset_alpha) on those norms (the kernel's path is the full path's prefix) and
cuts each truncated path with the real code (``auto_decode_path_stop``).  It
reports the steps run relative to the oracle ``tol`` rule's and the NMSE
relative to the oracle rule's, per (sigma, k) of the ``bench_auto.py`` grid.

Validation digits only: images 5400..5999 of the MNIST file (the models'
validation images, as benchmarks/bench_frontier.py ``--split val``), digits
0-3, noise seed 100 + k.  Usage::

    PYTHONPATH=python python benchmarks/tune_lstm_auto.py --data-dir ../shared/data/mnist \
        [--patience 2 3 4 5] [--reset-alpha 1e6 1e7 1e8]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

import cscore
from cscore.datasets import (
    expected_noise_tol,
    load_mnist,
    measure,
    mnist_mmv_problems,
    mnist_tuples,
)
from cscore.decoders.path_stop import auto_decode_path_stop, path_stop_rule
from cscore.decoders.stopping import ALPHA, path_length, rrt_thresholds
from cscore.metrics import nmse_per_item

OPTIONS = {"exclude_selected": True, "n_threads": None, "weights_dtype": "float32",
           "_lstm_dtype": np.float32, "_chunk": 64}  # fmt: skip


def path_ends(
    norms: np.ndarray, gamma2: np.ndarray, reset2: np.ndarray, patience: int
) -> np.ndarray:
    """Where the kernel's rule (lstm::PathStop) ends each full path of norms (B, L, K+1)."""
    scale = norms[:, :, 0].max(axis=1)
    scale = np.where(scale > 0, scale, 1.0)
    E = ((norms / scale[:, None, None]) ** 2).sum(axis=1)
    K = norms.shape[2] - 1
    out = np.full(len(E), K)
    for b in range(len(E)):
        signal, last = False, 0
        for s in range(1, K + 1):
            rr2 = E[b, s] / E[b, s - 1] if E[b, s - 1] > 0 else 1.0
            signal |= bool(rr2 < gamma2[s - 1])
            last = s if rr2 < reset2[s - 1] else last
            if signal and s - last >= patience:
                out[b] = s
                break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--model", default="mnist-m72")
    ap.add_argument("--patience", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--reset-alpha", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    ap.add_argument("--sigma", type=float, nargs="+", default=[0.005, 0.01, 0.05])
    ap.add_argument("--k", type=int, nargs="+", default=[10, 15, 20, 25, 30])
    args = ap.parse_args()
    model = cscore.pretrained(args.model)
    A = np.asarray(model.A)
    M, N = A.shape
    L, K = 4, path_length(M, N)
    images, labels = load_mnist(args.data_dir / "images-idx3-ubyte.gz",
                                args.data_dir / "labels-idx1-ubyte.gz")  # fmt: skip
    tuples = mnist_tuples(labels, np.arange(5400, 6000))
    gamma2, *_ = path_stop_rule(M, N, L, K)
    combos = list(itertools.product(args.patience, args.reset_alpha))
    steps = {c: [0, 0] for c in combos}
    ratios: dict[tuple[int, float], list[float]] = {c: [] for c in combos}
    print(f"validation: MNIST images 5400..5999, {len(tuples)} tuples = {4 * len(tuples)} "
          f"problems per point; path length K = {K}")
    for sigma, k in itertools.product(args.sigma, args.k):
        S = mnist_mmv_problems(images, tuples, k)
        Y, _ = measure(A, S, sigma, seed=100 + k)
        orc = model.decode(Y, tol=expected_noise_tol(M, L, sigma), return_result=True)
        e_orc = float(np.nanmean(nmse_per_item(np.asarray(orc.x), S, zero="nan")))
        Y64 = np.ascontiguousarray(Y, dtype=np.float64)
        atoms, norms = model._run_path(Y64, K, (gamma2, gamma2, K + 1), **OPTIONS)
        line = f"sigma {sigma} k {k}: oracle NMSE {e_orc:.4f}, steps {orc.n_iter.mean():.1f} |"
        for p, ra in combos:
            ends = path_ends(norms, gamma2, rrt_thresholds(M, N, L, K, ra, joint=False) ** 2, p)
            past = np.arange(K)[None, None, :] >= ends[:, None, None]
            at = np.where(past, -1, atoms)
            nt = np.where(np.arange(K + 1)[None, None, :] > ends[:, None, None],
                          np.take_along_axis(norms, ends[:, None, None].repeat(L, 1), 2), norms)
            X = auto_decode_path_stop(lambda *_, at=at, nt=nt: (at, nt), A, Y64, alpha=ALPHA)
            e = float(np.nanmean(nmse_per_item(np.asarray(X), S, zero="nan")))
            ratios[(p, ra)].append(e / e_orc)
            steps[(p, ra)][0] += int(ends.sum())
            steps[(p, ra)][1] += int(orc.n_iter.sum())
            line += f" p={p},r={ra:g}: {e / e_orc:.2f} ({ends.mean():.1f} steps)"
        print(line, flush=True)
    print()
    print("| patience | reset_alpha | steps auto / oracle | worst NMSE auto / oracle |")
    print("|---|---|---|---|")
    for c in combos:
        print(f"| {c[0]} | {c[1]:g} | {steps[c][0] / steps[c][1]:.3f} | {max(ratios[c]):.2f} |")


if __name__ == "__main__":
    main()
