"""The foundation of every learned decoder: a model bound to its sensing matrix,
and the one model-file protocol.

:class:`LearnedModel` holds what every trained decoder has: the sensing matrix
``A`` (M, N), the :class:`~cscore.problem.ProblemSpec` it was trained for, free
provenance ``info``, and the checks of a batch ``Y`` against them.

It also reads and writes the model's file, once for every learned decoder.  A
model class declares its file in two tables and two hooks:

* :attr:`LearnedModel.FILE_PARAMS` -- the sizes and options the metadata holds
  (name -> :class:`FileParam`: an int in a range, a 0/1 flag, or one of some
  strings; required or with a default), under ``arch_params`` or, with
  :attr:`LearnedModel.PARAMS_FIELD` ``None``, at the top of the metadata;
* :attr:`LearnedModel.FILE_ARRAYS` -- the weight entries (name ->
  :class:`FileArray`: a shape expression in ``M``, ``N``, ``L``, the parameters
  and :meth:`LearnedModel._file_dims`, such as ``("G*H", "M")``; an entry may
  repeat over ``range(n)`` or be present only when a flag is set);
* ``_from_arrays(arrays, A, spec, params, info)`` builds the model from a
  file's checked contents and ``_to_arrays()`` returns ``(arrays, params)``.

:meth:`LearnedModel.load`, :meth:`~LearnedModel.save`,
:meth:`~LearnedModel.file_shapes`, :meth:`~LearnedModel.check_file_meta` and
their :class:`~cscore.models.format.ModelFileError` messages (naming the file and
the entry or parameter) are written here only; the container itself (bounded
reading, atomic writing) is :mod:`cscore.models.format`.

The greedy decode skeleton that LSTM-CS, BLSTM-CS, NWSOMP and CDSN-CS add to it
is :class:`~cscore.decoders.learned.greedy_model.GreedyModel`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._validation import (
    as_float_array,
    check_nonnegative_float,
    check_positive_int,
    transposed_hint,
)
from ...models.format import ARCHITECTURES, ModelFileError, load_model_arrays, save_model
from ...problem import ProblemSpec
from ._file_table import MISSING, FileArray, FileParam

__all__ = ["FileArray", "FileParam", "LearnedModel"]

class LearnedModel:
    """A model trained for one sensing matrix ``A`` (M, N) and :class:`ProblemSpec`.

    Subclasses name their file architecture in :attr:`ARCH`, declare its
    metadata and entries in :attr:`FILE_PARAMS` and :attr:`FILE_ARRAYS`, and
    implement the two hooks :meth:`_from_arrays` and :meth:`_to_arrays`;
    :meth:`load` and :meth:`save` (and the checks the loader runs,
    :meth:`file_shapes`, :meth:`check_file_meta`) follow from them.
    """

    #: ``arch`` of this model's files (see :mod:`cscore.models.format`)
    ARCH: ClassVar[str] = ""
    #: The metadata field holding the parameters (None: the top of the metadata,
    #: as LSTM-CS files keep ``cell`` and ``n_cells``).
    PARAMS_FIELD: ClassVar[str | None] = "arch_params"
    #: The file's sizes and options: name -> :class:`FileParam`.
    FILE_PARAMS: ClassVar[Mapping[str, FileParam]] = {}
    #: The file's weight entries: name -> :class:`FileArray` (float32 in the file).
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = {}

    _A: np.ndarray
    _spec: ProblemSpec
    _info: dict[str, Any]

    def _set_spec(
        self, A: np.ndarray, spec: ProblemSpec, info: dict[str, Any] | None
    ) -> np.ndarray:
        """Check ``spec`` and ``A`` and keep them (``A`` read-only); return A's column norms."""
        if not isinstance(spec, ProblemSpec):
            raise TypeError(f"spec must be a ProblemSpec, got {type(spec).__name__}")
        A = as_float_array("A", A, ndim=2, dtype=np.float64)
        if A.shape != (spec.M, spec.N):
            raise ValueError(f"A has shape {A.shape}, but spec says (M, N) = ({spec.M}, {spec.N})"
                             + transposed_hint(A.shape, spec.M, spec.N))
        norms = np.linalg.norm(A, axis=0)
        if np.any(norms == 0):
            raise ValueError(f"A has an all-zero column (column {int(np.argmin(norms))})")
        self._A = A
        self._A.setflags(write=False)
        self._spec = spec
        self._info = dict(info or {})
        return norms

    # -- the two hooks of the file protocol -------------------------------------
    @classmethod
    def _from_arrays(
        cls, arrays: dict[str, np.ndarray], A: np.ndarray, spec: ProblemSpec,
        params: dict[str, Any], info: dict[str, Any],
    ) -> Any:
        """The model from a file's checked contents (float32 ``arrays`` named as
        in :attr:`FILE_ARRAYS`, checked ``params``); ValueError/TypeError if unusable."""
        raise NotImplementedError

    def _to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """``(arrays, params)``: the weight entries and the parameters to save."""
        raise NotImplementedError

    @classmethod
    def _file_dims(cls, params: Mapping[str, Any]) -> dict[str, int]:
        """Dimensions derived from checked parameters for :attr:`FILE_ARRAYS`
        (none here); ValueError for a combination the model cannot use."""
        return {}

    # -- the model file, written once ---------------------------------------------
    @classmethod
    def _where(cls, name: str) -> str:
        return name if cls.PARAMS_FIELD is None else f"{cls.PARAMS_FIELD}[{name!r}]"

    @classmethod
    def checked_params(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` checked against :attr:`FILE_PARAMS`, defaults filled in.

        Parameters
        ----------
        params : mapping
            Parameter name -> value (no names beyond :attr:`FILE_PARAMS`).

        Returns
        -------
        dict
            Flags as 0/1 ints.

        Raises
        ------
        ValueError
            A missing, unknown or out-of-range parameter (named in the message).
        """
        field = cls.PARAMS_FIELD or "the metadata"
        if not isinstance(params, Mapping):
            raise ValueError(f"{field} must be an object, got {params!r}")
        extra = set(params) - set(cls.FILE_PARAMS)
        if extra:
            raise ValueError(f"unknown {field} {sorted(extra)}")
        out = {name: p.checked(cls._where(name), params.get(name, MISSING))
               for name, p in cls.FILE_PARAMS.items()}
        cls._file_dims(out)
        return out

    @classmethod
    def expected_shapes(cls, spec: ProblemSpec, params: Mapping[str, Any]
                        ) -> dict[str, tuple[int, ...]]:
        """Entry name -> shape of the weights for ``spec`` and ``params``.

        Parameters
        ----------
        spec : ProblemSpec
        params : mapping
            The parameters (see :attr:`FILE_PARAMS`).

        Returns
        -------
        dict of str to tuple of int
        """
        return cls._shapes({"M": spec.M, "N": spec.N, "L": spec.L}, cls.checked_params(params))

    @classmethod
    def _shapes(cls, sizes: Mapping[str, int], params: dict[str, Any]
                ) -> dict[str, tuple[int, ...]]:
        dims = {**sizes, **params, **cls._file_dims(params)}
        out: dict[str, tuple[int, ...]] = {}
        for name, entry in cls.FILE_ARRAYS.items():
            out.update(entry.shapes(name, dims))
        return out

    @classmethod
    def _meta_params(cls, meta: Mapping[str, Any]) -> dict[str, Any]:
        if cls.PARAMS_FIELD is None:
            return cls.checked_params({k: meta[k] for k in cls.FILE_PARAMS if k in meta})
        return cls.checked_params(meta.get(cls.PARAMS_FIELD, {}))

    @classmethod
    def file_shapes(cls, meta: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """Weight entries (name -> shape) a file of :attr:`ARCH` holds, from its metadata.

        Parameters
        ----------
        meta : mapping
            The file's checked metadata (``spec`` and the parameters).

        Returns
        -------
        dict of str to tuple of int
        """
        spec = meta["spec"]
        return cls._shapes({k: int(spec[k]) for k in ("M", "N", "L")}, cls._meta_params(meta))

    @classmethod
    def check_file_meta(cls, meta: Mapping[str, Any]) -> str | None:
        """What is wrong with a file's parameters, or None.

        Parameters
        ----------
        meta : mapping
            The file's metadata.

        Returns
        -------
        str or None
            The message (naming the parameter) the loader reports.
        """
        try:
            cls._meta_params(meta)
        except (TypeError, ValueError) as exc:
            return str(exc)
        return None

    @classmethod
    def _file_class(cls, arch: str, path: str | Path) -> Any:
        """The class a file of ``arch`` loads as when ``cls.load`` reads it."""
        registered = ARCHITECTURES[arch].model_class
        if registered is None:
            if arch == cls.ARCH:
                return cls
            raise ModelFileError(f"{path}: no model class is registered for arch {arch!r}")
        # a user's subclass of the file's class loads as itself (unless it derives
        # from the class of a more specific architecture, as BLSTMCS does)
        others = [a.model_class for a in ARCHITECTURES.values() if a.model_class is not None]
        if issubclass(cls, registered) and not any(
            o is not registered and issubclass(o, registered) and issubclass(cls, o)
            for o in others
        ):
            return cls
        if not issubclass(registered, cls):
            raise ModelFileError(f"{path} holds a {registered.__name__} model (arch {arch!r}), "
                                 f"not a {cls.__name__} one")
        return registered

    @classmethod
    def load(cls, path: str | Path) -> Any:
        """Load a model file written by :meth:`save` (bounded, no pickle involved).

        The model comes back as the class its file's ``arch`` names (a
        :class:`~cscore.BLSTMCS` from ``LSTMCS.load`` of a bidirectional model; a
        subclass of it, called as ``Sub.load``, as ``Sub``).

        Parameters
        ----------
        path : path
            The ``.npz`` model file.

        Returns
        -------
        LearnedModel

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ModelFileError
            Malformed, of another format, version or architecture, or
            inconsistent; the message names the file and the entry or parameter.
        """
        meta, arrays, A, spec = load_model_arrays(path, tuple(ARCHITECTURES))
        model_cls = cls._file_class(meta["arch"], path)
        w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
        try:
            params = model_cls._meta_params(meta)
            return model_cls._from_arrays(w, A, spec, params, dict(meta["info"]))
        except (ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: {exc}") from exc

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (``.npz``, see :mod:`cscore.models.format`), atomically.

        Parameters
        ----------
        path : path
            File to write (replaced atomically).

        Raises
        ------
        ValueError
            The model's arrays do not match its own :attr:`FILE_ARRAYS` (a file
            that could not be loaded again is never written).
        """
        arrays, params = self._to_arrays()
        params = self.checked_params(params)
        want = self.expected_shapes(self._spec, params)
        have = {k: tuple(np.shape(v)) for k, v in arrays.items()}
        if have != want:
            raise ValueError(f"{type(self).__name__}.save: the arrays {have} do not match "
                             f"the file's entries {want}")
        fields = params if self.PARAMS_FIELD is None else {self.PARAMS_FIELD: params}
        save_model(path, self.ARCH, arrays, self._A, self._spec, fields, self._info)

    # -- properties -----------------------------------------------------------
    @property
    def A(self) -> np.ndarray:
        """The sensing matrix, (M, N) float64 (read-only)."""
        return self._A

    @property
    def spec(self) -> ProblemSpec:
        """What the model was trained for."""
        return self._spec

    @property
    def info(self) -> dict[str, Any]:
        """Free-form provenance recorded with the model."""
        return self._info

    @property
    def M(self) -> int:
        """Measurements per channel."""
        return self._spec.M

    @property
    def N(self) -> int:
        """Atoms (signal length per channel)."""
        return self._spec.N

    @property
    def L(self) -> int:
        """Channels per problem."""
        return self._spec.L

    # -- decode helpers -------------------------------------------------------
    def _check_batch(self, Yb: np.ndarray) -> None:
        """Check a batch ``Yb`` (B, M, L) against the model's M and L."""
        if Yb.shape[1] != self.M:
            raise ValueError(
                f"Y has {Yb.shape[1]} rows (measurements) per problem; this model "
                f"expects M = {self.M}"
            )
        if Yb.shape[2] != self.L:
            raise ValueError(
                f"Y has {Yb.shape[2]} columns (channels) per problem; this model "
                f"expects L = {self.L}"
            )

    def _iterations(self, n_nonzero: int | None, tol: Any) -> tuple[int, bool, float]:
        """``(k_max, k_from_user, tol)`` of the greedy loop (tol -1 when not given).

        With neither ``n_nonzero`` nor ``tol``, ``k_max = max(1, M // 4)`` (the
        steps the paper trains the LSTM for); with only ``tol``, ``min(M, N)``.
        """
        cap = min(self.M, self.N)
        k_from_user = True
        if n_nonzero is not None:
            k_max = check_positive_int(
                "n_nonzero", n_nonzero, upper=cap, upper_desc="min(M, N) of the model"
            )
        elif tol is None:
            k_max = max(1, self.M // 4)
        else:
            k_max = cap
            k_from_user = False
        tol_v = -1.0 if tol is None else check_nonnegative_float("tol", tol)
        return k_max, k_from_user, tol_v
