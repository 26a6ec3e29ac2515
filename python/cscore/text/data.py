"""The Cranfield collection: loader, query splits and training pairs.

The collection (Cleverdon, 1960s: 1400 aeronautics abstracts, 150 queries with
graded relevance judgments) ships with cscore, xz-compressed, in
``cscore/text/data/``; :func:`load_cranfield` reads that copy or a directory
holding the original files ``cran.all.1400``, ``cran.qry`` and ``cranqrel``
(optionally ``.xz``-compressed).

Judgment codes (``cranqrel.readme``): 1 = complete answer, 2 = high relevance,
3 = useful, 4 = minimum interest, -1 = not relevant.  The relevance grade used by
:mod:`cscore.text.metrics` is ``5 - code`` (0 for -1); NDCG gains are ``2**grade - 1``.
"""

from __future__ import annotations

import lzma
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np

__all__ = [
    "Collection",
    "QuerySplit",
    "fold_splits",
    "load_cranfield",
    "split_queries",
]

_PACKAGE_DATA = Path(__file__).resolve().parent / "data"
_FILES = ("cran.all.1400", "cran.qry", "cranqrel")


@dataclass
class Collection:
    """A test collection: documents, queries and graded judgments.

    Attributes
    ----------
    doc_ids : list of int
        The ``.I`` id of every document (1..1400 for Cranfield).
    titles, abstracts : list of str
        ``.T`` and ``.W`` fields (whitespace normalized).
    queries : list of str
        Query texts, in file order; query ``q`` (0-based) is ``cranqrel``'s
        query ``q + 1``.
    qrels : dict
        ``qrels[q][doc_index] = grade`` with 0-based query and document
        positions and ``grade = 5 - code`` (codes 1..4; -1 is not stored).
    """

    doc_ids: list[int]
    titles: list[str]
    abstracts: list[str]
    queries: list[str]
    qrels: dict[int, dict[int, int]] = field(default_factory=dict)

    @property
    def documents(self) -> list[str]:
        """Each document's text: its title and abstract joined by a space."""
        return [f"{t} {a}".strip() for t, a in zip(self.titles, self.abstracts)]

    @property
    def n_docs(self) -> int:
        """Number of documents."""
        return len(self.doc_ids)


def _read(path: Path) -> str:
    if path.suffix == ".xz":
        with lzma.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    return path.read_text(encoding="utf-8", errors="replace")


def _find(directory: Path, name: str) -> Path:
    for cand in (directory / name, directory / f"{name}.xz",
                 directory / f"cranfield.{name}.xz"):
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"{name} (or {name}.xz) not found in {directory}")


def _fields(record: str) -> dict[str, str]:
    parts = re.split(r"^\.([A-Z])[ \t]*$", record, flags=re.M)
    out: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        out[parts[i]] = " ".join(parts[i + 1].split())
    return out


def _records(text: str) -> list[tuple[int, dict[str, str]]]:
    out = []
    for chunk in re.split(r"^\.I[ \t]+", text, flags=re.M)[1:]:
        head, _, rest = chunk.partition("\n")
        out.append((int(head.strip()), _fields("\n" + rest)))
    return out


def load_cranfield(path: Union[str, Path, None] = None) -> Collection:
    """Load the Cranfield collection.

    Parameters
    ----------
    path : str or Path, optional
        A directory with ``cran.all.1400``, ``cran.qry`` and ``cranqrel``
        (each optionally ``.xz``); default: the copy shipped with cscore.

    Returns
    -------
    Collection
        1400 documents, 225 or 150 queries (whatever the file holds) and
        their judgments.

    Raises
    ------
    FileNotFoundError
        ``path`` is not a directory or lacks one of the files.
    ValueError
        A file is malformed (no records, a judgment for an unknown document).
    """
    directory = _PACKAGE_DATA if path is None else Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"path must be a directory holding the Cranfield files: {path}")
    docs = _records(_read(_find(directory, "cran.all.1400")))
    if not docs:
        raise ValueError(f"no documents (.I records) in {directory}")
    doc_ids = [i for i, _ in docs]
    titles = [f.get("T", "") for _, f in docs]
    abstracts = [f.get("W", "") for _, f in docs]
    queries = [f.get("W", "") for _, f in _records(_read(_find(directory, "cran.qry")))]
    pos = {d: k for k, d in enumerate(doc_ids)}
    qrels: dict[int, dict[int, int]] = {}
    for line_no, line in enumerate(_read(_find(directory, "cranqrel")).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 3:
            raise ValueError(f"cranqrel line {line_no}: expected 'query doc code', got {line!r}")
        q, d, code = int(parts[0]), int(parts[1]), int(parts[2])
        if d not in pos:
            raise ValueError(f"cranqrel line {line_no}: unknown document {d}")
        if not 1 <= q <= len(queries):
            raise ValueError(f"cranqrel line {line_no}: query {q} outside 1..{len(queries)}")
        gain = 5 - code if 1 <= code <= 4 else 0
        if gain > 0:
            row = qrels.setdefault(q - 1, {})
            row[pos[d]] = max(row.get(pos[d], 0), gain)
    return Collection(doc_ids, titles, abstracts, queries, qrels)


@dataclass(frozen=True)
class QuerySplit:
    """0-based query positions of the train, validation and test queries."""

    train: tuple[int, ...]
    val: tuple[int, ...]
    test: tuple[int, ...]


def split_queries(
    collection: Collection, *, n_val: int = 20, n_test: int = 50, seed: int = 2016
) -> QuerySplit:
    """Split the judged queries deterministically into train / validation / test.

    Parameters
    ----------
    collection : Collection
    n_val, n_test : int
        Validation and test queries; the rest (with judgments) train.
    seed : int
        Seed of the permutation (the default is the split the benchmarks use).

    Returns
    -------
    QuerySplit
        Sorted positions; queries without relevant documents are left out.
    """
    judged = np.array(sorted(q for q, rel in collection.qrels.items() if rel))
    if n_val < 0 or n_test < 1 or n_val + n_test >= len(judged):
        raise ValueError(
            f"n_val={n_val}, n_test={n_test} leave no training queries out of {len(judged)}"
        )
    perm = judged[np.random.default_rng(seed).permutation(len(judged))]
    test = tuple(sorted(int(q) for q in perm[:n_test]))
    val = tuple(sorted(int(q) for q in perm[n_test : n_test + n_val]))
    train = tuple(sorted(int(q) for q in perm[n_test + n_val :]))
    return QuerySplit(train, val, test)


def fold_splits(split: QuerySplit, n_folds: int = 5, *, seed: int = 7) -> list[QuerySplit]:
    """Cut the training + validation queries of ``split`` into ``n_folds`` folds.

    Split ``k`` validates on fold ``k`` and trains on the other folds; the test
    queries stay out of all of them.  These are the folds of the
    cross-validation that chose the training recipes
    (``benchmarks/text_cv.py``) and the held-out queries of an ensemble's
    members (``cscore text train --members``).

    Parameters
    ----------
    split : QuerySplit
    n_folds : int
        At least 2 and at most the number of pooled queries.
    seed : int
        Seed of the permutation (7: the folds of the benchmarks).

    Returns
    -------
    list of QuerySplit
        Training queries in ``split.train + split.val`` order, the fold's
        queries in permutation order, ``split.test`` unchanged.
    """
    pool = list(split.train) + list(split.val)
    if not isinstance(n_folds, int) or not 2 <= n_folds <= len(pool):
        raise ValueError(f"n_folds must be an int in [2, {len(pool)}], got {n_folds!r}")
    perm = np.random.default_rng(seed).permutation(len(pool))
    out = []
    for k in range(n_folds):
        fold = [pool[i] for i in perm[k::n_folds]]
        held = set(fold)
        out.append(QuerySplit(tuple(q for q in pool if q not in held), tuple(fold), split.test))
    return out
