"""Pretrained text models shipped in ``cscore/text/models/`` (``<name>.npz``).

Directories in ``CSCORE_TEXT_MODEL_PATH`` (separated by ``os.pathsep``) are
searched first.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..models.registry import ModelStore
from .model import TextModel, load_model

__all__ = ["list_pretrained", "model_dirs", "pretrained", "resolve_model"]

_PACKAGE_MODELS = Path(__file__).resolve().parent / "models"


#: The pretrained text models (this package's ``models/``, ``CSCORE_TEXT_MODEL_PATH``).
STORE = ModelStore("CSCORE_TEXT_MODEL_PATH", _PACKAGE_MODELS, what="pretrained text model")


def model_dirs() -> list[Path]:
    """Directories searched for pretrained text models, in search order.

    Returns
    -------
    list of Path
    """
    return STORE.dirs()


def list_pretrained() -> list[str]:
    """Names of the pretrained text models (e.g. ``"cranfield-lstm"``).

    Returns
    -------
    list of str
    """
    return list(STORE.files())


def pretrained(name: str) -> TextModel:
    """Load a pretrained text model.

    Parameters
    ----------
    name : str
        ``"cranfield-lstm"``, ``"cranfield-rnn"``, ``"cranfield-dssm"`` (or
        another name from :func:`list_pretrained`).

    Returns
    -------
    RetrievalModel or RetrievalEnsemble
        The shipped Cranfield models are ensembles of three members each
        (``cscore text train --members 3``); both classes have
        ``encode_queries``, ``encode_documents``, ``score``, ``rank`` and
        ``trace``.

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones).
    """
    return load_model(STORE.path(name))


def resolve_model(name_or_path: str | os.PathLike[str]) -> TextModel:
    """A text model from a pretrained name or a model file.

    Parameters
    ----------
    name_or_path : str or path
        A name from :func:`list_pretrained` (names win over files), or a
        model file.

    Returns
    -------
    RetrievalModel or RetrievalEnsemble

    Raises
    ------
    ValueError
        Neither a pretrained name nor a file (the message lists the names), or
        a malformed file (:class:`~cscore.text.model.TextModelFileError`).
    """
    spec = os.fspath(name_or_path)
    if spec in list_pretrained():
        return pretrained(spec)
    path = Path(spec)
    if path.is_file():
        return load_model(path)
    known = ", ".join(list_pretrained())
    raise ValueError(f"{spec!r} is neither a pretrained text model ({known}) nor a file")
