"""Tokenization and letter-trigram word hashing (Huang et al. 2013, thesis section 3.3).

A text is lower-cased and split into alphanumeric tokens (numbers kept, no
stemming); a token longer than :data:`MAX_WORD_CHARS` (100) characters is cut to
its first 100 (no English word comes near; a 10 MB token would otherwise cost
seconds and a gigabyte of trigrams).  A word ``w`` becomes the letter trigrams
of ``#w#``: ``"flow"`` -> ``#fl, flo, low, ow#``.  The trigram vocabulary is
built from training text; trigrams outside it are dropped, and a word none of
whose trigrams is known is dropped from the sequence (it would carry no input).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["MAX_WORD_CHARS", "TrigramHasher", "check_texts", "tokenize", "word_trigrams"]

_TOKEN = re.compile(r"[a-z0-9]+")
#: Longest token kept whole; longer tokens are cut to their first ``MAX_WORD_CHARS``.
MAX_WORD_CHARS = 100


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric tokens of ``text``, each cut to ``MAX_WORD_CHARS`` characters.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return [w[:MAX_WORD_CHARS] for w in _TOKEN.findall(text.lower())]


def word_trigrams(word: str) -> list[str]:
    """Letter trigrams of ``#word#`` (with repeats, in order).

    Parameters
    ----------
    word : str
        A non-empty token.

    Returns
    -------
    list of str
    """
    s = f"#{word}#"
    return [s[i : i + 3] for i in range(len(s) - 2)]


def check_texts(name: str, texts: Any) -> list[str]:
    """Return ``texts`` as a list of str or raise an error naming the argument.

    Parameters
    ----------
    name : str
        Argument name for messages.
    texts : sequence of str
        A bare ``str`` is refused (it would be read as characters).

    Returns
    -------
    list of str
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a list of str, not a single {type(texts).__name__}; "
                        f"wrap one text as [text]")
    try:
        out = list(texts)
    except TypeError:
        raise TypeError(
            f"{name} must be a list of str, got {type(texts).__name__}"
        ) from None
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return out


class TrigramHasher:
    """Letter-trigram vocabulary: maps words to lists of trigram indices.

    Parameters
    ----------
    trigrams : sequence of str
        The vocabulary, index order.

    Attributes
    ----------
    trigrams : list of str
    index : dict
        trigram -> index.
    """

    def __init__(self, trigrams: Sequence[str]) -> None:
        self.trigrams = list(trigrams)
        self.index = {t: i for i, t in enumerate(self.trigrams)}
        if len(self.index) != len(self.trigrams):
            raise ValueError("trigrams must be unique")
        self._cache: dict[str, np.ndarray] = {}

    @classmethod
    def fit(cls, texts: Iterable[str], *, min_count: int = 1,
            max_size: int | None = None) -> TrigramHasher:
        """Build the vocabulary from training ``texts``.

        Parameters
        ----------
        texts : iterable of str
        min_count : int
            Keep trigrams seen at least this often.
        max_size : int, optional
            Keep at most this many (the most frequent).

        Returns
        -------
        TrigramHasher
            Trigrams sorted by decreasing count, then alphabetically.
        """
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        if max_size is not None and max_size < 1:
            raise ValueError(f"max_size must be >= 1, got {max_size}")
        counts: Counter[str] = Counter()
        for t in check_texts("texts", texts):
            for w in tokenize(t):
                counts.update(word_trigrams(w))
        kept = sorted((t for t, n in counts.items() if n >= min_count),
                      key=lambda t: (-counts[t], t))
        if not kept:
            raise ValueError("texts hold no words: cannot build a trigram vocabulary")
        if max_size is not None:
            kept = kept[:max_size]
        return cls(kept)

    def __len__(self) -> int:
        return len(self.trigrams)

    def word_ids(self, word: str) -> np.ndarray:
        """Known trigram indices of ``word`` (with repeats; empty if none known).

        Parameters
        ----------
        word : str

        Returns
        -------
        ndarray of int32
        """
        ids = self._cache.get(word)
        if ids is None:
            ids = np.array([self.index[t] for t in word_trigrams(word) if t in self.index],
                           dtype=np.int32)
            if len(self._cache) < 200_000:
                self._cache[word] = ids
        return ids

    def words(self, text: str, limit: int | None = None) -> list[str]:
        """The tokens of ``text`` that have at least one known trigram.

        Parameters
        ----------
        text : str
        limit : int, optional
            Stop after this many words (the rest of the text is not hashed).

        Returns
        -------
        list of str
        """
        out: list[str] = []
        for w in tokenize(text):
            if limit is not None and len(out) >= limit:
                break
            if self.word_ids(w).size:
                out.append(w)
        return out

    def bag(self, text: str) -> np.ndarray:
        """Trigram counts of ``text`` (float32, length ``len(self)``).

        Parameters
        ----------
        text : str

        Returns
        -------
        ndarray
        """
        out = np.zeros(len(self), dtype=np.float32)
        for w in tokenize(text):
            np.add.at(out, self.word_ids(w), 1.0)
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON-serializable description (the vocabulary in index order)."""
        return {"kind": "letter-trigram", "trigrams": self.trigrams}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> TrigramHasher:
        """Inverse of :meth:`to_json`."""
        if obj.get("kind") != "letter-trigram" or not isinstance(obj.get("trigrams"), list):
            raise ValueError("not a letter-trigram hasher description")
        return cls([str(t) for t in obj["trigrams"]])
