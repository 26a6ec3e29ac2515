"""The Cranfield experiment: training pairs, baselines and the evaluation table.

Training data (there is no click log): every document's title as a query for
the document (weak positives, as a click on a title); sentences of the
abstract as queries for the rest of the document (the sentence removed; fresh
sentences every epoch); and the judged pairs of the training queries
(relevance codes 1-4), repeated.  Model selection uses the validation queries;
the test queries are used only by :func:`evaluate_methods`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .data import Collection, QuerySplit
from .hashing import tokenize
from .metrics import mean_ndcg
from .model import RetrievalModel, cosine_scores
from .train import TrainPair

__all__ = [
    "MethodScores",
    "bm25_scores",
    "choose_interpolation",
    "evaluate_methods",
    "interpolate",
    "model_scores",
    "sentences",
    "tfidf_scores",
    "training_pairs",
    "validation_scorer",
]


def sentences(abstract: str, min_words: int = 4) -> list[str]:
    """Split an abstract at `` . `` (Cranfield spaces its full stops).

    Parameters
    ----------
    abstract : str
    min_words : int
        Drop shorter pieces.

    Returns
    -------
    list of str
    """
    parts = re.split(r"\s\.(?:\s+|$)|(?<=[a-z0-9])\.\s+", abstract)
    return [p.strip() for p in parts if len(tokenize(p)) >= min_words]


def training_pairs(
    collection: Collection, split: QuerySplit, *, sentences_per_doc: int = 2,
    judged_repeat: int = 3, seed: int = 0,
) -> Callable[[int], list[TrainPair]]:
    """Pairs for :func:`~cscore.text.train.train_retrieval_model`, fresh each epoch.

    Parameters
    ----------
    collection : Collection
    split : QuerySplit
        Only ``split.train`` queries' judgments are used.
    sentences_per_doc : int
        Abstract sentences drawn per document and epoch (the first sentence,
        which repeats the title, is skipped).
    judged_repeat : int
        How often each judged pair appears per epoch.
    seed : int

    Returns
    -------
    callable
        ``epoch -> list of (query, document, query_key, document_key)``.
    """
    docs = collection.documents
    n = len(docs)
    sents = [sentences(a)[1:] for a in collection.abstracts]
    judged = [(collection.queries[q], d, q) for q in split.train
              for d in sorted(collection.qrels.get(q, {}))]

    def make(epoch: int) -> list[TrainPair]:
        rng = np.random.default_rng(seed * 1000 + epoch)
        out: list[TrainPair] = []
        for d in range(n):
            if collection.titles[d].strip():
                out.append((collection.titles[d], docs[d], 10_000 + d, d))
            ss = sents[d]
            if ss and sentences_per_doc:
                for k in rng.choice(len(ss), min(sentences_per_doc, len(ss)), replace=False):
                    rest = " ".join(s for j, s in enumerate(ss) if j != k)
                    body = f"{collection.titles[d]} {rest}"
                    out.append((ss[k], body, 100_000 + d, d))
        for _ in range(judged_repeat):
            out.extend((q, docs[d], qk, d) for q, d, qk in judged)
        return out

    return make


def model_scores(model: RetrievalModel, collection: Collection,
                 queries: Sequence[int], doc_emb: np.ndarray | None = None) -> np.ndarray:
    """Cosine scores (len(queries), n_docs) of a model."""
    D = model.encode_documents(collection.documents) if doc_emb is None else doc_emb
    Q = model.encode_queries([collection.queries[q] for q in queries])
    return cosine_scores(Q, D)


def validation_scorer(collection: Collection, queries: Sequence[int],
                      k: int = 10) -> Callable[[RetrievalModel], float]:
    """``model -> mean NDCG@k`` over ``queries`` (for early stopping)."""
    qs = list(queries)

    def score(model: RetrievalModel) -> float:
        return mean_ndcg(model_scores(model, collection, qs), collection.qrels, qs, (k,))[k]

    return score


def bm25_scores(collection: Collection, queries: Sequence[int]) -> np.ndarray:
    """BM25 (rank-bm25's BM25Okapi, default parameters) over title + abstract.

    Tokens: lower-case alphanumeric, no stemming.
    """
    try:
        from rank_bm25 import BM25Okapi
    except ImportError as exc:  # pragma: no cover
        raise ImportError("the BM25 baseline needs rank-bm25: pip install rank-bm25") from exc
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


@dataclass
class MethodScores:
    """NDCG@1,3,10 of one method over all documents and reranking BM25's top 100."""

    name: str
    full: dict[int, float]
    rerank: dict[int, float]
    note: str = ""


def evaluate_methods(
    collection: Collection, split: QuerySplit, models: dict[str, RetrievalModel],
    *, interpolate_with: str | None = "LSTM", ks: Sequence[int] = (1, 3, 10),
    top: int = 100, queries: Sequence[int] | None = None,
) -> list[MethodScores]:
    """The evaluation table on the test queries.

    Parameters
    ----------
    collection : Collection
    split : QuerySplit
        Test queries are evaluated; validation queries choose the
        interpolation weight.
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
    val = list(split.val)
    bm_t = bm25_scores(collection, test)
    cand = np.argsort(-bm_t, axis=1, kind="stable")[:, :top]
    rows: list[MethodScores] = []

    def add(name: str, S: np.ndarray, note: str = "") -> None:
        rows.append(MethodScores(
            name, mean_ndcg(S, collection.qrels, test, ks),
            mean_ndcg(S, collection.qrels, test, ks, candidates=cand), note))

    add("BM25", bm_t)
    add("TF-IDF cosine", tfidf_scores(collection, test))
    cos: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, m in models.items():
        D = m.encode_documents(collection.documents)
        S_t = model_scores(m, collection, test, D)
        cos[name] = (S_t, model_scores(m, collection, val, D))
        add(name, S_t)
    if interpolate_with is not None and interpolate_with in cos:
        S_t, S_v = cos[interpolate_with]
        w, _ = choose_interpolation(bm25_scores(collection, val), S_v, collection.qrels, val)
        add(f"BM25 + {interpolate_with}", interpolate(bm_t, S_t, w),
            f"weight {w:.2f} on the {interpolate_with} score, chosen on validation")
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
