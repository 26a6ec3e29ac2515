"""The text model file: an ``.npz`` of arrays and JSON metadata, bounded when read.

An ``.npz`` archive (``numpy.savez_compressed``, read with ``allow_pickle=False``):
``embedding`` (V, d) float32 (the trigram embedding shared by both towers),
``query.<name>`` and ``document.<name>`` (each tower's weights, float32), and
``meta``: a uint8 array holding UTF-8 JSON with ``format``, ``version``, the
trigram vocabulary, both towers' configs, ``max_words`` and free-form ``info``.

An ensemble (:class:`~cscore.text.model.RetrievalEnsemble`, format version 2)
stores member ``i``'s arrays under the prefix ``m<i>.`` and their metadata in
``meta["members"]``.  :func:`cscore.text.model.load_model` reads either kind of
file (through :func:`read_model_file`), with the bounds of every cscore model
file (:func:`cscore.models.format.read_npz_entries`: a regular file, a
bounded archive directory, hand-parsed ``.npy`` headers, capped sizes);
:meth:`~cscore.text.model.RetrievalModel.save` writes atomically
(:func:`write_model_file`, :func:`cscore.models.format.save_npz_atomic`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Union

import numpy as np

from ..models.format import ModelFileError, read_npz_entries, save_npz_atomic

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "TextModelFileError", "read_model_file",
           "write_model_file"]

FORMAT_NAME = "cscore.text"
#: Newest format this version reads and writes (1: one model, 2: an ensemble).
FORMAT_VERSION = 2
#: Most entries a text model file may list (an ensemble of BiLSTMs has 17 per member).
_MAX_ENTRIES = 1024
#: Largest total size of a file's arrays once decompressed (bytes).
_MAX_BYTES = 1 << 30


class TextModelFileError(ModelFileError):
    """A text model file is malformed or of another format.

    A :class:`cscore.models.format.ModelFileError` (so a ``ValueError``).
    """


def write_model_file(path: Union[str, Path], meta: dict[str, Any],
                     arrays: dict[str, np.ndarray]) -> Path:
    """Write ``arrays`` and ``meta`` (as UTF-8 JSON, with ``format``) atomically.

    Parameters
    ----------
    path : str or Path
    meta : dict
        The metadata (``version`` and the models' settings).
    arrays : dict
        Entry name -> array.

    Returns
    -------
    Path
    """
    path = Path(path)
    arrays = dict(arrays)
    text = json.dumps({"format": FORMAT_NAME, **meta})
    arrays["meta"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    save_npz_atomic(path, arrays)
    return path


def read_model_file(path: Union[str, Path]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a text model file's metadata and arrays, with the format checks.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    meta : dict
        The JSON metadata (``format`` checked, ``version`` not newer than
        :data:`FORMAT_VERSION`).
    arrays : dict
        Entry name -> array (without ``meta``).

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    TextModelFileError
        Not a cscore text model, or of a newer format.
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
    return meta, arrays
