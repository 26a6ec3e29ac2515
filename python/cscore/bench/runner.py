"""Run one ``cscore bench`` experiment from a :class:`~cscore.bench.config.BenchConfig`.

:func:`prepare` loads the model (through the one resolver,
:func:`cscore.models.registry.resolve_model`), checks every setting and path,
picks the decoders from the registry and builds the first problem set, all
before anything is written or a progress bar starts.  :func:`execute` runs the
sweep or phase transition with the decoders' warnings caught and counted
(:class:`~cscore.bench.tally.WarningTally`), then writes the output folder:
``<experiment>-<data>.json`` (``phase.json``, ``phase-mnist.json``),
``results.csv``, the figure and ``report.md``.  :func:`run_bench` does both.
Nothing here prints: messages during a run go to the ``log`` callback, and the
returned :class:`BenchOutcome` holds what to show.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .config import (
    DEMO_MODEL,
    BenchConfig,
    BenchConfigError,
    check_config,
    check_paths,
    choose_decoders,
    sizes_for,
)
from .decoders import decoder_device, needs_model
from .experiments import ProblemSet, SweepResult
from .tally import WarningTally

__all__ = ["BenchOutcome", "BenchPlan", "ProblemFactory", "execute", "load_bench_model",
           "prepare", "run_bench"]

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


def _pick3(values: list[Any]) -> list[Any]:
    """First, middle and last of ``values`` (for ``quick``)."""
    if len(values) <= 3:
        return values
    return [values[0], values[len(values) // 2], values[-1]]


class ProblemFactory:
    """The problem sets of a sweep: ``factory(k, sigma) -> ProblemSet`` for the config's data.

    Image folders are read once, when the factory is made.  :meth:`prime`
    builds one problem set ahead (to find bad data before a run writes
    anything); the next call with the same ``(k, sigma)`` returns it.

    Parameters
    ----------
    config : BenchConfig
    model : object or None
        Its ``A`` measures MNIST, demo and image problems (and synthetic ones
        when given).
    """

    def __init__(self, config: BenchConfig, model: Any) -> None:
        self.config = config
        self.model = model
        self.n_problems = min(config.problems, 10) if config.quick else config.problems
        spec_t = getattr(getattr(model, "spec", None), "transform", None)
        self.transform: str = config.transform or (spec_t if spec_t in ("dct", "haar") else "dct")
        self.M, self.N = sizes_for(config, model)
        self.A_img: np.ndarray | None = None
        self.images: np.ndarray | None = None
        self._primed: dict[tuple[Any, Any], ProblemSet] = {}
        if config.data == "images":
            from ..datasets import load_image_folder, paper_matrix

            self.A_img = model.A if model is not None else paper_matrix(self.M, 64,
                                                                        seed=config.seed)
            self.images, _ = load_image_folder(str(config.images_dir), config.image_size)

    def prime(self, k: int, sigma: float) -> None:
        """Build the problem set of ``(k, sigma)`` now; the next call returns it.

        Parameters
        ----------
        k : int
        sigma : float
        """
        self._primed[(k, sigma)] = self._make(k, sigma)

    def __call__(self, k: int, sigma: float) -> ProblemSet:
        """The problem set of sparsity ``k`` and noise level ``sigma``."""
        primed = self._primed.pop((k, sigma), None)
        return primed if primed is not None else self._make(k, sigma)

    def _make(self, k: int, sigma: float) -> ProblemSet:
        from . import experiments as ex

        c, model = self.config, self.model
        if c.data == "mnist":
            return ex.mnist_problems(str(c.data_dir), model.A, k, sigma=sigma, seed=c.seed,
                                     n_tuples=self.n_problems, first_index=c.first_index)
        if c.data == "demo":
            return ex.demo_problems(model.A, k, sigma=sigma, seed=c.seed)
        if c.data == "images":
            assert self.images is not None and self.A_img is not None
            return ex.image_problems(self.images, self.A_img, k, sigma=sigma, seed=c.seed,
                                     transform=self.transform,
                                     L=model.L if model is not None else c.L)
        ps = ex.synthetic_problems(self.M, self.N, c.L, k, n_problems=self.n_problems,
                                   sigma=sigma, joint=not c.independent, seed=c.seed)
        if model is not None:  # measure with the model's matrix
            from ..datasets import measure

            ps.A = model.A
            ps.Y, _ = measure(model.A, ps.S, sigma, c.seed + 1)
        return ps


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
    factory : ProblemFactory or None
        The problems of a sweep (None for ``phase``).
    t0 : float
        ``time.perf_counter()`` when the run began.
    models : dict, optional
        A multi-model run's models by label (``model`` is the first), else None.
    """

    config: BenchConfig
    model: Any
    decoders: list[str]
    out: Path
    factory: ProblemFactory | None = None
    t0: float = field(default_factory=time.perf_counter)
    models: dict[str, Any] | None = None


@dataclass
class BenchOutcome:
    """What a run wrote, and what to show.

    Attributes
    ----------
    out : pathlib.Path
        The output folder.
    json_path, csv_path, report_path : pathlib.Path
        The files written.
    n_rows : int
        Rows of ``results.csv`` (one per decoder run and problem).
    figures : list of pathlib.Path
    tables : list of (str, str)
        ``(caption, Markdown table)`` to show (the NMSE and time tables of a
        sweep, the MNIST transition curve).
    warnings : WarningTally
        The decoders' warnings, counted per decoder.
    result : SweepResult or dict
        The experiment's result (a phase transition is a dict).
    """

    out: Path
    json_path: Path
    csv_path: Path
    report_path: Path
    n_rows: int
    figures: list[Path]
    tables: list[tuple[str, str]]
    warnings: WarningTally
    result: SweepResult | dict[str, Any]


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
    if config.data == "demo" and not config.model_names and config.experiment != "phase":
        config = dataclasses.replace(config, model=DEMO_MODEL)
    models = None
    if len(config.model_names) > 1:
        config, model, models, decoders = _load_models(config)
    else:
        model = load_bench_model(config.model)
        check_config(config, model)
        trained = None
        if config.experiment == "phase" and config.train_models:
            from .phase_mnist import small_model_decoder

            trained = small_model_decoder()
        decoders = choose_decoders(config, model, trained=trained)
    check_paths(config)
    plan = BenchPlan(config=config, model=model, decoders=decoders, out=config.output_dir(),
                     t0=t0, models=models)
    if config.experiment == "bg":
        return plan
    if config.experiment == "phase":
        if config.data == "mnist":
            from .phase_mnist import check_mnist_phase_data

            check_mnist_phase_data(str(config.data_dir), first_index=config.first_index,
                                   train_models=config.train_models)
        return plan
    plan.factory = ProblemFactory(config, model)
    ks, sigmas = _sweep_values(config)
    plan.factory.prime(ks[0], sigmas[0])  # bad data fails here, before any output
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


def _sweep_values(config: BenchConfig) -> tuple[list[int], list[float]]:
    ks, sigmas = list(config.ks), list(config.sigma)
    if config.quick:
        ks, sigmas = _pick3(ks), _pick3(sigmas)
    return ks, sigmas


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
    if plan.config.experiment == "bg":
        return _run_bg(plan)
    if plan.config.experiment == "phase":
        if plan.config.data == "mnist":
            return _run_mnist_phase(plan, log)
        return _run_phase(plan)
    return _run_sweep(plan)


def _run_sweep(plan: BenchPlan) -> BenchOutcome:
    from . import experiments as ex

    c, model, factory = plan.config, plan.model, plan.factory
    assert factory is not None
    tally = WarningTally()
    ks, sigmas = _sweep_values(c)
    kw: dict[str, Any] = {"stop": list(c.stop), "model": model, "progress": c.progress,
                          "tally": tally, "models": plan.models}
    if c.experiment == "sparsity":
        res = ex.sweep("k", ks, lambda k: factory(k, sigmas[0]), plan.decoders, **kw)
    else:
        res = ex.sweep("sigma", sigmas, lambda s: factory(ks[0], s), plan.decoders, **kw)
    transform = factory.transform
    res.info.update(
        {"data": c.data, "model": c.model, "seed": c.seed, "problems": factory.n_problems,
         "first_index": c.first_index if c.data == "mnist" else None,
         "images_dir": c.images_dir, "transform": transform if c.data == "images" else None}
    )  # fmt: skip
    model_txt = f"model {c.model}" if c.model else "no model"
    if plan.models is not None:
        res.info["models"] = list(plan.models)
        model_txt = f"models {', '.join(plan.models)}"
    name = f"{c.experiment}-{c.data}"
    plan.out.mkdir(parents=True, exist_ok=True)
    res.save(plan.out / f"{name}.json")
    figs = []
    if c.plot:
        from .plots import plot_sweep

        title = _sweep_title(plan, ks, sigmas)
        figs.append(plot_sweep(res, plan.out / f"{name}.png", title=title))
    what = {"mnist": f"MNIST digits from index {c.first_index} ({c.data_dir})",
            "demo": "the bundled demo images (PyWavelets)",
            "images": f"pictures in {c.images_dir} ({transform.upper()} blocks)",
            "synthetic": "random problems"}[c.data]  # fmt: skip
    tables = [("NMSE (mean over problems):", res.table("nmse")),
              ("seconds per problem:", res.table("seconds"))]
    return finish_run(
        plan, name, f"{c.experiment}: {what}, {model_txt}", res, res.rows,
        ("decoder", "stop", res.param), figs,
        [("Mean NMSE", res.table("nmse")), ("Seconds per problem", res.table("seconds"))],
        tables, tally,
    )  # fmt: skip


def _sweep_title(plan: BenchPlan, ks: list[int], sigmas: list[float]) -> str:
    """The sweep figure's title: what was swept, on which data, sizes and model(s)."""
    c, factory = plan.config, plan.factory
    assert factory is not None
    if c.experiment == "sparsity":
        swept = f"against the sparsity k (sigma = {sigmas[0]:g})"
    else:
        swept = f"against the noise level sigma (k = {ks[0]})"
    M, N = factory.M, factory.N
    data = {"mnist": f"MNIST digits from index {c.first_index}",
            "demo": "8x8 DCT blocks of the demo images (PyWavelets)",
            "images": f"{Path(str(c.images_dir)).name} ({factory.transform.upper()} blocks)",
            "synthetic": f"random problems ({'independent' if c.independent else 'joint'} "
                         f"supports, L = {c.L})"}[c.data]  # fmt: skip
    if c.data == "images" and factory.A_img is not None:
        M, N = factory.A_img.shape
    elif c.data in ("mnist", "demo") and plan.model is not None:
        M, N = np.shape(plan.model.A)
    who = ", ".join(plan.models) if plan.models is not None else c.model
    return (f"{c.experiment}: NMSE and time per problem {swept}\n{data}, M = {M}, N = {N}"
            + (f", model {who}" if who else "")
            + f"; line style = stopping rule ({', '.join(c.stop)})")


def finish_run(
    plan: BenchPlan,
    name: str,
    title: str,
    result: SweepResult | dict[str, Any],
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
    name : str
        Stem of the run's JSON file (already written).
    title : str
        The report's heading.
    result : SweepResult or dict
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
    return BenchOutcome(out=out, json_path=out / f"{name}.json", csv_path=csv_path,
                        report_path=rep, n_rows=len(rows), figures=figures, tables=tables,
                        warnings=tally, result=result)


def _phase_json(out: Path, name: str, data: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(data, indent=1))


def drop_model_decoders(decoders: list[str], keep: str | None = None) -> list[str]:
    """``decoders`` without the model decoders (but ``keep``).

    Parameters
    ----------
    decoders : list of str
    keep : str, optional
        A model decoder to keep.

    Returns
    -------
    list of str
    """
    return [d for d in decoders if d == keep or not needs_model(d)]


def _run_phase(plan: BenchPlan) -> BenchOutcome:
    """The phase transition on noiseless synthetic problems (no model decoders)."""
    from .experiments import phase_transition

    c = plan.config
    N, n_trials = c.n_atoms, c.problems
    deltas = np.round(np.linspace(0.1, 0.9, 9), 4).tolist()
    rhos = np.round(np.linspace(0.05, 1.0, 20), 4).tolist()
    if c.quick:
        N, n_trials = min(N, 64), min(n_trials, 5)
        deltas = np.round(np.linspace(0.2, 0.8, 4), 4).tolist()
        rhos = np.round(np.linspace(0.1, 1.0, 10), 4).tolist()
    tally = WarningTally()
    pt = phase_transition(N, deltas, rhos, drop_model_decoders(plan.decoders), L=c.L,
                          n_trials=n_trials, joint=not c.independent, seed=c.seed,
                          progress=c.progress, tally=tally)  # fmt: skip
    rows = pt.pop("rows")
    _phase_json(plan.out, "phase", pt)
    figs = []
    if c.plot:
        from .plots import plot_phase_transition

        figs.append(plot_phase_transition(pt, plan.out / "phase.png"))
    return finish_run(plan, "phase", f"Phase transition, N = {N}, L = {c.L}, noiseless", pt,
                      rows, ("decoder", "m", "k"), figs, [], [], tally)  # fmt: skip


def _mnist_grid(c: BenchConfig) -> tuple[list[float], list[float], int]:
    """The thesis' m/n ratios and k/m grid (a coarse one for ``quick``), and the tuples."""
    from .phase_mnist import FIG48_RATIOS

    if c.quick:
        return [0.1, 0.3, 0.5], [round(0.1 * i, 1) for i in range(1, 11)], 5
    return list(FIG48_RATIOS), [round(0.05 * i, 2) for i in range(1, 21)], c.problems


def _run_mnist_phase(plan: BenchPlan, log: Log) -> BenchOutcome:
    """The thesis' Fig. 4.8: the transition on MNIST, with small trained models if asked."""
    from .phase_mnist import mnist_phase, small_mnist_model, small_model_decoder

    c = plan.config
    ratios, rhos, n_tuples = _mnist_grid(c)
    decoders, models, trained = list(plan.decoders), None, None
    if c.train_models:
        trained = small_model_decoder()
        models = {}
        for r in ratios:
            M = max(1, round(r * 144))
            t1 = time.perf_counter()
            models[M] = small_mnist_model(M, str(c.data_dir), train_end=c.first_index,
                                          seed=c.seed, cache_dir=c.model_cache,
                                          progress=c.progress)  # fmt: skip
            log(f"model M={M}: ready in {time.perf_counter() - t1:.1f} s")
        if trained not in decoders:
            decoders = [trained, *decoders]
    tally = WarningTally()
    res = mnist_phase(str(c.data_dir), drop_model_decoders(decoders, keep=trained),
                      ratios=ratios, rhos=rhos, models=models, sigma=c.sigma[0],
                      n_tuples=n_tuples, first_index=c.first_index, stop=c.stop[0],
                      seed=c.seed, progress=c.progress, tally=tally)  # fmt: skip
    rows = res.pop("rows")
    _phase_json(plan.out, "phase-mnist", res)
    figs = []
    if c.plot:
        from .plots import plot_mnist_phase

        figs.append(plot_mnist_phase(res, plan.out / "phase-mnist.png"))
    lines = ["| m/n | " + " | ".join(res["curve"]) + " |", "|---" * (len(res["curve"]) + 1) + "|"]
    for i, r in enumerate(res["ratios"]):
        lines.append(f"| {r:.2f} | " + " | ".join(f"{v[i]:.2f}" for v in res["curve"].values())
                     + " |")
    curve = "\n".join(lines)
    heading = "Transition: largest k/m with >= 90% of problems at NMSE <= 0.6"
    return finish_run(
        plan, "phase-mnist", "MNIST phase transition (thesis Fig. 4.8)", res, rows,
        ("decoder", "m", "k"), figs, [(heading, curve)],
        [("largest k/m with >= 90% of problems at NMSE <= 0.6:", curve)], tally,
    )  # fmt: skip


def _run_bg(plan: BenchPlan) -> BenchOutcome:
    """The Bernoulli-Gaussian benchmark of the AMP/LAMP papers (:mod:`cscore.bench.bg`)."""
    from .bg import PUBLISHED_DB, bg_models, run_bg

    c = plan.config
    N = c.n_atoms
    M = c.M if c.M is not None else N // 2
    models = bg_models(plan.models or {}, plan.model)
    n_problems = min(c.problems, 10) if c.quick else c.problems
    tally = WarningTally()
    res = run_bg(plan.decoders, n_problems=n_problems, kappa=c.kappa, seed=c.seed,
                 models=models, iterations=10 if c.quick else 20, N=N, M=M, tally=tally)
    name = "bg" if c.kappa == 1.0 else f"bg-kappa{c.kappa:g}"
    _phase_json(plan.out, name, {"info": res.info, "nmse_db": res.nmse_db,
                                 "seconds": res.seconds, "curves": res.curves})
    from .report import format_duration

    table = "\n".join(["| decoder | NMSE (dB) | time per problem |", "|---|---|---|",
                        *(f"| {d} | {v:.2f} | {format_duration(res.seconds[d])} |"
                          for d, v in res.nmse_db.items())])
    published = "\n".join(["| reference | kappa = 1 | kappa = 15 |", "|---|---|---|",
                            *(f"| {k} | {a} | {b if b is not None else '-'} |"
                              for k, (a, b) in PUBLISHED_DB.items())])
    figs = []
    if c.plot:
        from .plots import plot_bg

        figs.append(plot_bg(res, plan.out / f"{name}.png"))
    title = (f"Bernoulli-Gaussian benchmark: N = {N}, M = {M}, rate 0.1, SNR 40 dB, "
             f"condition number {c.kappa:g}, {n_problems} problems")
    return finish_run(plan, name, title, res.info, res.rows, ("decoder",), figs,
                      [("NMSE in dB (mean over problems)", table),
                       ("Published levels (Borgerding, Schniter, Rangan 2017), dB", published)],
                      [("NMSE in dB:", table)], tally)
