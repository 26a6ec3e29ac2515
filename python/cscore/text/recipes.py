"""The recipes of the shipped Cranfield models, training and evaluating them, the figure.

Library code for ``cscore text`` and the text benchmarks (``benchmarks/text_*.py``):
:func:`train_cranfield` trains (and writes) a model the way ``cscore text train``
does, :func:`evaluate_cranfield` writes the evaluation table and figure of
``cscore text eval``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from .cranfield import MethodScores
    from .model import TextModel
    from .train import TextTrainConfig, TextTrainResult

__all__ = [
    "EVAL_MODELS",
    "MEMBER_EPOCHS",
    "PAIRS",
    "CranfieldEvaluation",
    "CranfieldTraining",
    "evaluate_cranfield",
    "plot_table",
    "recipe",
    "train_cranfield",
]


#: Epochs of every ensemble member (no early stopping): cross-validation put every
#: kind on its plateau by epoch 6-8 (benchmarks/results/text.md), while early
#: stopping on one 20-query fold can stop after the first epoch.
MEMBER_EPOCHS = 8

#: Training pairs of the shipped models (:func:`~cscore.text.cranfield.training_pairs`).
PAIRS: dict[str, int] = {"sentences_per_doc": 2, "judged_repeat": 3, "hard_negatives": 0}

#: The models ``cscore text eval`` compares by default: display name -> pretrained name.
EVAL_MODELS: dict[str, str] = {"LSTM": "cranfield-lstm", "RNN": "cranfield-rnn",
                               "DSSM": "cranfield-dssm"}

#: Per-kind settings of the shipped models, chosen by 5-fold cross-validation over
#: the training + validation queries (benchmarks/results/text.md).  The BiLSTM is not
#: shipped and was not cross-validated: it takes the LSTM's settings.
_KIND_RECIPES: dict[str, dict[str, object]] = {
    "lstm": {"lr": 1e-4, "embed_lr": 2e-3, "avg_eta": 8, "max_epochs": 12},
    "bilstm": {"lr": 1e-4, "embed_lr": 2e-3, "avg_eta": 8, "max_epochs": 12},
    "rnn": {"lr": 1e-4, "embed_lr": 1e-3, "n_cells": 256, "avg_eta": 8, "max_epochs": 10},
    "dssm": {"lr": 2e-3, "avg_eta": 8, "max_epochs": 12},
}


def recipe(kind: str, **overrides: object) -> TextTrainConfig:
    """The settings that trained the shipped ``cranfield-<kind>`` models.

    Every kind reads the whole trigram vocabulary of Cranfield (``max_trigrams``
    6000 is above its size) and uses Adam, gamma 10, in-batch negatives and
    early stopping with patience 3 on polynomial-decay averaged weights
    (``avg_eta`` 8); step sizes (the embedding's may differ) and epochs are per
    kind, each chosen by 5-fold cross-validation (``benchmarks/text_cv.py``).
    The training pairs are :data:`PAIRS`.

    Parameters
    ----------
    kind : {"lstm", "bilstm", "rnn", "dssm"}
        Encoder kind.
    **overrides
        Fields of :class:`~cscore.text.train.TextTrainConfig` to change.

    Returns
    -------
    TextTrainConfig
    """
    from .train import TextTrainConfig

    base: dict[str, object] = {"kind": kind, "optimizer": "adam", "n_negatives": None,
                               "gamma": 10.0, "batch_size": 128, "patience": 3,
                               "max_trigrams": 6000, "n_threads": 1,
                               **_KIND_RECIPES.get(kind, {})}
    base.update(overrides)
    return TextTrainConfig(**base)  # type: ignore[arg-type]


def plot_table(rows: list[Any], path: Path) -> Path:
    """Grouped bars of NDCG@1, 3, 10 per method.

    Parameters
    ----------
    rows : list of MethodScores
        What :func:`cscore.text.cranfield.evaluate_methods` returns.
    path : path
        The PNG to write.

    Returns
    -------
    pathlib.Path
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ks = (1, 3, 10)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    x = np.arange(len(rows))
    for j, k in enumerate(ks):
        ax.bar(x + (j - 1) * 0.27, [r.full[k] for r in rows], 0.27, label=f"NDCG@{k}")
    ax.set_xticks(x)
    ax.set_xticklabels([r.name for r in rows], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("NDCG (test queries)")
    ax.set_ylim(0, 1.25 * max(max(r.full.values()) for r in rows))
    ax.legend(fontsize=8, ncol=3, loc="upper left")
    ax.set_title("Cranfield: ranking all 1400 documents", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


@dataclass
class CranfieldTraining:
    """What :func:`train_cranfield` trained and wrote.

    Attributes
    ----------
    model : RetrievalModel or RetrievalEnsemble
        The model written to ``path``.
    results : list of TextTrainResult
        One per member (one for a single model).
    path : Path
        The model file.
    n_jobs : int
        Members trained at the same time (1 for a single model).
    """

    model: TextModel
    results: list[TextTrainResult]
    path: Path
    n_jobs: int


def train_cranfield(kind: str, out: Union[str, Path], *, data: Union[str, Path, None] = None,
                    n_members: int = 3, n_jobs: int | None = None, seed: int = 0,
                    progress: bool = True, overrides: Mapping[str, Any] | None = None,
                    pair_overrides: Mapping[str, int] | None = None) -> CranfieldTraining:
    """Train a model on Cranfield with :func:`recipe` and write it (``cscore text train``).

    With ``n_members`` 1: one model trained on the fixed 80 / 20 split of
    :func:`~cscore.text.data.split_queries` with early stopping
    (:func:`~cscore.text.cranfield.train_on_split`).  With more: an ensemble
    whose members train :data:`MEMBER_EPOCHS` epochs without early stopping,
    each on another fold (:func:`~cscore.text.cranfield.train_ensemble`; how
    the shipped models were trained).  Needs PyTorch.

    Parameters
    ----------
    kind : {"lstm", "bilstm", "rnn", "dssm"}
        Encoder kind.
    out : str or Path
        The model file to write.
    data : str or Path, optional
        Cranfield directory (default: the shipped copy).
    n_members : int
        Ensemble members (1: a single model).
    n_jobs : int, optional
        Members trained at the same time, one process each (default: as many
        as there are CPU cores); the result does not depend on it.
    seed : int
        Seed of the weights and the training pairs.
    progress : bool
        Progress bars.
    overrides : mapping, optional
        Fields of :class:`~cscore.text.train.TextTrainConfig` to change (they
        win over the ensemble's epochs and patience).
    pair_overrides : mapping, optional
        Arguments of :func:`~cscore.text.cranfield.training_pairs` to change
        from :data:`PAIRS`.

    Returns
    -------
    CranfieldTraining
    """
    from .cranfield import train_ensemble, train_on_split
    from .data import load_cranfield, split_queries

    c = load_cranfield(data)
    split = split_queries(c)
    kw: dict[str, Any] = {"seed": seed, "progress": progress, **(overrides or {})}
    if n_members > 1:
        kw = {"max_epochs": MEMBER_EPOCHS, "patience": None, **kw}
    cfg = recipe(kind, **kw)
    pairs = {**PAIRS, **(pair_overrides or {})}
    info: dict[str, Any] = {"dataset": "cranfield"}
    if n_members == 1:
        info["split"] = {"train": list(split.train), "val": list(split.val),
                         "test": list(split.test)}
        res = train_on_split(c, split, cfg, pairs=pairs, seed=seed, info=info)
        res.model.save(out)
        return CranfieldTraining(res.model, [res], Path(out), 1)
    jobs = n_jobs if n_jobs is not None else max(1, min(n_members, os.cpu_count() or 1))
    ens, results = train_ensemble(c, split, cfg, n_members, pairs=pairs, seed=seed, info=info,
                                  n_jobs=jobs)
    ens.save(out)
    return CranfieldTraining(ens, results, Path(out), jobs)


@dataclass
class CranfieldEvaluation:
    """What :func:`evaluate_cranfield` computed and wrote.

    Attributes
    ----------
    rows : list of MethodScores
        The table's rows (:func:`~cscore.text.cranfield.evaluate_methods`).
    table : str
        The markdown table.
    table_path, json_path : Path
        ``table.md`` and ``table.json``.
    figure : Path or None
        ``ndcg.png``; None when it could not be drawn.
    figure_error : str or None
        Why there is no figure (matplotlib missing).
    """

    rows: list[MethodScores]
    table: str
    table_path: Path
    json_path: Path
    figure: Path | None
    figure_error: str | None


def evaluate_cranfield(models: Mapping[str, Union[str, Path, TextModel]] | None,
                       out_dir: Union[str, Path], *,
                       data: Union[str, Path, None] = None) -> CranfieldEvaluation:
    """NDCG of BM25, TF-IDF and ``models`` on the Cranfield test queries (``cscore text eval``).

    Writes ``table.md``, ``table.json`` and the figure ``ndcg.png``
    (:func:`plot_table`; skipped without matplotlib) into ``out_dir``.  The
    BM25 interpolation uses the model named "LSTM", else the first one.

    Parameters
    ----------
    models : mapping of str to (name, path or model), optional
        Display name -> pretrained name, model file or model (default
        :data:`EVAL_MODELS`).
    out_dir : str or Path
        Created if needed.
    data : str or Path, optional
        Cranfield directory (default: the shipped copy).

    Returns
    -------
    CranfieldEvaluation
    """
    from .cranfield import as_dict, evaluate_methods, format_table
    from .data import load_cranfield, split_queries
    from .pretrained import resolve_model

    specs = dict(EVAL_MODELS if models is None else models)
    loaded = {name: resolve_model(m) if isinstance(m, (str, os.PathLike)) else m
              for name, m in specs.items()}
    c = load_cranfield(data)
    split = split_queries(c)
    rows = evaluate_methods(c, split, loaded,
                            interpolate_with="LSTM" if "LSTM" in loaded else next(iter(loaded)))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = format_table(rows)
    table_path, json_path = out / "table.md", out / "table.json"
    table_path.write_text(
        f"Cranfield, {len(split.test)} test queries; rerank = BM25's top 100 reordered\n\n"
        + table + "\n", encoding="utf-8")
    json_path.write_text(json.dumps(as_dict(rows), indent=1), encoding="utf-8")
    figure: Path | None = None
    figure_error = None
    try:
        figure = plot_table(rows, out / "ndcg.png")
    except ImportError as exc:
        figure_error = str(exc)
    return CranfieldEvaluation(rows, table, table_path, json_path, figure, figure_error)
