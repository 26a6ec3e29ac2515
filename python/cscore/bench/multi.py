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

from .choose import check_decoder_list
from .config import BenchConfig, BenchConfigError
from .decoders import own_decoder, pair_models
from .registry import experiment_names, get_experiment

__all__ = ["check_experiment", "check_shared_matrix", "choose_model_decoders",
           "model_labels", "multi_model_experiments"]


def multi_model_experiments() -> list[str]:
    """The registered experiments that take several models (``multi_model``).

    Returns
    -------
    list of str
    """
    return [n for n in experiment_names() if get_experiment(n).multi_model]


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
    """Check that the run's experiment takes several models (its registration's ``multi_model``).

    Parameters
    ----------
    config : BenchConfig

    Raises
    ------
    BenchConfigError
        (option ``--model``) another experiment with more than one model.
    """
    if len(config.model_names) > 1 and not config.spec.multi_model:
        raise BenchConfigError(
            "--model", f"several models (--model {','.join(config.model_names)}) are for the "
            f"experiments {', '.join(multi_model_experiments())}; {config.experiment} takes one"
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
        in the models' order), then the experiment's registered ``decoders``
        (default ``somp`` and ``omp``).

    Raises
    ------
    BenchConfigError
        An unknown decoder, or a model decoder with no model of its class
        (option ``--decoders``); for bg, two models of one decoder (``--model``).
    """
    own = [d for d in (own_decoder(m) for m in models.values()) if d is not None]
    twice = [d for i, d in enumerate(own) if d in own[:i]]
    if config.spec.one_model_per_decoder and twice:
        raise BenchConfigError("--model", f"{config.experiment} runs one model per decoder: "
                               f"several {twice[0]} models (--model {', '.join(models)})")
    if config.decoders is None:
        tail = config.spec.decoders
        decoders = [*dict.fromkeys(own), *(tail if tail is not None else ("somp", "omp"))]
    else:
        decoders = check_decoder_list(config.decoders)
    try:
        pair_models(decoders, models)
    except ValueError as exc:
        raise BenchConfigError("--decoders", f"{exc} (--model {', '.join(models)})") from None
    return decoders
