"""Experiments of the LSTM-CS paper as a library and the ``cscore bench`` command.

* :mod:`~cscore.bench.decoders`: every decoder behind one signature.
* :mod:`~cscore.bench.experiments`: error vs sparsity, error vs noise, phase
  transitions and CPU time, on MNIST, the demo images or synthetic problems.
* :mod:`~cscore.bench.plots`: figures (matplotlib, imported lazily).
"""

from __future__ import annotations

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

__all__ = [
    "ProblemSet",
    "SweepResult",
    "decoder_names",
    "demo_problems",
    "mnist_problems",
    "phase_transition",
    "run_decoder",
    "sweep",
    "synthetic_problems",
    "uses_stopping_rule",
]
