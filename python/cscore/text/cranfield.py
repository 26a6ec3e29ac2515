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
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._optional import require
from .data import Collection, QuerySplit, fold_splits
from .hashing import tokenize
from .metrics import mean_ndcg, per_query_ndcg
from .model import RetrievalEnsemble, TextModel
from .train import TrainPair

__all__ = [
    "MethodScores",
    "SearchHit",
    "bm25_scores",
    "choose_interpolation",
    "evaluate_methods",
    "interpolate",
    "model_scores",
    "search",
    "selection_scores",
    "sentences",
    "tfidf_scores",
    "train_ensemble",
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


def train_ensemble(collection: Collection, split: QuerySplit, config: Any, n_members: int, *,
                   pairs: dict[str, int] | None = None, seed: int = 0, n_folds: int = 5,
                   fold_seed: int = 7, info: dict[str, Any] | None = None,
                   n_jobs: int = 1) -> tuple[RetrievalEnsemble, list[Any]]:
    """Train ``n_members`` models on folds of the queries and average them.

    The training + validation queries of ``split`` are cut into
    ``max(n_folds, n_members)`` folds (:func:`~cscore.text.data.fold_splits`);
    member ``i`` holds out fold ``i`` (its validation queries: early stopping
    when ``config.patience`` is set, and its recorded score), trains on the
    other folds' judged pairs (plus the weak pairs of every document) and uses
    seed ``seed + i`` for both its weights and its pairs.  With two or more
    members every non-test query trains some member, and every member's
    held-out fold is recorded in its ``info["split"]["val"]``
    (:func:`selection_scores`).  ``cscore text train --members`` trains every
    member a fixed number of epochs (``patience=None``).

    Parameters
    ----------
    collection : Collection
    split : QuerySplit
    config : TextTrainConfig
        Settings of every member (its ``seed`` is offset by the member index).
    n_members : int
    pairs : dict, optional
        Keyword arguments of :func:`training_pairs` (besides ``seed``).
    seed : int
        Seed of member 0's training pairs.
    n_folds, fold_seed : int
        Folds of the queries (5 and 7: the folds of the cross-validation
        that chose the recipes).
    info : dict, optional
        Provenance stored in the ensemble and in every member.
    n_jobs : int
        Members trained at the same time, each in its own process (one torch
        thread each; the progress bar counts members); the result does not
        depend on it.

    Returns
    -------
    ensemble : RetrievalEnsemble
    results : list of TextTrainResult
        One per member.
    """
    import dataclasses

    if not isinstance(n_members, int) or n_members < 1:
        raise ValueError(f"n_members must be a positive int, got {n_members!r}")
    if not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive int, got {n_jobs!r}")
    folds = fold_splits(split, max(n_folds, n_members), seed=fold_seed)
    jobs = []
    for i in range(n_members):
        s = folds[i]
        cfg = dataclasses.replace(config, seed=config.seed + i)
        if n_jobs > 1:
            cfg = dataclasses.replace(cfg, progress=False)
        jobs.append((collection, s, cfg, pairs, seed + i,
                     {**(info or {}), "member": i,
                      "split": {"train": list(s.train), "val": list(s.val),
                                "test": list(s.test)}}))
    if n_jobs == 1 or n_members == 1:
        results = [_train_member(j) for j in jobs]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")  # no forked torch / BLAS state
        if config.progress:
            results = _train_parallel_with_progress(jobs, n_jobs, ctx, config.kind)
        else:
            with ProcessPoolExecutor(min(n_jobs, n_members), mp_context=ctx) as ex:
                futures = [ex.submit(_train_member, j) for j in jobs]
                results = [f.result() for f in futures]
    ens = RetrievalEnsemble([r.model for r in results], info=dict(info or {}))
    ens.info["members"] = {"n": n_members, "n_folds": len(folds), "fold_seed": fold_seed,
                           "seeds": [config.seed + i for i in range(n_members)]}
    ens.info["training"] = {
        "seconds": round(sum(r.seconds for r in results), 1),
        "best_epoch": [r.best_epoch for r in results],
        "best_val_score": [r.model.info["training"]["best_val_score"] for r in results]}
    return ens, results


def _train_parallel_with_progress(jobs: list[Any], n_jobs: int, ctx: Any, kind: str) -> list[Any]:
    """Train the members in worker processes, showing one bar of every member's batches.

    Each worker reports its training batches through a queue
    (:func:`cscore.text._train_loop.set_progress_sink`); the bar counts them
    and the finished members.
    """
    import queue as queue_mod
    from concurrent.futures import ProcessPoolExecutor, wait

    from tqdm.auto import tqdm

    manager = ctx.Manager()
    q = manager.Queue()
    bar = tqdm(desc=f"{kind} members ({n_jobs} at a time)", unit="batch")
    try:
        with ProcessPoolExecutor(min(n_jobs, len(jobs)), mp_context=ctx,
                                 initializer=_report_to, initargs=(q,)) as ex:
            futures = [ex.submit(_train_member, j) for j in jobs]
            pending = set(futures)
            while pending:
                _, pending = wait(pending, timeout=0.5)
                try:
                    while True:
                        bar.update(q.get_nowait())
                except queue_mod.Empty:
                    pass
                bar.set_postfix(members=f"{len(jobs) - len(pending)}/{len(jobs)}")
            return [f.result() for f in futures]
    finally:
        bar.close()
        manager.shutdown()


def _report_to(q: Any) -> None:
    """Worker initializer: send this process's training batches to ``q``."""
    from ._train_loop import set_progress_sink

    set_progress_sink(q.put)


def _train_member(job: tuple[Any, ...]) -> Any:
    collection, split, cfg, pairs, seed, info = job
    return train_on_split(collection, split, cfg, pairs=pairs, seed=seed, info=info)


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
