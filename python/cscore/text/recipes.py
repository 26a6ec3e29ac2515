"""The recipes of the shipped Cranfield models, and the evaluation figure.

Library code for ``cscore text`` and the text benchmarks (``benchmarks/text_*.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .train import TextTrainConfig

__all__ = ["MEMBER_EPOCHS", "PAIRS", "plot_table", "recipe"]


#: Epochs of every ensemble member (no early stopping): cross-validation put every
#: kind on its plateau by epoch 6-8 (benchmarks/results/text.md), while early
#: stopping on one 20-query fold can stop after the first epoch.
MEMBER_EPOCHS = 8

#: Training pairs of the shipped models (:func:`~cscore.text.cranfield.training_pairs`).
PAIRS: dict[str, int] = {"sentences_per_doc": 2, "judged_repeat": 3, "hard_negatives": 0}

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
