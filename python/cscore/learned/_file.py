"""The model file of the learned greedy decoders NWSOMP and CDSN-CS.

Same container and the same bounded loader as LSTM-CS
(:mod:`cscore.lstm_cs.model`): an ``.npz`` archive, a ``meta`` entry holding
UTF-8 JSON (uint8) with ``format`` = ``"cscore.lstm_cs"``, ``version``, the
:class:`ProblemSpec` fields under ``spec`` and free-form ``info``, plus ``arch``
naming the network (``"nwsomp"`` or ``"cdsn"``) and ``arch_params`` (small
integers such as the window size).  The sensing matrix is entry ``A`` (float64,
(M, N)); the weights are float32 entries whose names and shapes each
architecture declares (:func:`register_arch`).

Loading goes through :func:`cscore.lstm_cs.model.read_model_arrays`: only the
declared entries are read, each header is checked before its data, and any
damage raises :class:`~cscore.lstm_cs.model.ModelFileError` naming the entry.
Saving is atomic (:func:`cscore.lstm_cs.model.save_npz_atomic`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..lstm_cs.model import (
    ARCH_SHAPES,
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_DIM,
    MAX_META_BYTES,
    ModelFileError,
    ProblemSpec,
    read_model_arrays,
    save_npz_atomic,
)

__all__ = ["load_arch_file", "register_arch", "save_arch_file"]

#: ``shapes(spec, arch_params) -> {entry: shape}`` of one architecture
Shapes = Callable[[ProblemSpec, dict[str, int]], Mapping[str, tuple[int, ...]]]


def _arch_params(meta: Mapping[str, Any]) -> dict[str, int]:
    params = meta.get("arch_params")
    if not isinstance(params, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_DIM
        for v in params.values()
    ):
        raise ValueError(f"bad arch_params {params!r}")
    return dict(params)


def register_arch(arch: str, shapes: Shapes) -> None:
    """Make the model loader accept files of ``arch`` with the entries ``shapes`` gives.

    Parameters
    ----------
    arch : str
        The name stored in the file's metadata.
    shapes : callable
        ``shapes(spec, arch_params) -> {entry: shape}`` (raise ``ValueError``
        for unusable parameters).
    """

    def from_meta(meta: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        spec = ProblemSpec(**meta["spec"])
        return {k: tuple(int(v) for v in s) for k, s in shapes(spec, _arch_params(meta)).items()}

    ARCH_SHAPES[arch] = from_meta


def save_arch_file(
    path: str | Path,
    arch: str,
    arrays: dict[str, np.ndarray],
    A: np.ndarray,
    spec: ProblemSpec,
    arch_params: dict[str, int],
    info: dict[str, Any] | None = None,
) -> None:
    """Write a model file (float32 weights, float64 ``A``, compressed), atomically.

    Parameters
    ----------
    path : path
        File to write (replaced atomically).
    arch : str
        Architecture name stored in the metadata.
    arrays : dict of str to ndarray
        The weights (stored as float32).
    A : ndarray (M, N)
        The sensing matrix.
    spec : ProblemSpec
        What the model was trained for.
    arch_params : dict of str to int
        Architecture sizes needed to check the weights when loading.
    info : dict, optional
        JSON-serializable provenance.
    """
    meta = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "arch": arch,
        "arch_params": {k: int(v) for k, v in arch_params.items()},
        "spec": asdict(spec),
        "info": info or {},
    }
    blob = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    if blob.size > MAX_META_BYTES:
        raise ValueError(f"info is too large ({blob.size} bytes of JSON; at most {MAX_META_BYTES})")
    out = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
    save_npz_atomic(path, {"meta": blob, "A": np.ascontiguousarray(A, dtype=np.float64), **out})


def load_arch_file(
    path: str | Path, arch: str
) -> tuple[dict[str, np.ndarray], np.ndarray, ProblemSpec, dict[str, int], dict[str, Any]]:
    """Read and check a model file of architecture ``arch`` (see :func:`register_arch`).

    Parameters
    ----------
    path : path
        The ``.npz`` file.
    arch : str
        The architecture expected in the metadata.

    Returns
    -------
    arrays : dict of str to ndarray
        float32 weights, checked against the architecture's shapes.
    A : ndarray (M, N) float64
    spec : ProblemSpec
    arch_params : dict of str to int
    info : dict

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Anything wrong with the file; the message names the entry.
    """
    path = Path(path)
    meta, arrays = read_model_arrays(path)
    if meta["arch"] != arch:
        raise ModelFileError(f"{path}: entry 'meta' says arch {meta['arch']!r}, expected {arch!r}")
    spec = ProblemSpec(**meta["spec"])
    A = np.ascontiguousarray(arrays.pop("A"), dtype=np.float64)
    if not np.any(A != 0, axis=0).all():
        raise ModelFileError(f"{path}: entry 'A' has an all-zero column")
    w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
    return w, A, spec, _arch_params(meta), dict(meta["info"])
