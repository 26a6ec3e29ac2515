"""Decoder configs: the JSON form of a :class:`~cscore.decoders.Decoder`.

:func:`config_of` builds a decoder's config (``Decoder.config``, and with a
path the side files of ``Decoder.save``), :func:`write_config` writes it,
:func:`read_config` checks one (a dict or a file) and returns what to build
the decoder from (``Decoder.from_config``).  The format (also in
``docs/pipelines.md``):

``dec.config`` is a JSON-serializable dict ``{"cscore_decoder": 1, "name": ...,
"settings": {...}, "A": ..., "model": ...}``:

* the sensing matrix inline, ``"A": {"shape": [M, N], "dtype": "float64",
  "data": [[...], ...]}`` (Python's float repr round-trips float64 exactly; a
  complex ``A`` adds ``"imag"``: ``"data"`` holds the real parts), or,
  when written with :meth:`Decoder.save` ``(path, inline=False)``, a file reference
  ``"A": {"file": "dec.A.npy", "sha256": "..."}`` (relative to the config file);
  the ``sha256`` is required and checked on loading;
* a model-based decoder names its model: ``"model": "mnist-m72"`` (a pretrained
  name) or ``"model": {"file": "/path/model.npz", "sha256": "..."}``.  A decoder
  built from a model object that was not loaded from a file gets a model file
  only through :meth:`Decoder.save`.

A config read from a file (or with ``base_dir``) resolves file references
relative to that folder and refuses a reference outside it (an absolute path
elsewhere, ``../``, a symlink out) unless ``allow_outside=True``.  Every defect of
a config is a ``ValueError`` naming the field (or ``FileNotFoundError``).
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..models.registry import file_sha256
from ._complex import from_inline, inline_parts
from .registry import get_decoder_spec

__all__ = [
    "CONFIG_VERSION",
    "config_of",
    "jsonable",
    "read_config",
    "write_config",
]

CONFIG_VERSION = 1
#: Deepest nesting of lists accepted in a config setting.
_MAX_SETTING_DEPTH = 8


def jsonable(value: Any, key: str) -> Any:
    """``value`` (setting ``key``) as JSON can carry it; a TypeError names the setting."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [jsonable(v, key) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(
        f"setting {key!r} has type {type(value).__name__}, which a decoder config "
        "cannot carry (use numbers, strings, booleans, lists or arrays)"
    )


def _inline_matrix(A: Any, kind: str) -> dict[str, Any]:
    if kind != "dense":
        raise ValueError(
            f"a decoder built on a {kind} A has no config (a config carries A as "
            "numbers); build it in code, or from a dense array"
        )
    head = {"shape": list(A.shape), "dtype": str(A.dtype)}
    if A.dtype.kind == "c":  # JSON has no complex numbers: two real arrays
        return {**head, **inline_parts(A)}
    return {**head, "data": A.tolist()}


def _side_file(path: Path, suffix: str, write: Callable[[Path], Any]) -> dict[str, str]:
    """Write a file beside the config ``path`` and return its reference."""
    side = path.with_name(path.stem + suffix)
    write(side)
    return {"file": side.name, "sha256": file_sha256(side)}


def config_of(
    name: str,
    settings: dict[str, Any],
    *,
    A: Any = None,
    A_kind: str = "dense",
    model_ref: Any = None,
    model: Any = None,
    path: Path | None = None,
    inline: bool = True,
) -> dict[str, Any]:
    """The config of decoder ``name``, a JSON-serializable dict.

    Parameters
    ----------
    name : str
        Registry name.
    settings : dict
        The settings, already JSON-serializable (:func:`jsonable`).
    A : numpy.ndarray, optional
        A matrix decoder's sensing matrix (None for a model decoder).
    A_kind : str, default "dense"
        Its kind (:func:`~cscore.decoders._input_kind.matrix_kind`); only a dense
        ``A`` has a config.
    model_ref : str or dict, optional
        A model decoder's pretrained name or file reference.
    model : object, optional
        A model decoder's model, written beside ``path`` when it has no reference.
    path : pathlib.Path, optional
        The config file to be written: ``A`` (``inline=False``) or the model
        object then go to side files beside it.
    inline : bool, default True
        Carry ``A`` inline (else in ``<stem>.A.npy``; only with ``path``).

    Returns
    -------
    dict
    """
    cfg: dict[str, Any] = {
        "cscore_decoder": CONFIG_VERSION,
        "name": name,
        "settings": dict(settings),
    }
    if A is not None:
        if path is None or inline:
            cfg["A"] = _inline_matrix(A, A_kind)
        else:
            cfg["A"] = _side_file(path, ".A.npy", lambda side: np.save(side, A))
    elif model_ref is not None:
        cfg["model"] = model_ref
    elif path is None:
        raise ValueError(
            "this decoder's model was passed as an object, so its config cannot "
            "name it; use Decoder.save(path) (writes the model file too) or build "
            "the decoder from a pretrained name or a model file"
        )
    else:
        if not hasattr(model, "save"):
            raise ValueError(f"the {name!r} model has no save method")
        cfg["model"] = _side_file(path, ".model.npz", model.save)
    return cfg


def write_config(cfg: dict[str, Any], path: Path) -> None:
    """Write ``cfg`` as JSON to ``path`` (through a temporary file, then renamed)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(cfg, indent=1) + "\n")
    os.replace(tmp, path)


def read_config(
    cfg: dict[str, Any] | str | os.PathLike[str], *, base_dir: Any, allow_outside: bool
) -> tuple[str, dict[str, Any], np.ndarray | None, Any]:
    """Check a config (a dict or a JSON file) and return what builds its decoder.

    Parameters
    ----------
    cfg : dict or path
        The config, or a JSON file holding it.
    base_dir : path or None
        Where relative file references are resolved (default: the config
        file's folder, or the current directory for a dict).
    allow_outside : bool
        Accept file references outside that folder.

    Returns
    -------
    name : str
    settings : dict
    A : numpy.ndarray or None
        A matrix decoder's sensing matrix.
    model : str, pathlib.Path or None
        A model decoder's pretrained name or checked model file.
    """
    confine = base_dir is not None and not allow_outside
    if isinstance(cfg, (str, os.PathLike)):
        p = Path(cfg)
        cfg = _read_config_file(p)
        if base_dir is None:
            base_dir = p.resolve().parent
        confine = not allow_outside
    if not isinstance(cfg, dict):
        raise ValueError("a decoder config must be a JSON object (dict)")
    version = cfg.get("cscore_decoder")
    if type(version) is not int or version != CONFIG_VERSION:
        raise ValueError(
            f"not a cscore decoder config of version {CONFIG_VERSION} "
            f"(cscore_decoder = {version!r})"
        )
    base = (Path(base_dir) if base_dir is not None else Path.cwd()).resolve()
    name = cfg.get("name")
    if not isinstance(name, str):
        raise ValueError("decoder config has no 'name'")
    spec = get_decoder_spec(name)
    settings = _checked_settings(cfg.get("settings") or {}, spec)
    where = base if confine else None
    if spec.kind == "matrix":
        return name, settings, _matrix_from_config(cfg.get("A"), base, where), None
    ref = cfg.get("model")
    if isinstance(ref, dict):
        return name, settings, None, _checked_file(ref, base, "model", where)
    if not isinstance(ref, str):
        raise ValueError("decoder config needs 'model' (a pretrained name or a file)")
    return name, settings, None, ref


def _read_config_file(p: Path) -> Any:
    """The JSON of a config file; damaged or absurd JSON is a ValueError."""
    try:
        found = p.is_file()
    except OSError as exc:  # a name too long, a loop of symlinks, ...
        shown = str(p) if len(str(p)) <= 200 else f"{str(p)[:100]}...({len(str(p))} characters)"
        raise ValueError(f"decoder config {shown}: {exc.strerror or exc}") from None
    if not found:
        raise FileNotFoundError(f"decoder config not found: {p}")
    try:
        return json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p} is not valid JSON: {exc}") from exc
    except RecursionError:
        raise ValueError(f"{p}: the config is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with too many digits
        raise ValueError(f"{p} is not a usable config: {exc}") from None


def _int_settings(spec: Any) -> set[str]:
    """Settings of ``spec`` that take an integer (annotation or default says so)."""
    func = spec.func
    if spec.kind == "model" and spec.model_type is not None:
        func = getattr(spec.model_type, "decode", func)
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    out = set()
    for prm in params:
        words = str(prm.annotation).replace("|", " ").replace(",", " ").split()
        default_int = type(prm.default) is int
        if default_int or ("int" in words and "bool" not in words):
            out.add(prm.name)
    return out


def _check_setting_value(key: str, value: Any, depth: int = 0) -> None:
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, list) and depth < _MAX_SETTING_DEPTH:
        for v in value:
            _check_setting_value(key, v, depth + 1)
        return
    what = "nested too deeply" if isinstance(value, list) else f"a {type(value).__name__}"
    raise ValueError(
        f"decoder config setting {key!r} is {what}; a setting is a number, string, "
        "boolean, null or a list of them"
    )


def _checked_settings(settings: Any, spec: Any) -> dict[str, Any]:
    """The config's settings, each of a type a config can carry (else ValueError)."""
    if not isinstance(settings, dict):
        raise ValueError("decoder config 'settings' must be an object")
    ints = _int_settings(spec)
    for key, value in settings.items():
        _check_setting_value(key, value)
        if isinstance(value, bool) and key in ints:
            raise ValueError(
                f"decoder config setting {key!r} must be an integer, not a boolean ({value!r})"
            )
    return dict(settings)


def _checked_file(ref: dict[str, Any], base: Path, what: str, inside: Path | None) -> Path:
    f = ref.get("file")
    if not isinstance(f, str) or not f:
        raise ValueError(f"decoder config {what!r} reference has no 'file'")
    want = ref.get("sha256")
    if not isinstance(want, str) or len(want) != 64:
        raise ValueError(
            f"decoder config {what!r} reference needs 'sha256' (the file's SHA-256 hex digest, "
            "required so that a changed file is refused)"
        )
    path = Path(f)
    if not path.is_absolute():
        path = base / path
    if inside is not None:
        real = path.resolve()
        if not real.is_relative_to(inside):
            raise ValueError(
                f"decoder config {what!r} file {f!r} lies outside the config's folder "
                f"{inside}; pass allow_outside=True to accept it"
            )
    if not path.is_file():
        raise FileNotFoundError(f"decoder config {what!r} file not found: {path}")
    if file_sha256(path) != want.lower():
        raise ValueError(
            f"decoder config {what!r} file {path} has changed (sha256 differs from the config)"
        )
    return path


def _load_npy(path: Path) -> np.ndarray:
    """The array of a ``.npy`` file; anything else is a ValueError naming ``A``."""
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode=None)
    except (EOFError, ValueError, OSError, MemoryError) as exc:
        raise ValueError(f"decoder config 'A' file {path} is not a .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        getattr(arr, "close", lambda: None)()
        raise ValueError(f"decoder config 'A' file {path} is not a .npy array (an archive?)")
    return arr


def _matrix_from_config(ref: Any, base: Path, inside: Path | None) -> np.ndarray:
    if not isinstance(ref, dict):
        raise ValueError("decoder config needs 'A' (inline or a file reference)")
    if "file" in ref:
        return _load_npy(_checked_file(ref, base, "A", inside))
    try:
        dtype = np.dtype(ref.get("dtype", "float64"))
        A = from_inline(ref, dtype) if dtype.kind == "c" else np.asarray(ref["data"], dtype=dtype)
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ValueError(f"decoder config 'A' is malformed: {exc!r}") from None
    if list(A.shape) != list(ref.get("shape", A.shape)):
        raise ValueError(f"decoder config 'A' has shape {A.shape}, not {ref.get('shape')}")
    return A
