"""Sequence-model files: an ESN or R-DSN as a compressed ``.npz`` (no pickle).

File format
-----------
``meta``: a 0-d unicode array holding JSON with ``format`` (``"cscore.seq/1"``),
``kind`` ("esn" or "rdsn"), the constructor ``params``, ``n_modules``,
``n_features_in`` and every module's cost ``history``; ``classes``, ``mean``
and ``scale``; and per module ``i`` its input weights ``m<i>_W``, readout
``m<i>_U`` and sparse recurrent matrix ``m<i>_indptr``, ``m<i>_indices``,
``m<i>_data``.

Files are read with the bounds of every cscore model file
(:func:`cscore.models.format.read_npz_entries`: a regular file, a bounded
archive directory, hand-parsed ``.npy`` headers, capped sizes) and written
atomically (:func:`cscore.models.format.save_npz_atomic`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..models.format import ModelFileError, read_npz_entries, save_npz_atomic
from ._checks import MAX_MODULES, check_learn
from ._ops import Module, SparseRec

__all__ = ["SeqModelFileError", "load_model", "register_kind", "save_model"]

_FORMAT = "cscore.seq/1"
#: Entries of the largest file: meta, classes, mean, scale and five per module.
_MAX_ENTRIES = 4 + 5 * MAX_MODULES
#: Largest total size of a file's arrays once decompressed (bytes).
_MAX_BYTES = 1 << 30
#: ``kind`` in a file -> the model class (each class registers itself)
_KINDS: dict[str, type[Any]] = {}


def register_kind(kind: str, cls: type[Any]) -> None:
    """Let :func:`load_model` build ``cls`` for files of ``kind``."""
    _KINDS[kind] = cls


class SeqModelFileError(ModelFileError):
    """A sequence-model file is missing keys, has bad shapes or an unknown format.

    A :class:`cscore.models.format.ModelFileError` (so a ``ValueError``).
    """


def save_model(model: Any, path: str | Path) -> None:
    """Write a fitted ESN or RDSN to ``path`` (atomically; loads without pickle).

    Parameters
    ----------
    model : ESN or RDSN
        A fitted model.
    path : str or Path
        Destination file (replaced if it exists).
    """
    model._check_fitted()
    params = model.get_params()
    params["learn"] = list(check_learn(params["learn"]))
    meta = {
        "format": _FORMAT,
        "kind": model._kind,
        "params": params,
        "n_modules": len(model.modules_),
        "n_features_in": int(model.n_features_in_),
        "history": [m.history for m in model.modules_],
    }
    arrays: dict[str, np.ndarray] = {
        "meta": np.array(json.dumps(meta)),
        "classes": model.classes_,
        "mean": model.mean_,
        "scale": model.scale_,
    }
    for i, mod in enumerate(model.modules_):
        arrays[f"m{i}_W"] = mod.W
        arrays[f"m{i}_U"] = mod.U
        arrays[f"m{i}_indptr"] = mod.rec.indptr
        arrays[f"m{i}_indices"] = mod.rec.indices
        arrays[f"m{i}_data"] = mod.rec.data
    save_npz_atomic(path, arrays)


def load_model(path: str | Path) -> Any:
    """Load an :class:`ESN` or :class:`RDSN` saved with ``save`` (no pickle).

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file.

    Returns
    -------
    ESN or RDSN
        The fitted model.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    SeqModelFileError
        When the file is not a cscore sequence model or is damaged.
    """
    path = Path(path)
    try:
        data = read_npz_entries(path, "fiuU", max_entries=_MAX_ENTRIES, max_bytes=_MAX_BYTES)
    except FileNotFoundError:
        raise FileNotFoundError(f"path: no such file: {path}") from None
    except ModelFileError as exc:
        raise SeqModelFileError(f"path: {exc}") from None
    try:
        return _model_from(path, data)
    except SeqModelFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise SeqModelFileError(f"path: {path} is not a cscore sequence model ({exc})") from None


def _model_from(path: Path, data: dict[str, np.ndarray]) -> Any:
    """Build the model from the file's arrays (any defect raises KeyError, ValueError, ...)."""
    meta = json.loads(str(data["meta"]))
    if meta.get("format") != _FORMAT:
        raise SeqModelFileError(f"path: {path}: unknown format {meta.get('format')!r}")
    klass = _KINDS[meta["kind"]]
    params = dict(meta["params"])
    params["learn"] = tuple(params["learn"])
    model = klass(**params)
    try:  # the constructor's bounds (checked by fit): a file cannot hold what fit refuses
        model.validated()
    except (TypeError, ValueError) as exc:
        raise SeqModelFileError(f"path: {path}: bad setting in the file: {exc}") from None
    model.classes_ = data["classes"]
    model.mean_ = data["mean"].astype(np.float64)
    model.scale_ = data["scale"].astype(np.float64)
    model.n_features_in_ = int(meta["n_features_in"])
    n_modules = meta["n_modules"]
    if not isinstance(n_modules, int) or isinstance(n_modules, bool) or not (
        1 <= n_modules <= MAX_MODULES
    ):
        raise SeqModelFileError(f"path: {path}: n_modules must be 1..{MAX_MODULES}")
    mods = []
    for i in range(n_modules):
        rec = SparseRec(
            data[f"m{i}_indptr"].astype(np.int64),
            data[f"m{i}_indices"].astype(np.int64),
            data[f"m{i}_data"].astype(np.float64),
        )
        _check_pattern(path, i, rec)
        W = data[f"m{i}_W"].astype(np.float64)
        U = data[f"m{i}_U"].astype(np.float64)
        if W.ndim != 2 or U.ndim != 2 or W.shape[1] != rec.n or U.shape[0] != rec.n + W.shape[0]:
            raise SeqModelFileError(f"path: {path}: module {i} has inconsistent shapes")
        mods.append(Module(W=W, rec=rec, U=U, history=list(meta["history"][i])))
    model.modules_ = mods
    _check_arrays(path, model)
    return model


def _check_pattern(path: Path, i: int, rec: Any) -> None:
    """Refuse a recurrent matrix whose CSR arrays are not a valid pattern."""
    p, idx, vals = rec.indptr, rec.indices, rec.data
    ok = p.ndim == 1 and idx.ndim == 1 and vals.ndim == 1 and p.shape[0] >= 2
    ok = ok and idx.shape == vals.shape and p[0] == 0 and p[-1] == idx.shape[0]
    ok = ok and bool(np.all(np.diff(p) >= 0))
    ok = ok and (idx.size == 0 or (idx.min() >= 0 and idx.max() < p.shape[0] - 1))
    if not ok:
        raise SeqModelFileError(f"path: {path}: module {i} has an invalid recurrent pattern")


def _check_arrays(path: Path, model: Any) -> None:
    """Refuse non-finite weights and arrays that disagree with the recorded shapes."""
    n_in, n_cls = model.n_features_in_, model.classes_.shape
    if n_in < 1 or model.mean_.shape != (n_in,) or model.scale_.shape != (n_in,):
        raise SeqModelFileError(
            f"path: {path}: mean/scale do not match n_features_in={n_in}"
        )
    if len(n_cls) != 1 or n_cls[0] < 2 or model.classes_.dtype.kind not in "iu":
        raise SeqModelFileError(f"path: {path}: classes must be 2 or more integer labels")
    named = [("mean", model.mean_), ("scale", model.scale_)]
    d_data = n_in * int(model.context) + 1
    for i, mod in enumerate(model.modules_):
        d_in = d_data if i == 0 else d_data + n_cls[0]
        if mod.W.shape != (d_in, int(model.n_hidden)) or mod.U.shape[1] != n_cls[0]:
            raise SeqModelFileError(
                f"path: {path}: module {i} weights do not match the file's settings"
            )
        named += [(f"m{i}_W", mod.W), (f"m{i}_U", mod.U), (f"m{i}_data", mod.rec.data)]
    for name, arr in named:
        if not np.isfinite(arr).all():
            raise SeqModelFileError(f"path: {path}: {name} holds NaN or infinity")
    if not (model.scale_ > 0).all():
        raise SeqModelFileError(f"path: {path}: scale must be positive")
