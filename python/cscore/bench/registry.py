"""The experiment registry: every ``cscore bench <experiment>`` is one registration.

An experiment is one module that calls :func:`register_experiment` once with
what it is: its name and help line, the function that runs it, and, in the
same place, what it adds to the shared settings (:class:`ExperimentOption`,
its own defaults of :class:`~cscore.bench.config.BenchConfig` fields), its own
checks of the settings, the data sources it reads and its default decoders.
The runner (:func:`cscore.bench.runner.run_bench`), the one config check
(:func:`cscore.bench.config.check_config`), ``cscore bench`` (its choices,
help and options) and the reports read this registry; nothing else lists
experiments.  The built-in experiments (``sparsity``, ``noise``, ``phase``,
``bg``, ``scaling``) register themselves when :mod:`cscore.bench` is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DATA_SOURCES",
    "DEFAULTABLE",
    "SHARED_SETTINGS",
    "Experiment",
    "ExperimentOption",
    "experiment_names",
    "get_experiment",
    "register_experiment",
    "unregister_experiment",
]

#: Problem sources of ``--data`` (an experiment reads some of them).
DATA_SOURCES = ("mnist", "demo", "images", "synthetic")

#: The settings every experiment shares (the fields of ``BenchConfig``; an
#: experiment's own option may not take one of these names).
SHARED_SETTINGS = frozenset({
    "experiment", "data", "data_dir", "first_index", "images_dir", "transform", "image_size",
    "quick", "train_models", "model_cache", "model", "decoders", "k", "sigma", "stop",
    "problems", "M", "N", "L", "kappa", "independent", "seed", "out", "overwrite", "progress",
    "plot", "argv", "models", "device", "options",
})
#: The shared settings whose default an experiment may change (``defaults``).
DEFAULTABLE = ("N",)

Log = Callable[[str], None]
#: ``run(plan, log) -> BenchOutcome`` (:mod:`cscore.bench.runner`; this module imports
#: no other of the package, so the hooks are typed loosely here).
RunFn = Callable[[Any, Log], Any]
#: ``check(config, model)``: raises ``BenchConfigError``.
CheckFn = Callable[[Any, Any], None]


@dataclass(frozen=True)
class ExperimentOption:
    """A setting only one experiment has (``cscore bench <experiment> --<name>``).

    Its value reaches the experiment as ``config.options[name]`` (the default
    when not given), already converted by ``type``.

    Attributes
    ----------
    name : str
        The key in ``BenchConfig.options``; the option is ``--`` + ``name`` with
        ``_`` written ``-`` (``max_seconds`` -> ``--max-seconds``).
    default : object
        The value when the option is not given (None: the experiment decides).
    help : str
        The option's help line.
    type : callable, optional
        Text -> value for the command line (default: ``str``).
    """

    name: str
    default: Any
    help: str
    type: Callable[[str], Any] = str

    @property
    def flag(self) -> str:
        """The command-line option, ``--max-seconds`` for ``max_seconds``."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Experiment:
    """One registered experiment: what ``cscore bench <name>`` runs, and its settings.

    Attributes
    ----------
    name : str
        ``cscore bench <name>``; the JSON, CSV and report are written under
        ``bench-out/<name>-<data>`` by default.
    run : callable
        ``run(plan, log) -> BenchOutcome``: runs the checked plan
        (:class:`~cscore.bench.runner.BenchPlan`) and writes the output folder
        (:func:`cscore.bench.runner.finish_run` writes ``results.csv`` and
        ``report.md``).
    help : str
        One line for ``cscore bench --help``.
    check : callable, optional
        ``check(config, model)``: the experiment's own checks of the settings
        (raise :class:`~cscore.bench.config.BenchConfigError` naming the
        option); run by :func:`~cscore.bench.config.check_config` after the
        checks every experiment shares, before anything is written.
    prepare : callable, optional
        ``prepare(plan)``: build what can fail on the data (the first problem
        set) before anything is written.
    defaults : mapping
        Shared settings whose default differs for this experiment (from
        :data:`DEFAULTABLE`: ``{"N": 500}`` for ``bg``); a value the user gives wins.
    options : tuple of ExperimentOption
        Settings only this experiment has.
    data : tuple of str
        The ``--data`` sources the experiment reads (others are refused);
        default: all of :data:`DATA_SOURCES`.
    decoders : tuple of str or None
        The matrix decoders run when ``--decoders`` is not given (a model's own
        decoder comes first); None: ``somp, omp`` with a model, else
        ``somp, omp, tmsbl``; ``()``: the experiment runs no registered decoder.
    data_label : callable, optional
        ``data_label(config) -> str``: what the results are of, for the default
        output folder ``<name>-<label>`` (default: ``config.data``; an empty
        label gives ``<name>``).
    trains : callable, optional
        ``trains(config) -> str or None``: a model decoder whose models the run
        trains itself (it then needs no ``--model``).
    multi_model : bool
        Takes several ``--model`` values (one sensing matrix).
    one_model_per_decoder : bool
        With several models: each model decoder takes one model only.
    """

    name: str
    run: RunFn
    help: str = ""
    check: CheckFn | None = None
    prepare: Callable[[Any], None] | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    options: tuple[ExperimentOption, ...] = ()
    data: tuple[str, ...] = DATA_SOURCES
    decoders: tuple[str, ...] | None = None
    data_label: Callable[[Any], str] | None = None
    trains: Callable[[Any], str | None] | None = None
    multi_model: bool = False
    one_model_per_decoder: bool = False


_EXPERIMENTS: dict[str, Experiment] = {}


def register_experiment(
    name: str,
    run: RunFn,
    *,
    help: str = "",
    check: CheckFn | None = None,
    prepare: Callable[[Any], None] | None = None,
    defaults: Mapping[str, Any] | None = None,
    options: tuple[ExperimentOption, ...] = (),
    data: tuple[str, ...] = DATA_SOURCES,
    decoders: tuple[str, ...] | None = None,
    data_label: Callable[[Any], str] | None = None,
    trains: Callable[[Any], str | None] | None = None,
    multi_model: bool = False,
    one_model_per_decoder: bool = False,
    replace: bool = False,
) -> Experiment:
    """Register an experiment for ``cscore bench`` and :func:`~cscore.bench.run_bench`.

    Parameters
    ----------
    name : str
        The experiment's name (a command-line word: letters, digits, ``-``, ``_``).
    run : callable
        ``run(plan, log) -> BenchOutcome``.
    help, check, prepare, defaults, options, data, decoders, data_label, trains, \
multi_model, one_model_per_decoder
        See :class:`Experiment`.
    replace : bool, default False
        Replace an experiment of that name (else refused).

    Returns
    -------
    Experiment
        The registration.

    Raises
    ------
    ValueError
        A bad name, a name already registered (without ``replace``), an
        unknown data source, or an option that clashes with another one.
    """
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"an experiment name is letters, digits, '-' and '_'; got {name!r}")
    if name in _EXPERIMENTS and not replace:
        raise ValueError(f"experiment {name!r} is already registered (pass replace=True)")
    bad = [d for d in data if d not in DATA_SOURCES]
    if bad or not data:
        raise ValueError(f"data must be from {', '.join(DATA_SOURCES)}; got {list(data)}")
    unknown = [f for f in (defaults or {}) if f not in DEFAULTABLE]
    if unknown:
        raise ValueError(f"defaults takes {', '.join(DEFAULTABLE)}; got {unknown}")
    for opt in options:
        if opt.name in SHARED_SETTINGS:
            raise ValueError(f"option {opt.flag} is already a setting of every experiment")
        for other in _EXPERIMENTS.values():
            clash = next((o for o in other.options if o.name == opt.name), None)
            if other.name != name and clash is not None and clash != opt:
                raise ValueError(f"option {opt.flag} of {name!r} differs from {other.name!r}'s")
    exp = Experiment(name=name, run=run, help=help, check=check, prepare=prepare,
                     defaults=dict(defaults or {}), options=tuple(options), data=tuple(data),
                     decoders=decoders, data_label=data_label, trains=trains,
                     multi_model=multi_model, one_model_per_decoder=one_model_per_decoder)
    _EXPERIMENTS[name] = exp
    return exp


def unregister_experiment(name: str) -> None:
    """Remove a registered experiment (tests and plugins that clean up).

    Parameters
    ----------
    name : str

    Raises
    ------
    KeyError
        No experiment of that name.
    """
    del _EXPERIMENTS[name]


def experiment_names() -> list[str]:
    """The registered experiments, in registration order.

    Returns
    -------
    list of str
    """
    return list(_EXPERIMENTS)


def get_experiment(name: str) -> Experiment:
    """The registration of experiment ``name``.

    Parameters
    ----------
    name : str

    Returns
    -------
    Experiment

    Raises
    ------
    ValueError
        Not registered (the message lists the experiments).
    """
    try:
        return _EXPERIMENTS[name]
    except KeyError:
        raise ValueError(f"experiment must be one of {', '.join(_EXPERIMENTS)}, "
                         f"got {name!r}") from None
