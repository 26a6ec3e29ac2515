"""A sweep: several decoders over one swept parameter (sparsity, noise level, ...).

:func:`sweep` runs the decoders on ``make_problems(value)`` for every value
through :func:`cscore.bench.decoders.run_decoder` and records the NMSE
``||S_hat - S||_F / ||S||_F`` per problem and the time per problem in a
:class:`SweepResult`; :func:`mean_nmse` is the mean the tables show.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..metrics import nmse_per_item
from .decoders import STOP_RULES, decoder_names, run_decoder, sweep_runs
from .problems import ProblemSet
from .tally import WarningTally

__all__ = ["SweepResult", "mean_nmse", "sweep"]


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


def mean_nmse(S_hat: np.ndarray, S: np.ndarray) -> float:
    """Mean per-problem NMSE over the problems whose ground truth is not zero.

    Parameters
    ----------
    S_hat, S : ndarray (P, N, L)
        Estimates and ground truth.

    Returns
    -------
    float
        NaN when every ground truth is zero.
    """
    return _mean_finite(nmse_per_item(S_hat, S, zero="nan"))


def _mean_finite(err: np.ndarray) -> float:
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
            result.nmse[label].append(_mean_finite(per))
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
