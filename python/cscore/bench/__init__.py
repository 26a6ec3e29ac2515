"""Experiments of the LSTM-CS paper as a library: what ``cscore bench`` and ``cscore demo`` run.

* :mod:`~cscore.bench.decoders`: every decoder behind one signature.
* :mod:`~cscore.bench.experiments`: error vs sparsity, error vs noise, phase
  transitions and CPU time, on MNIST, the demo images or synthetic problems.
* :mod:`~cscore.bench.config`: a run's settings (:class:`BenchConfig`), checked
  before anything is written (:class:`BenchConfigError` names the option).
* :mod:`~cscore.bench.runner`: one run from its settings (:func:`run_bench`):
  problems, sweep or phase transition, ``results.csv``, ``report.md``, figures.
* :mod:`~cscore.bench.demo`: the demo of the bundled images.
* :mod:`~cscore.bench.tally`: the decoders' warnings, caught and counted.
* :mod:`~cscore.bench.plots`: figures (matplotlib, imported lazily).
"""

from __future__ import annotations

from .config import BenchConfig, BenchConfigError
from .decoders import decoder_names, run_decoder, uses_stopping_rule
from .experiments import (
    ProblemSet,
    SweepResult,
    demo_problems,
    mnist_problems,
    phase_transition,
    sweep,
    synthetic_problems,
)
from .runner import BenchOutcome, run_bench
from .tally import WarningTally

__all__ = [
    "BenchConfig",
    "BenchConfigError",
    "BenchOutcome",
    "ProblemSet",
    "SweepResult",
    "WarningTally",
    "decoder_names",
    "demo_problems",
    "mnist_problems",
    "phase_transition",
    "run_bench",
    "run_decoder",
    "sweep",
    "synthetic_problems",
    "uses_stopping_rule",
]
