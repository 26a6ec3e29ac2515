"""The paper's experiments: error vs sparsity or noise, phase transitions, CPU time.

Each experiment draws :class:`ProblemSet` batches (ground truth ``S``, sensing
matrix ``A``, measurements ``Y``), runs decoders through
:func:`cscore.bench.decoders.run_decoder` and records the NMSE
``||S_hat - S||_F / ||S||_F`` per problem (averaged) and the CPU time per
problem.  Noise is drawn fresh for every problem.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..metrics import nmse_per_item
from .decoders import decoder_names, run_decoder, sweep_runs, uses_stopping_rule
from .tally import WarningTally

#: Stopping rules of the greedy decoders in :func:`sweep`.
STOP_RULES = ("tol", "auto", "k")

__all__ = [
    "STOP_RULES",
    "ProblemSet",
    "SweepResult",
    "demo_problems",
    "image_problems",
    "mnist_problems",
    "phase_transition",
    "sweep",
    "synthetic_problems",
]


@dataclass
class ProblemSet:
    """A batch of MMV problems sharing one sensing matrix.

    Attributes
    ----------
    A : ndarray (M, N)
    S : ndarray (P, N, L)
        Ground truth.
    Y : ndarray (P, M, L)
        Noisy measurements.
    sigma : float
        Noise standard deviation.
    tol : float
        The paper's stopping threshold for these problems (expected
        ``L * ||noise||_F``).
    k : int or None
        Nonzeros per channel the data was made with (None: not k-sparse).
    """

    A: np.ndarray
    S: np.ndarray
    Y: np.ndarray
    sigma: float
    tol: float
    k: int | None = None


def _tol(M: int, L: int, sigma: float) -> float:
    from ..datasets import expected_noise_tol

    return expected_noise_tol(M, L, sigma) if sigma > 0 else 1e-9


def _check_k(k: Any, N: int, what: str) -> Any:
    """``k`` checked to lie in ``[1, N]`` (None passes: dense signals)."""
    from .._validation import check_positive_int

    if k is None:
        return None
    return check_positive_int("k", k, upper=N, upper_desc=what)


def _finish(A: np.ndarray, S: np.ndarray, sigma: float, seed: int, k: int | None) -> ProblemSet:
    from ..datasets import measure

    Y, _ = measure(A, S, sigma, seed)
    return ProblemSet(A=A, S=S, Y=Y, sigma=sigma, tol=_tol(A.shape[0], S.shape[2], sigma), k=k)


def mnist_problems(
    data_dir: str | Path,
    A: np.ndarray,
    k: int,
    *,
    sigma: float = 0.005,
    seed: int = 0,
    n_tuples: int = 50,
    first_index: int = 6000,
    digits: Sequence[int] = (0, 1, 2, 3),
) -> ProblemSet:
    """MNIST problems by the paper's protocol, from images ``first_index`` on.

    The shipped models never saw MNIST images with index >= 6000 of the
    reference file, so the default draws only held-out digits.

    Parameters
    ----------
    data_dir : path
        Folder with ``*images-idx3-ubyte[.gz]`` and ``*labels-idx1-ubyte[.gz]``.
    A : ndarray (M, 144)
    k : int
        Pixels kept per 12 x 12 block.
    sigma, seed : float, int
        Noise level and seed (noise fresh per problem).
    n_tuples : int
        Image tuples (one image per digit); each gives 4 problems (blocks).
    first_index : int, default 6000
        Only images with this index or later are used.  The shipped MNIST
        models were trained on the reference file's images before 6000; use
        0 for a file of digits they never saw.
    digits : sequence of int
        Digit of each channel (L = len(digits)).

    Returns
    -------
    ProblemSet
        ``4 * n_tuples`` problems (P, 144, L) measured with ``A``.
    """
    from ..datasets import load_mnist, mnist_mmv_problems, mnist_tuples

    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[1] != 144:
        raise ValueError(f"A must be (M, 144) for 12x12 MNIST blocks; got shape {A.shape}")
    k = _check_k(k, 144, "pixels of a 12x12 block")
    data_dir = Path(data_dir)
    imgs = sorted(data_dir.glob("*images-idx3-ubyte*"))
    labs = sorted(data_dir.glob("*labels-idx1-ubyte*"))
    if not imgs or not labs:
        raise FileNotFoundError(f"no MNIST IDX files (*images-idx3-ubyte*) in {data_dir}")
    images, labels = load_mnist(imgs[0], labs[0])
    if labels is None:  # pragma: no cover - a labels file was given
        raise FileNotFoundError(f"no MNIST labels file in {data_dir}")
    if first_index < 0:
        raise ValueError(f"first_index must be >= 0, got {first_index}")
    pool = np.arange(first_index, labels.shape[0])
    if pool.size == 0:
        raise ValueError(
            f"first_index={first_index} leaves no image: {data_dir} holds {labels.shape[0]} "
            f"digits (the default 6000 skips the images the shipped models were trained on; "
            f"use first_index=0, --first-index 0, for digit files they never saw)"
        )
    tuples = mnist_tuples(labels, pool, digits, seed=seed)[:n_tuples]
    S = mnist_mmv_problems(images, tuples, k)
    return _finish(np.asarray(A, dtype=np.float64), S, sigma, seed + 1, k)


def demo_problems(
    A: np.ndarray, k: int | None, *, sigma: float = 0.005, seed: int = 0
) -> ProblemSet:
    """Test problems of the embedded demo set (PyWavelets' images, 8x8 DCT blocks).

    Parameters
    ----------
    A : ndarray (M, 64)
        Sensing matrix (64 atoms: one per DCT coefficient of an 8x8 block).
    k : int or None
        DCT coefficients kept per block (None: all).
    sigma : float, default 0.005
        Noise standard deviation.
    seed : int, default 0
        Seed of the noise.

    Returns
    -------
    ProblemSet
        The demo's held-out problems measured with ``A``; ``tol`` is the
        paper's threshold for ``sigma``.
    """
    from ..datasets import load_demo

    A = np.asarray(A, dtype=np.float64)
    k = _check_k(k, 64, "coefficients of an 8x8 block")
    data = load_demo(k, M=A.shape[0], A=A, sigma=sigma, seed=seed)
    return ProblemSet(
        A=A,
        S=data.S_test,
        Y=data.Y_test,
        sigma=sigma,
        tol=_tol(A.shape[0], data.S_test.shape[2], sigma),
        k=k,
    )


def image_problems(
    images: str | Path | np.ndarray,
    A: np.ndarray,
    k: int | None,
    *,
    sigma: float = 0.005,
    seed: int = 0,
    transform: str = "dct",
    image_size: int = 64,
    L: int = 4,
    limit: int | None = None,
) -> ProblemSet:
    """Problems from any folder of pictures (the paper's natural-image experiments).

    Every image is read as grayscale, resized to ``image_size`` squared, cut
    into ``b x b`` blocks (``b = sqrt(N)``), transformed (DCT or Haar) and
    sparsified to its ``k`` largest coefficients per block; ``L`` consecutive
    blocks make one problem (:func:`cscore.datasets.image_mmv_problems`).

    Parameters
    ----------
    images : path or ndarray (n, s, s)
        A folder of images (any format Pillow reads) or the images themselves.
    A : ndarray (M, N)
        Sensing matrix; ``N`` must be a square (the block's pixels).
    k : int or None
        Coefficients kept per block (None: all).
    sigma, seed : float, int
        Noise level and seed.
    transform : {"dct", "haar", "none"}
        Sparsifying transform (a model's ``spec.transform``).
    image_size : int, default 64
        Side the images are resized to (a multiple of ``b``).
    L : int, default 4
        Blocks per problem.
    limit : int, optional
        Read at most this many files.

    Returns
    -------
    ProblemSet
    """
    from ..datasets import image_mmv_problems, load_image_folder

    A = np.asarray(A, dtype=np.float64)
    N = A.shape[1]
    b = math.isqrt(N)
    if b * b != N:
        raise ValueError(f"A must have a square number of columns (b x b blocks); got {N}")
    if image_size % b:
        raise ValueError(f"image_size {image_size} must be a multiple of the block side {b}")
    k = _check_k(k, N, f"coefficients of a {b}x{b} block")
    if isinstance(images, (str, Path)):
        imgs, _ = load_image_folder(images, image_size, limit=limit)
    else:
        imgs = np.asarray(images, dtype=np.float64)
    S = image_mmv_problems(imgs, block_size=b, transform=transform, k=k, L=L)
    return _finish(A, S, sigma, seed + 1, k)


def synthetic_problems(
    M: int,
    N: int,
    L: int,
    k: int,
    *,
    n_problems: int = 100,
    sigma: float = 0.0,
    joint: bool = True,
    correlation: float = 0.0,
    seed: int = 0,
) -> ProblemSet:
    """Random k-sparse problems with a unit-norm Gaussian ``A``.

    Parameters
    ----------
    M, N, L, k : int
        Sizes and nonzeros per channel.
    n_problems : int
        Problems in the batch.
    sigma : float
        Noise standard deviation.
    joint : bool
        Same support in every channel (the SOMP/SBL model) or one per channel.
    correlation : float
        AR(1) coefficient of each nonzero row across channels (T-SBL's model).
    seed : int

    Returns
    -------
    ProblemSet
        ``A`` (M, N), ``S`` (n_problems, N, L), ``Y`` (n_problems, M, L).

    Raises
    ------
    ValueError
        A size is < 1, ``k > N``, ``sigma < 0`` or ``|correlation| > 1``.
    """
    from .._validation import check_nonnegative_float, check_positive_int

    M = check_positive_int("M", M)
    N = check_positive_int("N", N)
    L = check_positive_int("L", L)
    k = check_positive_int("k", k, upper=N, upper_desc="the number of atoms N")
    n_problems = check_positive_int("n_problems", n_problems)
    sigma = check_nonnegative_float("sigma", sigma)
    if not -1.0 <= correlation <= 1.0:
        raise ValueError(f"correlation must be in [-1, 1], got {correlation!r}")
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((n_problems, N, L))
    for p in range(n_problems):
        rows = rng.choice(N, k, replace=False)
        vals = np.empty((k, L))
        vals[:, 0] = rng.standard_normal(k)
        for j in range(1, L):
            vals[:, j] = correlation * vals[:, j - 1] + np.sqrt(
                1 - correlation**2
            ) * rng.standard_normal(k)
        if joint:
            S[p, rows, :] = vals
        else:
            for j in range(L):
                S[p, rng.choice(N, k, replace=False), j] = vals[:, j]
    return _finish(A, S, sigma, seed + 1, k)


@dataclass
class SweepResult:
    """Errors and times of several decoders over one swept parameter.

    Attributes
    ----------
    param : str
        Name of the swept parameter ("k", "sigma", ...).
    values : list
        Its values.
    nmse : dict
        Decoder label -> mean NMSE per value.
    seconds : dict
        Decoder label -> CPU (wall) seconds per problem, per value.
    info : dict
        Settings of the run.
    rows : list of dict
        One record per decoder x stopping rule x value x problem (``decoder,
        stop, k, m, sigma, problem, nmse, seconds``), for ``results.csv``; not
        written to the JSON.
    """

    param: str
    values: list[Any]
    nmse: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def table(self, what: str = "nmse") -> str:
        """The results as a Markdown table.

        Parameters
        ----------
        what : {"nmse", "seconds"}, default "nmse"
            Which measurement to tabulate.

        Returns
        -------
        str
            One row per value, one column per decoder run.
        """
        data = self.nmse if what == "nmse" else self.seconds
        labels = list(data)
        head = f"| {self.param} | " + " | ".join(labels) + " |"
        sep = "|---" * (len(labels) + 1) + "|"
        rows = [
            f"| {v} | " + " | ".join(f"{data[lab][i]:.4g}" for lab in labels) + " |"
            for i, v in enumerate(self.values)
        ]
        return "\n".join([head, sep, *rows])

    def save(self, path: str | Path) -> None:
        """Write the result as JSON.

        Parameters
        ----------
        path : path
            File to write (overwritten).
        """
        d = asdict(self)
        d.pop("rows")
        Path(path).write_text(json.dumps(d, indent=1))

    @classmethod
    def load(cls, path: str | Path) -> SweepResult:
        """Read a result written by :meth:`save`.

        Parameters
        ----------
        path : path
            A JSON file written by :meth:`save`.

        Returns
        -------
        SweepResult
        """
        return cls(**json.loads(Path(path).read_text()))


def _nmse(S_hat: np.ndarray, S: np.ndarray) -> float:
    """Mean per-problem NMSE over the problems whose ground truth is not zero."""
    err = nmse_per_item(S_hat, S, zero="nan")
    return float(np.nanmean(err)) if np.isfinite(err).any() else float("nan")


def sweep(
    param: str,
    values: Sequence[Any],
    make_problems: Callable[[Any], ProblemSet],
    decoders: Sequence[str],
    *,
    stop: Sequence[str] = ("tol",),
    model: Any = None,
    progress: bool = True,
    tally: WarningTally | None = None,
    models: Mapping[str, Any] | None = None,
) -> SweepResult:
    """Run ``decoders`` on ``make_problems(value)`` for every value.

    Parameters
    ----------
    param : str
        Label of the swept parameter.
    values : sequence
        The values.
    make_problems : callable
        ``value -> ProblemSet``.
    decoders : sequence of str
        Names from :func:`cscore.decoder_names`.
    stop : sequence of {"tol", "auto", "k"}
        Stopping rules to run the greedy decoders with: "tol" is the paper's
        rule (``ProblemSet.tol``, an oracle: it knows the noise level), "auto"
        the same rule on a noise level estimated from the measurements
        (``tol="auto"``, :mod:`cscore.decoders.stopping`), "k" stops at the true number of
        nonzeros per channel.  Each greedy decoder appears once per rule,
        labelled ``name (rule)``.
    model : object, optional
        The model of the model decoders (an LSTMCS for "lstm-cs", ...).
    progress : bool
        Show a progress bar.
    tally : WarningTally, optional
        Catch the decoders' warnings and count them here per run label
        (default: they are shown as usual).
    models : mapping, optional
        Model name -> model, all measuring with ``A``, instead of ``model``:
        each model decoder runs once per model of its class, labelled
        ``decoder[name]`` in the results and in the rows' ``decoder`` column,
        and the rows get a ``model`` column
        (:func:`cscore.bench.decoders.pair_models`).

    Returns
    -------
    SweepResult
        Mean per-problem NMSE (problems with a zero ground truth skipped) and
        seconds per problem, for every run and value; ``rows`` holds every
        problem's NMSE (``seconds`` there is the batch's time divided by its
        problems).
    """
    from tqdm.auto import tqdm

    for name in decoders:
        if name not in decoder_names():
            raise ValueError(f"unknown decoder {name!r}; known: {', '.join(decoder_names())}")
    for stop_rule in stop:
        if stop_rule not in STOP_RULES:
            raise ValueError(f"stop rules are {', '.join(STOP_RULES)}; got {stop_rule!r}")
    result = SweepResult(param=param, values=list(values), info={"stop": list(stop)})
    runs = sweep_runs(decoders, stop, model, models)
    for label, *_ in runs:
        result.nmse[label] = []
        result.seconds[label] = []
    bar = tqdm(total=len(values) * len(runs), disable=not progress, desc=f"sweep {param}")
    for value in values:
        ps = make_problems(value)
        for label, base, name, rule, run_model, model_name in runs:
            bar.set_postfix_str(f"{param}={value} {label}")
            k = ps.k if rule == "k" else None
            rules: dict[str, float | str] = {"tol": ps.tol, "auto": "auto"}
            tol = rules.get(rule or "")
            with tally.catch(label) if tally is not None else nullcontext():
                t0 = time.perf_counter()
                S_hat = run_decoder(name, ps.A, ps.Y, k=k, tol=tol, model=run_model)
                dt = time.perf_counter() - t0
            per = nmse_per_item(np.asarray(S_hat, dtype=np.float64), ps.S, zero="nan")
            result.nmse[label].append(float(np.nanmean(per)) if np.isfinite(per).any() else
                                      float("nan"))
            result.seconds[label].append(dt / ps.S.shape[0])
            result.rows += [
                {"decoder": base, "stop": rule or "own", "k": ps.k, "m": ps.A.shape[0],
                 "sigma": ps.sigma, param: value, "problem": i, "nmse": float(e),
                 "seconds": dt / ps.S.shape[0], **({"model": model_name} if models else {})}
                for i, e in enumerate(per)
            ]  # fmt: skip
            bar.update()
    bar.close()
    return result


def phase_transition(
    N: int,
    deltas: Sequence[float],
    rhos: Sequence[float],
    decoders: Sequence[str],
    *,
    L: int = 4,
    n_trials: int = 20,
    joint: bool = True,
    threshold: float = 1e-2,
    seed: int = 0,
    progress: bool = True,
    tally: WarningTally | None = None,
) -> dict[str, Any]:
    """Empirical phase transition on noiseless synthetic problems.

    For every undersampling ratio ``delta = M / N`` and sparsity ratio
    ``rho = k / M``, run ``n_trials`` problems and record the fraction with
    NMSE below ``threshold``.  Greedy decoders stop at ``k`` atoms.

    Parameters
    ----------
    N : int
        Atoms (signal length).
    deltas : sequence of float
        Undersampling ratios ``M / N`` in (0, 1].
    rhos : sequence of float
        Sparsity ratios ``k / M`` in (0, 1].
    decoders : sequence of str
        Names from :func:`cscore.decoder_names`, matrix decoders only (no
        model exists for every M).
    L : int, default 4
        Channels per problem.
    n_trials : int, default 20
        Problems per grid point.
    joint : bool, default True
        Same support in every channel.
    threshold : float, default 1e-2
        A problem counts as recovered when its NMSE is below this.
    seed : int, default 0
        Base seed (each grid point derives its own).
    progress : bool, default True
        Show a progress bar.
    tally : WarningTally, optional
        Catch the decoders' warnings and count them here per decoder.

    Returns
    -------
    dict
        ``{"deltas", "rhos", "success": {decoder: (len(rhos), len(deltas)) list},
        "rows": per-problem records for results.csv}``.
    """
    from tqdm.auto import tqdm

    success = {name: np.zeros((len(rhos), len(deltas))) for name in decoders}
    point_rows: dict[tuple[int, int], list[dict[str, Any]]] = {}
    # A point's work grows with M and k, so in grid order the cheap points come first
    # and the bar's time estimate is far too short.  The points run in a fixed shuffled
    # order instead, each counted by its expected work (M k), and the estimate uses the
    # rate of the whole run so far: then it holds.  Each point has its own seed, so the
    # results do not depend on the order; the rows are written in grid order.
    grid = [(di, ri) for di in range(len(deltas)) for ri in range(len(rhos))]
    sizes = {}
    for di, ri in grid:
        M = max(1, round(deltas[di] * N))
        sizes[di, ri] = (M, min(M, max(1, round(rhos[ri] * M))))
    order = [grid[i] for i in np.random.default_rng(seed).permutation(len(grid))]
    bar = tqdm(total=sum(M * k for M, k in sizes.values()), disable=not progress,
               desc="phase transition", smoothing=0,
               bar_format="{l_bar}{bar}| [{elapsed}<{remaining}]")
    for di, ri in order:
        delta, rho = deltas[di], rhos[ri]
        M, k = sizes[di, ri]
        ps = synthetic_problems(
            M, N, L, k, n_problems=n_trials, joint=joint, seed=seed + 1000 * di + ri
        )
        rows_here = point_rows.setdefault((di, ri), [])
        for name in decoders:
            with tally.catch(name) if tally is not None else nullcontext():
                t0 = time.perf_counter()
                S_hat = run_decoder(name, ps.A, ps.Y, k=k)
                dt = (time.perf_counter() - t0) / n_trials
            err = nmse_per_item(np.asarray(S_hat, dtype=np.float64), ps.S)
            success[name][ri, di] = float(np.mean(err < threshold))
            rows_here += [
                {"decoder": name, "stop": "k" if uses_stopping_rule(name) else "own", "k": k,
                 "m": M, "sigma": 0.0, "problem": i, "nmse": float(e), "seconds": dt,
                 "n": N, "delta": delta, "rho": rho, "success": bool(e < threshold)}
                for i, e in enumerate(err)
            ]  # fmt: skip
        bar.update(M * k)
    bar.close()
    rows = [r for point in grid for r in point_rows[point]]
    return {
        "N": N,
        "L": L,
        "threshold": threshold,
        "deltas": list(deltas),
        "rhos": list(rhos),
        "success": {k: v.tolist() for k, v in success.items()},
        "rows": rows,
    }
