"""Scoring a model on the Cranfield queries: selection, the evaluation table, search.

:func:`model_scores` and :func:`validation_scorer` (early stopping) score a model
on queries; :func:`selection_scores` gives the held-out queries on which to
choose a setting (out-of-fold for an ensemble); :func:`evaluate_methods` makes the
table of BM25, TF-IDF, the models and BM25 + model on the test queries
(:class:`MethodScores`, :func:`format_table`); :func:`search` ranks the
documents for one query (``cscore text search``).  Public through
:mod:`cscore.text.cranfield`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ._baselines import bm25_scores, choose_interpolation, interpolate, tfidf_scores
from .data import Collection, QuerySplit
from .metrics import mean_ndcg, per_query_ndcg
from .model import TextModel

__all__ = [
    "MethodScores",
    "SearchHit",
    "as_dict",
    "evaluate_methods",
    "format_table",
    "model_scores",
    "search",
    "selection_scores",
    "validation_scorer",
]


def model_scores(model: TextModel, collection: Collection,
                 queries: Sequence[int], doc_emb: np.ndarray | None = None) -> np.ndarray:
    """Scores (len(queries), n_docs) of a model (:meth:`RetrievalModel.score`: the
    cosine; for an ensemble the mean of its members' cosines)."""
    D = model.encode_documents(collection.documents) if doc_emb is None else doc_emb
    return model.score([collection.queries[q] for q in queries], D)


def validation_scorer(collection: Collection, queries: Sequence[int],
                      k: int = 10) -> Callable[[TextModel], float]:
    """``model -> mean NDCG@k`` over ``queries`` (for early stopping)."""
    qs = list(queries)

    def score(model: TextModel) -> float:
        return mean_ndcg(model_scores(model, collection, qs), collection.qrels, qs, (k,))[k]

    return score


def selection_scores(model: TextModel, collection: Collection, split: QuerySplit,
                     ) -> tuple[list[int], np.ndarray, str]:
    """Held-out queries and scores on which to choose a setting for ``model``.

    A single model: its scores on ``split.val``.  An ensemble whose members
    record the queries they were validated on (``info["split"]["val"]``, as
    ``cscore text train --members`` writes): the out-of-fold scores, i.e.
    each such query scored by the member(s) that did not train on it (other
    members did).  Test queries of ``split`` are never used.

    Returns
    -------
    queries : list of int
    scores : ndarray (len(queries), n_docs)
    description : str
        "validation" or "out-of-fold validation".
    """
    members: list[Any] = list(getattr(model, "members", None) or [])
    held = [m.info.get("split", {}).get("val") for m in members]
    if not held or any(not h for h in held):
        val = list(split.val)
        return val, model_scores(model, collection, val), "validation"
    test = set(split.test)
    queries = sorted({int(q) for h in held for q in h} - test)
    S = np.zeros((len(queries), len(collection.documents)), dtype=np.float64)
    count = np.zeros(len(queries))
    row = {q: i for i, q in enumerate(queries)}
    for m, h in zip(members, held):
        qs = [int(q) for q in h if int(q) in row]
        if qs:
            idx = [row[q] for q in qs]
            S[idx] += model_scores(m, collection, qs)
            count[idx] += 1
    return queries, S / count[:, None], "out-of-fold validation"


@dataclass
class MethodScores:
    """NDCG@1,3,10 of one method over all documents and reranking BM25's top 100.

    ``per_query`` holds the per-query NDCG@k over all documents (k -> array in
    the order of the evaluated queries), for paired comparisons.
    """

    name: str
    full: dict[int, float]
    rerank: dict[int, float]
    note: str = ""
    per_query: dict[int, np.ndarray] = field(default_factory=dict)


def evaluate_methods(
    collection: Collection, split: QuerySplit, models: dict[str, TextModel],
    *, interpolate_with: str | None = "LSTM", ks: Sequence[int] = (1, 3, 10),
    top: int = 100, queries: Sequence[int] | None = None,
) -> list[MethodScores]:
    """The evaluation table on the test queries.

    Parameters
    ----------
    collection : Collection
    split : QuerySplit
        Test queries are evaluated; the interpolation weight is chosen on
        queries the model did not train on (:func:`selection_scores`).
    models : dict
        Display name -> model.
    interpolate_with : str or None
        Name in ``models`` to interpolate with BM25.
    ks : sequence of int
    top : int
        Rerank depth (BM25's top ``top``).
    queries : sequence of int, optional
        Evaluate these instead of ``split.test``.

    Returns
    -------
    list of MethodScores
        BM25, TF-IDF, each model, and the interpolation.
    """
    test = list(split.test if queries is None else queries)
    bm_t = bm25_scores(collection, test)
    cand = np.argsort(-bm_t, axis=1, kind="stable")[:, :top]
    rows: list[MethodScores] = []

    def add(name: str, S: np.ndarray, note: str = "") -> None:
        per = per_query_ndcg(S, collection.qrels, test, ks)
        n = max(len(test), 1)
        rows.append(MethodScores(
            name, {k: float(v.sum()) / n for k, v in per.items()},
            mean_ndcg(S, collection.qrels, test, ks, candidates=cand), note, per))

    add("BM25", bm_t)
    add("TF-IDF cosine", tfidf_scores(collection, test))
    cos: dict[str, np.ndarray] = {}
    for name, m in models.items():
        D = m.encode_documents(collection.documents)
        cos[name] = model_scores(m, collection, test, D)
        add(name, cos[name])
    if interpolate_with is not None and interpolate_with in cos:
        m = models[interpolate_with]
        val, S_v, how = selection_scores(m, collection, split)
        w, _ = choose_interpolation(bm25_scores(collection, val), S_v, collection.qrels, val)
        add(f"BM25 + {interpolate_with}", interpolate(bm_t, cos[interpolate_with], w),
            f"weight {w:.2f} on the {interpolate_with} score, chosen on {how}")
    return rows


def format_table(rows: Sequence[MethodScores], ks: Sequence[int] = (1, 3, 10)) -> str:
    """Markdown table of :func:`evaluate_methods` rows."""
    head = ("| method | " + " | ".join(f"NDCG@{k}" for k in ks) + " | "
            + " | ".join(f"rerank@{k}" for k in ks) + " | note |")
    sep = "|" + "---|" * (2 * len(ks) + 2)
    lines = [head, sep]
    for r in rows:
        lines.append(f"| {r.name} | " + " | ".join(f"{r.full[k]:.3f}" for k in ks) + " | "
                     + " | ".join(f"{r.rerank[k]:.3f}" for k in ks) + f" | {r.note} |")
    return "\n".join(lines)


def as_dict(rows: Sequence[MethodScores]) -> list[dict[str, Any]]:
    """JSON-friendly rows."""
    return [{"name": r.name, "full": r.full, "rerank": r.rerank, "note": r.note} for r in rows]


@dataclass
class SearchHit:
    """One document :func:`search` returns.

    Attributes
    ----------
    rank : int
        1 for the best.
    score : float
        The model's score (:meth:`~cscore.text.model.RetrievalModel.score`).
    doc_id : int
        Cranfield's document number.
    title : str
    """

    rank: int
    score: float
    doc_id: int
    title: str


def search(model: TextModel, query: str, *, top_k: int = 10,
           collection: Collection | None = None) -> list[SearchHit]:
    """Rank the Cranfield documents for ``query`` (``cscore text search``).

    Parameters
    ----------
    model : RetrievalModel or RetrievalEnsemble
    query : str
    top_k : int
        How many documents to return.
    collection : Collection, optional
        Default: the shipped Cranfield (:func:`~cscore.text.data.load_cranfield`).

    Returns
    -------
    list of SearchHit
        Best first (all scores are 0 when the model knows no word of the
        query: ``model.words(query)`` is empty).
    """
    from .data import load_cranfield

    c = load_cranfield() if collection is None else collection
    hits = model.rank(query, c.documents, top_k=top_k)
    return [SearchHit(rank, s, c.doc_ids[i], c.titles[i]) for rank, (i, s) in enumerate(hits, 1)]
