"""Model files: the bounded container, the architecture table, the resolver.

* :mod:`cscore.models.format` -- the ``.npz`` container every learned model is
  saved in, its one :class:`ModelFileError`, and :data:`ARCHITECTURES` (which
  weights a file of each ``arch`` holds, and the class that loads it).
* :mod:`cscore.models.registry` -- the pretrained models shipped in this folder
  (and in ``CSCORE_MODEL_PATH``), and the one resolver from a name or a path to
  a model (:func:`resolve_model`, :func:`load_model`) with its one rule
  (:func:`~cscore.models.registry.is_model_path`: a path object, or a string with
  a path separator or ending in ``.npz``, is a file; any other string a name).
"""

from __future__ import annotations

from .format import ARCHITECTURES, ModelFileError, read_model_meta, register_arch
from .registry import (
    ModelEntry,
    list_pretrained,
    load_model,
    model_dirs,
    pretrained,
    pretrained_entries,
    resolve_model,
)

__all__ = [
    "ARCHITECTURES",
    "ModelEntry",
    "ModelFileError",
    "list_pretrained",
    "load_model",
    "model_dirs",
    "pretrained",
    "pretrained_entries",
    "read_model_meta",
    "register_arch",
    "resolve_model",
]
