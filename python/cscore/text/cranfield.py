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
    "train_on_split",
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


class _BM25Matrix:
    """rank-bm25's ``BM25Okapi`` scores as one sparse matrix product (same numbers)."""

    def __init__(self, documents: Sequence[str]) -> None:
        from rank_bm25 import BM25Okapi
        from scipy import sparse

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


def _top_excluding(scores: np.ndarray, exclude: Sequence[set[int]], k: int) -> list[np.ndarray]:
    order = np.argsort(-scores, axis=1, kind="stable")[:, : k + 32]
    return [np.array([d for d in row if d not in ex][:k], dtype=np.int64)
            for row, ex in zip(order, exclude)]


def training_pairs(
    collection: Collection, split: QuerySplit, *, sentences_per_doc: int = 2,
    judged_repeat: int = 3, hard_negatives: int = 0, seed: int = 0,
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
    hard_negatives : int
        0 (default): none.  Otherwise every pair carries a hard negative drawn
        at random from BM25's top ``hard_negatives`` documents for its query
        that are not known to be relevant (the source document of a title or
        sentence; the judged documents of a query).
    seed : int

    Returns
    -------
    callable
        ``epoch -> list of (query, document, query_key, document_key)``, with
        ``(negative_document, negative_key)`` appended when ``hard_negatives``.
    """
    docs = collection.documents
    n = len(docs)
    sents = [sentences(a)[1:] for a in collection.abstracts]
    train_q = [q for q in split.train if collection.qrels.get(q)]
    judged = [(collection.queries[q], d, q) for q in train_q
              for d in sorted(collection.qrels[q])]
    if hard_negatives < 0:
        raise ValueError(f"hard_negatives must be >= 0, got {hard_negatives}")
    hard: dict[tuple[int, int], np.ndarray] = {}  # (kind, index) -> candidate negatives
    if hard_negatives:
        bm = _BM25Matrix(docs)
        tops = _top_excluding(bm.scores(collection.titles), [{d} for d in range(n)],
                              hard_negatives)
        hard.update({(0, d): t for d, t in enumerate(tops)})
        flat = [(d, j) for d in range(n) for j in range(len(sents[d]))]
        if flat:
            tops = _top_excluding(bm.scores([sents[d][j] for d, j in flat]),
                                  [{d} for d, _ in flat], hard_negatives)
            hard.update({(1, d * 10_000 + j): t for (d, j), t in zip(flat, tops)})
        if train_q:
            tops = _top_excluding(bm.scores([collection.queries[q] for q in train_q]),
                                  [set(collection.qrels[q]) for q in train_q], hard_negatives)
            hard.update({(2, q): t for q, t in zip(train_q, tops)})

    def make(epoch: int) -> list[TrainPair]:
        rng = np.random.default_rng(seed * 1000 + epoch)
        nrng = np.random.default_rng([seed, epoch, 1])  # negatives: own stream
        out: list[TrainPair] = []

        def add(q: str, d: str, qk: int, dk: int, key: tuple[int, int]) -> None:
            cand = hard.get(key)
            if cand is None:
                out.append((q, d, qk, dk))
            elif len(cand):
                neg = int(cand[nrng.integers(len(cand))])
                out.append((q, d, qk, dk, docs[neg], neg))

        for d in range(n):
            if collection.titles[d].strip():
                add(collection.titles[d], docs[d], 10_000 + d, d, (0, d))
            ss = sents[d]
            if ss and sentences_per_doc:
                for k in rng.choice(len(ss), min(sentences_per_doc, len(ss)), replace=False):
                    rest = " ".join(s for j, s in enumerate(ss) if j != k)
                    body = f"{collection.titles[d]} {rest}"
                    add(ss[k], body, 100_000 + d, d, (1, d * 10_000 + int(k)))
        for _ in range(judged_repeat):
            for q, d, qk in judged:
                add(q, docs[d], qk, d, (2, qk))
        return out

    return make


def train_on_split(collection: Collection, split: QuerySplit, config: Any, *,
                   pairs: dict[str, int] | None = None, seed: int = 0,
                   info: dict[str, Any] | None = None) -> Any:
    """Train on ``split.train``, early-stopping on ``split.val`` NDCG@10.

    The trigram vocabulary comes from the documents, titles and training
    queries; LSA initialization from the documents.

    Parameters
    ----------
    collection : Collection
    split : QuerySplit
    config : TextTrainConfig
    pairs : dict, optional
        Keyword arguments of :func:`training_pairs` (besides ``seed``).
    seed : int
        Seed of the training pairs.
    info : dict, optional
        Provenance stored in the model.

    Returns
    -------
    TextTrainResult
    """
    from .train import train_retrieval_model

    return train_retrieval_model(
        training_pairs(collection, split, seed=seed, **(pairs or {})),
        vocab_texts=collection.documents + collection.titles
        + [collection.queries[q] for q in split.train],
        lsa_texts=collection.documents, evaluate=validation_scorer(collection, split.val),
        config=config, info=info)


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
