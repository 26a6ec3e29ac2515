"""A two-tower retrieval model: hashing, word embedding, query and document encoders.

File format
-----------
An ``.npz`` archive (``numpy.savez_compressed``, read with ``allow_pickle=False``):
``embedding`` (V, d) float32 (the trigram embedding shared by both towers),
``query.<name>`` and ``document.<name>`` (each tower's weights, float32), and
``meta``: a uint8 array holding UTF-8 JSON with ``format``, ``version``, the
trigram vocabulary, both towers' configs, ``max_words`` and free-form ``info``.

An ensemble (:class:`RetrievalEnsemble`, format version 2) stores member ``i``'s
arrays under the prefix ``m<i>.`` and their metadata in ``meta["members"]``.
:func:`load_model` reads either kind of file, with the bounds of every cscore
model file (:func:`cscore.models.format.read_npz_entries`: a regular file, a
bounded archive directory, hand-parsed ``.npy`` headers, capped sizes);
:meth:`~RetrievalModel.save` writes atomically
(:func:`cscore.models.format.save_npz_atomic`).
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar, Union

import numpy as np

from .._blas import single_threaded_blas
from ..models.format import ModelFileError, read_npz_entries, save_npz_atomic
from .encoders import Encoder, encoder_from_arrays
from .hashing import TrigramHasher, check_texts

__all__ = [
    "FORMAT_NAME",
    "RetrievalEnsemble",
    "RetrievalModel",
    "TextModel",
    "TextModelFileError",
    "cosine_scores",
    "load_model",
]

FORMAT_NAME = "cscore.text"
#: Newest format this version reads and writes (1: one model, 2: an ensemble).
FORMAT_VERSION = 2
SIDES = ("query", "document")
#: Most entries a text model file may list (an ensemble of BiLSTMs has 17 per member).
_MAX_ENTRIES = 1024
#: Largest total size of a file's arrays once decompressed (bytes).
_MAX_BYTES = 1 << 30


class TextModelFileError(ModelFileError):
    """A text model file is malformed or of another format.

    A :class:`cscore.models.format.ModelFileError` (so a ``ValueError``).
    """


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


_S = TypeVar("_S", bound="_Scorer")


def _check_batch_size(batch_size: Any) -> int:
    """``batch_size`` as a positive int, or an error naming it."""
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, numbers.Integral):
        raise TypeError(f"batch_size must be a positive int, got {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size}")
    return int(batch_size)


class _Scorer:
    """Scoring and ranking on top of ``encode(texts, side)`` and ``dim``."""

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

    def save(self, path: Union[str, Path]) -> Path:
        """Write the model (or the ensemble) as one compressed ``.npz`` (no pickle).

        Parameters
        ----------
        path : str or Path

        Returns
        -------
        Path
        """
        meta, arrays = self._file_content()
        return _write(path, {"format": FORMAT_NAME, **meta}, arrays)

    @classmethod
    def load(cls: type[_S], path: Union[str, Path]) -> _S:
        """Read a file written by :meth:`save` as an instance of this class.

        ``RetrievalModel.load`` refuses an ensemble file;
        ``RetrievalEnsemble.load`` reads a single-model file as an ensemble of
        one.  :func:`load_model` returns whichever the file holds.

        Parameters
        ----------
        path : str or Path

        Returns
        -------
        object
            An instance of the class ``load`` is called on.

        Raises
        ------
        TextModelFileError
            Not a cscore text model, inconsistent, or (``RetrievalModel``) an
            ensemble.
        """
        return cls._from_loaded(load_model(path), path)

    def _file_content(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        raise NotImplementedError  # pragma: no cover - overridden

    @classmethod
    def _from_loaded(cls: type[_S], model: Any, path: Union[str, Path]) -> _S:
        raise NotImplementedError  # pragma: no cover - overridden

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


class RetrievalModel(_Scorer):
    """Letter-trigram hashing, a shared trigram embedding, and two encoders.

    Parameters
    ----------
    hasher : TrigramHasher
    embedding : ndarray (V, d)
        Trigram embeddings; a word's vector is the sum over its trigrams.
    query_encoder, document_encoder : Encoder
        The two towers (input size d each; equal output sizes).
    max_words : int or None
        Words read per text (the rest is ignored); None reads everything.
    info : dict, optional
        Free-form provenance (training settings, results).
    """

    def __init__(self, hasher: TrigramHasher, embedding: Any, query_encoder: Encoder,
                 document_encoder: Encoder, *, max_words: int | None = None,
                 info: dict[str, Any] | None = None) -> None:
        E = np.ascontiguousarray(embedding, dtype=np.float32)
        if E.ndim != 2 or E.shape[0] != len(hasher):
            raise ValueError(
                f"embedding must be (V={len(hasher)}, d); got shape {E.shape}"
            )
        if not np.isfinite(E).all():
            raise ValueError("embedding contains NaN or infinity")
        for name, enc in (("query_encoder", query_encoder),
                          ("document_encoder", document_encoder)):
            if enc.n_in != E.shape[1]:
                raise ValueError(f"{name} reads {enc.n_in}-dim words; embedding is {E.shape[1]}")
        if query_encoder.out_dim != document_encoder.out_dim:
            raise ValueError("query and document encoders must have the same output size")
        if max_words is not None and (not isinstance(max_words, int) or max_words < 1):
            raise ValueError(f"max_words must be a positive int or None, got {max_words!r}")
        self.hasher = hasher
        self.embedding = E
        self.query_encoder = query_encoder
        self.document_encoder = document_encoder
        self.max_words = max_words
        self.info: dict[str, Any] = dict(info or {})

    # ------------------------------------------------------------------ encoding
    @property
    def dim(self) -> int:
        """Embedding size."""
        return int(self.query_encoder.out_dim)

    @property
    def kind(self) -> str:
        """The document encoder's kind ("lstm", "rnn", "bilstm" or "dssm")."""
        return self.document_encoder.kind

    def _encoder(self, side: str) -> Encoder:
        if side not in SIDES:
            raise ValueError(f"side must be 'query' or 'document', got {side!r}")
        return self.query_encoder if side == "query" else self.document_encoder

    def words(self, text: str) -> list[str]:
        """The words of ``text`` the model reads (known trigrams, at most ``max_words``)."""
        return self.hasher.words(text, self.max_words)

    def _sequences(self, texts: list[str]) -> tuple[list[np.ndarray], np.ndarray]:
        vocab: dict[str, int] = {}
        seqs = []
        for t in texts:
            ws = self.words(t)
            seqs.append(np.array([vocab.setdefault(w, len(vocab)) for w in ws], dtype=np.int64))
        table = np.zeros((len(vocab), self.embedding.shape[1]), dtype=np.float32)
        for w, k in vocab.items():
            table[k] = self.embedding[self.hasher.word_ids(w)].sum(0)
        return seqs, table

    def encode(self, texts: Sequence[str], side: str = "document", *,
               normalize: bool = False, batch_size: int = 2048) -> np.ndarray:
        """Embed ``texts`` with one tower.

        Parameters
        ----------
        texts : list of str
            Empty texts, or texts with no known trigram, get the zero vector.
        side : {"document", "query"}
        normalize : bool
            Scale every non-zero row to unit length.
        batch_size : int
            Texts per batch.

        Returns
        -------
        ndarray (len(texts), dim) float32
        """
        texts = check_texts("texts", texts)
        batch_size = _check_batch_size(batch_size)
        enc = self._encoder(side)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # the per-word products are small: one BLAS thread is faster, and much
        # faster on a busy machine, than a team of threads (the decoders' limit:
        # nests, and holds on worker threads too; off with _blas.LIMIT_BLAS_THREADS)
        with single_threaded_blas():
            for s in range(0, len(texts), batch_size):
                seqs, table = self._sequences(texts[s : s + batch_size])
                out[s : s + len(seqs)] = enc.encode(seqs, table)
        if normalize:
            n = np.linalg.norm(out, axis=1, keepdims=True)
            np.divide(out, n, out=out, where=n > 0)
        return out

    def trace(self, text: str, side: str = "query") -> tuple[list[str], dict[str, np.ndarray]]:
        """Per-word activations of one text (LSTM, BiLSTM and RNN encoders).

        Parameters
        ----------
        text : str
        side : {"query", "document"}

        Returns
        -------
        words : list of str
            The words read.
        activations : dict
            Name -> (n_words, n_cells) float32 (see ``LSTMEncoder.trace``).
        """
        enc = self._encoder(side)
        if not hasattr(enc, "trace"):
            raise ValueError(f"a {enc.kind} encoder has no per-word activations")
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        seqs, table = self._sequences([text])
        return self.words(text), enc.trace(seqs[0], table)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ files
    def _to_arrays(self, prefix: str = "") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "hasher": self.hasher.to_json(),
            "query_encoder": self.query_encoder.config(),
            "document_encoder": self.document_encoder.config(),
            "max_words": self.max_words, "info": self.info,
        }
        arrays: dict[str, np.ndarray] = {f"{prefix}embedding": self.embedding}
        for side, enc in (("query", self.query_encoder), ("document", self.document_encoder)):
            for k, v in enc.params().items():
                arrays[f"{prefix}{side}.{k}"] = np.asarray(v, dtype=np.float32)
        return meta, arrays

    @classmethod
    def _from_arrays(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                     prefix: str = "") -> RetrievalModel:
        hasher = TrigramHasher.from_json(meta["hasher"])
        towers = []
        for side in SIDES:
            pre = f"{prefix}{side}."
            towers.append(encoder_from_arrays(
                meta[f"{side}_encoder"],
                {k[len(pre):]: v for k, v in arrays.items() if k.startswith(pre)}))
        return cls(hasher, arrays[f"{prefix}embedding"], towers[0], towers[1],
                   max_words=meta.get("max_words"), info=meta.get("info") or {})

    def _file_content(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta, arrays = self._to_arrays()
        return {"version": 1, **meta}, arrays

    @classmethod
    def _from_loaded(cls, model: TextModel, path: Union[str, Path]) -> RetrievalModel:
        if not isinstance(model, RetrievalModel):
            raise TextModelFileError(
                f"{path} holds an ensemble of {len(model.members)} models; read it with "
                "cscore.text.load_model or RetrievalEnsemble.load")
        return model

    def __repr__(self) -> str:
        return (f"RetrievalModel(kind={self.kind!r}, dim={self.dim}, "
                f"trigrams={len(self.hasher)}, max_words={self.max_words})")


class RetrievalEnsemble(_Scorer):
    """Several retrieval models scored together: the mean of their cosines.

    A text's embedding is the concatenation of the members' unit-length
    embeddings, each scaled by ``1 / sqrt(n_members)``, so that the cosine of
    two ensemble embeddings is the mean of the members' cosines (a member that
    reads no known word of a text contributes 0).  Averaging members trained
    from different seeds and query folds lowers the variance that a single
    small model has from training noise.

    Parameters
    ----------
    members : sequence of RetrievalModel
        At least one.
    info : dict, optional
        Free-form provenance (training settings, results).
    """

    def __init__(self, members: Sequence[RetrievalModel], *,
                 info: dict[str, Any] | None = None) -> None:
        members = list(members)
        if not members:
            raise ValueError("an ensemble needs at least one member")
        for i, m in enumerate(members):
            if not isinstance(m, RetrievalModel):
                raise TypeError(f"member {i} is a {type(m).__name__}, not a RetrievalModel")
        self.members = members
        self.info: dict[str, Any] = dict(info or {})

    @property
    def dim(self) -> int:
        """Embedding size (the sum of the members')."""
        return sum(m.dim for m in self.members)

    @property
    def kind(self) -> str:
        """The members' kind ("lstm", ...), or "mixed" when they differ."""
        kinds = {m.kind for m in self.members}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    def words(self, text: str) -> list[str]:
        """The words of ``text`` read by the member that reads the most of them."""
        return max((m.words(text) for m in self.members), key=len)

    def encode(self, texts: Sequence[str], side: str = "document", *,
               normalize: bool = False, batch_size: int = 2048) -> np.ndarray:
        """Embed ``texts`` with one tower of every member.

        Parameters
        ----------
        texts : list of str
            Empty texts, or texts no member knows a word of, get the zero vector.
        side : {"document", "query"}
        normalize : bool
            Scale every non-zero row to unit length (rows are already unit
            length when every member knows a word of the text).
        batch_size : int
            Texts per batch.

        Returns
        -------
        ndarray (len(texts), dim) float32
        """
        texts = check_texts("texts", texts)
        batch_size = _check_batch_size(batch_size)
        parts = [m.encode(texts, side, normalize=True, batch_size=batch_size)
                 for m in self.members]
        out = np.concatenate(parts, axis=1) * np.float32(1.0 / np.sqrt(len(parts)))
        if normalize:
            n = np.linalg.norm(out, axis=1, keepdims=True)
            np.divide(out, n, out=out, where=n > 0)
        return out

    def _similarity(self, Q: np.ndarray, D: np.ndarray) -> np.ndarray:
        return Q @ D.T  # the members' parts are unit length (or zero): mean cosine

    def trace(self, text: str, side: str = "query", *,
              member: int = 0) -> tuple[list[str], dict[str, np.ndarray]]:
        """Per-word activations of one member (see :meth:`RetrievalModel.trace`).

        Parameters
        ----------
        text : str
        side : {"query", "document"}
        member : int
            Which member (default: the first).
        """
        if not isinstance(member, int) or not 0 <= member < len(self.members):
            raise ValueError(f"member must be an int in [0, {len(self.members)}), got {member!r}")
        return self.members[member].trace(text, side)

    def _file_content(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        metas, arrays = [], {}
        for i, m in enumerate(self.members):
            meta, arr = m._to_arrays(f"m{i}.")
            metas.append(meta)
            arrays.update(arr)
        return {"version": 2, "members": metas, "info": self.info}, arrays

    @classmethod
    def _from_loaded(cls, model: TextModel, path: Union[str, Path]) -> RetrievalEnsemble:
        return model if isinstance(model, RetrievalEnsemble) else cls([model])

    def __repr__(self) -> str:
        return (f"RetrievalEnsemble(kind={self.kind!r}, members={len(self.members)}, "
                f"dim={self.dim})")


#: Either kind of text model (what :func:`load_model` and ``pretrained`` return).
TextModel = Union[RetrievalModel, RetrievalEnsemble]


def _write(path: Union[str, Path], meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Path:
    path = Path(path)
    arrays = dict(arrays)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    save_npz_atomic(path, arrays)
    return path


def load_model(path: Union[str, Path]) -> TextModel:
    """Read a text model file: one model or an ensemble.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    RetrievalModel or RetrievalEnsemble
        Both have ``encode_queries``, ``encode_documents``, ``score``,
        ``rank`` and ``trace``.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    TextModelFileError
        Not a cscore text model, of a newer format, or inconsistent.
    """
    path = Path(path)
    try:
        arrays = read_npz_entries(path, "fiu", max_entries=_MAX_ENTRIES, max_bytes=_MAX_BYTES)
    except ModelFileError as exc:
        raise TextModelFileError(str(exc)) from None
    if "meta" not in arrays:
        raise TextModelFileError(f"{path} lacks 'meta'")
    try:
        meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TextModelFileError(f"{path}: unreadable metadata ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise TextModelFileError(f"{path} is not a {FORMAT_NAME} model file")
    try:
        version = int(meta.get("version", 0))
    except (TypeError, ValueError):
        raise TextModelFileError(f"{path}: bad format version {meta.get('version')!r}") from None
    if version > FORMAT_VERSION:
        raise TextModelFileError(
            f"{path} has format version {version}; this cscore reads up to {FORMAT_VERSION}"
        )
    if "members" not in meta and "embedding" not in arrays:
        raise TextModelFileError(f"{path} lacks 'embedding'")
    try:
        if "members" in meta:
            if not isinstance(meta["members"], list) or not meta["members"]:
                raise ValueError("'members' must be a non-empty list")
            return RetrievalEnsemble(
                [RetrievalModel._from_arrays(mm, arrays, f"m{i}.")
                 for i, mm in enumerate(meta["members"])], info=meta.get("info") or {})
        return RetrievalModel._from_arrays(meta, arrays)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise TextModelFileError(f"{path}: inconsistent model ({exc})") from None
