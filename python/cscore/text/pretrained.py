"""Pretrained text models shipped in ``cscore/text/models/`` (``<name>.npz``).

Directories in ``CSCORE_TEXT_MODEL_PATH`` (separated by ``os.pathsep``) are
searched first.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..models.registry import ModelStore
from ..models.registry import resolve_model as resolve
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

    A file or a name by the rule of every cscore model
    (:func:`cscore.models.registry.is_model_path`): a path object, or a string
    with a path separator or ending in ``.npz``, is a file; any other string is a
    pretrained name (``./name`` names a file called ``name``).

    Parameters
    ----------
    name_or_path : str or path
        A name from :func:`list_pretrained`, or a model file.

    Returns
    -------
    RetrievalModel or RetrievalEnsemble

    Raises
    ------
    FileNotFoundError
        No file at the path.
    ValueError
        Unknown name (the message lists the known ones), or a malformed file
        (:class:`~cscore.text.model.TextModelFileError`).
    """
    model, _ = resolve(name_or_path, load_file=load_model, load_name=pretrained)
    return model  # type: ignore[no-any-return]
