"""``cscore demo``: decode the demo images with LSTM-CS, SOMP and OMP.

Argument parsing and printing only; the demo itself is :mod:`cscore.bench.demo`.
"""

from __future__ import annotations

import argparse
import os

from ..bench.config import DEMO_MODEL
from .bench import USER_ERRORS, error

__all__ = ["HELP", "add_arguments", "run"]

HELP = "decode the embedded demo images with LSTM-CS, SOMP and OMP"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``cscore demo`` to ``p``.

    Parameters
    ----------
    p : argparse.ArgumentParser
    """
    p.add_argument("--model", default=DEMO_MODEL,
                   help=f"model name or file, N = 64 (default {DEMO_MODEL})")
    p.add_argument("--k", type=int, default=10,
                   help="DCT coefficients kept per 8x8 block, 1..64 (default 10)")
    p.add_argument("--sigma", type=float, default=0.005, help="noise std (default 0.005)")
    p.add_argument("--seed", type=int, default=0, help="seed of the noise (default 0)")
    p.add_argument("--plot", help="save original vs reconstructed images to this PNG "
                   "(default: no figure)")


def run(args: argparse.Namespace) -> int:
    """Run the demo and print one line per decoder run.

    Parameters
    ----------
    args : argparse.Namespace
        The options of :func:`add_arguments`.

    Returns
    -------
    int
        0, or 2 for bad settings (``cscore demo: error: ...``).
    """
    from ..bench.demo import DemoRun, prepare_demo, run_demo

    try:
        setup = prepare_demo(args.model, k=args.k, sigma=args.sigma, seed=args.seed,
                             plot=args.plot)
    except USER_ERRORS as exc:
        if os.environ.get("CSCORE_TRACEBACK"):
            raise
        return error("demo", exc)
    m = setup.model
    print(
        f"demo: {setup.n_problems} problems (M={m.M}, N={m.N}, L={m.L}) from the "
        f"PyWavelets test image(s), k={args.k} DCT coefficients per 8x8 block, "
        f"sigma={args.sigma}, model {args.model}"
    )
    print(f"{'decoder':<22}{'NMSE':>10}{'ms/problem':>13}")

    def show(r: DemoRun) -> None:
        print(f"{r.label:<22}{r.nmse:>10.4f}{r.seconds * 1e3:>13.3f}")

    result = run_demo(setup, on_run=show)
    if result.figure is not None:
        print(f"figure: {result.figure}")
    return 0
