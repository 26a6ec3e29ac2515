"""The Cranfield experiment: training pairs and training; its baselines and table re-exported.

Training data (there is no click log): every document's title as a query for
the document (weak positives, as a click on a title); sentences of the
abstract as queries for the rest of the document (the sentence removed; fresh
sentences every epoch); and the judged pairs of the training queries
(relevance codes 1-4), repeated.  Model selection uses the validation queries;
the test queries are used only by :func:`evaluate_methods`.

The lexical baselines (BM25, TF-IDF, interpolation) live in
:mod:`cscore.text._baselines`, the scoring, evaluation table and search in
:mod:`cscore.text._evaluation`; both are public here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from ._baselines import BM25Matrix, bm25_scores, choose_interpolation, interpolate, tfidf_scores
from ._evaluation import (
    MethodScores,
    SearchHit,
    as_dict,
    evaluate_methods,
    format_table,
    model_scores,
    search,
    selection_scores,
    validation_scorer,
)
from .data import Collection, QuerySplit, fold_splits
from .hashing import tokenize
from .model import RetrievalEnsemble
from .train import TrainPair

__all__ = [
    "BM25Matrix",
    "MethodScores",
    "SearchHit",
    "as_dict",
    "bm25_scores",
    "choose_interpolation",
    "evaluate_methods",
    "format_table",
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
        bm = BM25Matrix(docs)
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


