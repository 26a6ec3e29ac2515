"""The one resolver from a name or a path to a model, and the pretrained models.

Pretrained models are the ``.npz`` files in the package directory
``cscore/models/`` and in the directories named by the ``CSCORE_MODEL_PATH``
environment variable (separated by ``os.pathsep``; searched first).  A model's
name is its file name without ``.npz``.  Any model file loads as the class its
``arch`` names in :data:`cscore.models.format.ARCHITECTURES` (filled in by the
decoders' registrations).

One rule tells a file from a name (:func:`is_model_path`), everywhere a model
is named -- :func:`resolve_model`, ``cscore.decoder(name, model=...)``, decoder
configs, the bench, and the text models (:func:`cscore.text.pretrained.resolve_model`):
a path object is a file; a string is a file when it contains a path separator
or ends in ``.npz``; any other string is a pretrained name, even when a file of
that name exists in the current folder (write ``./name`` for the file).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .format import ARCHITECTURES, ModelFileError, read_model_meta

__all__ = [
    "STORE",
    "ModelEntry",
    "ModelStore",
    "file_sha256",
    "is_model_path",
    "list_pretrained",
    "load_model",
    "model_dirs",
    "model_file_path",
    "pretrained",
    "pretrained_entries",
    "resolve_model",
]

_PACKAGE_MODELS = Path(__file__).resolve().parent


class ModelStore:
    """Folders of ``<name>.npz`` model files: a package folder and an environment path.

    The folders named in the environment variable (separated by ``os.pathsep``)
    are searched first, then the package's own; the first file of a name wins.
    The decoders' pretrained models and the text encoders each have one.

    Parameters
    ----------
    env_var : str
        The environment variable with extra folders.
    package_dir : path
        The folder shipped inside the package.
    what : str
        What the store holds, for messages ("pretrained model").
    """

    def __init__(self, env_var: str, package_dir: Path, what: str = "pretrained model") -> None:
        self.env_var = env_var
        self.package_dir = Path(package_dir)
        self.what = what

    def dirs(self) -> list[Path]:
        """Folders searched, in search order.

        Returns
        -------
        list of pathlib.Path
        """
        extra = os.environ.get(self.env_var, "").split(os.pathsep)
        return [*(Path(p) for p in extra if p), self.package_dir]

    def files(self) -> dict[str, Path]:
        """Name -> file of every model found, sorted by name.

        Returns
        -------
        dict of str to pathlib.Path
        """
        found: dict[str, Path] = {}
        for d in self.dirs():
            if d.is_dir():
                for f in sorted(d.glob("*.npz")):
                    found.setdefault(f.stem, f)
        return dict(sorted(found.items()))

    def path(self, name: str) -> Path:
        """The file of model ``name``.

        Parameters
        ----------
        name : str
            A model name (file name without ``.npz``).

        Returns
        -------
        pathlib.Path

        Raises
        ------
        ValueError
            No model of that name; the message lists the known names.
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        files = self.files()
        if name not in files:
            known = ", ".join(files) if files else "none installed"
            raise ValueError(f"unknown {self.what} {name!r}; known models: {known}")
        return files[name]


#: The pretrained models of the learned decoders (this folder, ``CSCORE_MODEL_PATH``).
STORE = ModelStore("CSCORE_MODEL_PATH", _PACKAGE_MODELS)


def model_dirs() -> list[Path]:
    """Directories searched for pretrained models, in search order.

    Returns
    -------
    list of pathlib.Path
    """
    return STORE.dirs()


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
    arch: str = ""
    error: str = ""


def _int(v: Any) -> int:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else 0


def _entry(name: str, path: Path) -> ModelEntry:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    try:
        meta = read_model_meta(path)
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
            arch=str(meta.get("arch", "")),
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
    return [_entry(name, path) for name, path in STORE.files().items()]


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
    return load_model(STORE.path(name))


def load_model(path: str | os.PathLike[str]) -> Any:
    """Load any cscore model file, choosing the class by the ``arch`` in its metadata.

    Parameters
    ----------
    path : path
        An ``.npz`` model file.

    Returns
    -------
    LSTMCS, BLSTMCS, NWSOMP, CDSNCS or any registered learned model
        LSTM-CS files (no ``arch``, or ``"lstm"``) load as :class:`cscore.LSTMCS`,
        ``"blstm"`` files as :class:`cscore.BLSTMCS`.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Malformed, or of an architecture no registered decoder reads.
    """
    arch = read_model_meta(model_file_path(path))["arch"]
    cls: Any = ARCHITECTURES[arch].model_class
    if cls is None:
        raise ModelFileError(f"{path}: no model class is registered for arch {arch!r}")
    return cls.load(path)


def is_model_path(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` names a model file rather than a pretrained model (THE rule).

    A path object (``os.PathLike``) is a file.  A string is a file when it
    contains a path separator (``/``, or the platform's) or ends in ``.npz``; any
    other string is a pretrained name -- also when a file of that name exists
    in the current folder (``./name`` names that file).  The answer never
    depends on what is on disk.

    Parameters
    ----------
    text : str or path

    Returns
    -------
    bool
    """
    if isinstance(text, os.PathLike):
        return True
    s = os.fspath(text)
    return any(sep and sep in s for sep in ("/", os.sep, os.altsep)) or s.endswith(".npz")


def resolve_model(
    name_or_path: str | os.PathLike[str],
    *,
    load_file: Callable[[Path], Any] | None = None,
    load_name: Callable[[str], Any] | None = None,
) -> tuple[Any, Any]:
    """A model from a pretrained name or a model file (the one resolver), and how
    to name it again.

    Which one ``name_or_path`` is follows :func:`is_model_path` (a path object,
    or a string with a path separator or ending in ``.npz``, is a file; any
    other string a name), the rule of every place that takes a model.

    Parameters
    ----------
    name_or_path : str or path
        A name from :func:`list_pretrained`, or a model file.
    load_file : callable, optional
        ``load_file(path) -> model`` for a file (default :func:`load_model`:
        the class of its ``arch``); the text models pass theirs.
    load_name : callable, optional
        ``load_name(name) -> model`` for a name (default :func:`pretrained`).

    Returns
    -------
    model : object
        The loaded model.
    ref : str or dict
        The name, or ``{"file": absolute path, "sha256": digest}`` for a file.

    Raises
    ------
    FileNotFoundError
        No file at the path.
    ValueError
        Unknown pretrained name (the message lists the known ones, and says how
        to name a file of that name), or a malformed file (``ModelFileError``).
    """
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"a model must be named by a str or a path, got "
                        f"{type(name_or_path).__name__}")
    if is_model_path(name_or_path):
        path = model_file_path(name_or_path)
        model = (load_file or load_model)(path)
        return model, {"file": str(path), "sha256": file_sha256(path)}
    name = os.fspath(name_or_path)
    try:
        return (load_name or pretrained)(name), name
    except ValueError as exc:
        if isinstance(exc, ModelFileError) or not Path(name).is_file():
            raise
        raise ValueError(f"{exc} (a string without a path separator or .npz is a pretrained "
                         f"name; for the file {name!r} write {'./' + name!r})") from None


def model_file_path(path: str | os.PathLike[str]) -> Path:
    """``path`` resolved, checked to be a regular file before anything opens it.

    Parameters
    ----------
    path : path
        A model file's path as given.

    Returns
    -------
    pathlib.Path
        The absolute, resolved path.

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``.
    ModelFileError
        A loop of symbolic links, or not a regular file (a folder, FIFO or
        device, which reading would misread or block on).
    """
    try:
        resolved = Path(path).resolve()
        st = resolved.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"model file not found: {os.fspath(path)}") from None
    except RuntimeError:  # pathlib's "Symlink loop" (Python < 3.13)
        raise ModelFileError(f"{os.fspath(path)}: a loop of symbolic links, not a model "
                             "file") from None
    except OSError as exc:  # ELOOP on newer Pythons, permissions, ...
        raise ModelFileError(f"{os.fspath(path)}: cannot be read as a model file "
                             f"({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else (
            "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file")
        raise ModelFileError(f"{os.fspath(path)} is {kind}, not a model file")
    return resolved


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 hex digest of a file's bytes (read in 1 MiB blocks).

    Parameters
    ----------
    path : path
        File to hash.

    Returns
    -------
    str
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
