"""Experiments of the LSTM-CS paper as a library: what ``cscore bench`` and ``cscore demo`` run.

* :mod:`~cscore.bench.registry`: the experiment registry
  (:func:`register_experiment`, :func:`experiment_names`); one module per
  experiment registers itself: :mod:`~cscore.bench.sparsity`,
  :mod:`~cscore.bench.noise` (sweeps, :mod:`~cscore.bench.sweep_run`),
  :mod:`~cscore.bench.phase`, :mod:`~cscore.bench.bg`,
  :mod:`~cscore.bench.scaling`.
* :mod:`~cscore.bench.problems`: the held-out problem sets (MNIST test digits,
  the demo images, a folder of pictures, synthetic problems).
* :mod:`~cscore.bench.decoders`: every decoder behind one signature;
  :mod:`~cscore.bench.choose`: which decoders a run runs.
* :mod:`~cscore.bench.sweep`: error and time of several decoders over one
  parameter.
* :mod:`~cscore.bench.config`: a run's settings (:class:`BenchConfig`), checked
  in one place before anything is written (:class:`BenchConfigError` names the
  option); :mod:`~cscore.bench.paths`: its folders.
* :mod:`~cscore.bench.runner`: one run from its settings (:func:`run_bench`):
  checks, the experiment's run, ``results.csv``, ``report.md``, figures.
* :mod:`~cscore.bench.demo`, :mod:`~cscore.bench.sensor`: ``cscore demo``.
* :mod:`~cscore.bench.tally`: the decoders' warnings, caught and counted.
* :mod:`~cscore.bench.plots`: figures (matplotlib, imported lazily).
"""

from __future__ import annotations

# The built-in experiments register themselves, in this order (``cscore bench --help``).
# isort: off
from . import sparsity, noise, phase, bg, scaling  # noqa: F401
# isort: on
from .config import BenchConfig, BenchConfigError
from .decoders import decoder_names, run_decoder, uses_stopping_rule
from .phase import phase_transition
from .problems import (
    MNIST_SPLITS,
    HeldOutMNIST,
    ProblemSet,
    demo_problems,
    heldout_mnist,
    mnist_problems,
    synthetic_problems,
)
from .registry import (
    Experiment,
    ExperimentOption,
    experiment_names,
    register_experiment,
    unregister_experiment,
)
from .report import cpu_model
from .runner import BenchOutcome, BenchPlan, finish_run, run_bench
from .sweep import SweepResult, sweep
from .tally import WarningTally

__all__ = [
    "MNIST_SPLITS",
    "BenchConfig",
    "BenchConfigError",
    "BenchOutcome",
    "BenchPlan",
    "Experiment",
    "ExperimentOption",
    "HeldOutMNIST",
    "ProblemSet",
    "SweepResult",
    "WarningTally",
    "cpu_model",
    "decoder_names",
    "demo_problems",
    "experiment_names",
    "finish_run",
    "heldout_mnist",
    "mnist_problems",
    "phase_transition",
    "register_experiment",
    "run_bench",
    "run_decoder",
    "sweep",
    "synthetic_problems",
    "unregister_experiment",
    "uses_stopping_rule",
]
