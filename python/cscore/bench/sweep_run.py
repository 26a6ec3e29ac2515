"""A sweep as a ``cscore bench`` experiment: its checks, problems, run and report.

``sparsity`` (:mod:`cscore.bench.sparsity`) and ``noise``
(:mod:`cscore.bench.noise`) are one sweep over a different parameter;
:func:`sweep_experiment` gives the three functions they register:
:func:`check_sweep` (sizes against the model, memory, the sparsities),
a ``prepare`` that builds the first problem set (bad data fails before anything
is written) and a ``run`` that sweeps and writes the results.  The problems
come from :class:`ProblemFactory`, over the held-out problem builders of
:mod:`cscore.bench.problems`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._limits import check_memory
from .config import DATA_N, BenchConfig, BenchConfigError
from .problems import ProblemSet
from .runner import BenchOutcome, BenchPlan, finish_run
from .tally import WarningTally

__all__ = ["ProblemFactory", "check_sweep", "sizes_for", "sweep_experiment", "sweep_values"]

#: Float64 copies of a problem held at once (the problem, the estimates and their
#: errors): the bound of the memory check.
_COPIES = 8

Log = Callable[[str], None]


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


def _check_problem_memory(config: BenchConfig, N: int) -> None:
    """Refuse ``--problems`` whose problem sets (``M <= N``) would not fit in memory."""
    per = 4 if config.data == "mnist" else 1  # an MNIST tuple is 4 problems
    L = config.L if config.data == "synthetic" else 4
    est = float(config.n_problems) * per * 2 * N * max(L, 1) * 8 * _COPIES
    try:
        check_memory(f"--problems {config.problems}", est,
                     f"problem sets of N = {N} atoms and {L} channels")
    except ValueError as exc:
        raise BenchConfigError("--problems", str(exc)) from None


def check_sweep(config: BenchConfig, model: Any) -> None:
    """A sweep's own checks: sizes against the model and data, memory, the sparsities.

    Parameters
    ----------
    config : BenchConfig
    model : object or None

    Raises
    ------
    BenchConfigError
        The first inconsistency (the message names the option).
    """
    N = _atoms(config, model)
    _check_problem_memory(config, N)
    for k in config.ks:
        if not 1 <= k <= N:
            raise BenchConfigError("--k", f"--k must be between 1 and N = {N} (atoms per "
                                   f"problem), got {k}")


def _pick3(values: list[Any]) -> list[Any]:
    """First, middle and last of ``values`` (for ``quick``)."""
    if len(values) <= 3:
        return values
    return [values[0], values[len(values) // 2], values[-1]]


def sweep_values(config: BenchConfig) -> tuple[list[int], list[float]]:
    """The sparsities and noise levels of a run (first, middle and last with ``quick``).

    Parameters
    ----------
    config : BenchConfig

    Returns
    -------
    (list of int, list of float)
    """
    ks, sigmas = list(config.ks), list(config.sigma)
    if config.quick:
        ks, sigmas = _pick3(ks), _pick3(sigmas)
    return ks, sigmas


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
        self.n_problems = config.n_problems
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
        from . import problems as ex

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


def _run_sweep(plan: BenchPlan, param: str) -> BenchOutcome:
    from .sweep import sweep

    c, model = plan.config, plan.model
    factory = plan.state["factory"]
    tally = WarningTally()
    ks, sigmas = sweep_values(c)
    kw: dict[str, Any] = {"stop": list(c.stop), "model": model, "progress": c.progress,
                          "tally": tally, "models": plan.models}
    if param == "k":
        res = sweep("k", ks, lambda k: factory(k, sigmas[0]), plan.decoders, **kw)
    else:
        res = sweep("sigma", sigmas, lambda s: factory(ks[0], s), plan.decoders, **kw)
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

        title = _sweep_title(plan, param, ks, sigmas)
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


def _sweep_title(plan: BenchPlan, param: str, ks: list[int], sigmas: list[float]) -> str:
    """The sweep figure's title: what was swept, on which data, sizes and model(s)."""
    c, factory = plan.config, plan.state["factory"]
    if param == "k":
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


def _prepare_sweep(plan: BenchPlan) -> None:
    """Build the first problem set: bad data fails here, before any output."""
    factory = ProblemFactory(plan.config, plan.model)
    ks, sigmas = sweep_values(plan.config)
    factory.prime(ks[0], sigmas[0])
    plan.state["factory"] = factory


def sweep_experiment(param: str) -> dict[str, Any]:
    """The registration of a sweep over ``param`` (``"k"`` or ``"sigma"``).

    Parameters
    ----------
    param : {"k", "sigma"}
        The swept setting: the sparsities ``--k`` at the first ``--sigma``, or
        the noise levels ``--sigma`` at the first ``--k``.

    Returns
    -------
    dict
        ``run``, ``check``, ``prepare`` and ``multi_model`` for
        :func:`cscore.bench.register_experiment`.
    """
    if param not in ("k", "sigma"):
        raise ValueError(f"a bench sweep is over k or sigma, got {param!r}")

    def run(plan: BenchPlan, log: Log) -> BenchOutcome:
        return _run_sweep(plan, param)

    return {"run": run, "check": check_sweep, "prepare": _prepare_sweep, "multi_model": True}
