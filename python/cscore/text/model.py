"""A two-tower retrieval model: hashing, word embedding, query and document encoders.

An ensemble (:class:`RetrievalEnsemble`) averages the cosines of several models.

The file format is :mod:`cscore.text._model_file`: :func:`load_model` reads
either kind of file, :meth:`~RetrievalModel.save` writes; the scoring and ranking
both kinds share is :class:`cscore.text._scorer.Scorer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar, Union

import numpy as np

from .._blas import single_threaded_blas
from ._model_file import (
    FORMAT_NAME,
    FORMAT_VERSION,
    TextModelFileError,
    read_model_file,
    write_model_file,
)
from ._scorer import Scorer, check_batch_size, cosine_scores
from .encoders import Encoder, encoder_from_arrays
from .hashing import TrigramHasher, check_texts

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "RetrievalEnsemble",
    "RetrievalModel",
    "TextModel",
    "TextModelFileError",
    "cosine_scores",
    "load_model",
]

SIDES = ("query", "document")

_S = TypeVar("_S", bound="_Stored")


class _Stored(Scorer):
    """``save`` and ``load`` of both kinds of model (one file format)."""

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
        return write_model_file(path, meta, arrays)

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


class RetrievalModel(_Stored):
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
        batch_size = check_batch_size(batch_size)
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


class RetrievalEnsemble(_Stored):
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
        batch_size = check_batch_size(batch_size)
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
    meta, arrays = read_model_file(path)
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
