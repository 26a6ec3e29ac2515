"""``cscore demo``: decode the demo images with LSTM-CS, SOMP and OMP."""

from __future__ import annotations

import argparse

import numpy as np

from ..bench.experiments import _nmse
from .bench import _DATA_N, DEMO_MODEL, _check_plot_path, _error, load_model

__all__ = ["HELP", "add_arguments", "run"]

HELP = "decode the embedded demo images with LSTM-CS, SOMP and OMP"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEMO_MODEL, help=f"model name or file (default {DEMO_MODEL})")
    p.add_argument("--k", type=int, default=10, help="DCT coefficients kept per 8x8 block")
    p.add_argument("--sigma", type=float, default=0.005, help="noise std (default 0.005)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", help="save original vs reconstructed images to this PNG")


def run(args: argparse.Namespace) -> int:
    import time

    from ..bench.decoders import run_decoder
    from ..datasets import load_demo

    if args.k < 1 or args.k > 64:
        return _error("demo", f"--k must be between 1 and 64 (coefficients of an 8x8 block), "
                      f"got {args.k}")
    if not np.isfinite(args.sigma) or args.sigma < 0:
        return _error("demo", f"--sigma must be finite and >= 0, got {args.sigma:g}")
    problem = _check_plot_path(args.plot)
    if problem:
        return _error("demo", problem)
    model = load_model(args.model)
    if model.N != _DATA_N["demo"]:
        return _error(
            "demo",
            f"the demo images use 8x8 DCT blocks (N = 64) but model {args.model} has "
            f"N = {model.N}; use a demo model such as {DEMO_MODEL}",
        )
    data = load_demo(args.k, M=model.M, L=model.L, A=model.A, sigma=args.sigma, seed=args.seed)
    S, Y = data.S_test, data.Y_test
    from ..datasets import expected_noise_tol

    tol = expected_noise_tol(model.M, model.L, args.sigma)
    print(
        f"demo: {S.shape[0]} problems (M={model.M}, N={model.N}, L={model.L}) from the "
        f"PyWavelets test image(s), k={args.k} DCT coefficients per 8x8 block, "
        f"sigma={args.sigma}, model {args.model}"
    )
    print(f"{'decoder':<22}{'NMSE':>10}{'ms/problem':>13}")
    recon: dict[str, np.ndarray] = {"original": data.to_images(S)}
    scores: dict[str, str] = {}
    for name, kw in (
        ("lstm-cs", {"tol": tol}),
        ("lstm-cs", {"k": args.k}),
        ("somp", {"tol": tol}),
        ("omp", {"k": args.k}),
    ):
        t0 = time.perf_counter()
        S_hat = run_decoder(name, model.A, Y, model=model, **kw)
        dt = (time.perf_counter() - t0) / S.shape[0]
        label = f"{name} ({'tol' if 'tol' in kw else 'k'})"
        nmse = _nmse(np.asarray(S_hat, dtype=np.float64), S)
        print(f"{label:<22}{nmse:>10.4f}{dt * 1e3:>13.3f}")
        recon[label] = data.to_images(S_hat)
        scores[label] = f"NMSE {nmse:.4f}"
    if args.plot:
        from ..bench.plots import plot_images

        print(f"figure: {plot_images(recon, args.plot, subtitles=scores)}")
    return 0
