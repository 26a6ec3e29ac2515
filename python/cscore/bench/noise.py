"""``cscore bench noise``: error and time against the noise level sigma.

One registration: a sweep (:mod:`cscore.bench.sweep_run`) over ``--sigma`` at
the first ``--k``, on MNIST digits, the demo images, a folder of pictures or
synthetic problems.
"""

from __future__ import annotations

from .registry import register_experiment
from .sweep_run import sweep_experiment

register_experiment(
    "noise", help="error vs sigma", **sweep_experiment("sigma"),
)
