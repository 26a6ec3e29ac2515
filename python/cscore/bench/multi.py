"""Several models in one ``cscore bench`` run (``--model a,b,c``): names, checks, decoders.

All models of a run must measure with one sensing matrix (the problems are
measured once, with it); :func:`check_shared_matrix` names the odd ones out.
Each model decoder of ``--decoders`` then runs once per model of its registered
class (:func:`cscore.bench.decoders.pair_models`), and every such run is
labelled ``decoder[model]`` (``lstm-cs[mnist-m72]``; a greedy decoder adds its
stopping rule, ``lstm-cs[mnist-m72] (tol)``) in the tables, the figure, the
report and the ``decoder`` column of ``results.csv`` (which gets a ``model``
column too).  A model named by a file is labelled by the file's stem.  A
single ``--model`` keeps the plain labels (``lstm-cs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..decoders import decoder_names
from .config import BG_DECODERS, BenchConfig, BenchConfigError
from .decoders import own_decoder, pair_models

__all__ = ["MULTI_MODEL_EXPERIMENTS", "check_experiment", "check_shared_matrix",
           "choose_model_decoders", "model_labels"]

#: The experiments that take several models (bg: one model per model decoder).
MULTI_MODEL_EXPERIMENTS = ("sparsity", "noise", "bg")


def model_labels(names: Sequence[str]) -> list[str]:
    """The labels of the models ``names``: a pretrained name as is, a file by its stem.

    Parameters
    ----------
    names : sequence of str
        ``--model`` values: pretrained names or model files.

    Returns
    -------
    list of str
        One label per name; the names as given where two stems would collide.

    Raises
    ------
    BenchConfigError
        A model given twice.
    """
    from ..models.registry import is_model_path

    seen = [n for i, n in enumerate(names) if n in names[:i]]
    if seen:
        raise BenchConfigError("--model", f"--model {seen[0]} is given twice")
    labels = [Path(n).stem if is_model_path(n) else n for n in names]
    return labels if len(set(labels)) == len(labels) else list(names)


def check_shared_matrix(models: Mapping[str, Any]) -> None:
    """Check that every model measures with the same sensing matrix ``A``.

    Parameters
    ----------
    models : mapping
        Model label -> loaded model, in the order given.

    Raises
    ------
    BenchConfigError
        (option ``--model``) naming the models whose ``A`` differs from the
        one most models share (the first model's on a tie).
    """
    groups: list[list[str]] = []
    for name, m in models.items():
        A = np.asarray(m.A)
        for g in groups:
            B = np.asarray(models[g[0]].A)
            if A.shape == B.shape and np.array_equal(A, B):
                g.append(name)
                break
        else:
            groups.append([name])
    if len(groups) == 1:
        return
    ref = max(groups, key=len)  # the first of the largest: the first model's on a tie
    shape = np.asarray(models[ref[0]].A).shape
    odd = [(n, np.asarray(models[n].A).shape) for g in groups if g is not ref for n in g]
    what = "; ".join(f"{n} has A of shape {s}" + (" with other entries" if s == shape else "")
                     for n, s in odd)
    raise BenchConfigError(
        "--model",
        f"--model: the models must share one sensing matrix A (the problems are measured "
        f"once): {what}, unlike {', '.join(ref)} (A of shape {shape}); leave out "
        f"{', '.join(n for n, _ in odd)} or run it separately",
    )


def check_experiment(config: BenchConfig) -> None:
    """Check that the run's experiment takes several models (sparsity and noise do).

    Parameters
    ----------
    config : BenchConfig

    Raises
    ------
    BenchConfigError
        (option ``--model``) another experiment with more than one model.
    """
    if len(config.model_names) > 1 and config.experiment not in MULTI_MODEL_EXPERIMENTS:
        raise BenchConfigError(
            "--model", f"several models (--model {','.join(config.model_names)}) are for the "
            f"experiments {', '.join(MULTI_MODEL_EXPERIMENTS)}; {config.experiment} takes one"
        )


def choose_model_decoders(config: BenchConfig, models: Mapping[str, Any]) -> list[str]:
    """The decoders of a multi-model run, checked against the registry and the models.

    Parameters
    ----------
    config : BenchConfig
    models : mapping
        Model label -> loaded model (several).

    Returns
    -------
    list of str
        ``config.decoders``, or by default every model's own decoder (once,
        in the models' order), ``somp`` and ``omp`` (bg: the decoders of
        :data:`~cscore.bench.config.BG_DECODERS`).

    Raises
    ------
    BenchConfigError
        An unknown decoder, or a model decoder with no model of its class
        (option ``--decoders``); for bg, two models of one decoder (``--model``).
    """
    own = [d for d in (own_decoder(m) for m in models.values()) if d is not None]
    twice = [d for i, d in enumerate(own) if d in own[:i]]
    if config.experiment == "bg" and twice:
        raise BenchConfigError("--model", f"bg runs one model per decoder: several {twice[0]} "
                               f"models (--model {', '.join(models)})")
    if config.decoders is None:
        tail = list(BG_DECODERS) if config.experiment == "bg" else ["somp", "omp"]
        decoders = [*dict.fromkeys(own), *tail]
    else:
        decoders = list(config.decoders)
        if not decoders:
            raise BenchConfigError("--decoders", "--decoders gives no decoder")
    unknown = [d for d in decoders if d not in decoder_names()]
    if unknown:
        raise BenchConfigError(
            "--decoders", f"unknown decoder(s) {unknown}; known: {', '.join(decoder_names())}"
        )
    try:
        pair_models(decoders, models)
    except ValueError as exc:
        raise BenchConfigError("--decoders", f"{exc} (--model {', '.join(models)})") from None
    return decoders
