"""Run one ``cscore bench`` experiment from a :class:`~cscore.bench.config.BenchConfig`.

:func:`prepare` loads the model (through the one resolver,
:func:`cscore.models.registry.resolve_model`), checks every setting and path
(:func:`~cscore.bench.config.check_config`, the one check), picks the decoders
from the decoder registry and lets the experiment build what can fail on the
data (its registered ``prepare``), all before anything is written or a
progress bar starts.  :func:`execute` runs the experiment's registered ``run``
(:mod:`cscore.bench.registry`), which writes the output folder through
:func:`finish_run`: ``<experiment>-<data>.json``, ``results.csv``, the figure
and ``report.md``.  :func:`run_bench` does both.  Nothing here prints:
messages during a run go to the ``log`` callback, and the returned
:class:`BenchOutcome` holds what to show.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .choose import choose_decoders
from .config import (
    DEMO_MODEL,
    BenchConfig,
    BenchConfigError,
    check_config,
    experiment_of,
)
from .decoders import decoder_device
from .paths import check_paths
from .tally import WarningTally

__all__ = ["BenchOutcome", "BenchPlan", "execute", "finish_run", "load_bench_model",
           "prepare", "run_bench", "write_json"]

Log = Callable[[str], None]


def _no_log(_message: str) -> None:
    return None


def load_bench_model(name_or_path: str | None) -> Any:
    """The model named by ``--model`` (a pretrained name or a model file), or None.

    Parameters
    ----------
    name_or_path : str or None
        Passed to :func:`cscore.models.registry.resolve_model`.

    Returns
    -------
    object or None
        The loaded model, of the class its file's ``arch`` names.

    Raises
    ------
    BenchConfigError
        No such file, an unknown pretrained name or a malformed file.
    """
    if name_or_path is None:
        return None
    from ..models.registry import resolve_model

    try:
        model, _ = resolve_model(name_or_path)
    except FileNotFoundError:
        path = Path(name_or_path).expanduser().absolute()
        raise BenchConfigError("--model", f"--model {name_or_path}: no model file at {path} "
                               f"(--model takes a file or a name from `cscore models`)") from None
    except ValueError as exc:  # unknown name, ModelFileError
        raise BenchConfigError("--model", str(exc)) from exc
    return model


@dataclass
class BenchPlan:
    """A checked run, ready for :func:`execute` (nothing written yet).

    Attributes
    ----------
    config : BenchConfig
        The settings, with ``model`` filled in for ``--data demo``.
    model : object or None
    decoders : list of str
    out : pathlib.Path
        The output folder (created by :func:`execute`).
    state : dict
        What the experiment's ``prepare`` built for its ``run`` (a sweep's
        problem factory, ...).
    t0 : float
        ``time.perf_counter()`` when the run began.
    models : dict, optional
        A multi-model run's models by label (``model`` is the first), else None.
    """

    config: BenchConfig
    model: Any
    decoders: list[str]
    out: Path
    state: dict[str, Any] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)
    models: dict[str, Any] | None = None


@dataclass
class BenchOutcome:
    """What a run wrote, and what to show.

    Attributes
    ----------
    out : pathlib.Path
        The output folder.
    json_path : pathlib.Path or None
        The experiment's JSON (None when it writes none).
    csv_path, report_path : pathlib.Path
        The files written.
    n_rows : int
        Rows of ``results.csv`` (one per decoder run and problem).
    figures : list of pathlib.Path
    tables : list of (str, str)
        ``(caption, Markdown table)`` to show (the NMSE and time tables of a
        sweep, the MNIST transition curve).
    warnings : WarningTally
        The decoders' warnings, counted per decoder.
    result : object
        The experiment's result (a SweepResult, a dict for a phase transition).
    """

    out: Path
    json_path: Path | None
    csv_path: Path
    report_path: Path
    n_rows: int
    figures: list[Path]
    tables: list[tuple[str, str]]
    warnings: WarningTally
    result: Any


def prepare(config: BenchConfig) -> BenchPlan:
    """Check a run completely without writing anything.

    Parameters
    ----------
    config : BenchConfig

    Returns
    -------
    BenchPlan

    Raises
    ------
    BenchConfigError
        Bad settings, model or paths (the message names the option).
    ValueError, OSError
        Data that cannot give the problems (a too large ``first_index``,
        unreadable files).
    """
    t0 = time.perf_counter()
    exp = experiment_of(config)
    if config.data == "demo" and not config.model_names and "demo" in exp.data:
        config = dataclasses.replace(config, model=DEMO_MODEL)
    models = None
    if len(config.model_names) > 1:
        config, model, models, decoders = _load_models(config)
    else:
        model = load_bench_model(config.model)
        check_config(config, model)
        trained = exp.trains(config) if exp.trains is not None else None
        # an experiment that declares no decoders (``()``, scaling) runs none of the registry's
        decoders = [] if exp.decoders == () else choose_decoders(config, model, trained=trained)
    check_paths(config)
    plan = BenchPlan(config=config, model=model, decoders=decoders, out=config.output_dir(),
                     t0=t0, models=models)
    if exp.prepare is not None:
        exp.prepare(plan)
    return plan


def _load_models(config: BenchConfig) -> tuple[BenchConfig, Any, dict[str, Any], list[str]]:
    """Load and check the models of a multi-model run (:mod:`cscore.bench.multi`).

    Returns the config with ``model`` set to the first model, that model, the
    models by label and the decoders.
    """
    from .multi import check_experiment, check_shared_matrix, choose_model_decoders, model_labels

    check_experiment(config)
    names = config.model_names
    models = {label: load_bench_model(n) for label, n in zip(model_labels(names), names)}
    check_shared_matrix(models)
    config = dataclasses.replace(config, model=names[0], models=names)
    for n, m in zip(names, models.values()):
        check_config(dataclasses.replace(config, model=n, models=None), m)
    decoders = choose_model_decoders(config, models)
    return config, next(iter(models.values())), models, decoders


def run_bench(config: BenchConfig, *, log: Log | None = None) -> BenchOutcome:
    """Check, run and write one experiment: :func:`prepare`, then :func:`execute`.

    Parameters
    ----------
    config : BenchConfig
    log : callable, optional
        Receives progress messages (a trained model is ready, ...).

    Returns
    -------
    BenchOutcome
    """
    return execute(prepare(config), log=log)


def execute(plan: BenchPlan, *, log: Log | None = None) -> BenchOutcome:
    """Run a prepared experiment and write its output folder.

    Parameters
    ----------
    plan : BenchPlan
        From :func:`prepare`.
    log : callable, optional
        Receives progress messages.

    Returns
    -------
    BenchOutcome
    """
    log = log or _no_log
    with decoder_device(plan.config.device):
        return _execute(plan, log)


def _execute(plan: BenchPlan, log: Log) -> BenchOutcome:
    return plan.config.spec.run(plan, log)


def finish_run(
    plan: BenchPlan,
    name: str | None,
    title: str,
    result: Any,
    rows: list[dict[str, Any]],
    by: tuple[str, ...],
    figures: list[Path],
    sections: list[tuple[str, str]],
    tables: list[tuple[str, str]],
    tally: WarningTally,
) -> BenchOutcome:
    """Write ``results.csv`` and ``report.md`` (with the warnings caught); sum up the run.

    Parameters
    ----------
    plan : BenchPlan
    name : str or None
        Stem of the run's JSON file (already written); None: it writes none.
    title : str
        The report's heading.
    result : object
    rows : list of dict
        Per-problem records.
    by : tuple of str
        Keys of the summary table's groups.
    figures : list of pathlib.Path
    sections : list of (str, str)
        Report sections after the summary.
    tables : list of (str, str)
        What the command shows.
    tally : WarningTally

    Returns
    -------
    BenchOutcome
    """
    from .report import summary_table, write_csv, write_report

    out = plan.out
    out.mkdir(parents=True, exist_ok=True)
    csv_path = write_csv(rows, out / "results.csv")
    sections = [("Summary (NMSE per problem)", summary_table(rows, by)), *sections,
                ("Warnings caught during the run", tally.table())]
    argv = list(plan.config.argv) if plan.config.argv is not None else None
    rep = write_report(out, title=title, seed=plan.config.seed, sections=sections,
                       figures=figures, argv=argv, seconds=time.perf_counter() - plan.t0)
    return BenchOutcome(out=out, json_path=out / f"{name}.json" if name else None,
                        csv_path=csv_path, report_path=rep, n_rows=len(rows), figures=figures,
                        tables=tables, warnings=tally, result=result)


def write_json(out: Path, name: str, data: dict[str, Any]) -> Path:
    """Write ``data`` as ``out/<name>.json`` (the folder created if needed).

    Parameters
    ----------
    out : pathlib.Path
    name : str
    data : dict

    Returns
    -------
    pathlib.Path
    """
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(data, indent=1))
    return path
