"""Choose ``stopping.SIGNAL_ALPHA`` (issue #34, item 3) on MNIST validation digits.

``tol="auto"`` takes its fallback step (a path with no step below the
residual-ratio threshold) only when the measurements reject pure Gaussian noise
at level ``SIGNAL_ALPHA`` (step 2b of :mod:`cscore.decoders.stopping`).  This
script replays the rule at several levels: ``inf`` is the old rule (fallback
always), ``0`` the empty support whenever no step crosses.  For each level it
reports the pure-noise false-alarm rate (problems given more than one step; noise
at three scales) and the NMSE of ``auto`` relative to the oracle ``tol`` rule on
the ``bench_auto.py`` grid (sigma x k).  OMP and SOMP are replayed with
``auto_stop`` on their full ``M - 1``-step paths (the method of their compiled
kernel, in Python, so the level can change), LSTM-CS with its real decode.

Validation digits only: images 5400..5999 of the MNIST file (the models'
validation images), digits 0-3, noise seed 100 + k.  Usage::

    PYTHONPATH=python python benchmarks/tune_signal_alpha.py --data-dir ../shared/data/mnist \
        --decoder somp [--tuples 40] [--levels inf 0 0.01 0.05 0.2]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

import cscore
import cscore.decoders._rrt as rrt  # SIGNAL_ALPHA is read there (step 2b's level)
from cscore.datasets import (
    expected_noise_tol,
    load_mnist,
    measure,
    mnist_mmv_problems,
    mnist_tuples,
)
from cscore.decoders.stopping import auto_stop, path_length
from cscore.metrics import nmse_per_item


def decode(name: str, A: np.ndarray, Y: np.ndarray, model: Any) -> tuple[np.ndarray, np.ndarray]:
    """``tol="auto"`` with the current level: (S_hat (P, N, L), steps per vector / problem)."""
    P, M, L = Y.shape
    K = path_length(*A.shape)
    if name == "omp":
        Y1 = Y.transpose(0, 2, 1).reshape(-1, M, 1)
        res = cscore.omp(A, Y1[:, :, 0].T, n_nonzero=K, return_result=True)
        st = auto_stop(A, Y1, np.asarray(res.extra["atoms"]).reshape(-1, K))
        return st.x[:, :, 0].reshape(P, L, -1).transpose(0, 2, 1), st.n_iter
    if name == "somp":
        path = cscore.somp(A, Y, n_nonzero=K, return_result=True).extra["atoms"]
        st = auto_stop(A, Y, np.asarray(path))
        return st.x, st.n_iter
    res = model.decode(Y, tol="auto", return_result=True)
    return np.asarray(res.x), np.asarray(res.n_iter)


def oracle(name: str, A: np.ndarray, Y: np.ndarray, model: Any, tol: float) -> np.ndarray:
    """The oracle rule of ``bench_auto.py`` (OMP: ``tol / L`` per channel)."""
    if name == "somp":
        return np.asarray(cscore.somp(A, Y, tol=tol))
    if name == "omp":
        L = Y.shape[2]
        return np.stack([np.asarray(cscore.omp(A, Y[:, :, c].T, tol=tol / L)).T
                         for c in range(L)], axis=2)  # fmt: skip
    return np.asarray(model.decode(Y, tol=tol))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--decoder", choices=["omp", "somp", "lstm-cs"], default="somp")
    ap.add_argument("--model", default="mnist-m72", help="LSTM-CS model, and the A of all")
    ap.add_argument("--tuples", type=int, default=40, help="validation tuples (4 problems each)")
    ap.add_argument("--noise-problems", type=int, default=300)
    ap.add_argument("--levels", type=float, nargs="+", default=[np.inf, 0.0, 0.01, 0.05, 0.2])
    ap.add_argument("--sigma", type=float, nargs="+", default=[0.005, 0.01, 0.05])
    ap.add_argument("--k", type=int, nargs="+", default=[10, 15, 20, 25, 30])
    args = ap.parse_args()
    cscore.set_num_threads(1)
    model = cscore.pretrained(args.model)
    A = np.asarray(model.A)
    M, N = A.shape
    images, labels = load_mnist(args.data_dir / "images-idx3-ubyte.gz",
                                args.data_dir / "labels-idx1-ubyte.gz")  # fmt: skip
    tuples = mnist_tuples(labels, np.arange(5400, 6000))[: args.tuples]
    levels = [lv if lv > 0 else 1e-300 for lv in args.levels]
    rng = np.random.default_rng(7)
    print(f"{args.decoder} on the A of {args.model} ({M} x {N}); levels {args.levels}")
    print("false alarms on pure noise (fraction of vectors / problems with > 1 step):")
    for scale in (1e-3, 1.0, 1e3):
        Y = scale * rng.standard_normal((args.noise_problems, M, 4))
        cells = []
        for lv in levels:
            rrt.SIGNAL_ALPHA = lv
            cells.append(f"{np.mean(decode(args.decoder, A, Y, model)[1] > 1):.3f}")
        print(f"  noise x{scale:g}: " + " ".join(cells), flush=True)
    print("auto / oracle NMSE:")
    worst = np.zeros(len(levels))
    for sigma in args.sigma:
        for k in args.k:
            S = mnist_mmv_problems(images, tuples, k)
            Y, _ = measure(A, S, sigma, seed=100 + k)
            ref = oracle(args.decoder, A, Y, model, expected_noise_tol(M, 4, sigma))
            e_orc = float(np.nanmean(nmse_per_item(ref, S, zero="nan")))
            cells = []
            for i, lv in enumerate(levels):
                rrt.SIGNAL_ALPHA = lv
                e = float(np.nanmean(nmse_per_item(decode(args.decoder, A, Y, model)[0], S,
                                                   zero="nan")))  # fmt: skip
                worst[i] = max(worst[i], e / e_orc)
                cells.append(f"{e / e_orc:.3f}")
            print(f"  sigma {sigma} k {k} (oracle {e_orc:.4f}): " + " ".join(cells), flush=True)
    print("worst: " + " ".join(f"{lv:g}: {w:.3f}" for lv, w in zip(args.levels, worst)))


if __name__ == "__main__":
    main()
