"""The Bernoulli-Gaussian benchmark of the AMP/LAMP literature (``cscore bench bg``).

Borgerding, Schniter and Rangan (IEEE TSP 2017) judge LISTA, LAMP and VAMP on
one setting: ``x`` in R^N with i.i.d. entries that are 0 with probability
``1 - rate`` and N(0, 1) otherwise, ``y = A x + w`` with ``A`` i.i.d. N(0, 1/M),
N = 500, M = 250, rate 0.1 and the noise at SNR = 40 dB
(``E||A x||^2 / E||w||^2``); a second matrix has condition number 15 (its
singular values spread geometrically, the same singular vectors' law).  The
score is the NMSE ``||x_hat - x||^2 / ||x||^2`` averaged over problems, in dB.

Every registered matrix decoder runs on the same problems: greedy ones with the
noise-aware residual rule (``tol`` = the expected noise norm), the others with
their own convergence rule; a model decoder joins when a model trained for the
same ``A`` is given.  The *support oracle* -- the MMSE estimate that knows the
support, ``(A_S^T A_S + s2 I)^{-1} A_S^T y`` with ``s2`` the noise variance --
is the bound the papers quote.  AMP and VAMP also report the NMSE after every
iteration (the curves of the papers' figures).

The registration at the end makes it ``cscore bench bg``: its defaults (N = 500,
M = N / 2), its checks and its default decoders.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._limits import check_memory
from ..decoders import get_decoder_spec
from .config import BenchConfig, BenchConfigError
from .decoders import run_decoder
from .registry import register_experiment
from .report import format_duration
from .runner import BenchOutcome, BenchPlan, finish_run, write_json
from .tally import WarningTally

__all__ = ["BG_DECODERS", "BGProblems", "bg_matrix", "bg_models", "bg_problems",
           "iteration_curve", "run_bg", "support_oracle"]

#: ``bg``'s decoders by default (single-vector problems: SOMP is OMP there).
BG_DECODERS = ("omp", "bcs", "tmsbl", "amp", "vamp")
#: Float64 copies per problem and entry held at once: the problem (x, y, noise), the
#: oracle's and each decoder's estimate and its error (a bound for the memory check).
_COPIES = 8

#: The published levels (dB) at N=500, M=250, rate 0.1, SNR 40 dB, for the report.
PUBLISHED_DB = {
    "support oracle": (-45.97, -44.7),
    "LASSO / AMP-l1": (-36.7, None),
    "matched VAMP (10-15 layers)": (-45.5, None),
}


@dataclass
class BGProblems:
    """Bernoulli-Gaussian problems and how they were made.

    Attributes
    ----------
    A : ndarray (M, N)
    X : ndarray (B, N, 1)
        Ground truths (one channel).
    Y : ndarray (B, M, 1)
        Measurements.
    noise_var : float
        Variance of each noise entry.
    rate, snr_db, kappa : float
        Sparsity rate, SNR and condition number of ``A``.
    """

    A: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    noise_var: float
    rate: float
    snr_db: float
    kappa: float


def bg_matrix(M: int, N: int, *, kappa: float = 1.0, seed: int = 0) -> np.ndarray:
    """An i.i.d. N(0, 1/M) matrix, or one with condition number ``kappa``.

    Parameters
    ----------
    M, N : int
        Shape.
    kappa : float, default 1.0
        1 keeps the Gaussian matrix; else its singular values are replaced by a
        geometric sequence from 1 to ``1/kappa``, scaled so that
        ``||A||_F^2 = N`` as for the Gaussian matrix (Borgerding et al.'s recipe).
    seed : int
        Seed.

    Returns
    -------
    ndarray (M, N)
    """
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N)) / math.sqrt(M)
    if kappa == 1.0:
        return A
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1, got {kappa}")
    U, _, Vt = np.linalg.svd(A, full_matrices=False)
    s = kappa ** (-np.arange(M) / max(M - 1, 1))
    s *= math.sqrt(N / float(np.sum(s**2)))
    return np.asarray((U * s) @ Vt)


def bg_problems(
    n_problems: int,
    *,
    N: int = 500,
    M: int = 250,
    rate: float = 0.1,
    snr_db: float = 40.0,
    kappa: float = 1.0,
    seed: int = 0,
    A: np.ndarray | None = None,
) -> BGProblems:
    """Draw the benchmark's problems.

    Parameters
    ----------
    n_problems : int
        Problems (B).
    N, M : int
        Sizes (500 and 250 in the papers).
    rate : float
        Probability that an entry is nonzero.
    snr_db : float
        ``10 log10(E||A x||^2 / E||w||^2)``.
    kappa : float
        Condition number of ``A`` (see :func:`bg_matrix`).
    seed : int
        Seed of ``A`` (seed) and of the signals and noise (seed + 1).
    A : ndarray, optional
        Use this matrix instead of drawing one.

    Returns
    -------
    BGProblems
    """
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    if A is None:
        A = bg_matrix(M, N, kappa=kappa, seed=seed)
    M, N = A.shape
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((n_problems, N, 1)) * (rng.random((n_problems, N, 1)) < rate)
    signal_power = rate * float(np.sum(A**2)) / M  # E||A x||^2 / M
    noise_var = signal_power / 10 ** (snr_db / 10)
    Y = A @ X + math.sqrt(noise_var) * rng.standard_normal((n_problems, M, 1))
    return BGProblems(A, X, Y, noise_var, rate, snr_db, kappa)


def support_oracle(p: BGProblems) -> np.ndarray:
    """The MMSE estimate that knows each problem's support (the papers' bound).

    Parameters
    ----------
    p : BGProblems

    Returns
    -------
    ndarray (B, N, 1)
    """
    out = np.zeros_like(p.X)
    for b in range(p.X.shape[0]):
        S = np.flatnonzero(p.X[b, :, 0])
        if S.size:
            As = p.A[:, S]
            G = As.T @ As + p.noise_var * np.eye(S.size)
            out[b, S, 0] = np.linalg.solve(G, As.T @ p.Y[b, :, 0])
    return out


def nmse_db(X_hat: np.ndarray, X: np.ndarray) -> float:
    """Mean over problems of ``||x_hat - x||^2 / ||x||^2``, in dB.

    Parameters
    ----------
    X_hat, X : ndarray (B, N, L)

    Returns
    -------
    float
    """
    err = np.sum((X_hat - X) ** 2, axis=(1, 2)) / np.maximum(np.sum(X**2, axis=(1, 2)), 1e-300)
    return float(10 * np.log10(np.mean(err)))


def iteration_curve(name: str, p: BGProblems, iterations: int) -> list[float]:
    """NMSE (dB) of ``amp`` or ``vamp`` after each of ``iterations`` iterations.

    Parameters
    ----------
    name : {"amp", "vamp"}
    p : BGProblems
    iterations : int

    Returns
    -------
    list of float
        Entry t-1: the NMSE after at most t iterations (replayed with
        ``max_iter=t`` and the decoder's own stopping rule, so a problem whose
        run stopped earlier keeps that iterate, as in the run itself: from the
        iteration the last problem stops at on, the curve is the decoder's NMSE).
    """
    func = get_decoder_spec(name).func
    return [nmse_db(np.asarray(func(p.A, p.Y, max_iter=t)), p.X)
            for t in range(1, iterations + 1)]


@dataclass
class BGResult:
    """What :func:`run_bg` measured."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    nmse_db: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    curves: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


def bg_models(models: Mapping[str, Any], model: Any = None) -> dict[str, Any]:
    """The models of a run by the decoder that runs them (one model per decoder).

    Parameters
    ----------
    models : mapping
        Model label -> loaded model (``--model a --model b``), possibly empty.
    model : object, optional
        The single model of a one-model run (used when ``models`` is empty).

    Returns
    -------
    dict
        Decoder name (``lamp``, ``lista``, ``lstm-cs``, ...) -> model.

    Raises
    ------
    ValueError
        Two models for one decoder, or models with different matrices ``A``.
    """
    from .decoders import own_decoder

    given = dict(models) if models else ({"model": model} if model is not None else {})
    out: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for label, m in given.items():
        name = own_decoder(m)
        if name is None:
            continue
        if name in out:
            raise ValueError(f"bg runs one model per decoder: {labels[name]} and {label} are "
                             f"both {name} models")
        out[name], labels[name] = m, label
    mats = [np.asarray(m.A) for m in out.values()]
    if any(a.shape != mats[0].shape or not np.array_equal(a, mats[0]) for a in mats[1:]):
        raise ValueError("the models must share one sensing matrix A")
    return out


def _settings_for(name: str, p: BGProblems) -> dict[str, Any]:
    spec = get_decoder_spec(name)
    if "tol" in spec.stopping:  # the noise-aware rule: the expected noise norm
        return {"tol": math.sqrt(p.noise_var * p.A.shape[0])}
    return {}


def run_bg(
    decoders: list[str],
    *,
    n_problems: int = 50,
    kappa: float = 1.0,
    seed: int = 0,
    models: dict[str, Any] | None = None,
    iterations: int = 20,
    N: int = 500,
    M: int = 250,
    rate: float = 0.1,
    snr_db: float = 40.0,
    tally: Any = None,
) -> BGResult:
    """Run the benchmark: every decoder on the same problems, plus the oracle.

    Parameters
    ----------
    decoders : list of str
        Registered names; model decoders need an entry in ``models``.
    n_problems : int
        Test problems.
    kappa : float
        Condition number of ``A`` (1: i.i.d. Gaussian; 15: the papers' second case).
    seed : int
        Seed.
    models : dict, optional
        Decoder name -> model trained for this ``A`` (its ``A`` is used; only
        with ``kappa`` 1).
    iterations : int
        Shortest AMP/VAMP per-iteration curve (0: none); a curve goes on until
        the decoder's own run stopped on every problem (at most
        :data:`CURVE_CAP` iterations), so that it ends at the decoder's NMSE.
    N, M, rate, snr_db : int, int, float, float
        The setting (the papers': 500, 250, 0.1, 40).
    tally : cscore.bench.tally.WarningTally, optional
        Counts (and hides) each decoder's warnings under its name.

    Returns
    -------
    BGResult
    """
    models = models or {}
    A = None
    if models:
        if kappa != 1.0:  # the models' A is the problem's A: kappa would be ignored
            raise ValueError(f"kappa {kappa:g} needs its own matrix; the models were trained "
                             "for theirs (run the model decoders with kappa 1)")
        A = np.asarray(next(iter(models.values())).A)
    p = bg_problems(n_problems, N=N, M=M, rate=rate, snr_db=snr_db, kappa=kappa, seed=seed,
                    A=A)
    res = BGResult(info={"N": p.A.shape[1], "M": p.A.shape[0], "rate": rate, "snr_db": snr_db,
                         "kappa": kappa, "problems": n_problems, "seed": seed,
                         "noise_var": p.noise_var})
    for name in decoders:
        spec = get_decoder_spec(name)
        if spec.kind == "model" and name not in models:
            raise ValueError(f"decoder {name} needs a model trained for this A (--model)")
    for label in ["support oracle", *decoders]:
        t0 = time.perf_counter()
        with tally.catch(label) if tally is not None else contextlib.nullcontext():
            if label == "support oracle":
                X_hat = support_oracle(p)
            else:
                X_hat = run_decoder(label, p.A, p.Y, model=models.get(label), k=None,
                                    **_settings_for(label, p))
        dt = (time.perf_counter() - t0) / n_problems
        _record(res, label, np.asarray(X_hat, dtype=np.float64), p, dt)
    for name in ("amp", "vamp"):
        if name in decoders and iterations > 0:
            # run the curve as long as the bar's run ran (until its last problem
            # stopped), so that the curve ends where the bar is
            ran = converged_after(name, p)
            res.info.setdefault("iterations_run", {})[name] = ran
            res.curves[name] = iteration_curve(name, p, min(max(iterations, ran), CURVE_CAP))
    return res


#: the longest per-iteration curve (each point replays the run from the start)
CURVE_CAP = 60


def converged_after(name: str, p: BGProblems) -> int:
    """Iterations ``amp`` or ``vamp`` runs, with its default stopping, on all of ``p``.

    Parameters
    ----------
    name : {"amp", "vamp"}
    p : BGProblems

    Returns
    -------
    int
        The largest iteration count over the problems (when the last one stopped).
    """
    res = get_decoder_spec(name).func(p.A, p.Y, return_result=True)
    return int(np.max(np.asarray(res.n_iter)))


def _record(res: BGResult, label: str, X_hat: np.ndarray, p: BGProblems, dt: float) -> None:
    """Add one decoder's per-problem rows and mean NMSE to ``res``."""
    per = np.sum((X_hat - p.X) ** 2, axis=(1, 2)) / np.maximum(np.sum(p.X**2, axis=(1, 2)),
                                                               1e-300)
    res.nmse_db[label] = nmse_db(X_hat, p.X)
    res.seconds[label] = dt
    stop = "tol" if label != "support oracle" and "tol" in _settings_for(label, p) else "own"
    res.rows += [{"decoder": label, "stop": stop, "m": p.A.shape[0],
                  "sigma": math.sqrt(p.noise_var), "problem": b, "nmse": float(per[b]),
                  "seconds": dt, "nmse_db": float(10 * np.log10(max(per[b], 1e-300)))}
                 for b in range(per.size)]


def _run_bg(plan: BenchPlan) -> BenchOutcome:
    """The Bernoulli-Gaussian benchmark of the AMP/LAMP papers (:mod:`cscore.bench.bg`)."""
    c = plan.config
    N = c.n_atoms
    M = c.M if c.M is not None else N // 2
    models = bg_models(plan.models or {}, plan.model)
    n_problems = c.n_problems
    tally = WarningTally()
    res = run_bg(plan.decoders, n_problems=n_problems, kappa=c.kappa, seed=c.seed,
                 models=models, iterations=10 if c.quick else 20, N=N, M=M, tally=tally)
    name = "bg" if c.kappa == 1.0 else f"bg-kappa{c.kappa:g}"
    write_json(plan.out, name, {"info": res.info, "nmse_db": res.nmse_db,
                                 "seconds": res.seconds, "curves": res.curves})
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


def _check(config: BenchConfig, model: Any) -> None:
    """``bg``'s own checks: M and kappa, the options it does not use, memory."""
    N = config.n_atoms
    M = config.M if config.M is not None else N // 2
    if not 1 <= M <= N:
        raise BenchConfigError("--M", f"--M must be between 1 and N = {N}, got {M}")
    if not (config.kappa >= 1 and math.isfinite(config.kappa)):
        raise BenchConfigError("--kappa", f"--kappa must be finite and >= 1, got "
                               f"{config.kappa}")
    if config.k is not None:
        raise BenchConfigError("--k", "--k does not apply to bg: its problems are "
                               "Bernoulli-Gaussian with rate 0.1 (the AMP/LAMP papers')")
    if config.L != BenchConfig.L:
        raise BenchConfigError("--L", f"--L does not apply to bg: its problems are single "
                               f"vectors (L = 1); got --L {config.L}")
    est = float(config.n_problems) * (N + M) * 8 * _COPIES + 3.0 * M * N * 8  # + A, SVD
    try:
        check_memory(f"--problems {config.problems} with --N {N} --M {M}", est,
                     "the bg problems, their estimates and the matrix")
    except ValueError as exc:
        raise BenchConfigError("--problems", str(exc)) from None


def _data_label(config: BenchConfig) -> str:
    return "synthetic" if config.kappa == 1.0 else f"kappa{config.kappa:g}"


register_experiment(
    "bg", lambda plan, log: _run_bg(plan),
    help="the Bernoulli-Gaussian benchmark of the AMP/LAMP papers", check=_check,
    defaults={"N": 500}, data=("synthetic",), decoders=BG_DECODERS, data_label=_data_label,
    multi_model=True,
    one_model_per_decoder=True,
)
