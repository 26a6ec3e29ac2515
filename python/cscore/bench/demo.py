"""The README's main job (``cscore demo``): decode the bundled demo images.

:func:`prepare_demo` checks the settings, loads the model (through the one
resolver, :func:`cscore.models.registry.resolve_model`) and the demo problems;
:func:`run_demo` decodes them with the model's decoder (found in the decoder
registry: LSTM-CS for the default ``demo-dct-m32``) stopped by the paper's
threshold and by the true sparsity, SOMP (threshold) and OMP (sparsity), and
draws the images if asked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .config import DATA_N, DEMO_MODEL, BenchConfigError
from .decoders import own_decoder, run_decoder
from .paths import check_figure_path
from .report import format_duration
from .runner import load_bench_model
from .sweep import mean_nmse

__all__ = ["DemoResult", "DemoRun", "DemoSetup", "prepare_demo", "run_demo"]


@dataclass
class DemoRun:
    """One decoder run of the demo.

    Attributes
    ----------
    label : str
        ``"name (rule)"``, the rule being ``tol`` or ``k``.
    nmse : float
        Mean per-problem NMSE.
    seconds : float
        Wall time per problem.
    """

    label: str
    nmse: float
    seconds: float


@dataclass
class DemoSetup:
    """The checked demo: model and problems, ready for :func:`run_demo`.

    Attributes
    ----------
    model_name : str
        As given (a pretrained name or a file).
    model : object
        The loaded model (N = 64).
    k, sigma, seed : int, float, int
        DCT coefficients kept per 8x8 block, noise level, seed.
    plot : str or None
        Where the figure goes.
    data : DemoData
        The demo problems (:func:`cscore.datasets.load_demo`).
    tol : float
        The paper's threshold for ``sigma``.
    """

    model_name: str
    model: Any
    k: int
    sigma: float
    seed: int
    plot: str | None
    data: Any
    tol: float

    @property
    def n_problems(self) -> int:
        """Problems decoded."""
        return int(self.data.S_test.shape[0])


@dataclass
class DemoResult:
    """The demo's runs and figure.

    Attributes
    ----------
    runs : list of DemoRun
    figure : pathlib.Path or None
    """

    runs: list[DemoRun] = field(default_factory=list)
    figure: Path | None = None


def prepare_demo(
    model: str = DEMO_MODEL,
    *,
    k: int = 10,
    sigma: float = 0.005,
    seed: int = 0,
    plot: str | None = None,
) -> DemoSetup:
    """Check the demo's settings and load its model and problems.

    Parameters
    ----------
    model : str, default "demo-dct-m32"
        A pretrained model name or a model file; its N must be 64 (8x8 blocks).
    k : int, default 10
        DCT coefficients kept per 8x8 block, 1..64.
    sigma : float, default 0.005
        Noise standard deviation.
    seed : int, default 0
        Seed of the noise.
    plot : str, optional
        PNG file for the original and decoded images (its folder must exist).

    Returns
    -------
    DemoSetup

    Raises
    ------
    BenchConfigError
        A setting out of range, a missing figure folder, or an unusable model.
    """
    from ..datasets import expected_noise_tol, load_demo

    N = DATA_N["demo"]
    if k < 1 or k > N:
        raise BenchConfigError("--k", f"--k must be between 1 and {N} (coefficients of an "
                               f"8x8 block), got {k}")
    if not np.isfinite(sigma) or sigma < 0:
        raise BenchConfigError("--sigma", f"--sigma must be finite and >= 0, got {sigma:g}")
    check_figure_path("--plot", plot)
    m = load_bench_model(model)
    if m.N != N:
        raise BenchConfigError(
            "--model", f"the demo images use 8x8 DCT blocks (N = {N}) but model {model} has "
            f"N = {m.N}; use a demo model such as {DEMO_MODEL}",
        )
    data = load_demo(k, M=m.M, L=m.L, A=m.A, sigma=sigma, seed=seed)
    return DemoSetup(model_name=model, model=m, k=k, sigma=sigma, seed=seed, plot=plot,
                     data=data, tol=expected_noise_tol(m.M, m.L, sigma))


def run_demo(
    setup: DemoSetup, *, on_run: Callable[[DemoRun], None] | None = None
) -> DemoResult:
    """Decode the demo problems and draw the figure (if ``setup.plot``).

    Parameters
    ----------
    setup : DemoSetup
        From :func:`prepare_demo`.
    on_run : callable, optional
        Called with each :class:`DemoRun` as soon as it is done.

    Returns
    -------
    DemoResult
    """
    model, data = setup.model, setup.data
    S, Y = data.S_test, data.Y_test
    learned = own_decoder(model)
    plan: list[tuple[str, dict[str, Any]]] = []
    if learned is not None:
        plan += [(learned, {"tol": setup.tol}), (learned, {"k": setup.k})]
    plan += [("somp", {"tol": setup.tol}), ("omp", {"k": setup.k})]
    truth = f"original, {setup.k}-sparse"  # the ground truth S is the k-sparse image
    recon: dict[str, np.ndarray] = {truth: data.to_images(S)}
    scores: dict[str, str] = {}
    result = DemoResult()
    for name, kw in plan:
        t0 = time.perf_counter()
        S_hat = run_decoder(name, model.A, Y, model=model, **kw)
        dt = (time.perf_counter() - t0) / S.shape[0]
        run = DemoRun(f"{name} ({'tol' if 'tol' in kw else 'k'})",
                      mean_nmse(np.asarray(S_hat, dtype=np.float64), S), dt)
        result.runs.append(run)
        if on_run is not None:
            on_run(run)
        recon[run.label] = data.to_images(S_hat)
        scores[run.label] = f"NMSE {run.nmse:.4f}, {format_duration(dt)}"
    if setup.plot:
        from .plots import plot_images

        M, N = model.A.shape
        title = (f"{setup.model_name}: M = {M} of N = {N} per block, L = {model.L}, "
                 f"k = {setup.k}, sigma = {setup.sigma:g}; NMSE (lower is better) and time "
                 "per problem\n(tol): stopped at the noise threshold; (k): exactly k atoms "
                 "per channel")
        result.figure = plot_images(recon, setup.plot, subtitles=scores, title=title)
    return result
