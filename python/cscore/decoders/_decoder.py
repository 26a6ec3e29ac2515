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
``dec.config`` is a JSON-serializable dict and :meth:`Decoder.from_config`
rebuilds the decoder from it (or from a file written by :meth:`Decoder.save`);
the format is in ``docs/pipelines.md`` and :mod:`cscore.decoders._decoder_config`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._tol import column_tol
from .._validation import as_float_array
from ..models.registry import is_model_path, resolve_model
from ._complex import (
    as_array,
    complex_dtype,
    decode_dtype,
    is_complex,
    real_only_error,
)
from ._decoder_config import config_of, jsonable, read_config, write_config
from ._input_kind import checked_operator, kind_refusal, matrix_kind
from .registry import RESERVED_SETTINGS, decoder_specs, get_decoder_spec

__all__ = ["Decoder", "decoder"]


class Decoder:
    """The decoder object that :func:`cscore.decoder` returns.

    Build one with :func:`cscore.decoder` (``cscore.decoder(name, A or model=...,
    **settings)``), the one documented way; this class is what it returns, named
    for ``isinstance`` checks and type hints, and it rebuilds a decoder from a
    config (:meth:`from_config`).  Call it on (M, L) or (B, M, L) measurements.
    The constructor takes the arguments of :func:`cscore.decoder`.

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

    See Also
    --------
    cscore.decoder : build a decoder (use this).
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
            self._A_kind = matrix_kind(A)
            if self._A_kind != "dense":
                if self._A_kind not in spec.inputs:
                    raise TypeError(kind_refusal(spec, self._A_kind))
                self._A = checked_operator(A, self._A_kind)
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
        self._json_settings = {k: jsonable(v, k) for k, v in self._settings.items()}
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
    @property
    def config(self) -> dict[str, Any]:
        """A JSON-serializable description; :meth:`from_config` rebuilds the decoder.

        Matrix decoders carry ``A`` inline; model decoders name their model
        (pretrained name or file with sha256).  Raises ``ValueError`` for a model
        object not loaded from a file (use :meth:`save`).
        """
        return config_of(self.name, self._json_settings, **self._config_parts())

    def _config_parts(self) -> dict[str, Any]:
        if self._spec.kind == "matrix":
            return {"A": self._A, "A_kind": self._A_kind}
        return {"model_ref": self._model_ref, "model": self._model}

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
        cfg = config_of(
            self.name, self._json_settings, path=path, inline=inline, **self._config_parts()
        )
        write_config(cfg, path)
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
        name, settings, A, model = read_config(cfg, base_dir=base_dir, allow_outside=allow_outside)
        if model is None:
            return cls(name, A, **settings)
        return cls(name, model=model, **settings)


def _stopping_words(spec: Any) -> str:
    rules = [r for r in spec.stopping if r != "auto"]
    if spec.stopping:
        return "its stopping rules: " + ", ".join(
            {"n_nonzero": "n_nonzero", "tol": "tol (a number)"}[r] for r in rules
        ) + (", tol='auto'" if "auto" in spec.stopping else "")
    own = "rtol (its convergence test)" if "rtol" in spec.settings else "its own rule"
    return f"it stops by {own} and max_iter where it has one"


def decoder(name: str, A: Any = None, *, model: Any = None, **settings: Any) -> Decoder:
    """Build a decoder by name: the one way to build one.

    Every decoder (matrix or model, built in or registered) is built here; the
    object returned is a :class:`Decoder` (for ``isinstance`` and type hints).

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
        Call it on (M, L) or (B, M, L) measurements; ``dec.config`` and
        ``dec.save`` give its JSON config, ``Decoder.from_config`` rebuilds it.

    Examples
    --------
    >>> import cscore
    >>> dec = cscore.decoder("lstm-cs", model="mnist-m72", tol=0.34)
    >>> dec.N, dec.L
    (144, 4)
    """
    return Decoder(name, A, model=model, **settings)
