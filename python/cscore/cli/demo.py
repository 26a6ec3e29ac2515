"""``cscore demo``: decode the demo images with LSTM-CS, SOMP and OMP.

``cscore demo sensor`` decodes a real 14-channel EEG compressed per window
(SOMP, T-MSBL, LSTM-CS as a stream; the ``sensor`` extra, docs/sensor.md).

Argument parsing and printing only; the demos themselves are
:mod:`cscore.bench.demo` and :mod:`cscore.bench.sensor`.
"""

from __future__ import annotations

import argparse
import os

from ..bench.config import DEMO_MODEL
from .bench import USER_ERRORS, error

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("decode the embedded demo images with LSTM-CS, SOMP and OMP "
        "('cscore demo sensor': a real EEG recording)")

#: The defaults of the options that only the image demo reads.
_IMAGE_DEFAULTS = {"model": DEMO_MODEL, "k": 10, "sigma": 0.005, "seed": 0}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``cscore demo`` to ``p``.

    Parameters
    ----------
    p : argparse.ArgumentParser
    """
    p.add_argument("which", nargs="?", choices=("images", "sensor"), default="images",
                   help="images (default): the PyWavelets test images; sensor: a 14-channel "
                   "EEG recording compressed per window (needs cscore-decoders[sensor])")
    p.add_argument("--model", default=DEMO_MODEL,
                   help=f"model name or file, N = 64 (default {DEMO_MODEL})")
    p.add_argument("--k", type=int, default=10,
                   help="DCT coefficients kept per 8x8 block, 1..64 (default 10)")
    p.add_argument("--sigma", type=float, default=0.005, help="noise std (default 0.005)")
    p.add_argument("--seed", type=int, default=0, help="seed of the noise (default 0)")
    p.add_argument("--plot", help="save original vs reconstructed images (sensor: traces) "
                   "to this PNG (default: no figure)")
    p.add_argument("--M", type=int, nargs="+", default=None, metavar="M",
                   help="sensor: measurements per 64-sample window (default 32 24 16)")


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
    if args.which == "sensor":
        return _run_sensor(args)
    if args.M is not None:
        return error("demo", "--M is an option of 'cscore demo sensor'")
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
    from ..bench.report import format_duration

    print(f"{'decoder':<22}{'NMSE':>10}{'time/problem':>14}")

    def show(r: DemoRun) -> None:
        print(f"{r.label:<22}{r.nmse:>10.4f}{format_duration(r.seconds):>14}")

    result = run_demo(setup, on_run=show)
    print("NMSE = ||S_hat - S||_F / ||S||_F per problem, averaged: lower is better.  "
          "(tol): stopped at the noise threshold; (k): exactly k atoms per channel")
    if result.figure is not None:
        print(f"figure: {result.figure}")
    return 0


def _run_sensor(args: argparse.Namespace) -> int:
    """``cscore demo sensor``: print one line per decoder and M, then SNR per channel."""
    from ..bench.sensor import SENSOR_M, SensorRun, prepare_sensor, run_sensor
    from ..pipelines import stream

    given = [f"--{k}" for k, v in _IMAGE_DEFAULTS.items() if getattr(args, k) != v]
    if given:
        return error("demo", f"{', '.join(given)}: options of the image demo, not of "
                     "'cscore demo sensor'")
    try:
        setup = prepare_sensor(Ms=args.M or SENSOR_M, plot=args.plot)
    except USER_ERRORS as exc:
        if os.environ.get("CSCORE_TRACEBACK"):
            raise
        return error("demo", exc)
    rec = setup.recording
    print(f"demo sensor: {rec.source}: {len(rec.channels)}-channel EEG, {rec.fs:g} Hz, "
          f"{rec.seconds:g} s; decoding the test part (last {setup.test_seconds:g} s) in "
          f"windows of {setup.N} samples, binary sensing (2 ones per column), DCT, channels "
          "as MMV channels, as a stream")
    print(f"{'decoder':<9}{'M':>4}{'CR %':>7}{'NMSE':>9}{'SNR dB':>8}{'min..max':>13}"
          f"{'x real time':>13}")

    def show(r: SensorRun) -> None:
        snr = r.snr_db
        print(f"{r.decoder:<9}{r.M:>4}{r.compression_ratio:>7.1f}{r.nmse.mean():>9.4f}"
              f"{snr.mean():>8.1f}{f'{snr.min():.1f}..{snr.max():.1f}':>13}"
              f"{r.realtime_factor:>13.1f}")
        for w in r.warnings:
            print(f"    note: {w}")

    result = run_sensor(setup, stream, on_run=show)
    for s in result.skipped:
        print(f"skipped: {s}")
    for what, fmt in (("NMSE", "{:>12.4f}"), ("SNR (dB)", "{:>12.1f}")):
        if not result.runs:
            break
        print(f"{what} per channel (columns: decoder/M):")
        print(f"{'channel':<8}" + "".join(f"{f'{r.decoder}/{r.M}':>12}" for r in result.runs))
        for j, ch in enumerate(rec.channels):
            vals = [r.nmse[j] if what == "NMSE" else r.snr_db[j] for r in result.runs]
            print(f"{ch:<8}" + "".join(fmt.format(v) for v in vals))
    if result.figure is not None:
        print(f"figure: {result.figure}")
    return 0
