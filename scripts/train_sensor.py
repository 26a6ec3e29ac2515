#!/usr/bin/env python
"""Train the LSTM-CS models of ``cscore demo sensor`` (docs/sensor.md).

One model per compression ratio, for the 14-channel EEG bundled in the spkit
wheel (:func:`cscore.datasets.sensor.load_eeg14`): windows of N = 64 samples
(0.5 s) of the 14 channels are one MMV problem (L = 14), measured by the sparse
binary matrix ``binary_sensing_matrix(M, 64, d=2, seed=0)`` and sparse in the
DCT (``A = Phi D^T``).  Training uses only the first 10 s of the recording
(overlapping windows, stride 2, each also with its channels in 3 random orders
and with both signs: 609 x 8 = 4872 problems); early stopping watches the
validation part (10-12 s, windows with stride 8).  The test part (12-16 s) is
never seen here.  Needs the ``train`` and ``sensor`` extras::

    PYTHONPATH=python python scripts/train_sensor.py --out python/cscore/models \\
        --threads 1 --max-cpu-seconds 150

writes ``sensor-eeg14-dct-m32.npz``, ``-m24`` and ``-m16`` (each ~0.3 MB: 128
cells, float32 weights).  ``--validate`` prints, for each model, the validation
NMSE of LSTM-CS for a few ``n_nonzero`` (the demo uses ``M // 4``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from cscore.datasets.sensor import (
    binary_sensing_matrix,
    dct_matrix,
    load_eeg14,
    split_recording,
    windows,
)
from cscore.problem import ProblemSpec

N = 64
D_ONES = 2
SEED = 0


def training_problems(X: np.ndarray, stride: int, n_perm: int, seed: int) -> np.ndarray:
    """DCT ground truths (P, N, L): windows, their channel permutations and negatives."""
    W = windows(X, N, stride)  # (B, N, C)
    rng = np.random.default_rng(seed)
    parts = [W]
    for _ in range(n_perm):
        parts.append(W[:, :, rng.permutation(W.shape[2])])
    W = np.concatenate(parts)
    W = np.concatenate([W, -W])
    return np.einsum("kn,bnl->bkl", dct_matrix(N), W)


def nmse_of(model: object, X: np.ndarray, k: int) -> float:
    """Mean per-channel NMSE (time domain) of LSTM-CS on consecutive windows of ``X``."""
    W = windows(X, N)
    A = model.A  # type: ignore[attr-defined]
    Phi_y = np.einsum("mn,bnl->bml", A, np.einsum("kn,bnl->bkl", dct_matrix(N), W))
    S = model.decode(Phi_y, n_nonzero=k)  # type: ignore[attr-defined]
    Xh = np.einsum("kn,bkl->bnl", dct_matrix(N), S)
    return float(np.mean(((Xh - W) ** 2).sum((0, 1)) / (W**2).sum((0, 1))))


def main(argv: list[str] | None = None) -> int:
    """Train (and optionally validate) the sensor models; return the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="python/cscore/models", help="folder of the model files")
    p.add_argument("--M", type=int, nargs="+", default=[32, 24, 16], help="measurements")
    p.add_argument("--cells", type=int, default=128)
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--patience", type=int, default=5)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--sigma", type=float, default=0.005,
                   help="training noise std (the signal is scaled to unit std)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-cpu-seconds", type=float, default=150.0)
    p.add_argument("--validate", action="store_true", help="print validation NMSE per k")
    args = p.parse_args(argv)

    from cscore.training import train_lstm_model

    rec = load_eeg14()
    parts = split_recording(rec)
    scale = float(parts["train"].std())
    S_train = training_problems(parts["train"] / scale, 2, 3, SEED)
    S_val = np.einsum("kn,bnl->bkl", dct_matrix(N), windows(parts["val"] / scale, N, 8))
    out = Path(args.out)
    for M in args.M:
        Phi = binary_sensing_matrix(M, N, D_ONES, SEED)
        A = Phi @ dct_matrix(N).T
        spec = ProblemSpec(M=M, N=N, L=len(rec.channels), transform="dct",
                           dataset="spkit EEG16SecData (PhyAAt), 14-ch EEG, 0-10 s")
        info = {
            "description": f"LSTM-CS for the 14-channel EEG of cscore demo sensor: windows of "
                           f"64 samples, DCT, binary sensing (2 ones per column), M={M}",
            "sensing": f"binary_sensing_matrix({M}, {N}, d={D_ONES}, seed={SEED}) @ "
                       f"dct_matrix({N}).T",
            "recording": rec.source,
            "split_seconds": {"train": [0, 10], "val": [10, 12], "test": [12, 16]},
            "recipe": "scripts/train_sensor.py",
        }
        t0 = time.perf_counter()
        model, res = train_lstm_model(
            S_train, S_val, A, spec, n_steps=max(1, M // 2), sigma=args.sigma, info=info,
            n_cells=args.cells, lr=args.lr, max_epochs=args.epochs, patience=args.patience,
            n_threads=args.threads, max_cpu_seconds=args.max_cpu_seconds, progress=False,
        )
        path = out / f"sensor-eeg14-dct-m{M}.npz"
        model.save(path)
        print(f"M={M}: best epoch {res.best_epoch}, {len(res.history)} epochs, "
              f"{time.perf_counter() - t0:.0f} s, val loss {res.history[-1]['val_loss']:.3f}"
              f" -> {path} ({path.stat().st_size / 1e3:.0f} kB)", flush=True)
        if args.validate:
            for k in sorted({max(1, M // 8), max(1, M // 4), max(1, 3 * M // 8), M // 2}):
                print(f"    n_nonzero={k}: validation NMSE "
                      f"{nmse_of(model, parts['val'] / scale, k):.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
