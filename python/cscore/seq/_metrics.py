"""Error rates of sequence labelling (thesis chapter 2): frames and utterances."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["frame_error", "utterance_error"]


def frame_error(y_true: Sequence[Any], y_pred: Sequence[Any]) -> float:
    """Fraction of misclassified frames over all sequences.

    Parameters
    ----------
    y_true, y_pred : list of array_like
        Per-sequence (T_i,) labels.

    Returns
    -------
    float
        Frame error rate in [0, 1].
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_pred has {len(y_pred)} sequences, y_true has {len(y_true)}")
    t = np.concatenate([np.asarray(a).ravel() for a in y_true])
    p = np.concatenate([np.asarray(a).ravel() for a in y_pred])
    if t.shape != p.shape:
        raise ValueError("y_true and y_pred differ in sequence lengths")
    return float(np.mean(t != p))


def utterance_error(
    y_true: Sequence[Any], scores: Sequence[np.ndarray], classes: np.ndarray | None = None
) -> float:
    """Sequence error rate after pooling (averaging) frame scores over each sequence.

    Parameters
    ----------
    y_true : list of array_like or array_like
        Per-sequence labels: one label per sequence, or (T_i,) frame labels whose
        first entry is used.
    scores : list of ndarray
        Per-sequence (T_i, C) scores from ``decision_function``.
    classes : ndarray, optional
        The labels of the score columns (``model.classes_``); default 0..C-1.

    Returns
    -------
    float
        Utterance error rate in [0, 1].
    """
    if len(y_true) != len(scores):
        raise ValueError(f"scores has {len(scores)} sequences, y_true has {len(y_true)}")
    if len(scores) == 0:
        raise ValueError("scores must not be empty")
    C = np.asarray(scores[0]).shape[1]
    cls = np.arange(C) if classes is None else np.asarray(classes)
    pred = np.array([cls[int(np.argmax(np.asarray(s).mean(axis=0)))] for s in scores])
    true = np.array([np.asarray(y).ravel()[0] for y in y_true])
    return float(np.mean(pred != true))
