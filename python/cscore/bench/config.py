"""The settings of a ``cscore bench`` run, checked before anything is written.

:class:`BenchConfig` holds one run's settings (the options of ``cscore bench``);
:func:`check_config` and :func:`check_paths` raise :class:`BenchConfigError`
(a ``ValueError`` naming the offending option) for inconsistent settings, a
missing data folder or an output folder that already holds results, before any
folder is created or progress bar started.  :func:`choose_decoders` picks and
checks the decoders from the decoder registry: which ones need a model, and
which model class, is read from their registrations, so a decoder registered
later works the same way.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._limits import check_memory
from ..decoders import decoder_names, get_decoder_spec
from .decoders import own_decoder
from .experiments import STOP_RULES

__all__ = [
    "DATA_N",
    "DATA_SOURCES",
    "DEFAULT_K",
    "DEFAULT_OUT_ROOT",
    "DEMO_MODEL",
    "EXPERIMENTS",
    "RESULT_FILES",
    "BenchConfig",
    "BenchConfigError",
    "check_config",
    "check_figure_path",
    "check_output_dir",
    "check_paths",
    "choose_decoders",
    "default_decoders",
    "model_decoder",
    "parse_floats",
    "parse_ints",
    "sizes_for",
]

#: The experiments of ``cscore bench``.
EXPERIMENTS = ("sparsity", "noise", "phase", "bg")

#: ``bg``'s decoders by default (single-vector problems: SOMP is OMP there).
BG_DECODERS = ("omp", "bcs", "tmsbl", "amp", "vamp")
#: Problem sources (``--data``).
DATA_SOURCES = ("mnist", "demo", "images", "synthetic")
#: The pretrained model of the demo images (``--data demo``, ``cscore demo``).
DEMO_MODEL = "demo-dct-m32"
#: Atoms per problem of the image data sets (block side squared).
DATA_N = {"demo": 64, "mnist": 144}
#: Sparsities swept when ``--k`` is not given.
DEFAULT_K = "5:30:5"
#: Parent of the default output folders, ``bench-out/<experiment>-<data>``.
DEFAULT_OUT_ROOT = "bench-out"
#: Files that mark a folder as holding a run's results (not replaced without ``overwrite``).
RESULT_FILES = ("results.csv", "report.md")


class BenchConfigError(ValueError):
    """Inconsistent ``cscore bench`` settings; ``option`` names the offending option.

    Parameters
    ----------
    option : str
        The command-line option at fault (``"--k"``, ``"--data-dir"``, ...).
    message : str
        What is wrong and what to do, naming the option.
    """

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def parse_ints(option: str, text: str) -> tuple[int, ...]:
    """Integers from ``'5,10,20'`` or a range ``'5:30:5'`` (end included).

    Parameters
    ----------
    option : str
        The option the text came from (for the error message).
    text : str

    Returns
    -------
    tuple of int

    Raises
    ------
    BenchConfigError
        Not integers.
    """
    try:
        if ":" in text:
            a, b, *step = (int(t) for t in text.split(":"))
            return tuple(range(a, b + 1, step[0] if step else 1))
        return tuple(int(t) for t in text.split(",") if t)
    except ValueError:
        raise BenchConfigError(
            option, f"{option} must be integers like '5,10,20' or '5:30:5', got {text!r}"
        ) from None


def parse_floats(option: str, text: str) -> tuple[float, ...]:
    """Numbers from ``'0.001,0.005'``.

    Parameters
    ----------
    option : str
        The option the text came from (for the error message).
    text : str

    Returns
    -------
    tuple of float

    Raises
    ------
    BenchConfigError
        Not numbers.
    """
    try:
        return tuple(float(t) for t in text.split(",") if t)
    except ValueError:
        raise BenchConfigError(
            option, f"{option} must be numbers like '0.005' or '0,0.01', got {text!r}"
        ) from None


@dataclass
class BenchConfig:
    """The settings of one ``cscore bench`` run (the command's options).

    Attributes
    ----------
    experiment : {"sparsity", "noise", "phase", "bg"}
        Error against k, error against sigma, the phase transition, or the
        Bernoulli-Gaussian benchmark of the AMP/LAMP papers (:mod:`cscore.bench.bg`).
    data : {"mnist", "demo", "images", "synthetic"}
        Problem source (``phase`` uses MNIST or synthetic problems).
    data_dir : str, optional
        MNIST: folder with the IDX files.
    first_index : int
        MNIST: test digits start at this index (the shipped models trained before 6000).
    images_dir : str, optional
        Images: a folder of pictures.
    transform : {"dct", "haar"}, optional
        Images: sparsifying transform (default: the model's, else dct).
    image_size : int
        Images: side the pictures are resized to.
    quick : bool
        A sub-minute run: 3 values, few problems, a coarse phase grid.
    train_models : bool
        Phase on MNIST: train a small LSTM-CS model per M (PyTorch, cached).
    model_cache : str, optional
        Folder for ``train_models`` (default ``~/.cache/cscore``).
    model : str, optional
        A pretrained model name or a model file (the one resolver,
        :func:`cscore.models.registry.resolve_model`); see also ``models``.
    decoders : tuple of str, optional
        Registered decoder names (default: :func:`default_decoders`).
    k : tuple of int, optional
        Sparsities (default :data:`DEFAULT_K`); the noise experiment uses the first.
    sigma : tuple of float
        Noise levels; the sparsity experiment uses the first.
    stop : tuple of str
        Stopping rules of the greedy decoders, from ``tol``, ``auto``, ``k``.
    problems : int
        MNIST image tuples (4 problems each) or synthetic problems per point.
    M : int, optional
        Measurements without a model: synthetic (default 72), images (default 25).
    N, L : int
        Synthetic: atoms (default 144; 500 for ``bg``) and channels.
    kappa : float
        ``bg``: condition number of the sensing matrix (1: i.i.d. Gaussian).
    independent : bool
        Synthetic: one support per channel instead of a joint one.
    seed : int
        Seed of the problems and noise.
    out : str, optional
        Output folder (default ``bench-out/<experiment>-<data>``, :meth:`output_dir`).
    overwrite : bool
        Replace the results of an earlier run in ``out`` (else refused).
    progress, plot : bool
        Show progress bars; draw the figures.
    argv : tuple of str, optional
        The command line, for ``report.md``.
    models : tuple of str, optional
        Several models (sparsity and noise), sharing one sensing matrix: each
        model decoder runs once per model of its class, labelled
        ``decoder[model]``; ``model`` is then taken as ``models[0]``.
    device : str, optional
        A torch device (``"cuda"``, ``"cpu"``) for the decoders that take
        ``device=`` (:mod:`cscore.decoders.torch_backend`); the others run
        on the compiled CPU path as always.  Default None: every decoder compiled.
    """

    experiment: str
    data: str = "synthetic"
    data_dir: str | None = None
    first_index: int = 6000
    images_dir: str | None = None
    transform: str | None = None
    image_size: int = 64
    quick: bool = False
    train_models: bool = False
    model_cache: str | None = None
    model: str | None = None
    decoders: tuple[str, ...] | None = None
    k: tuple[int, ...] | None = None
    sigma: tuple[float, ...] = (0.005,)
    stop: tuple[str, ...] = ("tol", "auto", "k")
    problems: int = 50
    M: int | None = None
    N: int | None = None
    L: int = 4
    kappa: float = 1.0
    independent: bool = False
    seed: int = 0
    out: str | None = None
    overwrite: bool = False
    progress: bool = True
    plot: bool = True
    argv: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    device: str | None = None

    @property
    def model_names(self) -> tuple[str, ...]:
        """The run's models: ``models``, else ``(model,)``, else ``()``."""
        return tuple(self.models) if self.models else ((self.model,) if self.model else ())

    @property
    def ks(self) -> tuple[int, ...]:
        """The sparsities: ``k`` or :data:`DEFAULT_K`."""
        return self.k if self.k is not None else parse_ints("--k", DEFAULT_K)

    @property
    def n_atoms(self) -> int:
        """``N``, or its default: 500 for ``bg`` (the papers' setting), else 144."""
        if self.N is not None:
            return self.N
        return 500 if self.experiment == "bg" else 144

    @property
    def result_data(self) -> str:
        """The data the results are of: ``data``, but ``phase`` is MNIST or synthetic."""
        if self.experiment == "phase":
            return "mnist" if self.data == "mnist" else "synthetic"
        if self.experiment == "bg":
            return "synthetic" if self.kappa == 1.0 else f"kappa{self.kappa:g}"
        return self.data

    def output_dir(self) -> Path:
        """The output folder: ``out``, else ``bench-out/<experiment>-<data>``.

        Returns
        -------
        pathlib.Path
        """
        if self.out:
            return Path(self.out)
        return Path(DEFAULT_OUT_ROOT) / f"{self.experiment}-{self.result_data}"


def model_decoder(model: Any) -> str | None:
    """The registered decoder that runs ``model`` (its class exactly, else a base class).

    Parameters
    ----------
    model : object
        A loaded model (LSTMCS, NWSOMP, ... or any registered model class).

    Returns
    -------
    str or None
        The decoder's name; None when no model decoder takes this class.
    """
    return own_decoder(model)


def default_decoders(model: Any) -> list[str]:
    """The decoders run when none are named.

    Parameters
    ----------
    model : object or None
        The run's model.

    Returns
    -------
    list of str
        With a model: its decoder (:func:`model_decoder`), ``somp``, ``omp``;
        without: ``somp``, ``omp``, ``tmsbl``.
    """
    if model is None:
        return ["somp", "omp", "tmsbl"]
    learned = model_decoder(model)
    return [*([learned] if learned else []), "somp", "omp"]


def choose_decoders(config: BenchConfig, model: Any, trained: str | None = None) -> list[str]:
    """The run's decoders, checked against the registry and the model.

    Parameters
    ----------
    config : BenchConfig
    model : object or None
        The model loaded from ``config.model``.
    trained : str, optional
        A model decoder whose models the run trains itself (phase on MNIST
        with ``train_models``): it needs no ``model``.

    Returns
    -------
    list of str
        ``config.decoders``, or :func:`default_decoders`.

    Raises
    ------
    BenchConfigError
        An unknown decoder, or a model decoder without a model of its class.
    """
    if config.decoders is None and config.experiment == "bg":
        learned = model_decoder(model) if model is not None else None
        decoders = [*([learned] if learned else []), *BG_DECODERS]
    elif config.decoders is None:
        decoders = default_decoders(model)
    else:
        decoders = list(config.decoders)
        if not decoders:
            raise BenchConfigError("--decoders", "--decoders gives no decoder")
    unknown = [d for d in decoders if d not in decoder_names()]
    if unknown:
        raise BenchConfigError(
            "--decoders", f"unknown decoder(s) {unknown}; known: {', '.join(decoder_names())}"
        )
    for d in decoders:
        spec = get_decoder_spec(d)
        if spec.kind != "model" or d == trained:
            continue
        if model is None:
            raise BenchConfigError("--decoders", f"{d} needs --model (see `cscore models`)")
        if spec.model_type is not None and not isinstance(model, spec.model_type):
            own = model_decoder(model)
            raise BenchConfigError(
                "--decoders",
                f"{d} needs a {spec.model_type.__name__} model, but --model {config.model} "
                f"is a {type(model).__name__}" + (f" (its decoder is {own})" if own else ""),
            )
    return decoders


def _check_numbers(config: BenchConfig) -> None:
    """The checks that need neither the model nor the data."""
    if config.experiment not in EXPERIMENTS:
        raise BenchConfigError("experiment", f"experiment must be one of "
                               f"{', '.join(EXPERIMENTS)}, got {config.experiment!r}")
    if config.data not in DATA_SOURCES:
        raise BenchConfigError("--data", f"--data must be one of {', '.join(DATA_SOURCES)}, "
                               f"got {config.data!r}")
    if config.transform not in (None, "dct", "haar"):
        raise BenchConfigError("--transform", f"--transform must be dct or haar, "
                               f"got {config.transform!r}")
    if not config.ks:
        raise BenchConfigError("--k", f"--k gives no sparsity: {config.k!r}")
    if not config.sigma:
        raise BenchConfigError("--sigma", "--sigma gives no noise level")
    if config.problems < 1:
        raise BenchConfigError("--problems", f"--problems must be >= 1, got {config.problems}")
    bad_stop = [r for r in config.stop if r not in STOP_RULES]
    if bad_stop or not config.stop:
        raise BenchConfigError("--stop", f"--stop takes a list of tol, auto and k (like "
                               f"'tol,auto'), got {','.join(config.stop)!r}")
    if config.first_index < 0:
        raise BenchConfigError("--first-index",
                               f"--first-index must be >= 0, got {config.first_index}")
    if config.image_size < 1:
        raise BenchConfigError("--image-size",
                               f"--image-size must be >= 1, got {config.image_size}")
    for s in config.sigma:
        if not np.isfinite(s) or s < 0:
            raise BenchConfigError("--sigma", f"--sigma must be finite and >= 0, got {s:g}")


def _atoms(config: BenchConfig, model: Any) -> int:
    """Atoms per problem N of the run's data, after checking the sizes against the model."""
    if config.data == "synthetic":
        M, N = sizes_for(config, model)
        if model is not None and config.L != model.L:
            raise BenchConfigError("--L", f"--L {config.L} but model {config.model} decodes "
                                   f"L = {model.L} channels")
        for name, v in (("--M", M), ("--N", N), ("--L", config.L)):
            if v < 1:
                raise BenchConfigError(name, f"{name} must be >= 1, got {v}")
        if M > N:
            raise BenchConfigError("--M", f"--M ({M}) must not exceed --N ({N})")
        return int(N)
    if config.data == "images":
        N = model.N if model is not None else 64
        b = math.isqrt(N)
        if b * b != N:
            raise BenchConfigError("--model", f"model {config.model} has N = {N}, not a "
                                   f"square block of pixels")
        if config.image_size % b:
            raise BenchConfigError("--image-size", f"--image-size {config.image_size} must be "
                                   f"a multiple of the block side {b}")
        M = config.M if config.M is not None else 25
        if model is None and not 1 <= M <= N:
            raise BenchConfigError("--M", f"--M must be between 1 and N = {N} (8x8 blocks), "
                                   f"got {M}")
        return int(N)
    N = DATA_N[config.data]
    if model is not None and model.N != N:
        raise BenchConfigError(
            "--model",
            f"--data {config.data} has N = {N} atoms per problem but model {config.model} "
            f"has N = {model.N} (it was trained for {model.spec.dataset or 'other data'}); "
            f"pick a matching model",
        )
    if config.data == "mnist" and model is None:
        raise BenchConfigError("--model", "--data mnist needs --model (its sensing matrix "
                               "is used)")
    return N


#: Bytes per problem and float64 entry of ``bg``: the problem (x, y, noise), the
#: oracle's and each decoder's estimate and its error held at once (a bound).
_BG_COPIES = 8


def _check_bg_only(config: BenchConfig, M: int) -> None:
    """``bg``: refuse the options it does not use, and a problem count beyond memory."""
    if config.k is not None:
        raise BenchConfigError("--k", "--k does not apply to bg: its problems are "
                               "Bernoulli-Gaussian with rate 0.1 (the AMP/LAMP papers')")
    if config.L != BenchConfig.L:
        raise BenchConfigError("--L", f"--L does not apply to bg: its problems are single "
                               f"vectors (L = 1); got --L {config.L}")
    N = config.n_atoms
    est = float(_problems_run(config)) * (N + M) * 8 * _BG_COPIES + 3.0 * M * N * 8  # + A, SVD
    try:
        check_memory(f"--problems {config.problems} with --N {N} --M {M}", est,
                     "the bg problems, their estimates and the matrix")
    except ValueError as exc:
        raise BenchConfigError("--problems", str(exc)) from None


def _problems_run(config: BenchConfig) -> int:
    """The problems per point a run decodes (``--quick`` takes at most 10)."""
    return min(config.problems, 10) if config.quick else config.problems


def _check_problem_memory(config: BenchConfig, N: int) -> None:
    """Refuse ``--problems`` whose problem sets (``M <= N``) would not fit in memory."""
    per = 4 if config.data == "mnist" else 1  # an MNIST tuple is 4 problems
    L = config.L if config.data == "synthetic" else 4
    est = float(_problems_run(config)) * per * 2 * N * max(L, 1) * 8 * _BG_COPIES
    try:
        check_memory(f"--problems {config.problems}", est,
                     f"problem sets of N = {N} atoms and {L} channels")
    except ValueError as exc:
        raise BenchConfigError("--problems", str(exc)) from None


def check_config(config: BenchConfig, model: Any = None) -> None:
    """Check the settings against each other and against the model.

    Parameters
    ----------
    config : BenchConfig
    model : object, optional
        The model loaded from ``config.model``.

    Raises
    ------
    BenchConfigError
        The first inconsistency found; the message names the option.
    """
    _check_numbers(config)
    if config.experiment == "bg":
        M = config.M if config.M is not None else config.n_atoms // 2
        if not 1 <= M <= config.n_atoms:
            raise BenchConfigError("--M", f"--M must be between 1 and N = {config.n_atoms}, "
                                   f"got {M}")
        if not (config.kappa >= 1 and math.isfinite(config.kappa)):
            raise BenchConfigError("--kappa", f"--kappa must be finite and >= 1, got "
                                   f"{config.kappa}")
        _check_bg_only(config, M)
        return
    if config.experiment == "phase":
        for name, v in (("--N", config.n_atoms), ("--L", config.L)):
            if v < 1:
                raise BenchConfigError(name, f"{name} must be >= 1, got {v}")
        return
    N = _atoms(config, model)
    _check_problem_memory(config, N)
    for k in config.ks:
        if not 1 <= k <= N:
            raise BenchConfigError("--k", f"--k must be between 1 and N = {N} (atoms per "
                                   f"problem), got {k}")


def _check_folder(option: str, path: str | None, need: str) -> Path:
    if not path:
        raise BenchConfigError(option, need)
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise BenchConfigError(option, f"{option} {path}: no such folder")
    return folder


def check_paths(config: BenchConfig) -> None:
    """Check every input folder of the run; create nothing.

    Parameters
    ----------
    config : BenchConfig

    Raises
    ------
    BenchConfigError
        A data folder is missing, does not exist or holds no data; the model
        cache is not a folder; the output folder is unusable or holds results
        (see :func:`check_output_dir`).
    """
    if config.data == "mnist":
        folder = _check_folder("--data-dir", config.data_dir, "--data mnist needs --data-dir")
        if not any(folder.glob("*images-idx3-ubyte*")) or \
                not any(folder.glob("*labels-idx1-ubyte*")):
            raise BenchConfigError("--data-dir", f"--data-dir {config.data_dir}: no MNIST IDX "
                                   f"files (*images-idx3-ubyte*, *labels-idx1-ubyte*) in it")
    elif config.data == "images" and config.experiment != "phase":
        from ..datasets.images import IMAGE_SUFFIXES

        folder = _check_folder("--images-dir", config.images_dir,
                               "--data images needs --images-dir (a folder of pictures)")
        if not any(p.suffix.lower() in IMAGE_SUFFIXES for p in folder.iterdir()):
            raise BenchConfigError("--images-dir", f"--images-dir {config.images_dir}: no "
                                   f"pictures ({', '.join(IMAGE_SUFFIXES)}) in it")
    if config.model_cache and Path(config.model_cache).expanduser().exists() and \
            not Path(config.model_cache).expanduser().is_dir():
        raise BenchConfigError("--model-cache", f"--model-cache {config.model_cache} is not "
                               f"a folder")
    check_output_dir(config.output_dir(), overwrite=config.overwrite)


def check_output_dir(path: str | Path, *, overwrite: bool = False) -> None:
    """Check that a run may write its results into the folder ``path``.

    A folder that holds a run's results (any of :data:`RESULT_FILES`) is only
    reused with ``overwrite``; a missing folder must be creatable.

    Parameters
    ----------
    path : path
        The output folder.
    overwrite : bool, default False
        Allow replacing the results of an earlier run.

    Raises
    ------
    BenchConfigError
        ``path`` is a file, holds results and ``overwrite`` is False, or
        cannot be created.
    """
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise BenchConfigError("--out", f"--out {path} is a file, not a folder")
    if out.is_dir():
        held = [f for f in RESULT_FILES if (out / f).exists()]
        if held and not overwrite:
            raise BenchConfigError(
                "--out",
                f"{path} already holds the results of a run ({', '.join(held)}); pass "
                f"--overwrite to replace them, or --out to write elsewhere",
            )
        return
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise BenchConfigError("--out", f"cannot create the output folder {path}: {parent} "
                               f"is not a writable folder")


def check_figure_path(option: str, path: str | Path | None) -> None:
    """Check that a figure can be written to ``path`` (its folder exists).

    Parameters
    ----------
    option : str
        The option that named the file (for the message).
    path : path or None
        The figure's file; None passes.

    Raises
    ------
    BenchConfigError
        The folder does not exist.
    """
    if path is None:
        return
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise BenchConfigError(
            option, f"cannot write the figure {path}: folder {parent} does not exist"
        )


def sizes_for(config: BenchConfig, model: Any) -> tuple[int, int]:
    """(M, N) of the run's synthetic or image problems.

    Parameters
    ----------
    config : BenchConfig
    model : object or None

    Returns
    -------
    (int, int)
        The model's ``A`` shape for synthetic data with a model; else ``M``
        (default 25 for images, 72 otherwise) and ``N``.
    """
    if config.data == "synthetic" and model is not None:
        M, N = model.A.shape
        return int(M), int(N)
    default_M = 25 if config.data == "images" else 72
    return (config.M if config.M is not None else default_M), config.n_atoms

