"""The model file of the learned greedy decoders NWSOMP and CDSN-CS.

Same container as LSTM-CS (:mod:`cscore.lstm_cs.model`): an ``.npz`` archive
read with ``allow_pickle=False``, a ``meta`` entry holding UTF-8 JSON (uint8)
with ``format`` = ``"cscore.lstm_cs"``, ``version``, the :class:`ProblemSpec`
fields under ``spec`` and free-form ``info``, plus ``arch`` naming the network
(``"nwsomp"`` or ``"cdsn"``) and ``arch_params`` (small integers such as the
window size).  The sensing matrix is entry ``A`` (float64, (M, N)); the weights
are float32 entries whose names and shapes each architecture declares
(:func:`save_arch_file`, :func:`load_arch_file`).

Loading is strict: any damage (not a zip, a truncated or corrupted member,
unreadable JSON, a missing or extra entry, an object or non-float array, a wrong
shape, NaN/inf) raises :class:`~cscore.lstm_cs.model.ModelFileError` naming the
entry.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..lstm_cs.model import FORMAT_NAME, FORMAT_VERSION, ModelFileError, ProblemSpec

__all__ = ["load_arch_file", "read_meta", "save_arch_file"]

_READ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error,
                RuntimeError, NotImplementedError, TypeError, MemoryError)


def save_arch_file(
    path: str | Path,
    arch: str,
    arrays: dict[str, np.ndarray],
    A: np.ndarray,
    spec: ProblemSpec,
    arch_params: dict[str, int],
    info: dict[str, Any] | None = None,
) -> None:
    """Write a model file (float32 weights, float64 ``A``, compressed).

    Parameters
    ----------
    path : path
        File to write (overwritten).
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
    out = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
    with open(Path(path), "wb") as fh:
        entries: dict[str, Any] = {"meta": blob, "A": np.ascontiguousarray(A, dtype=np.float64),
                                   **out}
        np.savez_compressed(fh, **entries)


def _parse_meta(path: Path, raw: np.ndarray) -> dict[str, Any]:
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ModelFileError(f"{path}: entry 'meta' must be a 1-D uint8 array (UTF-8 JSON)")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path}: entry 'meta' is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path}: entry 'meta' does not describe a {FORMAT_NAME} file")
    if meta.get("version") != FORMAT_VERSION:
        raise ModelFileError(
            f"{path}: format version {meta.get('version')!r}; this cscore reads {FORMAT_VERSION}"
        )
    return meta


def _open(path: str | Path) -> tuple[Path, Any]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model file at {path}")
    if path.is_dir():
        raise ModelFileError(f"{path} is a directory, not a model file")
    if not zipfile.is_zipfile(path):
        raise ModelFileError(f"{path} is not a model file: not an .npz (zip) archive")
    try:
        return path, np.load(path, allow_pickle=False)
    except _READ_ERRORS as exc:
        raise ModelFileError(f"{path} is not a readable .npz archive: {exc}") from exc


def _entry(path: Path, npz: Any, name: str) -> np.ndarray:
    try:
        arr = npz[name]
    except _READ_ERRORS as exc:
        raise ModelFileError(f"{path}: entry {name!r} is unreadable: {exc}") from exc
    if not isinstance(arr, np.ndarray):
        raise ModelFileError(f"{path}: entry {name!r} is not an array")
    return arr


def read_meta(path: str | Path) -> dict[str, Any]:
    """Read and check only the ``meta`` entry of a model file.

    Parameters
    ----------
    path : path
        A model file.

    Returns
    -------
    dict
        The metadata (``arch`` defaults to ``"lstm"`` for LSTM-CS files).

    Raises
    ------
    ModelFileError
        Unreadable or not a cscore model file.
    """
    path, npz = _open(path)
    with npz:
        if "meta" not in npz.files:
            raise ModelFileError(f"{path}: missing entry 'meta'")
        return _parse_meta(path, _entry(path, npz, "meta"))


def load_arch_file(
    path: str | Path, arch: str, shapes: Any
) -> tuple[dict[str, np.ndarray], np.ndarray, ProblemSpec, dict[str, int], dict[str, Any]]:
    """Read and check a model file of architecture ``arch``.

    Parameters
    ----------
    path : path
        The ``.npz`` file.
    arch : str
        The architecture expected in the metadata.
    shapes : callable
        ``shapes(spec, arch_params) -> dict`` of entry name to expected shape
        (raise ``ValueError`` for unusable parameters).

    Returns
    -------
    arrays : dict of str to ndarray
        float32 weights, checked against ``shapes``.
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
    path, npz = _open(path)
    with npz:
        files = list(npz.files)
        if "meta" not in files:
            raise ModelFileError(f"{path}: missing entry 'meta'")
        meta = _parse_meta(path, _entry(path, npz, "meta"))
        if meta.get("arch", "lstm") != arch:
            raise ModelFileError(
                f"{path}: entry 'meta' says arch {meta.get('arch', 'lstm')!r}, expected {arch!r}"
            )
        try:
            spec = ProblemSpec(**meta["spec"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: entry 'meta' has a bad problem spec: {exc}") from exc
        params = meta.get("arch_params")
        if not isinstance(params, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in params.values()
        ):
            raise ModelFileError(f"{path}: entry 'meta' has bad arch_params {params!r}")
        try:
            want = dict(shapes(spec, params))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: entry 'meta' has bad arch_params: {exc}") from exc
        want["A"] = (spec.M, spec.N)
        names = set(files) - {"meta"}
        if names - set(want):
            raise ModelFileError(f"{path}: unexpected entries {sorted(names - set(want))}")
        if set(want) - names:
            raise ModelFileError(f"{path}: missing entries {sorted(set(want) - names)}")
        arrays: dict[str, np.ndarray] = {}
        for name, shape in want.items():
            arr = _entry(path, npz, name)
            if arr.dtype.kind != "f":
                raise ModelFileError(
                    f"{path}: entry {name!r} has dtype {arr.dtype}; expected a float array"
                )
            if arr.shape != tuple(shape):
                raise ModelFileError(
                    f"{path}: entry {name!r} has shape {arr.shape}, expected {tuple(shape)}"
                )
            if not np.isfinite(arr).all():
                raise ModelFileError(f"{path}: entry {name!r} contains NaN or infinity")
            arrays[name] = arr
    A = np.ascontiguousarray(arrays.pop("A"), dtype=np.float64)
    if not (np.linalg.norm(A, axis=0) > 0).all():
        raise ModelFileError(f"{path}: entry 'A' has an all-zero column")
    w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
    info = meta.get("info", {})
    return w, A, spec, dict(params), dict(info) if isinstance(info, dict) else {}
