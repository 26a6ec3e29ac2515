"""``cscore bench``: the paper's experiments (sparsity, noise, phase transition)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .decoders import DECODERS

__all__ = ["load_model"]

DEMO_MODEL = "demo-dct-m32"


def load_model(name_or_path: str) -> Any:
    """A model from a file path, or a pretrained model by name.

    Parameters
    ----------
    name_or_path : str
        A path ending in ``.npz`` or an existing file, else a name from
        :func:`cscore.list_pretrained`.

    Returns
    -------
    LSTMCS

    Raises
    ------
    FileNotFoundError
        No file at the path.
    ValueError
        Unknown pretrained name, or a malformed file (``ModelFileError``).
    """
    import cscore

    path = Path(name_or_path)
    if path.suffix == ".npz" or path.exists():
        from ..learned import load_model as load_any_model

        return load_any_model(path)  # LSTMCS, NWSOMP or CDSNCS by the file's arch
    return cscore.pretrained(name_or_path)


def _ints(text: str) -> list[int]:
    if ":" in text:
        a, b, *step = (int(t) for t in text.split(":"))
        return list(range(a, b + 1, step[0] if step else 1))
    return [int(t) for t in text.split(",") if t]


def _floats(text: str) -> list[float]:
    return [float(t) for t in text.split(",") if t]


def _error(command: str, message: str) -> int:
    """Print ``cscore <command>: error: message`` to stderr; return exit status 2."""
    print(f"cscore {command}: error: {message}", file=sys.stderr)
    return 2


def _check_plot_path(path: str | None) -> str | None:
    """An error message when a figure cannot be written to ``path``."""
    if path is None:
        return None
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        return f"cannot write the figure {path}: folder {parent} does not exist"
    return None


#: Atoms per problem of the image data sets (block side squared).
_DATA_N = {"demo": 64, "mnist": 144}


def _check_bench_args(args: argparse.Namespace, model: Any) -> str | None:
    """Return an error message for inconsistent ``cscore bench`` arguments, else None."""
    try:
        ks = _ints(args.k)
    except ValueError:
        return f"--k must be integers like '5,10,20' or '5:30:5', got {args.k!r}"
    try:
        sigmas = _floats(args.sigma)
    except ValueError:
        return f"--sigma must be numbers like '0.005' or '0,0.01', got {args.sigma!r}"
    if not ks:
        return f"--k gives no sparsity: {args.k!r}"
    if not sigmas:
        return f"--sigma gives no noise level: {args.sigma!r}"
    if args.problems < 1:
        return f"--problems must be >= 1, got {args.problems}"
    bad_stop = [r for r in args.stop.split(",") if r.strip() not in ("tol", "k")]
    if bad_stop or not args.stop.strip():
        return f"--stop takes 'tol', 'k' or 'tol,k', got {args.stop!r}"
    for s in sigmas:
        if not np.isfinite(s) or s < 0:
            return f"--sigma must be finite and >= 0, got {s:g}"
    if args.experiment == "phase":
        for name, v in (("--N", args.N), ("--L", args.L)):
            if v < 1:
                return f"{name} must be >= 1, got {v}"
        return None
    if args.data == "synthetic":
        M, N = model.A.shape if model is not None else (args.M, args.N)
        if model is not None and args.L != model.L:
            return f"--L {args.L} but model {args.model} decodes L = {model.L} channels"
        for name, v in (("--M", M), ("--N", N), ("--L", args.L)):
            if v < 1:
                return f"{name} must be >= 1, got {v}"
        if M > N:
            return f"--M ({M}) must not exceed --N ({N})"
    else:
        N = _DATA_N[args.data]
        if model is not None and model.N != N:
            return (
                f"--data {args.data} has N = {N} atoms per problem but model "
                f"{args.model} has N = {model.N} (it was trained for "
                f"{model.spec.dataset or 'other data'}); pick a matching model"
            )
    for k in ks:
        if not 1 <= k <= N:
            return f"--k must be between 1 and N = {N} (atoms per problem), got {k}"
    return None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "experiment",
        choices=["sparsity", "noise", "phase"],
        help="sparsity: error vs k; noise: error vs sigma; phase: phase transition",
    )
    p.add_argument(
        "--data",
        choices=["mnist", "demo", "synthetic"],
        default="synthetic",
        help="problem source (default: synthetic)",
    )
    p.add_argument("--data-dir", help="folder with the MNIST IDX files (for --data mnist)")
    p.add_argument(
        "--model",
        help="pretrained model name or .npz file (needed for lstm-cs; "
        "its A is used for mnist/demo problems)",
    )
    p.add_argument(
        "--decoders",
        default=None,
        help=f"comma-separated, from: {', '.join(DECODERS)} "
        "(default: lstm-cs,somp,omp with a model, else somp,omp,tmsbl)",
    )
    p.add_argument("--k", default="5:30:5", help="sparsities, '5,10,20' or '5:30:5' (default)")
    p.add_argument(
        "--sigma",
        default="0.005",
        help="noise std; a list for the noise experiment (default 0.005)",
    )
    p.add_argument(
        "--stop",
        default="tol,k",
        help="stopping rules for greedy decoders: tol (the paper's oracle "
        "threshold), k (true sparsity), or both (default)",
    )
    p.add_argument(
        "--problems",
        type=int,
        default=50,
        help="MNIST image tuples (4 problems each) or synthetic problems per point",
    )
    p.add_argument("--M", type=int, default=72, help="synthetic: measurements (default 72)")
    p.add_argument("--N", type=int, default=144, help="synthetic: atoms (default 144)")
    p.add_argument("--L", type=int, default=4, help="synthetic: channels (default 4)")
    p.add_argument(
        "--independent",
        action="store_true",
        help="synthetic: one support per channel instead of a joint one",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="bench-out", help="output folder for JSON and PNG")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("--no-plot", action="store_true", help="skip the figure")


def run(args: argparse.Namespace) -> int:
    from . import experiments as ex

    model: Any = load_model(args.model) if args.model else None
    problem = _check_bench_args(args, model)
    if problem:
        return _error("bench", problem)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.decoders:
        decoders = [d.strip() for d in args.decoders.split(",") if d.strip()]
    else:
        learned = {"nwsomp": "nwsomp", "cdsn": "cdsn-cs"}.get(getattr(model, "ARCH", ""),
                                                               "lstm-cs")
        decoders = [learned, "somp", "omp"] if model is not None else ["somp", "omp", "tmsbl"]
    unknown = [d for d in decoders if d not in DECODERS]
    if unknown:
        return _error("bench", f"unknown decoder(s) {unknown}; known: {', '.join(DECODERS)}")
    for d in ("lstm-cs", "nwsomp", "cdsn-cs"):
        if d in decoders and model is None:
            return _error("bench", f"{d} needs --model (see `cscore models`)")
    progress = not args.no_progress
    stop = [s.strip() for s in args.stop.split(",") if s.strip()]

    if args.experiment == "phase":
        pt = ex.phase_transition(
            args.N,
            np.linspace(0.1, 0.9, 9).tolist(),
            np.linspace(0.05, 0.5, 10).tolist(),
            [d for d in decoders if d not in ("lstm-cs", "nwsomp", "cdsn-cs")],
            L=args.L,
            n_trials=args.problems,
            joint=not args.independent,
            seed=args.seed,
            progress=progress,
        )
        (out / "phase.json").write_text(json.dumps(pt, indent=1))
        if not args.no_plot:
            from .plots import plot_phase_transition

            print(f"figure: {plot_phase_transition(pt, out / 'phase.png')}")
        print(f"results: {out / 'phase.json'}")
        return 0

    if args.data in ("mnist", "demo") and model is None:
        return _error("bench", f"--data {args.data} needs --model (its sensing matrix is used)")
    if args.data == "mnist" and not args.data_dir:
        return _error("bench", "--data mnist needs --data-dir")
    if args.data == "synthetic" and model is not None:
        args.M, args.N = model.A.shape

    def make(k: int, sigma: float) -> ex.ProblemSet:
        if args.data == "mnist":
            return ex.mnist_problems(
                args.data_dir, model.A, k, sigma=sigma, seed=args.seed, n_tuples=args.problems
            )
        if args.data == "demo":
            return ex.demo_problems(model.A, k, sigma=sigma, seed=args.seed)
        ps = ex.synthetic_problems(
            args.M,
            args.N,
            args.L,
            k,
            n_problems=args.problems,
            sigma=sigma,
            joint=not args.independent,
            seed=args.seed,
        )
        if model is not None:  # measure with the model's matrix
            from ..datasets import measure

            ps.A = model.A
            ps.Y, _ = measure(model.A, ps.S, sigma, args.seed + 1)
        return ps

    ks, sigmas = _ints(args.k), _floats(args.sigma)
    if args.experiment == "sparsity":
        res = ex.sweep(
            "k",
            ks,
            lambda k: make(k, sigmas[0]),
            decoders,
            stop=stop,
            model=model,
            progress=progress,
        )
    else:
        res = ex.sweep(
            "sigma",
            sigmas,
            lambda s: make(ks[0], s),
            decoders,
            stop=stop,
            model=model,
            progress=progress,
        )
    res.info.update(
        {"data": args.data, "model": args.model, "seed": args.seed, "problems": args.problems}
    )
    name = f"{args.experiment}-{args.data}"
    res.save(out / f"{name}.json")
    print("NMSE (mean over problems):")
    print(res.table("nmse"))
    print("\nseconds per problem:")
    print(res.table("seconds"))
    if not args.no_plot:
        from .plots import plot_sweep

        print(f"figure: {plot_sweep(res, out / f'{name}.png', title=name)}")
    print(f"results: {out / f'{name}.json'}")
    return 0


HELP = "run the paper's experiments and plot them"
