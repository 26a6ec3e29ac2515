"""``cscore bench``: the registered experiments (sparsity, noise, phase, bg, scaling, ...).

Argument parsing and printing only: the experiments, their help and their own
options come from the experiment registry (:mod:`cscore.bench.registry`); the
options become a :class:`cscore.bench.config.BenchConfig`, and
:func:`cscore.bench.runner.run_bench` checks, runs and writes the experiment.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..bench.config import (
    DATA_SOURCES,
    DEFAULT_K,
    DEFAULT_OUT_ROOT,
    BenchConfig,
    parse_floats,
    parse_ints,
)
from ..bench.registry import experiment_names, get_experiment
from ..decoders import decoder_names

__all__ = ["HELP", "add_arguments", "error", "run"]

HELP = "run the paper's experiments and plot them"

#: Errors of the input or the environment: reported as ``cscore bench: error: ...``
#: without a traceback (``CSCORE_TRACEBACK=1`` shows it).  Anything else is a bug.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError)


def error(command: str, exc: BaseException | str) -> int:
    """Print ``cscore <command>: error: <message>`` to stderr; return exit status 2.

    Parameters
    ----------
    command : str
        The subcommand (``"bench"``, ``"demo"``).
    exc : exception or str
        What went wrong.

    Returns
    -------
    int
        2.
    """
    if isinstance(exc, ImportError) and exc.name:
        msg = f"{exc} (is the optional dependency {exc.name!r} installed?)"
    else:
        msg = str(exc) or type(exc).__name__
    print(f"cscore {command}: error: {msg}", file=sys.stderr)
    return 2


def _add_data_arguments(p: argparse.ArgumentParser) -> None:
    names = experiment_names()
    p.add_argument("experiment", choices=names,
                   help="; ".join(f"{n}: {get_experiment(n).help}" for n in names))
    p.add_argument("--data", choices=list(DATA_SOURCES), default="synthetic",
                   help="problem source: MNIST digits, the bundled demo images (no path "
                   "needed), a folder of pictures, or random problems (default: synthetic)")
    p.add_argument("--data-dir", help="folder with the MNIST IDX files (for --data mnist; "
                   "no default)")
    p.add_argument("--first-index", type=int, default=6000,
                   help="mnist: use digits from this index on (default 6000: the shipped "
                   "models trained on MNIST t10k images before 6000; use 0 for your own or "
                   "held-out files)")
    p.add_argument("--images-dir", help="folder of pictures (for --data images; no default)")
    p.add_argument("--transform", choices=["dct", "haar"], default=None,
                   help="images: sparsifying transform (default: the model's, else dct)")
    p.add_argument("--image-size", type=int, default=64,
                   help="images: resized side (default 64)")
    p.add_argument("--M", type=int, default=None,
                   help="measurements without a model: synthetic (default 72), images "
                   "(default 25, as in the paper's natural-image experiments)")
    p.add_argument("--N", type=int, default=None,
                   help="synthetic: atoms (default 144; bg: 500, the AMP/LAMP papers')")
    p.add_argument("--kappa", type=float, default=1.0,
                   help="bg: condition number of A (default 1.0: i.i.d. Gaussian; the papers' "
                        "second case is 15)")
    p.add_argument("--L", type=int, default=4, help="synthetic: channels (default 4)")
    p.add_argument("--independent", action="store_true",
                   help="synthetic: one support per channel instead of a joint one "
                   "(default: joint)")


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="a sub-minute run: 3 sparsities or noise levels, few problems, "
                   "coarse phase grid (default: the full sweep)")
    p.add_argument("--train-models", action="store_true",
                   help="phase --data mnist: train a small LSTM-CS model per M (PyTorch; "
                   "cached; default: off)")
    p.add_argument("--model-cache",
                   help="folder for --train-models (default $CSCORE_CACHE or ~/.cache/cscore)")
    p.add_argument("--model", action="append", default=None,
                   help="pretrained model name or .npz file (needed by the model "
                   "decoders; its A is used for mnist/demo problems; default: none, "
                   "demo-dct-m32 for --data demo). sparsity/noise: several models, "
                   "comma-separated or repeated, sharing one A: each model decoder runs "
                   "once per model of its class, labelled decoder[model]")
    p.add_argument("--decoders", default=None,
                   help=f"comma-separated, from: {', '.join(decoder_names())} (default: the "
                   "model's own decoder (each model's, with several), somp, omp with a "
                   "model, else somp, omp, tmsbl)")
    p.add_argument("--k", default=None,
                   help=f"sparsities, '5,10,20' or '5:30:5' (default {DEFAULT_K})")
    p.add_argument("--sigma", default="0.005",
                   help="noise std; a list for the noise experiment (default 0.005)")
    p.add_argument("--stop", default="tol,auto,k",
                   help="stopping rules for greedy decoders, comma-separated: tol (the "
                   "paper's threshold with the true noise level, an oracle), auto (the same "
                   "rule on a noise level estimated from the measurements), k (true "
                   "sparsity); default tol,auto,k")
    p.add_argument("--problems", type=int, default=50,
                   help="MNIST image tuples (4 problems each) or synthetic problems per "
                   "point (default 50)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the problems, sensing matrices and noise (default 0)")
    p.add_argument("--device", default=None,
                   help="torch device ('cuda', 'cuda:1', 'cpu') for the decoders that "
                   "take device= (LSTM-CS, BLSTM-CS, OMP, SOMP, LISTA, LAMP, AMP, VAMP; needs "
                   "torch; OMP/SOMP's tol='auto' stays compiled); default: none, all compiled")


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None,
                   help="output folder: results.csv, JSON, PNG and report.md (default "
                   f"{DEFAULT_OUT_ROOT}/<experiment>-<data>, e.g. "
                   f"{DEFAULT_OUT_ROOT}/sparsity-synthetic)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the results of an earlier run in the output folder "
                   "(default: refuse)")
    p.add_argument("--no-progress", action="store_true",
                   help="hide progress bars (default: shown)")
    p.add_argument("--no-plot", action="store_true", help="skip the figure (default: drawn)")


def _add_experiment_arguments(p: argparse.ArgumentParser) -> None:
    """One group per experiment with options of its own (from its registration)."""
    seen: set[str] = set()
    for name in experiment_names():
        opts = [o for o in get_experiment(name).options if o.name not in seen]
        if not opts:
            continue
        g = p.add_argument_group(name, f"options of the {name} experiment (docs/bench.md)")
        for o in opts:
            g.add_argument(o.flag, dest=f"opt_{o.name}", metavar=o.name.upper(), type=o.type,
                           default=None, help=f"{name}: {o.help}")
            seen.add(o.name)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``cscore bench`` to ``p``.

    Parameters
    ----------
    p : argparse.ArgumentParser
    """
    _add_data_arguments(p)
    _add_run_arguments(p)
    _add_output_arguments(p)
    _add_experiment_arguments(p)


def _names(text: str | None) -> tuple[str, ...] | None:
    if text is None or not text.strip():
        return None
    return tuple(d.strip() for d in text.split(",") if d.strip())


def _model_names(values: list[str] | str | None) -> tuple[str, ...]:
    """The ``--model`` values (repeated, comma-separated) as one tuple of names.

    A value naming an existing file is kept whole (a file name may hold a comma).
    """
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    parts = [[v] if Path(v).is_file() else v.split(",") for v in values]
    return tuple(n.strip() for p in parts for n in p if n.strip())


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """The run's :class:`~cscore.bench.config.BenchConfig` from the parsed options.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    BenchConfig

    Raises
    ------
    BenchConfigError
        ``--k`` or ``--sigma`` that are not numbers.
    """
    argv = getattr(args, "_argv", None)
    models = _model_names(args.model)
    options = {key[4:]: v for key, v in vars(args).items()
               if key.startswith("opt_") and v is not None}  # another's: refused by the check
    return BenchConfig(
        experiment=args.experiment, data=args.data, data_dir=args.data_dir,
        first_index=args.first_index, images_dir=args.images_dir, transform=args.transform,
        image_size=args.image_size, quick=args.quick, train_models=args.train_models,
        model_cache=args.model_cache, model=models[0] if models else None,
        models=models if len(models) > 1 else None, decoders=_names(args.decoders),
        k=parse_ints("--k", args.k) if args.k is not None else None,
        sigma=parse_floats("--sigma", args.sigma),
        stop=tuple(s.strip() for s in args.stop.split(",") if s.strip()),
        problems=args.problems, M=args.M, N=args.N, L=args.L, independent=args.independent,
        kappa=args.kappa,
        seed=args.seed, out=args.out, overwrite=args.overwrite,
        progress=not args.no_progress, plot=not args.no_plot,
        argv=tuple(argv) if argv is not None else None,
        device=getattr(args, "device", None), options=options,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Run ``cscore bench`` and print the tables and where the results are.

    Parameters
    ----------
    args : argparse.Namespace
        The options of :func:`add_arguments`.

    Returns
    -------
    int
        0, or 2 for bad settings, paths or data (``cscore bench: error: ...``).
    """
    from ..bench.runner import run_bench

    try:
        outcome = run_bench(config_from_args(args), log=print)
    except USER_ERRORS as exc:
        if os.environ.get("CSCORE_TRACEBACK"):
            raise
        return error("bench", exc)
    for i, (caption, table) in enumerate(outcome.tables):
        if i:
            print()
        print(caption)
        print(table)
    for f in outcome.figures:
        print(f"figure: {f}")
    files = [f for f in (outcome.json_path, outcome.csv_path) if f is not None]
    print(f"results: {', '.join(map(str, files))} ({outcome.n_rows} rows)")
    print(f"report: {outcome.report_path}")
    tally = outcome.warnings
    if tally.total:
        print(f"warnings caught during the run (per decoder, also in the report): "
              f"{tally.summary()}")
        for label, message in tally.first.items():
            print(f"  {label}: {message}")
    return 0
