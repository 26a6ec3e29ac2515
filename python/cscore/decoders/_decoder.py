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

Settings are checked when the decoder is built, before any data or file is
touched: an unknown name, a value the decoder refuses (found by decoding one
all-zero probe problem, which every decoder does in microseconds), ``tol``
given to a decoder without the residual rule, or ``tol="auto"`` to one that
does not declare it, are a ``ValueError``/``TypeError`` naming the setting.
``tol`` means one thing everywhere (:mod:`cscore._tol`): a bound on each
problem's sum of channel residual norms; a ``"columns"`` decoder (``omp``,
``bcs``) gets ``tol / L`` per channel.

A matrix decoder registered with ``inputs`` including ``"sparse"`` or
``"operator"`` (``omp``, ``somp``) is built from a SciPy sparse matrix or a
``LinearOperator`` (SciPy's or PyLops') as its function is; other decoders
refuse them with an error naming the kind.  Such a decoder has no config (a
config carries ``A`` as numbers).

``dec(Y)`` returns exactly what the wrapped function returns.  Complex ``A``/``Y``
go through to decoders registered ``complex_ok`` (``omp``, ``somp``, ``tmsbl``);
the others refuse them with a ``TypeError`` naming the decoder.  The single-vector
decoders (``omp``, ``bcs``) decode every channel of every problem as an
independent column: ``dec(Y)`` for ``Y`` (M, L) is ``omp(A, Y)``, and a batch
(B, M, L) is decoded as the B*L columns ``Y.transpose(1, 0, 2).reshape(M, -1)``.

Configs
-------
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
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._tol import column_tol
from .._validation import as_float_array
from ..models.registry import file_sha256, is_model_path, resolve_model
from ._complex import (
    as_array,
    complex_dtype,
    decode_dtype,
    from_inline,
    inline_parts,
    is_complex,
    real_only_error,
)
from .greedy_operator import is_operator
from .registry import RESERVED_SETTINGS, decoder_specs, get_decoder_spec

__all__ = ["Decoder", "decoder"]

CONFIG_VERSION = 1
#: Deepest nesting of lists accepted in a config setting.
_MAX_SETTING_DEPTH = 8


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
        self._check_stopping()
        self._A_kind = "dense"
        if spec.kind == "matrix":
            if model is not None:
                raise ValueError(f"decoder {spec.name!r} takes a sensing matrix A, not a model")
            if A is None:
                raise ValueError(f"decoder {spec.name!r} needs a sensing matrix A")
            self._A_kind = _matrix_kind(A)
            if self._A_kind != "dense":
                if self._A_kind not in spec.inputs:
                    raise TypeError(_kind_refusal(spec, self._A_kind))
                self._A = _checked_operator(A, self._A_kind)
                if self._A.dtype.kind == "c" and "complex" not in spec.inputs:
                    raise self._real_only("A", self._A)
            else:
                A = self._checked_data("A", A, ndim=2)
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
        self._probe()

    def _check_stopping(self) -> None:
        """``tol`` only where the residual rule is declared; ``"auto"`` only where it is."""
        spec, tol = self._spec, self._settings.get("tol")
        if tol is None:
            return
        if isinstance(tol, str):
            if tol.strip().lower() == "auto" and "auto" not in spec.stopping:
                raise ValueError(
                    f"decoder {spec.name!r} does not take tol='auto' (the noise-blind "
                    f"rule); {_stopping_words(spec)}"
                )
        elif "tol" not in spec.stopping:
            raise ValueError(
                f"decoder {spec.name!r} has no residual bound tol; {_stopping_words(spec)}"
            )

    def _probe(self) -> None:
        """Decode one all-zero problem, so the decoder's own checks see every setting now.

        Every decoder answers an all-zero problem at once (nothing to fit), after
        checking its settings; a setting it refuses raises here, before any data
        or file is touched, with the decoder named.
        """
        L = self.L or 1
        dt = np.complex128 if np.dtype(getattr(self._A, "dtype", np.float64)).kind == "c" \
            else np.float64
        Y = np.zeros((self.M, L), dtype=dt)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self(Y)
        except (ValueError, TypeError, OverflowError) as exc:
            kind = TypeError if isinstance(exc, TypeError) else ValueError
            raise kind(f"decoder {self._spec.name!r}: {exc}") from None
    def _resolve_model(self, model: Any) -> tuple[Any, Any]:
        spec = self._spec
        if isinstance(model, (str, os.PathLike)):  # the one resolver and its rule
            if spec.load is None and is_model_path(model):
                raise ValueError(f"decoder {spec.name!r} cannot load model files")
            loaded, ref = resolve_model(model, load_file=spec.load, load_name=spec.pretrained)
            if isinstance(ref, str) and spec.model_type is not None \
                    and not isinstance(loaded, spec.model_type):
                raise ValueError(
                    f"pretrained model {ref!r} is a {type(loaded).__name__} model; decoder "
                    f"{spec.name!r} needs a {spec.model_type.__name__} (see `cscore models`)"
                )
            return loaded, ref
        if spec.model_type is not None and not isinstance(model, spec.model_type):
            raise TypeError(
                f"model must be a {spec.model_type.__name__}, a pretrained name or a file, "
                f"got {type(model).__name__}"
            )
        return model, None

    def _checked_data(self, what: str, x: Any, *, ndim: int | tuple[int, ...]) -> np.ndarray:
        """``x`` checked as a real array, or as a complex one where the decoder allows it."""
        if is_complex(x):
            if not self._spec.complex_ok:
                raise self._real_only(what, x)
            return as_array(what, x, ndim=ndim, dtype=complex_dtype(x))
        return as_float_array(what, x, ndim=ndim)

    def _real_only(self, what: str, x: Any) -> TypeError:
        ok = [s.name for s in decoder_specs() if s.complex_ok]
        return real_only_error(self._spec.name, what, x, ok)

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
        if self._A_kind != "dense" or other._A_kind != "dense":
            return self._A is other._A
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
        For a decoder registered with ``complex_ok`` and complex ``Y`` or ``A``:
        complex64 when both are complex64 or float32, else complex128.

        Parameters
        ----------
        dtype : dtype
            The dtype of the measurements.

        Returns
        -------
        numpy.dtype
        """
        dt = np.dtype(dtype)
        if self._spec.complex_ok and (dt.kind == "c" or self._A.dtype.kind == "c"):
            A_probe = self._A if self._A_kind == "dense" else np.empty(0, dtype=self._A.dtype)
            return decode_dtype(np.empty(0, dtype=dt), A_probe)
        f32 = dt == np.float32
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
        if arr.dtype.kind == "c" and not self._spec.complex_ok:
            raise self._real_only("Y", arr)
        if arr.ndim == 3 and arr.shape[0] == 0:
            if arr.shape[1] != self.M:
                raise ValueError(f"Y has {arr.shape[1]} rows per problem; A has M = {self.M}")
            return np.zeros((0, self.N, arr.shape[2]), dtype=self.output_dtype(arr.dtype))
        Y = self._checked_data("Y", Y, ndim=(2, 3))
        spec = self._spec
        if spec.kind == "model":
            return np.asarray(spec.func(self._model, Y, **self._settings))
        if spec.layout == "batch":
            return np.asarray(spec.func(self._A, Y, **self._settings))
        settings = self._settings
        tol = settings.get("tol")
        if tol is not None and not isinstance(tol, str):
            # one problem's L channels share its residual bound (cscore._tol)
            settings = {**settings, "tol": column_tol(tol, Y.shape[-1])}
        if Y.ndim == 2:
            return np.asarray(spec.func(self._A, Y, **settings))
        B, M, L = Y.shape
        cols = np.ascontiguousarray(Y.transpose(1, 0, 2).reshape(M, B * L))
        X = np.asarray(spec.func(self._A, cols, **settings))
        return np.ascontiguousarray(X.reshape(X.shape[0], B, L).transpose(1, 0, 2))

    decode = __call__

    # -- configs ----------------------------------------------------------
    def _matrix_inline(self) -> dict[str, Any]:
        if self._A_kind != "dense":
            raise ValueError(
                f"a decoder built on a {self._A_kind} A has no config (a config carries A as "
                "numbers); build it in code, or from a dense array"
            )
        head = {"shape": list(self._A.shape), "dtype": str(self._A.dtype)}
        if self._A.dtype.kind == "c":  # JSON has no complex numbers: two real arrays
            return {**head, **inline_parts(self._A)}
        return {**head, "data": self._A.tolist()}

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
        cls,
        cfg: dict[str, Any] | str | os.PathLike[str],
        *,
        base_dir: Any = None,
        allow_outside: bool = False,
    ) -> Decoder:
        """Rebuild a decoder from :attr:`config` (a dict) or a config file.

        Parameters
        ----------
        cfg : dict or path
            The config, or a JSON file holding it.
        base_dir : path, optional
            Directory relative file references are resolved against (default:
            the config file's directory, or the current directory for a dict).
        allow_outside : bool, default False
            Accept file references outside that directory.  A config from a file
            (or given ``base_dir``) may only name files inside its folder; a dict
            without ``base_dir`` (for instance ``dec.config``) is not confined.

        Returns
        -------
        Decoder

        Raises
        ------
        ValueError
            Malformed config (the message names the field), a file reference
            without ``sha256``, outside the config's folder, whose sha256 does not
            match, or that does not hold what the field needs.
        FileNotFoundError
            The config or a referenced file does not exist.
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
            A = _matrix_from_config(cfg.get("A"), base, where)
            return cls(name, A, **settings)
        ref = cfg.get("model")
        if isinstance(ref, dict):
            path = _checked_file(ref, base, "model", where)
            return cls(name, model=path, **settings)
        if not isinstance(ref, str):
            raise ValueError("decoder config needs 'model' (a pretrained name or a file)")
        return cls(name, model=ref, **settings)


def _matrix_kind(A: Any) -> str:
    """``"sparse"``, ``"operator"`` (SciPy or PyLops LinearOperator) or ``"dense"``."""
    import scipy.sparse as sp

    if sp.issparse(A):
        return "sparse"
    return "operator" if is_operator(A) else "dense"


def _kind_refusal(spec: Any, kind: str) -> str:
    takes = [s.name for s in decoder_specs() if kind in s.inputs]
    return (
        f"decoder {spec.name!r} takes {' or '.join(k for k in spec.inputs if k != 'complex')} "
        f"A, not {'a sparse matrix' if kind == 'sparse' else 'a LinearOperator'}"
        + (f"; decoders that take one: {', '.join(takes)}" if takes else "")
        + (" (or pass A.toarray())" if kind == "sparse" else "")
    )


def _checked_operator(A: Any, kind: str) -> Any:
    """A sparse matrix or operator with a usable 2-D shape and a numeric dtype."""
    shape = getattr(A, "shape", None)
    if shape is None or len(shape) != 2 or min(int(shape[0]), int(shape[1])) < 1:
        raise ValueError(f"A ({kind}) must have a 2-D shape (M, N) with M, N >= 1, got {shape}")
    dtype = np.dtype(getattr(A, "dtype", None) or np.float64)
    if dtype.kind not in "fc":
        raise TypeError(f"A ({kind}) must have a float or complex dtype, got {dtype}")
    return A


def _stopping_words(spec: Any) -> str:
    rules = [r for r in spec.stopping if r != "auto"]
    if spec.stopping:
        return "its stopping rules: " + ", ".join(
            {"n_nonzero": "n_nonzero", "tol": "tol (a number)"}[r] for r in rules
        ) + (", tol='auto'" if "auto" in spec.stopping else "")
    own = "rtol (its convergence test)" if "rtol" in spec.settings else "its own rule"
    return f"it stops by {own} and max_iter where it has one"


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
