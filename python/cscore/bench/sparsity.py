"""``cscore bench sparsity``: error and time against the sparsity k (the paper's Fig. 4.4).

One registration: a sweep (:mod:`cscore.bench.sweep_run`) over ``--k`` at the
first ``--sigma``, on MNIST digits, the demo images, a folder of pictures or
synthetic problems.
"""

from __future__ import annotations

from .registry import register_experiment
from .sweep_run import sweep_experiment

register_experiment(
    "sparsity", help="error vs k", **sweep_experiment("k"),
)
