"""One decoder interface: ``cscore.decoder(name, A, **settings)`` -> :class:`Decoder`.

Every decoder of cscore -- the matrix-based ones (``omp``, ``somp``, ``bcs``,
``mtbcs``, ``tsbl``, ``tmsbl``) and the model-based ones (``lstm-cs`` and the
learned decoders registered with :func:`register_decoder`) -- behind one object:

>>> import numpy as np, cscore
>>> rng = np.random.default_rng(0)
>>> A = rng.standard_normal((20, 40))
>>> dec = cscore.decoder("somp", A, n_nonzero=3)
>>> dec(rng.standard_normal((20, 2))).shape          # one problem (M, L) -> (N, L)
(40, 2)
>>> dec(rng.standard_normal((5, 20, 2))).shape       # a batch (B, M, L) -> (B, N, L)
(5, 40, 2)
>>> cscore.Decoder.from_config(dec.config) == dec
True

``dec(Y)`` returns exactly what the wrapped function returns.  The single-vector
decoders (``omp``, ``bcs``) decode every channel of every problem as an
independent column: ``dec(Y)`` for ``Y`` (M, L) is ``omp(A, Y)``, and a batch
(B, M, L) is decoded as the B*L columns ``Y.transpose(1, 0, 2).reshape(M, -1)``.

Configs
-------
``dec.config`` is a JSON-serializable dict ``{"cscore_decoder": 1, "name": ...,
"settings": {...}, "A": ..., "model": ...}``:

* the sensing matrix inline, ``"A": {"shape": [M, N], "dtype": "float64",
  "data": [[...], ...]}`` (Python's float repr round-trips float64 exactly), or,
  when written with :meth:`Decoder.save` ``(path, inline=False)``, a file reference
  ``"A": {"file": "dec.A.npy", "sha256": "..."}`` (relative to the config file);
  the fingerprint is checked on loading;
* a model-based decoder names its model: ``"model": "mnist-m72"`` (a pretrained
  name) or ``"model": {"file": "/path/model.npz", "sha256": "..."}``.  A decoder
  built from a model object that was not loaded from a file gets a model file
  only through :meth:`Decoder.save`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import as_float_array
from ..models.registry import file_sha256, is_model_path
from .registry import RESERVED_SETTINGS, get_decoder_spec

__all__ = ["Decoder", "decoder"]

CONFIG_VERSION = 1


def _jsonable(value: Any, key: str) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, key) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(
        f"setting {key!r} has type {type(value).__name__}, which a decoder config "
        "cannot carry (use numbers, strings, booleans, lists or arrays)"
    )


class Decoder:
    """A decoder bound to its sensing matrix or model and its settings.

    Build it with :func:`cscore.decoder`; call it on (M, L) or (B, M, L)
    measurements.  See the module documentation for the config format.

    Parameters
    ----------
    name : str
        Registry name.
    A : array_like, shape (M, N), optional
        Sensing matrix (matrix decoders).
    model : str, path or model object, optional
        Model decoders: a pretrained name, a model file, or a loaded model.
    **settings
        Keyword arguments of the wrapped function (``n_nonzero``, ``tol``, ...).
    """

    def __init__(self, name: str, A: Any = None, *, model: Any = None, **settings: Any) -> None:
        spec = get_decoder_spec(name)
        self._spec = spec
        bad = [k for k in settings if k in RESERVED_SETTINGS]
        if bad:
            raise ValueError(f"setting {bad[0]!r} is not accepted by a Decoder")
        if spec.settings:
            unknown = [k for k in settings if k not in spec.settings]
            if unknown:
                raise ValueError(
                    f"unknown setting {unknown[0]!r} for decoder {spec.name!r}; "
                    f"accepted: {', '.join(spec.settings)}"
                )
        self._settings = {k: v for k, v in settings.items() if v is not None}
        self._model: Any = None
        self._model_ref: Any = None
        if spec.kind == "matrix":
            if model is not None:
                raise ValueError(f"decoder {spec.name!r} takes a sensing matrix A, not a model")
            if A is None:
                raise ValueError(f"decoder {spec.name!r} needs a sensing matrix A")
            A = as_float_array("A", A, ndim=2)
            if A.shape[0] == 0 or A.shape[1] == 0:
                raise ValueError(f"A must not be empty, got shape {A.shape}")
            self._A = np.array(A, copy=True)
            self._A.setflags(write=False)
        else:
            if model is None:
                raise ValueError(
                    f"decoder {spec.name!r} needs model= (a pretrained name, a model file "
                    "or a model object)"
                )
            self._model, self._model_ref = self._resolve_model(model)
            mA = getattr(self._model, "A", None)
            if mA is None:
                raise ValueError(f"the {spec.name!r} model has no sensing matrix attribute A")
            if A is not None and not np.array_equal(np.asarray(A), np.asarray(mA)):
                raise ValueError("A differs from the model's sensing matrix; leave A out")
            self._A = np.asarray(mA)
        self._json_settings = {k: _jsonable(v, k) for k, v in self._settings.items()}

    def _resolve_model(self, model: Any) -> tuple[Any, Any]:
        spec = self._spec
        if isinstance(model, (str, os.PathLike)):
            s = os.fspath(model)
            if is_model_path(s):
                if spec.load is None:
                    raise ValueError(f"decoder {spec.name!r} cannot load model files")
                path = Path(s).resolve()
                if not path.is_file():
                    raise FileNotFoundError(f"model file not found: {path}")
                return spec.load(path), {"file": str(path), "sha256": file_sha256(path)}
            assert spec.pretrained is not None
            loaded = spec.pretrained(s)
            if spec.model_type is not None and not isinstance(loaded, spec.model_type):
                raise ValueError(
                    f"pretrained model {s!r} is a {type(loaded).__name__} model; decoder "
                    f"{spec.name!r} needs a {spec.model_type.__name__} (see `cscore models`)"
                )
            return loaded, s
        if spec.model_type is not None and not isinstance(model, spec.model_type):
            raise TypeError(
                f"model must be a {spec.model_type.__name__}, a pretrained name or a file, "
                f"got {type(model).__name__}"
            )
        return model, None

    # -- properties -------------------------------------------------------
    @property
    def name(self) -> str:
        """Registry name of the decoder."""
        return self._spec.name

    @property
    def settings(self) -> dict[str, Any]:
        """The settings forwarded to the wrapped function (a copy)."""
        return dict(self._settings)

    @property
    def A(self) -> np.ndarray:
        """The sensing matrix (M, N) (the model's, for model decoders)."""
        return self._A

    @property
    def model(self) -> Any:
        """The model object (model decoders) or None."""
        return self._model

    @property
    def M(self) -> int:
        """Measurements per channel."""
        return int(self._A.shape[0])

    @property
    def N(self) -> int:
        """Atoms per channel (rows of a decoded problem)."""
        return int(self._A.shape[1])

    @property
    def L(self) -> int | None:
        """Channels per problem the model was trained for; None for matrix decoders."""
        L = getattr(self._model, "L", None)
        return int(L) if L is not None else None

    def __repr__(self) -> str:
        what = f"model={self._model_ref!r}" if self._spec.kind == "model" else (
            f"A=<{self.M}x{self.N}>"
        )
        sets = "".join(f", {k}={v!r}" for k, v in self._settings.items())
        return f"Decoder({self.name!r}, {what}{sets})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decoder):
            return NotImplemented
        if self.name != other.name or self._json_settings != other._json_settings:
            return False
        if self._spec.kind == "model" and self._model is not other._model:
            if self._model_ref is None or self._model_ref != other._model_ref:
                return False
        return bool(self._A.shape == other._A.shape and np.array_equal(self._A, other._A))

    __hash__ = None  # type: ignore[assignment]

    # -- decoding ---------------------------------------------------------
    def output_dtype(self, dtype: Any) -> np.dtype:
        """The dtype ``dec(Y)`` returns for ``Y`` of ``dtype``.

        float32 when ``Y`` is float32 and so is the sensing matrix (matrix
        decoders) -- model decoders return float32 for float32 ``Y`` -- else float64.
        """
        f32 = np.dtype(dtype) == np.float32
        if self._spec.kind == "matrix":
            f32 = f32 and self._A.dtype == np.float32
        return np.dtype(np.float32) if f32 else np.dtype(np.float64)

    def __call__(self, Y: Any) -> np.ndarray:
        """Decode one problem (M, L) or a batch (B, M, L).

        Parameters
        ----------
        Y : array_like, shape (M, L) or (B, M, L)
            Measurements.

        Returns
        -------
        ndarray, shape (N, L) or (B, N, L)
            What the wrapped function returns; an empty batch (0, M, L) gives
            (0, N, L).
        """
        arr = np.asarray(Y)
        if arr.ndim == 3 and arr.shape[0] == 0:
            if arr.shape[1] != self.M:
                raise ValueError(f"Y has {arr.shape[1]} rows per problem; A has M = {self.M}")
            return np.zeros((0, self.N, arr.shape[2]), dtype=self.output_dtype(arr.dtype))
        Y = as_float_array("Y", Y, ndim=(2, 3))
        spec = self._spec
        if spec.kind == "model":
            return np.asarray(spec.func(self._model, Y, **self._settings))
        if spec.layout == "batch":
            return np.asarray(spec.func(self._A, Y, **self._settings))
        if Y.ndim == 2:
            return np.asarray(spec.func(self._A, Y, **self._settings))
        B, M, L = Y.shape
        cols = np.ascontiguousarray(Y.transpose(1, 0, 2).reshape(M, B * L))
        X = np.asarray(spec.func(self._A, cols, **self._settings))
        return np.ascontiguousarray(X.reshape(X.shape[0], B, L).transpose(1, 0, 2))

    decode = __call__

    # -- configs ----------------------------------------------------------
    def _matrix_inline(self) -> dict[str, Any]:
        return {
            "shape": list(self._A.shape),
            "dtype": str(self._A.dtype),
            "data": self._A.tolist(),
        }

    @property
    def config(self) -> dict[str, Any]:
        """A JSON-serializable description; :meth:`from_config` rebuilds the decoder.

        Matrix decoders carry ``A`` inline; model decoders name their model
        (pretrained name or file with sha256).  Raises ``ValueError`` for a model
        object not loaded from a file (use :meth:`save`).
        """
        cfg: dict[str, Any] = {
            "cscore_decoder": CONFIG_VERSION,
            "name": self.name,
            "settings": dict(self._json_settings),
        }
        if self._spec.kind == "matrix":
            cfg["A"] = self._matrix_inline()
        else:
            if self._model_ref is None:
                raise ValueError(
                    "this decoder's model was passed as an object, so its config cannot "
                    "name it; use Decoder.save(path) (writes the model file too) or build "
                    "the decoder from a pretrained name or a model file"
                )
            cfg["model"] = self._model_ref
        return cfg

    def save(self, path: str | os.PathLike[str], *, inline: bool = True) -> Path:
        """Write the config as JSON to ``path``, with side files where needed.

        Parameters
        ----------
        path : path
            The JSON file to write.
        inline : bool, default True
            Matrix decoders: carry ``A`` inline (True) or write it beside the
            config as ``<stem>.A.npy`` referenced with its sha256 (False).  A
            model decoder whose model is an object gets ``<stem>.model.npz``
            (written with the model's ``save``).

        Returns
        -------
        pathlib.Path
            The config file.
        """
        path = Path(path)
        cfg: dict[str, Any] = {
            "cscore_decoder": CONFIG_VERSION,
            "name": self.name,
            "settings": dict(self._json_settings),
        }
        if self._spec.kind == "matrix":
            if inline:
                cfg["A"] = self._matrix_inline()
            else:
                side = path.with_name(path.stem + ".A.npy")
                np.save(side, self._A)
                cfg["A"] = {"file": side.name, "sha256": file_sha256(side)}
        elif self._model_ref is not None:
            cfg["model"] = self._model_ref
        else:
            if not hasattr(self._model, "save"):
                raise ValueError(f"the {self.name!r} model has no save method")
            side = path.with_name(path.stem + ".model.npz")
            self._model.save(side)
            cfg["model"] = {"file": side.name, "sha256": file_sha256(side)}
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(cfg, indent=1) + "\n")
        os.replace(tmp, path)
        return path

    @classmethod
    def from_config(
        cls, cfg: dict[str, Any] | str | os.PathLike[str], *, base_dir: Any = None
    ) -> Decoder:
        """Rebuild a decoder from :attr:`config` (a dict) or a config file.

        Parameters
        ----------
        cfg : dict or path
            The config, or a JSON file holding it.
        base_dir : path, optional
            Directory relative file references are resolved against (default:
            the config file's directory, or the current directory for a dict).

        Returns
        -------
        Decoder

        Raises
        ------
        ValueError
            Malformed config, or a referenced file whose sha256 does not match.
        """
        if isinstance(cfg, (str, os.PathLike)):
            p = Path(cfg)
            if not p.is_file():
                raise FileNotFoundError(f"decoder config not found: {p}")
            try:
                data = json.loads(p.read_text())
            except json.JSONDecodeError as exc:
                raise ValueError(f"{p} is not valid JSON: {exc}") from exc
            if base_dir is None:
                base_dir = p.resolve().parent
            cfg = data
        if not isinstance(cfg, dict):
            raise ValueError("a decoder config must be a JSON object (dict)")
        if cfg.get("cscore_decoder") != CONFIG_VERSION:
            raise ValueError(
                f"not a cscore decoder config of version {CONFIG_VERSION} "
                f"(cscore_decoder = {cfg.get('cscore_decoder')!r})"
            )
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        name = cfg.get("name")
        if not isinstance(name, str):
            raise ValueError("decoder config has no 'name'")
        settings = cfg.get("settings") or {}
        if not isinstance(settings, dict):
            raise ValueError("decoder config 'settings' must be an object")
        spec = get_decoder_spec(name)
        if spec.kind == "matrix":
            A = _matrix_from_config(cfg.get("A"), base)
            return cls(name, A, **settings)
        ref = cfg.get("model")
        if isinstance(ref, dict):
            path = _checked_file(ref, base, "model")
            dec = cls(name, model=path, **settings)
            return dec
        if not isinstance(ref, str):
            raise ValueError("decoder config needs 'model' (a pretrained name or a file)")
        return cls(name, model=ref, **settings)


def _checked_file(ref: dict[str, Any], base: Path, what: str) -> Path:
    f = ref.get("file")
    if not isinstance(f, str):
        raise ValueError(f"decoder config {what!r} reference has no 'file'")
    path = Path(f)
    if not path.is_absolute():
        path = base / path
    if not path.is_file():
        raise FileNotFoundError(f"decoder config {what!r} file not found: {path}")
    want = ref.get("sha256")
    if want is not None and file_sha256(path) != want:
        raise ValueError(
            f"decoder config {what!r} file {path} has changed (sha256 differs from the config)"
        )
    return path


def _matrix_from_config(ref: Any, base: Path) -> np.ndarray:
    if not isinstance(ref, dict):
        raise ValueError("decoder config needs 'A' (inline or a file reference)")
    if "file" in ref:
        path = _checked_file(ref, base, "A")
        return np.load(path, allow_pickle=False)
    try:
        A = np.asarray(ref["data"], dtype=np.dtype(ref.get("dtype", "float64")))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"decoder config 'A' is malformed: {exc}") from exc
    if list(A.shape) != list(ref.get("shape", A.shape)):
        raise ValueError(f"decoder config 'A' has shape {A.shape}, not {ref.get('shape')}")
    return A


def decoder(name: str, A: Any = None, *, model: Any = None, **settings: Any) -> Decoder:
    """Build a :class:`Decoder` by name.

    Parameters
    ----------
    name : str
        One of :func:`decoder_names`: ``"omp"``, ``"somp"``, ``"bcs"``,
        ``"mtbcs"``, ``"tsbl"``, ``"tmsbl"``, ``"lstm-cs"`` and any registered later.
    A : array_like, shape (M, N), optional
        The sensing matrix (matrix decoders).
    model : str, path or model object, optional
        Model decoders: pretrained name (``"mnist-m72"``), a model file, or a model.
    **settings
        Keyword arguments of the wrapped function, e.g. ``n_nonzero=``, ``tol=``.

    Returns
    -------
    Decoder

    Examples
    --------
    >>> import cscore
    >>> dec = cscore.decoder("lstm-cs", model="mnist-m72", tol=0.34)
    >>> dec.N, dec.L
    (144, 4)
    """
    return Decoder(name, A, model=model, **settings)
