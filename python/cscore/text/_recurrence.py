"""Running a recurrent cell over a batch of word sequences, and the bag of words.

:func:`run_recurrent` steps a cell (the LSTM's or the RNN's of
:mod:`cscore.text.encoders`) over every text of a batch at once, sorted longest
first so that the texts still running are a prefix of the rows;
:func:`mean_word_vectors` is the bag-of-words average the LSTM encoder can add.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["F32", "mean_word_vectors", "run_recurrent"]

F32 = np.float32


def run_recurrent(
    seqs: Sequence[np.ndarray], P: np.ndarray, H: int, step: Any, reverse: bool,
    record: bool = False, pool: str = "last",
) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """Run ``step`` over every sequence in one batch, longest first.

    Parameters
    ----------
    seqs : sequence of int arrays
        Word-table rows per text (may be empty).
    P : ndarray (U, k)
        The input projections per word-table row.
    H : int
        Output size.
    step : callable
        ``step(p_t, (y, c)) -> (y, c, record)`` for the rows still running.
    reverse : bool
        Read every text last word first.
    record : bool
        Keep ``record`` of the first text after every word.
    pool : {"last", "mean"}
        Return the last output, or the mean over words.

    Returns
    -------
    out : ndarray (len(seqs), H) float32
        Zero for an empty text.
    trace : list of dict
        Per word, the recorded arrays of the first text (``record=True``).
    """
    n = len(seqs)
    out = np.zeros((n, H), dtype=F32)
    lens = np.array([len(s) for s in seqs], dtype=np.int64)
    order = np.argsort(-lens, kind="stable")
    T = int(lens.max()) if n else 0
    trace: list[dict[str, np.ndarray]] = []
    if T == 0:
        return out, trace
    ids = np.zeros((n, T), dtype=np.int64)
    for r, k in enumerate(order):
        s = np.asarray(seqs[k], dtype=np.int64)
        ids[r, : len(s)] = s[::-1] if reverse else s
    slens = lens[order]
    y = np.zeros((n, H), F32)
    c = np.zeros((n, H), F32)
    acc = np.zeros((n, H), F32) if pool == "mean" else None
    for t in range(T):
        na = int(np.count_nonzero(slens > t))  # rows still running (sorted longest first)
        ny, nc, rec = step(P[ids[:na, t]], (y[:na], c[:na]))
        y[:na] = ny
        c[:na] = nc
        if acc is not None:
            acc[:na] += ny
        if record:
            trace.append({k: v[0].copy() for k, v in rec.items()})
    if acc is not None:
        y = acc / np.maximum(slens, 1).astype(F32)[:, None]
    out[order] = y
    return out, trace


def mean_word_vectors(seqs: Sequence[np.ndarray], table: np.ndarray, H: int) -> np.ndarray:
    """Mean word vector of every text, first ``H`` coordinates (zeros for empty texts)."""
    tab = np.asarray(table, dtype=F32)[:, :H]
    out = np.zeros((len(seqs), H), F32)
    for k, s in enumerate(seqs):
        if len(s):
            out[k, : tab.shape[1]] = tab[np.asarray(s, dtype=np.int64)].mean(0)
    return out
