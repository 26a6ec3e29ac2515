"""The registry of pretrained LSTM-CS models shipped with cscore.

Models are the ``.npz`` files in the package directory ``cscore/models/`` and in
the directories named by the ``CSCORE_MODEL_PATH`` environment variable
(separated by ``os.pathsep``; searched first).  A model's name is its file name
without ``.npz``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .decoder import LSTMCS
from .model import read_model_meta

__all__ = ["ModelEntry", "list_pretrained", "model_dirs", "pretrained", "pretrained_entries"]

_PACKAGE_MODELS = Path(__file__).resolve().parents[1] / "models"


def model_dirs() -> list[Path]:
    """Directories searched for pretrained models, in search order.

    Returns
    -------
    list of pathlib.Path
    """
    dirs = [Path(p) for p in os.environ.get("CSCORE_MODEL_PATH", "").split(os.pathsep) if p]
    dirs.append(_PACKAGE_MODELS)
    return dirs


def _files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in model_dirs():
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.npz")):
            found.setdefault(f.stem, f)
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class ModelEntry:
    """What the listing shows about one pretrained model (read from its metadata).

    ``error`` is set (and the sizes are 0) when the file's metadata is unreadable.
    """

    name: str
    path: Path
    size_bytes: int
    description: str = ""
    M: int = 0
    N: int = 0
    L: int = 0
    n_cells: int = 0
    cell: str = ""
    transform: str = ""
    dataset: str = ""
    error: str = ""


def _read_meta(path: Path) -> dict[str, Any]:
    """Read only the ``meta`` member of a model file (bounded: no weights read)."""
    return read_model_meta(path)


def _int(v: Any) -> int:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else 0


def _entry(name: str, path: Path) -> ModelEntry:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    try:
        meta = _read_meta(path)
        spec = meta["spec"]
        info = meta["info"]
        desc = str(info.get("description", "")).strip()[:500]
        if not desc:
            desc = (
                f"LSTM-CS {spec.get('dataset') or 'model'}: M={spec.get('M')}, "
                f"N={spec.get('N')}, L={spec.get('L')}, {meta.get('n_cells')} cells"
            )
        return ModelEntry(
            name=name,
            path=path,
            size_bytes=size,
            description=desc,
            M=_int(spec.get("M")),
            N=_int(spec.get("N")),
            L=_int(spec.get("L")),
            n_cells=_int(meta.get("n_cells")),
            cell=str(meta.get("cell", "")),
            transform=str(spec.get("transform", "")),
            dataset=str(spec.get("dataset", "")),
        )
    except Exception as exc:  # one bad file must never break the listing
        return ModelEntry(name=name, path=path, size_bytes=size, error=str(exc)[:500] or repr(exc))


def pretrained_entries() -> list[ModelEntry]:
    """Every pretrained model found, sorted by name, with its metadata.

    Returns
    -------
    list of ModelEntry
        Unreadable files are listed too, with ``error`` set.
    """
    return [_entry(name, path) for name, path in _files().items()]


def list_pretrained() -> list[tuple[str, str]]:
    """Return ``(name, description)`` of every pretrained model, sorted by name.

    Returns
    -------
    list of (str, str)

    Examples
    --------
    >>> import cscore
    >>> isinstance(cscore.list_pretrained(), list)
    True
    """
    return [(e.name, e.description or f"unreadable: {e.error}") for e in pretrained_entries()]


def pretrained(name: str) -> Any:
    """Load the pretrained model ``name``.

    Parameters
    ----------
    name : str
        A name from :func:`list_pretrained` (the file name without ``.npz``).

    Returns
    -------
    LSTMCS, BLSTMCS, NWSOMP or CDSNCS
        The loaded model, of the class its file's ``arch`` names.

    Raises
    ------
    ValueError
        No model of that name; the message lists the known names.
    ModelFileError
        The file exists but is malformed.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    files = _files()
    if name not in files:
        known = ", ".join(files) if files else "none installed"
        raise ValueError(f"unknown pretrained model {name!r}; known models: {known}")
    try:
        arch = _read_meta(files[name]).get("arch", "lstm")
    except Exception:  # the loader below reports what is wrong
        arch = "lstm"
    if arch in ("nwsomp", "cdsn"):
        from ..learned import load_model

        return load_model(files[name])
    return LSTMCS.load(files[name])
