"""The lexical baselines of the Cranfield experiment and their interpolation with a model.

BM25 (rank-bm25's ``BM25Okapi``, the optional ``text`` extra) and the cosine of
scikit-learn's TF-IDF vectors over title + abstract; :func:`interpolate` mixes
BM25 with a model's cosine, :func:`choose_interpolation` picks the weight on
held-out queries.  :class:`BM25Matrix` computes BM25 as one sparse product (the
hard negatives of :func:`cscore.text.cranfield.training_pairs`).  Public through
:mod:`cscore.text.cranfield`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._optional import require
from .data import Collection
from .hashing import tokenize
from .metrics import mean_ndcg

__all__ = ["BM25Matrix", "bm25_scores", "choose_interpolation", "interpolate", "tfidf_scores"]


class BM25Matrix:
    """rank-bm25's ``BM25Okapi`` scores as one sparse matrix product (same numbers)."""

    def __init__(self, documents: Sequence[str]) -> None:
        from scipy import sparse

        BM25Okapi = require("rank_bm25", "the BM25 baseline").BM25Okapi

        bm = BM25Okapi([tokenize(d) for d in documents])
        self.vocab = {t: i for i, t in enumerate(bm.idf)}
        rows, cols, vals = [], [], []
        for d, (freqs, dl) in enumerate(zip(bm.doc_freqs, bm.doc_len)):
            norm = bm.k1 * (1 - bm.b + bm.b * dl / bm.avgdl)
            for t, f in freqs.items():
                rows.append(d)
                cols.append(self.vocab[t])
                vals.append(bm.idf[t] * f * (bm.k1 + 1) / (f + norm))
        self.W = sparse.csr_matrix((vals, (rows, cols)),
                                   shape=(len(documents), len(self.vocab)))

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """(len(queries), n_docs) BM25 scores."""
        from scipy import sparse

        rows, cols = [], []
        for r, q in enumerate(queries):
            for t in tokenize(q):
                if t in self.vocab:
                    rows.append(r)
                    cols.append(self.vocab[t])
        Q = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)),
                              shape=(len(queries), len(self.vocab)))
        return np.asarray((Q @ self.W.T).toarray())



def bm25_scores(collection: Collection, queries: Sequence[int]) -> np.ndarray:
    """BM25 (rank-bm25's BM25Okapi, default parameters) over title + abstract.

    Tokens: lower-case alphanumeric, no stemming.
    """
    BM25Okapi = require("rank_bm25", "the BM25 baseline").BM25Okapi
    bm = BM25Okapi([tokenize(d) for d in collection.documents])
    return np.array([bm.get_scores(tokenize(collection.queries[q])) for q in queries])


def tfidf_scores(collection: Collection, queries: Sequence[int]) -> np.ndarray:
    """Cosine of scikit-learn ``TfidfVectorizer()`` (defaults) vectors."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
    except ImportError as exc:  # pragma: no cover
        raise ImportError("the TF-IDF baseline needs scikit-learn") from exc
    vec = TfidfVectorizer()
    D = vec.fit_transform(collection.documents)
    Q = vec.transform([collection.queries[q] for q in queries])
    return np.asarray((Q @ D.T).toarray())


def interpolate(bm25: np.ndarray, cos: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - w) * bm25 / max_query(bm25) + w * cos``, row by row.

    Parameters
    ----------
    bm25, cos : ndarray (nq, nd)
    weight : float
        In [0, 1]: 0 is BM25 alone, 1 the model alone.

    Returns
    -------
    ndarray (nq, nd)
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be in [0, 1], got {weight}")
    mx = bm25.max(axis=1, keepdims=True)
    b = np.divide(bm25, mx, out=np.zeros_like(bm25, dtype=np.float64), where=mx > 0)
    return (1.0 - weight) * b + weight * np.asarray(cos, dtype=np.float64)


def choose_interpolation(bm25: np.ndarray, cos: np.ndarray, qrels: dict[int, dict[int, int]],
                         queries: Sequence[int], k: int = 10,
                         grid: Sequence[float] = tuple(np.round(np.arange(0, 1.0001, 0.05), 2)),
                         ) -> tuple[float, float]:
    """The weight of :func:`interpolate` with the best mean NDCG@k on ``queries``.

    Returns
    -------
    (weight, ndcg)
    """
    best = (0.0, -1.0)
    for w in grid:
        v = mean_ndcg(interpolate(bm25, cos, float(w)), qrels, queries, (k,))[k]
        if v > best[1] + 1e-12:
            best = (float(w), v)
    return best
