"""Scoring and ranking documents for queries, on top of a text model's ``encode``.

:func:`cosine_scores` is the similarity of a single model; :class:`Scorer` turns
any ``encode(texts, side)`` into ``encode_queries``, ``encode_documents``,
``score`` and ``rank`` (the base of the models in :mod:`cscore.text.model`);
:func:`check_batch_size` checks the ``batch_size`` of every ``encode``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Scorer", "check_batch_size", "cosine_scores"]


def cosine_scores(Q: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Cosine similarities between rows of ``Q`` and rows of ``D`` (zero rows score 0).

    Parameters
    ----------
    Q : ndarray (nq, k)
    D : ndarray (nd, k)

    Returns
    -------
    ndarray (nq, nd) float32
    """
    Q = np.asarray(Q, dtype=np.float32)
    D = np.asarray(D, dtype=np.float32)
    if Q.ndim != 2 or D.ndim != 2 or Q.shape[1] != D.shape[1]:
        raise ValueError(f"Q (nq, k) and D (nd, k) must agree; got {Q.shape} and {D.shape}")
    qn = np.linalg.norm(Q, axis=1, keepdims=True)
    dn = np.linalg.norm(D, axis=1, keepdims=True)
    Qh = np.divide(Q, qn, out=np.zeros_like(Q), where=qn > 0)
    Dh = np.divide(D, dn, out=np.zeros_like(D), where=dn > 0)
    return Qh @ Dh.T


def check_batch_size(batch_size: Any) -> int:
    """``batch_size`` as a positive int, or an error naming it."""
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, numbers.Integral):
        raise TypeError(f"batch_size must be a positive int, got {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size}")
    return int(batch_size)


class Scorer:
    """Scoring and ranking on top of ``encode(texts, side)`` and ``dim``.

    The base of :class:`~cscore.text.model.RetrievalModel` and
    :class:`~cscore.text.model.RetrievalEnsemble`: ``encode_queries``,
    ``encode_documents``, ``score`` and ``rank`` are written once here.
    """

    @property
    def dim(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def encode(self, texts: Sequence[str], side: str = "document", *,
               normalize: bool = False, batch_size: int = 2048) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - overridden

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query-side embeddings, (n, dim) float32."""
        return self.encode(texts, "query")

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Document-side embeddings, (n, dim) float32 (a document: title + abstract)."""
        return self.encode(texts, "document")

    def score(self, queries: Sequence[str], documents: Sequence[str] | np.ndarray) -> np.ndarray:
        """Similarity of every query with every document.

        One model: the cosine of the embeddings.  An ensemble: the mean of its
        members' cosines (the dot product of its embeddings, which is their
        cosine whenever every member reads both texts).

        Parameters
        ----------
        queries : list of str
        documents : list of str, or ndarray (nd, dim)
            Texts, or embeddings from :meth:`encode_documents`.

        Returns
        -------
        ndarray (nq, nd) float32
            In [-1, 1]; 0 where either side has no known word (for an
            ensemble: a member that knows no word of either text adds 0).
        """
        return self._similarity(self.encode_queries(queries), self._doc_matrix(documents))

    def _similarity(self, Q: np.ndarray, D: np.ndarray) -> np.ndarray:
        return cosine_scores(Q, D)

    def _doc_matrix(self, documents: Sequence[str] | np.ndarray) -> np.ndarray:
        if isinstance(documents, np.ndarray) and documents.dtype.kind == "f":
            if documents.ndim != 2 or documents.shape[1] != self.dim:
                raise ValueError(
                    f"documents as embeddings must be (n, {self.dim}); got {documents.shape}"
                )
            return documents
        return self.encode_documents(documents)  # type: ignore[arg-type]

    def rank(self, query: str, documents: Sequence[str] | np.ndarray,
             top_k: int | None = 10) -> list[tuple[int, float]]:
        """Rank ``documents`` for ``query`` by cosine similarity.

        Parameters
        ----------
        query : str
        documents : list of str, or ndarray (nd, dim) of document embeddings
        top_k : int or None
            How many to return (None: all).

        Returns
        -------
        list of (int, float)
            Document index and score, best first (ties in document order).
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1
        ):
            raise ValueError(f"top_k must be a positive int or None, got {top_k!r}")
        s = self.score([query], documents)[0]
        order = np.argsort(-s, kind="stable")
        if top_k is not None:
            order = order[:top_k]
        return [(int(i), float(s[i])) for i in order]
