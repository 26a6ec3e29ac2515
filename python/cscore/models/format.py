"""The model file: one bounded container for every learned model of cscore.

File format
-----------
An ``.npz`` archive (``numpy.savez``, readable with ``allow_pickle=False``) with
the sensing matrix ``A`` (float64, (M, N)), the model's weights (float32 entries
whose names and shapes its architecture declares) and ``meta``: a uint8 array
holding UTF-8 JSON with ``format`` (:data:`FORMAT_NAME`), ``version``, ``arch``
(the architecture; "lstm" when absent, as in files written before the field
existed), the :class:`~cscore.problem.ProblemSpec` fields under ``spec``, free-form
``info`` (training settings, data provenance) and whatever sizes the
architecture needs (``cell`` and ``n_cells`` for LSTM-CS, ``arch_params`` for
NWSOMP and CDSN-CS).

Architectures
-------------
:data:`ARCHITECTURES` is the one table of what a file may hold: each
architecture registers (:func:`register_arch`) a function from the checked
metadata to the exact entries and shapes its files hold, and the model class
that loads them.  The decoders register theirs when :mod:`cscore.decoders` is
imported; :func:`cscore.models.load_model` picks the class from a file's
``arch``.

Loading is bounded: only the entries the architecture defines are read, each
one's declared shape, dtype and size are checked against the metadata before
its data is decompressed, ``meta`` is capped (:data:`MAX_META_BYTES`) and so is
the total (:data:`MAX_ARRAYS_BYTES`); FIFOs and devices are refused without
being read (the zip and .npy reading is in :mod:`cscore.models._container`).
Every defect is a :class:`ModelFileError` naming the entry.
Saving is atomic (:func:`save_npz_atomic`).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..problem import ProblemSpec

# The bounded zip/.npy reading (the container) lives in _container.
from ._container import (
    MAX_DIM,
    MAX_ENTRIES,  # noqa: F401  (offered here too)
    READ_ERRORS,
    ModelFileError,
    fail,
    open_archive,
    read_entry,
    read_npz_entries,
    save_npz_atomic,
    strict_int,
)

__all__ = [
    "ARCHITECTURES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_ARRAYS_BYTES",
    "MAX_DIM",
    "MAX_META_BYTES",
    "Architecture",
    "ModelFileError",
    "load_model_arrays",
    "read_model_arrays",
    "read_model_meta",
    "read_npz_entries",
    "register_arch",
    "save_model",
    "save_npz_atomic",
]

FORMAT_NAME = "cscore.lstm_cs"
FORMAT_VERSION = 1


#: ``shapes(meta) -> {entry: shape}``: the weights a file of one architecture
#: holds, from its checked metadata (raise ``KeyError``/``ValueError`` for
#: unusable sizes).
ShapesFromMeta = Callable[[Mapping[str, Any]], dict[str, tuple[int, ...]]]


@dataclass(frozen=True)
class Architecture:
    """One entry of :data:`ARCHITECTURES`.

    Attributes
    ----------
    name : str
        The ``arch`` stored in the file's metadata.
    shapes : callable
        ``shapes(meta) -> {entry: shape}`` of the weights (``A`` and ``meta``
        are common to every architecture).
    model_class : type, optional
        The class whose ``load(path)`` reads such a file.
    check_meta : callable, optional
        ``check_meta(meta) -> str | None``: a message for metadata the
        architecture cannot use (reported as a :class:`ModelFileError`).
    """

    name: str
    shapes: ShapesFromMeta
    model_class: type | None = None
    check_meta: Callable[[Mapping[str, Any]], str | None] | None = None


#: The architecture table: ``meta["arch"]`` -> :class:`Architecture`.
ARCHITECTURES: dict[str, Architecture] = {}


def register_arch(
    name: str,
    shapes: ShapesFromMeta,
    model_class: type | None = None,
    *,
    check_meta: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> Architecture:
    """Make the loader accept files of architecture ``name``.

    Parameters
    ----------
    name : str
        The ``arch`` stored in the metadata.
    shapes : callable
        ``shapes(meta) -> {entry: shape}`` of the weight entries.
    model_class : type, optional
        The class whose ``load(path)`` reads such files (used by
        :func:`cscore.models.load_model`).
    check_meta : callable, optional
        Extra metadata check, returning an error message or None.

    Returns
    -------
    Architecture
        The registered entry (registering a name again replaces it).
    """
    if not isinstance(name, str) or not name:
        raise TypeError("an architecture name must be a non-empty str")
    entry = Architecture(name, shapes, model_class, check_meta)
    ARCHITECTURES[name] = entry
    return entry


MAX_META_BYTES = 1 << 20
#: Largest total size of a file's arrays once decompressed (bytes).  Shipped
#: models are a few MB; the cap keeps a hostile file from costing more.
MAX_ARRAYS_BYTES = 256 << 20
#: Array dtypes a model file may use (little-endian floats; uint8 for meta).
_FLOAT_DTYPES = ("<f4", "<f8")


def _check_meta(path: Path, meta: Any) -> dict[str, Any]:
    """Type-check metadata strictly; every problem is a ModelFileError."""
    if not isinstance(meta, dict):
        raise fail(path, f"metadata must be a JSON object, got {type(meta).__name__}")
    if meta.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path} is not a {FORMAT_NAME} file")
    version = meta.get("version")
    if not strict_int(version, 0) or version != FORMAT_VERSION:
        raise fail(
            path, f"format version {version!r}; this cscore reads version {FORMAT_VERSION}"
        )
    arch = meta.get("arch", "lstm")
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        raise fail(path, f"unknown architecture {arch!r}; known: {sorted(ARCHITECTURES)}")
    hook = ARCHITECTURES[arch].check_meta
    problem = hook(meta) if hook is not None else None
    if problem:
        raise fail(path, problem)
    for k, v in meta.items():
        if isinstance(v, int) and not isinstance(v, bool) and not strict_int(v, 0):
            raise fail(path, f"metadata field {k!r} = {v} is out of range")
    spec = meta.get("spec")
    if not isinstance(spec, dict):
        raise fail(path, "metadata 'spec' must be an object")
    # the fields of ProblemSpec, typed from its annotations (so a new field needs
    # no change here)
    ints = {f.name: (1 if f.name in ("M", "N", "L") else 0)
            for f in fields(ProblemSpec) if f.type in ("int", int)}  # fmt: skip
    strs = tuple(f.name for f in fields(ProblemSpec) if f.type in ("str", str))
    known = set(ints) | set(strs)
    extra = set(spec) - known
    if extra:
        raise fail(path, f"bad problem spec: unknown fields {sorted(extra)}")
    for k, lo in ints.items():
        if k in spec and not strict_int(spec[k], lo):
            raise fail(path, f"bad problem spec: {k} must be an int >= {lo}, got {spec[k]!r}")
    for k in strs:
        if k in spec and not isinstance(spec[k], str):
            raise fail(path, f"bad problem spec: {k} must be a string, got {spec[k]!r}")
    for k in ("M", "N", "L"):
        if k not in spec:
            raise fail(path, f"bad problem spec: {k} missing")
    info = meta.get("info", {})
    if info is None:
        info = {}
    if not isinstance(info, dict):
        raise fail(path, f"metadata 'info' must be an object, got {type(info).__name__}")
    out = dict(meta)
    out["arch"] = arch
    out["info"] = info
    return out


def _meta_from(path: Path, zf: zipfile.ZipFile) -> dict[str, Any]:
    if "meta.npy" not in zf.NameToInfo:
        raise fail(path, "no metadata (entry 'meta' missing)")
    blob = read_entry(path, zf, "meta", None, ("|u1",), MAX_META_BYTES)
    try:
        meta = json.loads(blob.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise fail(path, f"entry 'meta': metadata is not valid JSON: {str(exc)[:200]}") from None
    return _check_meta(path, meta)


def read_model_meta(path: str | Path) -> dict[str, Any]:
    """Read and check only the metadata of a model file (cheap and bounded).

    Parameters
    ----------
    path : path
        A model file.

    Returns
    -------
    dict
        The checked metadata (``arch`` filled in, ``info`` a dict).

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Anything wrong with the file.
    """
    path = Path(path)
    fh, zf = open_archive(path)
    try:
        with fh, zf:
            return _meta_from(path, zf)
    except ModelFileError:
        raise
    except READ_ERRORS as exc:
        raise fail(path, f"unreadable entry 'meta': {exc}") from None


def read_model_arrays(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a model file of any architecture of :data:`ARCHITECTURES`, bounded.

    Only the entries the format defines for the file's architecture are read;
    each one's declared shape, dtype and size are checked against the metadata
    before its data is decompressed, the total is capped by
    :data:`MAX_ARRAYS_BYTES`, and every array must be finite.  Nothing is
    unpickled.

    Parameters
    ----------
    path : path
        A model file.

    Returns
    -------
    meta : dict
        Checked metadata.
    arrays : dict of str to ndarray
        The arrays of :data:`COMMON_ARRAYS` and the architecture's entry.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Anything wrong with the file, naming the entry concerned.
    """
    path = Path(path)
    fh, zf = open_archive(path)
    try:
        with fh, zf:
            meta = _meta_from(path, zf)
            spec = meta["spec"]
            try:
                shapes: dict[str, tuple[int, ...]] = {"A": (int(spec["M"]), int(spec["N"]))}
                arch_shapes = ARCHITECTURES[meta["arch"]].shapes(meta)
                shapes.update({n: tuple(int(v) for v in shp) for n, shp in arch_shapes.items()})
            except KeyError as exc:
                raise fail(path, f"metadata lacks the dimension {exc}") from None
            except (TypeError, ValueError) as exc:
                raise fail(path, f"entry 'meta' has unusable sizes: {exc}") from None
            present = set(zf.NameToInfo)
            wanted = {n + ".npy" for n in shapes} | {"meta.npy"}
            missing = sorted(n[:-4] for n in wanted - present)
            if missing:
                raise fail(path, f"lacks the arrays {missing}")
            extra = sorted(present - wanted)
            if extra:
                raise fail(path, f"holds entries the format does not define: {extra[:5]}")
            total = 0
            for shp in shapes.values():
                count = 1
                for v in shp:
                    count *= v
                total += count * 8
            if total > MAX_ARRAYS_BYTES:
                raise fail(path, f"declared sizes total {total} bytes (cap {MAX_ARRAYS_BYTES})")
            arrays: dict[str, np.ndarray] = {}
            for n, shp in shapes.items():
                try:
                    arr = read_entry(path, zf, n, shp, _FLOAT_DTYPES, MAX_ARRAYS_BYTES)
                except ModelFileError:
                    raise
                except READ_ERRORS as exc:
                    raise fail(path, f"entry {n!r} is unreadable: {exc}") from None
                if not np.isfinite(arr).all():
                    raise fail(path, f"entry {n!r} contains NaN or infinity")
                arrays[n] = arr
            return meta, arrays
    except ModelFileError:
        raise
    except READ_ERRORS as exc:
        raise fail(path, f"unreadable: {exc}") from None


def save_model(
    path: str | Path,
    arch: str,
    arrays: Mapping[str, np.ndarray],
    A: np.ndarray,
    spec: ProblemSpec,
    meta_fields: Mapping[str, Any] | None = None,
    info: Mapping[str, Any] | None = None,
) -> None:
    """Write a model file (float32 weights, float64 ``A``, compressed), atomically.

    Parameters
    ----------
    path : path
        File to write (replaced atomically, see :func:`save_npz_atomic`).
    arch : str
        Architecture name stored in the metadata.
    arrays : mapping of str to ndarray
        The weights (stored as float32).
    A : ndarray (M, N)
        The sensing matrix (stored as float64).
    spec : ProblemSpec
        What the model was trained for.
    meta_fields : mapping, optional
        The architecture's own metadata fields (sizes needed to check the
        weights when loading), JSON-serializable.
    info : mapping, optional
        JSON-serializable provenance.

    Raises
    ------
    ValueError
        ``A`` does not match ``spec``, or ``info`` is too large.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.shape != (spec.M, spec.N):
        raise ValueError(f"A has shape {A.shape}, spec says ({spec.M}, {spec.N})")
    meta = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "arch": arch,
        **dict(meta_fields or {}),
        "spec": asdict(spec),
        "info": dict(info or {}),
    }
    blob = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    if blob.size > MAX_META_BYTES:
        raise ValueError(f"info is too large ({blob.size} bytes of JSON; at most {MAX_META_BYTES})")
    out = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
    save_npz_atomic(path, {"meta": blob, "A": A, **out})


def load_model_arrays(
    path: str | Path, archs: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, np.ndarray], np.ndarray, ProblemSpec]:
    """Read and check a model file of one of ``archs``.

    Parameters
    ----------
    path : path
        The ``.npz`` file.
    archs : tuple of str
        The architectures the caller can build a model from.

    Returns
    -------
    meta : dict
        Checked metadata (``info`` a dict).
    arrays : dict of str to ndarray
        The weights, checked against the architecture's shapes.
    A : ndarray (M, N) float64
        The sensing matrix (no all-zero column).
    spec : ProblemSpec

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Anything wrong with the file, or an architecture not in ``archs``.
    """
    path = Path(path)
    meta, arrays = read_model_arrays(path)
    if meta["arch"] not in archs:
        want = " or ".join(map(repr, archs))
        raise fail(path, f"entry 'meta' says arch {meta['arch']!r}, expected {want}")
    try:
        spec = ProblemSpec(**meta["spec"])
    except (TypeError, ValueError) as exc:
        raise fail(path, f"bad problem spec: {exc}") from None
    A = np.ascontiguousarray(arrays.pop("A"), dtype=np.float64)
    if not np.any(A != 0, axis=0).all():
        raise fail(path, "entry 'A' has an all-zero column")
    return meta, arrays, A, spec
