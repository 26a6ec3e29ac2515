"""``cscore bench``: the paper's experiments (sparsity, noise, phase transition)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..decoders import decoder_names

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
        from ..models import load_model as load_any_model

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
        ks = _ints(args.k or "5:30:5")
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
    bad_stop = [r for r in args.stop.split(",") if r.strip() not in ("tol", "auto", "k")]
    if bad_stop or not args.stop.strip():
        return f"--stop takes a list of tol, auto and k (like 'tol,auto'), got {args.stop!r}"
    if args.first_index < 0:
        return f"--first-index must be >= 0, got {args.first_index}"
    if args.image_size < 1:
        return f"--image-size must be >= 1, got {args.image_size}"
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
    elif args.data == "images":
        N = model.N if model is not None else 64
        b = math.isqrt(N)
        if b * b != N:
            return f"model {args.model} has N = {N}, not a square block of pixels"
        if args.image_size % b:
            return f"--image-size {args.image_size} must be a multiple of the block side {b}"
        if model is None and not 1 <= args.M <= N:
            return f"--M must be between 1 and N = {N} (8x8 blocks), got {args.M}"
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
        choices=["mnist", "demo", "images", "synthetic"],
        default="synthetic",
        help="problem source: MNIST digits, the bundled demo images (no path needed), "
        "a folder of pictures, or random problems (default: synthetic)",
    )
    p.add_argument("--data-dir", help="folder with the MNIST IDX files (for --data mnist)")
    p.add_argument(
        "--first-index",
        type=int,
        default=6000,
        help="mnist: use digits from this index on (default 6000: the shipped models "
        "trained on MNIST t10k images before 6000; use 0 for your own or held-out files)",
    )
    p.add_argument("--images-dir", help="folder of pictures (for --data images)")
    p.add_argument(
        "--transform",
        choices=["dct", "haar"],
        default=None,
        help="images: sparsifying transform (default: the model's, else dct)",
    )
    p.add_argument(
        "--image-size", type=int, default=64, help="images: resized side (default 64)"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a sub-minute run: 3 sparsities or noise levels, few problems, coarse phase grid",
    )
    p.add_argument(
        "--train-models",
        action="store_true",
        help="phase --data mnist: train a small LSTM-CS model per M (PyTorch; cached)",
    )
    p.add_argument("--model-cache", help="folder for --train-models (default ~/.cache/cscore)")
    p.add_argument(
        "--model",
        help="pretrained model name or .npz file (needed for lstm-cs; "
        "its A is used for mnist/demo problems)",
    )
    p.add_argument(
        "--decoders",
        default=None,
        help=f"comma-separated, from: {', '.join(decoder_names())} "
        "(default: lstm-cs,somp,omp with a model, else somp,omp,tmsbl)",
    )
    p.add_argument(
        "--k", default=None, help="sparsities, '5,10,20' or '5:30:5' (default 5:30:5)"
    )
    p.add_argument(
        "--sigma",
        default="0.005",
        help="noise std; a list for the noise experiment (default 0.005)",
    )
    p.add_argument(
        "--stop",
        default="tol,auto,k",
        help="stopping rules for greedy decoders, comma-separated: tol (the paper's "
        "threshold with the true noise level, an oracle), auto (the same rule on a noise "
        "level estimated from the measurements), k (true sparsity); default tol,auto,k",
    )
    p.add_argument(
        "--problems",
        type=int,
        default=50,
        help="MNIST image tuples (4 problems each) or synthetic problems per point",
    )
    p.add_argument(
        "--M",
        type=int,
        default=None,
        help="measurements without a model: synthetic (default 72), images (default 25, "
        "as in the paper's natural-image experiments)",
    )
    p.add_argument("--N", type=int, default=144, help="synthetic: atoms (default 144)")
    p.add_argument("--L", type=int, default=4, help="synthetic: channels (default 4)")
    p.add_argument(
        "--independent",
        action="store_true",
        help="synthetic: one support per channel instead of a joint one",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out",
        default="bench-out",
        help="output folder: results.csv, JSON, PNG and report.md (default bench-out)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("--no-plot", action="store_true", help="skip the figure")


def _pick3(values: list[Any]) -> list[Any]:
    """First, middle and last of ``values`` (for --quick)."""
    if len(values) <= 3:
        return values
    return [values[0], values[len(values) // 2], values[-1]]


def _finish_run(
    out: Path,
    name: str,
    title: str,
    rows: list[dict[str, Any]],
    by: tuple[str, ...],
    figures: list[Path],
    sections: list[tuple[str, str]],
    args: argparse.Namespace,
    t0: float,
) -> None:
    """Write results.csv and report.md; print where they are."""
    import time

    from ..bench.report import summary_table, write_csv, write_report

    csv_path = write_csv(rows, out / "results.csv")
    sections = [("Summary (NMSE per problem)", summary_table(rows, by)), *sections]
    rep = write_report(out, title=title, seed=args.seed, sections=sections, figures=figures,
                       argv=getattr(args, "_argv", None),
                       seconds=time.perf_counter() - t0)  # fmt: skip
    for f in figures:
        print(f"figure: {f}")
    print(f"results: {out / (name + '.json')}, {csv_path} ({len(rows)} rows)")
    print(f"report: {rep}")


def _run_phase(args: argparse.Namespace, decoders: list[str], out: Path, t0: float) -> int:
    from ..bench import experiments as ex

    progress = not args.no_progress
    if args.data == "mnist":
        from ..bench.phase_mnist import FIG48_RATIOS, mnist_phase, small_mnist_model

        if not args.data_dir:
            return _error("bench", "--data mnist needs --data-dir")
        ratios: list[float] = list(FIG48_RATIOS)
        rhos = [round(0.05 * i, 2) for i in range(1, 21)]
        n_tuples = args.problems
        if args.quick:
            ratios, rhos, n_tuples = [0.1, 0.3, 0.5], [round(0.1 * i, 1) for i in range(1, 11)], 5
        models = None
        if args.train_models:
            models = {}
            for r in ratios:
                M = max(1, round(r * 144))
                t1 = time.perf_counter()
                models[M] = small_mnist_model(
                    M, args.data_dir, train_end=args.first_index, seed=args.seed,
                    cache_dir=args.model_cache, progress=progress,
                )  # fmt: skip
                print(f"model M={M}: ready in {time.perf_counter() - t1:.1f} s")
            if "lstm-cs" not in decoders:
                decoders = ["lstm-cs", *decoders]
        else:
            decoders = [d for d in decoders if d != "lstm-cs"]
        decoders = [d for d in decoders if d not in ("nwsomp", "cdsn-cs")]
        stop = next(s.strip() for s in args.stop.split(",") if s.strip())
        sigma = _floats(args.sigma)[0]
        res = mnist_phase(args.data_dir, decoders, ratios=ratios, rhos=rhos, models=models,
                          sigma=sigma, n_tuples=n_tuples, first_index=args.first_index,
                          stop=stop, seed=args.seed, progress=progress)  # fmt: skip
        rows = res.pop("rows")
        (out / "phase-mnist.json").write_text(json.dumps(res, indent=1))
        figs = []
        if not args.no_plot:
            from ..bench.plots import plot_mnist_phase

            figs.append(plot_mnist_phase(res, out / "phase-mnist.png"))
        head = "| m/n | " + " | ".join(res["curve"]) + " |"
        lines = [head, "|---" * (len(res["curve"]) + 1) + "|"]
        for i, r in enumerate(res["ratios"]):
            lines.append(f"| {r:.2f} | " + " | ".join(f"{c[i]:.2f}" for c in
                                                      res["curve"].values()) + " |")
        curve = "\n".join(lines)
        print("largest k/m with >= 90% of problems at NMSE <= 0.6:")
        print(curve)
        _finish_run(out, "phase-mnist", "MNIST phase transition (thesis Fig. 4.8)", rows,
                    ("decoder", "m", "k"), figs,
                    [("Transition: largest k/m with >= 90% of problems at NMSE <= 0.6", curve)],
                    args, t0)  # fmt: skip
        return 0

    N, n_trials = args.N, args.problems
    deltas = np.round(np.linspace(0.1, 0.9, 9), 4).tolist()
    rhos = np.round(np.linspace(0.05, 1.0, 20), 4).tolist()
    if args.quick:
        N, n_trials = min(N, 64), min(n_trials, 5)
        deltas = np.round(np.linspace(0.2, 0.8, 4), 4).tolist()
        rhos = np.round(np.linspace(0.1, 1.0, 10), 4).tolist()
    pt = ex.phase_transition(
        N,
        deltas,
        rhos,
        [d for d in decoders if d != "lstm-cs"],
        L=args.L,
        n_trials=n_trials,
        joint=not args.independent,
        seed=args.seed,
        progress=progress,
    )
    rows = pt.pop("rows")
    (out / "phase.json").write_text(json.dumps(pt, indent=1))
    figs = []
    if not args.no_plot:
        from ..bench.plots import plot_phase_transition

        figs.append(plot_phase_transition(pt, out / "phase.png"))
    _finish_run(out, "phase", f"Phase transition, N = {N}, L = {args.L}, noiseless", rows,
                ("decoder", "m", "k"), figs, [], args, t0)  # fmt: skip
    return 0


def run(args: argparse.Namespace) -> int:
    import time

    from ..bench import experiments as ex

    t0 = time.perf_counter()
    if args.data == "demo" and not args.model and args.experiment != "phase":
        args.model = DEMO_MODEL
    model: Any = load_model(args.model) if args.model else None
    if args.M is None:
        args.M = 25 if args.data == "images" else 72
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
    unknown = [d for d in decoders if d not in decoder_names()]
    if unknown:
        return _error("bench", f"unknown decoder(s) {unknown}; known: {', '.join(decoder_names())}")
    for d in ("lstm-cs", "nwsomp", "cdsn-cs"):
        if d in decoders and model is None and not (
            d == "lstm-cs" and args.experiment == "phase" and args.train_models
        ):
            return _error("bench", f"{d} needs --model (see `cscore models`)")
    progress = not args.no_progress
    stop = [s.strip() for s in args.stop.split(",") if s.strip()]

    if args.experiment == "phase":
        return _run_phase(args, decoders, out, t0)

    if args.data == "mnist" and model is None:
        return _error("bench", "--data mnist needs --model (its sensing matrix is used)")
    if args.data == "mnist" and not args.data_dir:
        return _error("bench", "--data mnist needs --data-dir")
    if args.data == "images" and not args.images_dir:
        return _error("bench", "--data images needs --images-dir (a folder of pictures)")
    if args.data == "synthetic" and model is not None:
        args.M, args.N = model.A.shape
    n_problems = min(args.problems, 10) if args.quick else args.problems
    transform = args.transform or (
        model.spec.transform if model is not None and model.spec.transform in ("dct", "haar")
        else "dct"
    )
    if args.data == "images":
        from ..datasets import paper_matrix

        A_img = model.A if model is not None else paper_matrix(args.M, 64, seed=args.seed)
        image_cache: dict[str, Any] = {}

    def make(k: int, sigma: float) -> ex.ProblemSet:
        if args.data == "mnist":
            return ex.mnist_problems(
                args.data_dir, model.A, k, sigma=sigma, seed=args.seed, n_tuples=n_problems,
                first_index=args.first_index,
            )  # fmt: skip
        if args.data == "demo":
            return ex.demo_problems(model.A, k, sigma=sigma, seed=args.seed)
        if args.data == "images":
            if "imgs" not in image_cache:
                from ..datasets import load_image_folder

                image_cache["imgs"], _ = load_image_folder(args.images_dir, args.image_size)
            return ex.image_problems(
                image_cache["imgs"], A_img, k, sigma=sigma, seed=args.seed,
                transform=transform, L=model.L if model is not None else args.L,
            )  # fmt: skip
        ps = ex.synthetic_problems(
            args.M,
            args.N,
            args.L,
            k,
            n_problems=n_problems,
            sigma=sigma,
            joint=not args.independent,
            seed=args.seed,
        )
        if model is not None:  # measure with the model's matrix
            from ..datasets import measure

            ps.A = model.A
            ps.Y, _ = measure(model.A, ps.S, sigma, args.seed + 1)
        return ps

    ks, sigmas = _ints(args.k or "5:30:5"), _floats(args.sigma)
    if args.quick:
        ks, sigmas = _pick3(ks), _pick3(sigmas)
    if args.experiment == "sparsity":
        res = ex.sweep(
            "k", ks, lambda k: make(k, sigmas[0]), decoders,
            stop=stop, model=model, progress=progress,
        )  # fmt: skip
    else:
        res = ex.sweep(
            "sigma", sigmas, lambda s: make(ks[0], s), decoders,
            stop=stop, model=model, progress=progress,
        )  # fmt: skip
    res.info.update(
        {"data": args.data, "model": args.model, "seed": args.seed, "problems": n_problems,
         "first_index": args.first_index if args.data == "mnist" else None,
         "images_dir": args.images_dir, "transform": transform if args.data == "images" else None}
    )  # fmt: skip
    name = f"{args.experiment}-{args.data}"
    res.save(out / f"{name}.json")
    print("NMSE (mean over problems):")
    print(res.table("nmse"))
    print("\nseconds per problem:")
    print(res.table("seconds"))
    figs = []
    if not args.no_plot:
        from ..bench.plots import plot_sweep

        title = name
        if args.data == "images":
            folder = Path(args.images_dir).name
            title = f"{name}: {folder}, {transform.upper()}, M = {A_img.shape[0]}"
        elif args.data == "mnist":
            title = f"{name}: digits from {args.first_index}, {args.model}"
        figs.append(plot_sweep(res, out / f"{name}.png", title=title))
    what = {"mnist": f"MNIST digits from index {args.first_index} ({args.data_dir})",
            "demo": "the bundled demo images (PyWavelets)",
            "images": f"pictures in {args.images_dir} ({transform.upper()} blocks)",
            "synthetic": "random problems"}[args.data]  # fmt: skip
    model_txt = f"model {args.model}" if args.model else "no model"
    _finish_run(
        out, name, f"{args.experiment}: {what}, {model_txt}", res.rows,
        ("decoder", "stop", res.param), figs,
        [("Mean NMSE", res.table("nmse")), ("Seconds per problem", res.table("seconds"))],
        args, t0,
    )  # fmt: skip
    return 0


HELP = "run the paper's experiments and plot them"
