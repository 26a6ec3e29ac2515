"""``cscore seq``: sequence models (thesis chapter 2).  ``cscore seq bench`` runs the
Table 2.1/2.2 grid on Japanese Vowels."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["HELP", "add_arguments", "run"]

HELP = "sequence models (ESN / R-DSN): 'cscore seq bench' reproduces Tables 2.1-2.2"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``seq`` subcommands (``bench``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``cscore seq`` parser, extended in place.
    """
    sub = parser.add_subparsers(dest="seq_command", metavar="SEQ_COMMAND")
    b = sub.add_parser("bench", help="ESN / learned ESN / R-DSN grid on Japanese Vowels")
    b.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 2000],
                   help="hidden-layer sizes of the grid (default 100 500 2000)")
    b.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="seeds, one run of every model and size each (default 0 1 2)")
    b.add_argument("--out", type=Path, default=Path("seq-bench"),
                   help="output folder (default seq-bench)")
    b.add_argument("--data", type=Path, default=None,
                   help="folder with JapaneseVowels_{TRAIN,TEST}.ts (default: the copy "
                        "shipped with cscore)")
    b.add_argument("--modules", type=int, default=3, help="deepest R-DSN (default 3)")
    b.add_argument("--quick", action="store_true",
                   help="tiny run for smoke tests: size 20, one seed, 2 epochs, 60/40 utterances")
    b.add_argument("--no-plot", action="store_true", help="skip the figure")


def run(args: argparse.Namespace) -> int:
    """Run the requested ``seq`` subcommand; return the exit code."""
    if getattr(args, "seq_command", None) != "bench":
        print("cscore seq: error: name an action: cscore seq bench [--quick] [--sizes ...] "
              "[--seeds ...] [--out DIR]  (cscore seq bench -h)", file=sys.stderr)
        return 2
    from ..seq.bench import run_bench

    if not args.quick:
        for n in args.sizes:
            if n < 1:
                raise ValueError(f"--sizes must be positive, got {n}")
    md = run_bench(args.out, args.sizes, args.seeds, data_path=args.data,
                   n_modules=args.modules, quick=args.quick, plot=not args.no_plot)
    print(md.read_text())
    fig = "" if args.no_plot else f", {args.out}/seq.png"
    print(f"wrote {args.out}/seq_runs.csv, {md}{fig}")
    return 0
