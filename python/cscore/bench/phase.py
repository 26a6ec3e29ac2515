"""``cscore bench phase``: the phase transition, on synthetic problems or on MNIST.

:func:`phase_transition` is the empirical transition on noiseless synthetic
problems (success: NMSE below a threshold); on ``--data mnist`` the run is the
thesis' Fig. 4.8 (:mod:`cscore.bench.phase_mnist`, with small LSTM-CS models
trained per M when ``--train-models``).  The registration at the end declares
the experiment's checks, data sources and the model decoder it trains.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, Callable

import numpy as np

from ..metrics import nmse_per_item
from .config import BenchConfig, BenchConfigError
from .decoders import needs_model, run_decoder, uses_stopping_rule
from .problems import synthetic_problems
from .registry import register_experiment
from .runner import BenchOutcome, BenchPlan, finish_run, write_json
from .tally import WarningTally

__all__ = ["drop_model_decoders", "phase_transition"]

Log = Callable[[str], None]


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


def _run_synthetic_phase(plan: BenchPlan) -> BenchOutcome:
    """The phase transition on noiseless synthetic problems (no model decoders)."""
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
    write_json(plan.out, "phase", pt)
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
    write_json(plan.out, "phase-mnist", res)
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


def _run(plan: BenchPlan, log: Log) -> BenchOutcome:
    if plan.config.data == "mnist":
        return _run_mnist_phase(plan, log)
    return _run_synthetic_phase(plan)


def _check(config: BenchConfig, model: Any) -> None:
    for name, v in (("--N", config.n_atoms), ("--L", config.L)):
        if v < 1:
            raise BenchConfigError(name, f"{name} must be >= 1, got {v}")


def _prepare(plan: BenchPlan) -> None:
    c = plan.config
    if c.data == "mnist":
        from .phase_mnist import check_mnist_phase_data

        check_mnist_phase_data(str(c.data_dir), first_index=c.first_index,
                               train_models=c.train_models)


def _trains(config: BenchConfig) -> str | None:
    if config.train_models:
        from .phase_mnist import small_model_decoder

        return small_model_decoder()
    return None


register_experiment(
    "phase", _run, help="phase transition", check=_check, prepare=_prepare,
    data=("mnist", "synthetic"), trains=_trains,
    data_label=lambda config: "mnist" if config.data == "mnist" else "synthetic",
)
