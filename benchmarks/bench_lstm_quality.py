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

The OMP / SOMP baselines here are small NumPy implementations (the package's
compiled ones are used instead when ``cscore.omp`` / ``cscore.somp`` exist).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import cscore
from cscore.datasets import (
    expected_noise_tol,
    load_mnist,
    measure,
    mnist_mmv_problems,
    mnist_tuples,
    problems_to_images,
)
from cscore.lstm_cs.model import load_model_file
from cscore.lstm_cs.reference import reference_decode
from cscore.metrics import nmse_per_item

ROOT = Path(__file__).resolve().parents[1]
TEST_IDX = np.arange(6000, 8000)


def _orth_step(Q: np.ndarray, t: int, a: np.ndarray) -> np.ndarray:
    """Orthonormalize a (C, M) against Q[:, :, :t] (twice), return unit vectors."""
    for _ in range(2):
        if t:
            Qt = Q[:, :, :t]
            a = a - np.einsum("cmt,ct->cm", Qt, np.einsum("cmt,cm->ct", Qt, a))
    n = np.linalg.norm(a, axis=1, keepdims=True)
    return np.divide(a, n, out=np.zeros_like(a), where=n > 1e-12)


def _lstsq_on(A: np.ndarray, y: np.ndarray, supp: list[np.ndarray]) -> np.ndarray:
    out = np.zeros((len(supp), A.shape[1]))
    for i, s in enumerate(supp):
        if len(s):
            out[i, s] = np.linalg.lstsq(A[:, s], y[i], rcond=None)[0]
    return out


def omp_np(A: np.ndarray, Y: np.ndarray, k: int) -> np.ndarray:
    """OMP per channel, k atoms; Y (B, M, L) -> S (B, N, L)."""
    B, M, L = Y.shape
    N = A.shape[1]
    y = Y.transpose(0, 2, 1).reshape(-1, M)
    C = y.shape[0]
    r = y.copy()
    Q = np.zeros((C, M, k))
    sel = np.zeros((C, k), dtype=np.int64)
    used = np.zeros((C, N), dtype=bool)
    for t in range(k):
        corr = np.abs(r @ A)
        corr[used] = -1.0
        idx = corr.argmax(axis=1)
        sel[:, t] = idx
        used[np.arange(C), idx] = True
        q = _orth_step(Q, t, A[:, idx].T.copy())
        Q[:, :, t] = q
        r -= q * np.einsum("cm,cm->c", q, r)[:, None]
    As = A[:, sel].transpose(1, 0, 2)  # (C, M, k)
    G = np.einsum("cmk,cml->ckl", As, As)
    rhs = np.einsum("cmk,cm->ck", As, y)
    x = np.linalg.solve(G, rhs[..., None])[..., 0]
    S = np.zeros((C, N))
    np.put_along_axis(S, sel, x, axis=1)
    return S.reshape(B, L, N).transpose(0, 2, 1)


def somp_np(A: np.ndarray, Y: np.ndarray, tol: float, max_iter: int | None = None) -> np.ndarray:
    """SOMP (joint support), stop once sum_j ||r_j|| <= tol; Y (B, M, L) -> S (B, N, L)."""
    B, M, L = Y.shape
    N = A.shape[1]
    cap = min(M, N) if max_iter is None else max_iter
    R = Y.copy()
    Q = np.zeros((B, M, cap))
    used = np.zeros((B, N), dtype=bool)
    supp: list[list[int]] = [[] for _ in range(B)]
    active = np.ones(B, dtype=bool)
    for t in range(cap):
        active &= np.linalg.norm(R, axis=1).sum(axis=1) > tol
        if not active.any():
            break
        ids = np.flatnonzero(active)
        score = np.linalg.norm(np.einsum("mn,bml->bnl", A, R[ids]), axis=2)
        score[used[ids]] = -1.0
        idx = score.argmax(axis=1)
        used[ids, idx] = True
        for b, i in zip(ids, idx):
            supp[b].append(int(i))
        q = _orth_step(Q[ids], t, A[:, idx].T.copy())
        Q[ids, :, t] = q
        R[ids] -= q[:, :, None] * np.einsum("bm,bml->bl", q, R[ids])[:, None, :]
    S = np.zeros((B, N, L))
    for b in range(B):
        if supp[b]:
            S[b, supp[b]] = np.linalg.lstsq(A[:, supp[b]], Y[b], rcond=None)[0]
    return S


def _sig(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def lstm_cs_batched(weights, A: np.ndarray, Y: np.ndarray, n_nonzero: int | None,
                    tol: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 (exclude-selected argmax), vectorized over problems.

    Same decisions as ``cscore.lstm_cs.reference.reference_decode`` (checked
    on a subset at run time), but the least-squares residuals come from an
    incremental Gram-Schmidt basis per (problem, channel) instead of a
    per-problem ``lstsq``, so a batch of hundreds of problems decodes in
    seconds.
    """
    B, M, L = Y.shape
    N = A.shape[1]
    cap = min(M, N)
    k_max = cap if n_nonzero is None else min(n_nonzero, cap)
    W, Rw, b = (np.asarray(weights.W, np.float64), np.asarray(weights.R, np.float64),
                np.asarray(weights.b, np.float64))
    U, c_out = np.asarray(weights.U, np.float64), np.asarray(weights.c_out, np.float64)
    H = weights.n_cells
    r = Y.transpose(0, 2, 1).copy()  # (B, L, M)
    Q = np.zeros((B, L, M, k_max))
    used = np.zeros((B, L, N), dtype=bool)
    sel = np.zeros((B, L, k_max), dtype=np.int64)
    n_iter = np.zeros(B, dtype=np.int64)
    active = np.ones(B, dtype=bool)
    for it in range(k_max):
        if tol is not None:
            active &= np.linalg.norm(r, axis=2).sum(axis=1) > tol
        ids = np.flatnonzero(active)
        if ids.size == 0:
            break
        v = np.zeros((ids.size, H))
        c = np.zeros((ids.size, H))
        for j in range(L):
            rj = r[ids, j]
            scale = np.abs(rj).max(axis=1, keepdims=True)
            x = np.divide(rj, scale, out=np.zeros_like(rj), where=scale > 0)
            g = x @ W.T + v @ Rw.T + b
            if weights.cell == "paper":
                gi, gg, go = np.split(g, 3, axis=1)
                c = c + _sig(gi) * np.tanh(gg)
            else:
                gi, gf, gg, go = np.split(g, 4, axis=1)
                c = _sig(gf) * c + _sig(gi) * np.tanh(gg)
            v = _sig(go) * np.tanh(c)
            z = v @ U.T + c_out
            z[used[ids, j]] = -np.inf
            idx = z.argmax(axis=1)
            used[ids, j, idx] = True
            sel[ids, j, it] = idx
            Qj = Q[ids, j]
            q = _orth_step(Qj, it, A[:, idx].T.copy())
            Q[ids, j, :, it] = q
            r[ids, j] -= q * np.einsum("cm,cm->c", q, rj)[:, None]
        n_iter[ids] += 1
    S = np.zeros((B, N, L))
    for n in np.unique(n_iter):
        if n == 0:
            continue
        grp = np.flatnonzero(n_iter == n)
        supp = sel[grp, :, :n]  # (G, L, n)
        As = A[:, supp].transpose(1, 2, 0, 3)  # (G, L, M, n)
        y = Y[grp].transpose(0, 2, 1)  # (G, L, M)
        G = np.einsum("glmi,glmj->glij", As, As)
        x = np.linalg.solve(G, np.einsum("glmi,glm->gli", As, y)[..., None])[..., 0]
        out = np.zeros((grp.size, L, N))
        np.put_along_axis(out, supp, x, axis=2)
        S[grp] = out.transpose(0, 2, 1)
    return S, n_iter


def _decoders(weights, A, spec):
    """LSTM-CS decode functions: the compiled decoder when merged, else the reference."""
    if hasattr(cscore, "LSTMCS"):
        model = cscore.LSTMCS(weights, A, spec)

        def run(Y, n_nonzero, tol):
            return np.asarray(model.decode(Y, n_nonzero=n_nonzero, tol=tol)), "cscore.LSTMCS"
    else:

        def run(Y, n_nonzero, tol):
            S, _ = lstm_cs_batched(weights, A, Y, n_nonzero, tol)
            return S, "batched NumPy Algorithm 2 (checked against reference_decode)"

    omp = (lambda Y, k: np.asarray(cscore.omp(A, Y, k))) if hasattr(cscore, "omp") else (
        lambda Y, k: omp_np(A, Y, k))
    somp = (lambda Y, tol: np.asarray(cscore.somp(A, Y, tol=tol))) if hasattr(
        cscore, "somp") else (lambda Y, tol: somp_np(A, Y, tol))
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
    # the batched decoder must take the reference decoder's decisions
    S0 = problems(15)[:20]
    Y0, _ = measure(A, S0, args.sigma, seed=args.seed)
    for nn, tt in ((15, None), (None, tol)):
        ref, ref_it = reference_decode(weights, A, Y0, n_nonzero=nn, tol=tt)
        got, got_it = lstm_cs_batched(weights, A, Y0, nn, tt)
        same = float(np.mean((ref != 0) == (got != 0)))
        print(f"check vs reference_decode (n_nonzero={nn}, tol={tt}): support agreement "
              f"{same:.4f}, iterations equal {bool((ref_it == got_it).all())}, max |diff| "
              f"{np.abs(ref - got).max():.2e}", flush=True)
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
