"""The manifest of a :func:`cscore.decode_file` run and the fingerprints it records.

``<output>/cscore-manifest.json`` (version 2) is a JSON object::

    {"cscore_decode": 2,
     "input": "/abs/Y.npy", "input_sha256": "...",        # the input's fingerprint
     "shape": [B, N, L], "dtype": "<f8", "chunk": 1024,     # the output array's record
     "decoder": {"name": "somp", "settings": {...},         # the decoder's fingerprint
                 "A": {"shape": [M, N], "dtype": "float64", "sha256": "..."}},
     "decoder_sha256": "...",
     "done": [0, 1, 5], "chunk_sha256": {"0": "...", "1": "...", "5": "..."},
     "complete": false}

A model decoder's fingerprint holds ``"model": {"sha256": <hash of the model's
weights and sensing matrix>, "ref": <pretrained name, file reference or null>}``
instead of ``"A"``; ``ref`` is informational (the same model moved to another
path is the same decoder).  ``chunk_sha256[i]`` is :func:`chunk_checksum` of the
decoded rows of chunk ``i`` as stored.

Version 1 (cscore before the checksums) had no ``chunk_sha256`` and recorded
the decoder's config (or null); :func:`read_manifest` reads it, and the resume
decodes its recorded chunks again (they cannot be verified).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .._limits import check_memory
from ..decoders import Decoder

__all__ = [
    "MANIFEST_NAME",
    "MANIFEST_VERSION",
    "chunk_checksum",
    "decoder_fingerprint",
    "fingerprint_sha256",
    "model_sha256",
    "read_manifest",
    "write_json_atomic",
]

#: File inside the output zarr store that records the finished chunks.
MANIFEST_NAME = "cscore-manifest.json"
#: Version written; 1 (no checksums) is still read.
MANIFEST_VERSION = 2

_MAX_MANIFEST_BYTES = 1 << 30


def _canonical(value: Any) -> Any:
    """A setting as plain JSON data (arrays as nested lists)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def _array_sha256(h: Any, name: str, a: np.ndarray) -> None:
    a = np.ascontiguousarray(a)
    h.update(json.dumps([name, a.dtype.str, list(a.shape)]).encode())
    h.update(a.data)


def _state_sha256(obj: Any) -> str:
    """sha256 of the arrays and numbers reachable from ``obj``'s attributes (depth 4)."""
    h = hashlib.sha256()

    def walk(x: Any, name: str, depth: int) -> None:
        if isinstance(x, np.ndarray):
            _array_sha256(h, name, x)
        elif x is None or isinstance(x, (bool, int, float, str, np.generic)):
            h.update(json.dumps([name, _canonical(x)]).encode())
        elif depth > 0 and isinstance(x, dict):
            for k in sorted(x, key=str):
                walk(x[k], f"{name}.{k}", depth - 1)
        elif depth > 0 and isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(v, f"{name}[{i}]", depth - 1)
        elif depth > 0 and hasattr(x, "__dict__"):
            walk(vars(x), f"{name}:{type(x).__qualname__}", depth - 1)

    walk(obj, "model", 4)
    return h.hexdigest()


def model_sha256(model: Any) -> str:
    """sha256 of a model's weights, sensing matrix and metadata.

    A model with ``save(path)`` (every learned model of cscore) is written to a
    temporary model file and the hash covers its entries (names, dtypes, shapes,
    data) -- so two objects with equal weights hash equal, whatever the file's
    timestamps.  Another model is hashed from the arrays and numbers among its
    attributes.

    Parameters
    ----------
    model : object
        The model of a model decoder.

    Returns
    -------
    str
        Hex digest.
    """
    if not callable(getattr(model, "save", None)):
        return _state_sha256(model)
    h = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix="cscore-model-") as tmp:
        path = os.path.join(tmp, "model.npz")
        model.save(path)
        with np.load(path, allow_pickle=False) as z:
            for name in sorted(z.files):
                _array_sha256(h, name, z[name])
    return h.hexdigest()


def _matrix_fingerprint(A: Any) -> dict[str, Any]:
    """Shape, dtype and sha256 of a dense or sparse ``A``; an operator is refused."""
    import scipy.sparse as sp

    if sp.issparse(A):
        csr = sp.csr_matrix(A)
        csr.sort_indices()
        h = hashlib.sha256()
        for part in (csr.data, csr.indices, csr.indptr):
            h.update(np.ascontiguousarray(part).data)
        return {"shape": list(csr.shape), "dtype": str(csr.dtype), "format": "csr",
                "sha256": h.hexdigest()}
    if not isinstance(A, np.ndarray):
        raise ValueError(
            "a resumable run records what A it decoded with, and a LinearOperator has no "
            "contents to fingerprint: give the decoder a dense or sparse A, or decode with "
            "cscore.stream"
        )
    A = np.ascontiguousarray(A)
    return {"shape": list(A.shape), "dtype": str(A.dtype),
            "sha256": hashlib.sha256(A.data).hexdigest()}


def decoder_fingerprint(dec: Decoder) -> dict[str, Any]:
    """What identifies a decoder's results: name, settings, matrix or model hash.

    Parameters
    ----------
    dec : Decoder
        Any decoder (matrix or model, built from a name, a file or an object).

    Returns
    -------
    dict
        ``{"name", "settings", "A": {"shape", "dtype", "sha256"}}`` for matrix
        decoders; ``{"name", "settings", "model": {"sha256", "ref"}}`` for model
        decoders (``ref``: the pretrained name or file reference, or None).
    """
    fp: dict[str, Any] = {
        "name": dec.name,
        "settings": {k: _canonical(v) for k, v in sorted(dec.settings.items())},
    }
    if dec.model is None:
        fp["A"] = _matrix_fingerprint(dec.A)
    else:
        try:
            ref = dec.config.get("model")
        except ValueError:
            ref = None
        fp["model"] = {"sha256": model_sha256(dec.model), "ref": ref}
    return fp


def fingerprint_sha256(fp: dict[str, Any]) -> str:
    """sha256 of a decoder fingerprint, without its informational model ``ref``.

    Parameters
    ----------
    fp : dict
        From :func:`decoder_fingerprint`.

    Returns
    -------
    str
        Hex digest; equal for decoders that give equal results.
    """
    core = dict(fp)
    if isinstance(core.get("model"), dict):
        core["model"] = {"sha256": core["model"].get("sha256")}
    return hashlib.sha256(json.dumps(core, sort_keys=True).encode()).hexdigest()


def chunk_checksum(S: np.ndarray) -> str:
    """sha256 of decoded rows as stored: dtype, shape and data.

    Parameters
    ----------
    S : ndarray
        The rows of one chunk, in the output's dtype.

    Returns
    -------
    str
        Hex digest.
    """
    h = hashlib.sha256()
    _array_sha256(h, "chunk", np.asarray(S))
    return h.hexdigest()


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path``: a temporary file, fsync, rename, fsync the folder.

    Parameters
    ----------
    path : pathlib.Path
        Destination (replaced).
    obj : object
        JSON-serializable data.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:  # make the rename durable (power loss)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # pragma: no cover - platforms without directory fsync
        pass


#: Memory a run's bookkeeping takes per chunk (its number in lists and sets, its
#: digest), for the bound on a manifest's chunk count (:mod:`cscore._limits`).
_CHUNK_RECORD_BYTES = 256


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _bad(path: Path, what: str) -> ValueError:
    return ValueError(
        f"manifest {path} is damaged ({what}); it cannot be resumed or verified -- "
        "use a new output or overwrite=True (--overwrite)"
    )


def _check_record(path: Path, m: dict[str, Any]) -> None:
    """Check the keys both versions share (raises ValueError naming the defect)."""
    for key, kind in (("input_sha256", str), ("dtype", str), ("complete", bool)):
        if not isinstance(m.get(key), kind):
            raise _bad(path, f"'{key}' is missing or not a {kind.__name__}")
    shape = m.get("shape")
    if not (isinstance(shape, list) and len(shape) == 3
            and all(_is_int(s) and s >= 0 for s in shape)):  # fmt: skip
        raise _bad(path, f"'shape' must be three non-negative integers, got {shape!r}")
    try:
        np.dtype(m["dtype"])
    except TypeError:
        raise _bad(path, f"'dtype' {m['dtype']!r} is not a dtype") from None
    chunk = m.get("chunk")
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise _bad(path, f"'chunk' must be a positive integer, got {chunk!r}")
    n_chunks = (shape[0] + chunk - 1) // chunk
    try:  # resuming and verifying keep a few records per chunk in memory
        check_memory(f"'shape'[0] = {shape[0]} with 'chunk' = {chunk}",
                     float(n_chunks) * _CHUNK_RECORD_BYTES, f"the records of {n_chunks} chunks")
    except ValueError as exc:
        raise _bad(path, str(exc)) from None
    done = m.get("done")
    if not (isinstance(done, list) and all(_is_int(i) and 0 <= i < n_chunks for i in done)):
        raise _bad(path, f"'done' must list chunk numbers below {n_chunks}")


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and check a manifest (version 1 or 2).

    Parameters
    ----------
    path : pathlib.Path
        The manifest file.

    Returns
    -------
    dict
        The manifest; a version-1 one gets an empty ``chunk_sha256``.

    Raises
    ------
    ValueError
        Not JSON, not an object, a missing or ill-typed key, an unknown version.
    """
    try:
        if path.stat().st_size > _MAX_MANIFEST_BYTES:
            raise _bad(path, "over 1 GiB")
        m = json.loads(path.read_text())
    except (UnicodeDecodeError, RecursionError) as exc:
        raise _bad(path, type(exc).__name__) from None
    except json.JSONDecodeError as exc:
        raise _bad(path, f"not JSON: {exc}") from None
    if not isinstance(m, dict):
        raise _bad(path, f"a JSON {type(m).__name__}, not an object")
    version = m.get("cscore_decode")
    if version not in (1, MANIFEST_VERSION) or isinstance(version, bool):
        raise _bad(path, f"unknown version cscore_decode = {version!r}; "
                         f"this cscore reads 1 and {MANIFEST_VERSION}")  # fmt: skip
    _check_record(path, m)
    if version == 1:
        m["chunk_sha256"] = {}
        return m
    sums = m.get("chunk_sha256")
    if not (isinstance(sums, dict) and all(
            k.isascii() and k.isdigit() and isinstance(v, str) for k, v in sums.items())):
        raise _bad(path, "'chunk_sha256' must map chunk numbers to hex digests")
    if not isinstance(m.get("decoder"), dict) or not isinstance(m.get("decoder_sha256"), str):
        raise _bad(path, "'decoder' / 'decoder_sha256' missing")
    return m
