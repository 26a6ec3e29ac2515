"""The settings of a ``cscore bench`` run, checked in one place before anything is written.

:class:`BenchConfig` holds one run's settings (the options of ``cscore bench``;
an experiment's own settings in ``options``, declared by its registration,
:mod:`cscore.bench.registry`).  :func:`check_config` is the one check of the
settings: the checks every experiment shares, then the experiment's own
(``Experiment.check``); :func:`cscore.bench.paths.check_paths` checks the data folders and the
output folder.  Both raise :class:`BenchConfigError` (a ``ValueError`` naming
the offending option) before any folder is created or progress bar started.
Which decoders a run runs is :mod:`cscore.bench.choose`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .decoders import STOP_RULES
from .registry import DATA_SOURCES, Experiment, get_experiment

__all__ = [
    "DATA_N",
    "DATA_SOURCES",
    "DEFAULT_K",
    "DEFAULT_OUT_ROOT",
    "DEMO_MODEL",
    "BenchConfig",
    "BenchConfigError",
    "check_config",
    "experiment_of",
    "parse_floats",
    "parse_ints",
]

#: The pretrained model of the demo images (``--data demo``, ``cscore demo``).
DEMO_MODEL = "demo-dct-m32"
#: Atoms per problem of the image data sets (block side squared).
DATA_N = {"demo": 64, "mnist": 144}
#: Sparsities swept when ``--k`` is not given.
DEFAULT_K = "5:30:5"
#: Parent of the default output folders, ``bench-out/<experiment>-<data>``.
DEFAULT_OUT_ROOT = "bench-out"


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
    experiment : str
        A registered experiment (:func:`cscore.bench.experiment_names`):
        ``sparsity`` (error against k), ``noise`` (error against sigma),
        ``phase`` (the phase transition), ``bg`` (the Bernoulli-Gaussian
        benchmark of the AMP/LAMP papers), ``scaling`` (time against N), ...
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
        Registered decoder names (default: :func:`cscore.bench.choose.choose_decoders`).
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
    options : mapping
        The experiment's own settings (its registered
        :class:`~cscore.bench.registry.ExperimentOption`), by name; read them
        with :meth:`option`.
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
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> Experiment:
        """The experiment's registration (:func:`cscore.bench.registry.get_experiment`)."""
        return experiment_of(self)

    def option(self, name: str) -> Any:
        """The experiment's own setting ``name``: as given, else its declared default.

        Parameters
        ----------
        name : str

        Returns
        -------
        object

        Raises
        ------
        KeyError
            The experiment declares no such option.
        """
        if name in self.options:
            return self.options[name]
        for opt in self.spec.options:
            if opt.name == name:
                return opt.default
        raise KeyError(f"experiment {self.experiment!r} has no option {name!r}")

    @property
    def n_problems(self) -> int:
        """The problems per point a run decodes (``quick`` takes at most 10)."""
        return min(self.problems, 10) if self.quick else self.problems

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
        """``N``, or the experiment's default (``bg``: 500, the papers' setting), else 144."""
        if self.N is not None:
            return self.N
        return int(self.spec.defaults.get("N", 144))

    @property
    def result_data(self) -> str:
        """The data the results are of: ``data``, or the experiment's ``data_label``."""
        label = self.spec.data_label
        return label(self) if label is not None else self.data

    def output_dir(self) -> Path:
        """The output folder: ``out``, else ``bench-out/<experiment>-<data>``.

        Returns
        -------
        pathlib.Path
        """
        if self.out:
            return Path(self.out)
        data = self.result_data
        return Path(DEFAULT_OUT_ROOT) / (f"{self.experiment}-{data}" if data else self.experiment)


def experiment_of(config: BenchConfig) -> Experiment:
    """The registration of ``config.experiment``.

    Parameters
    ----------
    config : BenchConfig

    Returns
    -------
    Experiment

    Raises
    ------
    BenchConfigError
        Not a registered experiment (option ``experiment``).
    """
    try:
        return get_experiment(config.experiment)
    except ValueError as exc:
        raise BenchConfigError("experiment", str(exc)) from None


def _check_numbers(config: BenchConfig) -> None:
    """The checks that need neither the model nor the data."""
    exp = experiment_of(config)
    if config.data not in DATA_SOURCES:
        raise BenchConfigError("--data", f"--data must be one of {', '.join(DATA_SOURCES)}, "
                               f"got {config.data!r}")
    if config.data not in exp.data:
        raise BenchConfigError("--data", f"{exp.name} reads --data {', '.join(exp.data)}, "
                               f"not {config.data}")
    unknown = [n for n in config.options if n not in {o.name for o in exp.options}]
    if unknown:
        flags = ", ".join("--" + n.replace("_", "-") for n in unknown)
        raise BenchConfigError(flags.split(", ")[0], f"{flags} do(es) not apply to {exp.name}")
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


def check_config(config: BenchConfig, model: Any = None) -> None:
    """Check the settings against each other and against the model (the one check).

    First the settings every experiment shares (a registered experiment, a
    data source it reads, numbers in range), then the experiment's own
    (``Experiment.check``: sizes against the model, memory, its options).

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
    check = config.spec.check
    if check is not None:
        check(config, model)
