"""What the unrolled decoders share: :class:`UnrolledModel`, a fixed number T of
layers learned end to end, each a linear step followed by a shrinkage.

The decoders are LISTA (:mod:`~cscore.decoders.learned.lista`, Gregor & LeCun
2010) and LAMP (:mod:`~cscore.decoders.learned.lamp`, Borgerding, Schniter,
Rangan 2017); their shrinkages are in :mod:`~cscore.decoders.learned.shrinkage`,
their training in :mod:`cscore.training.unrolled`.  Decoding is plain batched
NumPy (no torch): the B problems x L channels of a batch go through every layer
as one matrix product.  Every channel is an independent vector unless the model
is ``joint`` (multi-vector): then the shrinkage acts on the rows of each problem's
(N, L) estimate (row sparsity, one support shared by the channels).

Files follow the one model-file protocol
(:class:`~cscore.decoders.learned.base.LearnedModel`): the weights (float32)
as the subclass's ``FILE_ARRAYS`` declare them, ``arch_params`` with at least
``n_layers`` (at most :data:`MAX_LAYERS`) and ``joint``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..._blas import single_threaded_blas
from ..._tol import warn_scale
from ..._validation import as_float_array, check_positive_int
from ...problem import ProblemSpec
from ...result import DecodeResult
from .base import LearnedModel

__all__ = ["MAX_LAYERS", "UnrolledModel"]

#: Most layers a model file may declare.
MAX_LAYERS = 10_000


class UnrolledModel(LearnedModel):
    """What LISTA and LAMP share: weights, files, the batched decode.

    Subclasses set :attr:`ARCH`, declare their file (:attr:`FILE_PARAMS`, with
    ``n_layers`` and ``joint``, and :attr:`FILE_ARRAYS`) and implement
    :meth:`_layers` (the forward pass over a batch laid out (B, L, M)).
    """

    ARCH: ClassVar[str] = ""

    def __init__(self, arrays: Mapping[str, Any], A: np.ndarray, spec: ProblemSpec,
                 params: Mapping[str, Any], info: dict[str, Any] | None = None) -> None:
        self._set_spec(A, spec, info)
        self._params = self.checked_params(dict(params))
        shapes = self.expected_shapes(spec, self._params)
        if set(arrays) != set(shapes):
            raise ValueError(f"{self.ARCH} weights must be {sorted(shapes)}, got {sorted(arrays)}")
        self._w: dict[str, np.ndarray] = {}
        for name, shape in shapes.items():
            arr = np.asarray(arrays[name])
            if arr.shape != shape:
                raise ValueError(f"weight {name!r} has shape {arr.shape}, expected {shape}")
            # a C-ordered copy (made read-only below): the layout picks the BLAS path,
            # so a model decodes to the same bits however its weights were made
            arr = np.array(arr, dtype=np.float32, order="C")
            if not np.isfinite(arr).all():
                raise ValueError(f"weight {name!r} contains NaN or infinity")
            arr.setflags(write=False)
            self._w[name] = arr
        self._check_weights()
        self._cache: dict[Any, dict[str, np.ndarray]] = {}

    def _check_weights(self) -> None:
        """Refuse weights the layers cannot evaluate (a subclass hook; none here)."""

    # -- subclass hook ----------------------------------------------------------
    def _layers(self, Yt: np.ndarray, n_layers: int, w: dict[str, np.ndarray],
                keep: bool) -> list[np.ndarray]:
        """The forward pass over ``Yt`` (B, L, M); each kept layer's X as (B, L, N)."""
        raise NotImplementedError

    # -- properties -----------------------------------------------------------
    @property
    def n_layers(self) -> int:
        """Number of layers T."""
        return int(self._params["n_layers"])

    @property
    def joint(self) -> bool:
        """Whether the shrinkage is row-sparse across the L channels (multi-vector)."""
        return bool(self._params["joint"])

    def arch_params(self) -> dict[str, Any]:
        """The architecture sizes and options stored in the file's ``arch_params``."""
        return dict(self._params)

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights (float32, read-only), named as in the file."""
        return dict(self._w)

    def _weights(self, dtype: np.dtype) -> dict[str, np.ndarray]:
        """The weights and A in the compute dtype (cached per dtype)."""
        key = np.dtype(dtype).str
        if key not in self._cache:
            w = {k: np.ascontiguousarray(v, dtype=dtype) for k, v in self._w.items()}
            w["A"] = np.ascontiguousarray(self._A, dtype=dtype)
            self._cache[key] = w
        return self._cache[key]

    # -- files (the protocol of LearnedModel) ------------------------------------
    @classmethod
    def _from_arrays(
        cls, arrays: dict[str, np.ndarray], A: np.ndarray, spec: ProblemSpec,
        params: dict[str, Any], info: dict[str, Any],
    ) -> Any:
        return cls(arrays, A, spec, params, info)

    def _to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return dict(self._w), self.arch_params()

    # -- decoding -------------------------------------------------------------
    def _prepare(self, Y: Any, n_layers: int | None) -> tuple[np.ndarray, bool, int]:
        Y = as_float_array("Y", Y, ndim=(2, 3), empty_batch=(3, 0))
        single = Y.ndim == 2
        Yb = Y[None] if single else Y
        if Yb.shape[1] != self.M:
            raise ValueError(f"Y has {Yb.shape[1]} rows (measurements) per problem; this "
                             f"model expects M = {self.M}")
        if self.joint and Yb.shape[2] != self.L:
            raise ValueError(f"Y has {Yb.shape[2]} columns (channels) per problem; this joint "
                             f"model expects L = {self.L}")
        T = self.n_layers if n_layers is None else check_positive_int(
            "n_layers", n_layers, upper=self.n_layers, upper_desc="the model's n_layers")
        warn_scale(type(self).__name__, Yb,
                   why="its thresholds were learned at the training data's scale")
        return Yb, single, T

    def _groups(self, B: int, L: int) -> tuple[int, int]:
        """(P, G): the shrinkage's groups, G = L channels for a joint model, else 1."""
        return (B, L) if self.joint else (B * L, 1)

    def _run(self, Yb: np.ndarray, T: int, keep: bool, device: Any = None) -> list[np.ndarray]:
        B, _, L = Yb.shape
        if B == 0:
            return [np.zeros((0, self.N, L), dtype=Yb.dtype)] * (T if keep else 1)
        if device is not None:
            from ..torch_backend.unrolled import unrolled_decode

            return unrolled_decode(self, Yb, T, keep, device)
        # The products are one (L, K) x (K, N) product per problem (a stacked
        # matmul), on one BLAS thread: a problem's result never depends on the
        # batch it is decoded in (chunked files, Dask) nor on the thread count.
        with single_threaded_blas():
            Yt = np.ascontiguousarray(Yb.transpose(0, 2, 1))  # (B, L, M)
            outs = self._layers(Yt, T, self._weights(Yb.dtype), keep)
        return [np.ascontiguousarray(X.transpose(0, 2, 1)) for X in outs]

    def decode(
        self, Y: np.ndarray, *, n_layers: int | None = None, return_result: bool = False,
        device: Any = None,
    ) -> np.ndarray | DecodeResult:
        """Recover sparse ``X`` from ``Y = A X + noise`` with the unrolled network.

        Parameters
        ----------
        Y : ndarray, shape (M, L) or (B, M, L)
            Measurements of one problem or a batch; each channel is an
            independent vector unless the model is ``joint``.
        n_layers : int, optional
            Stop after this many layers (``1 <= n_layers <= self.n_layers``;
            default all): the output of an earlier layer.
        return_result : bool, default False
            Return a :class:`cscore.DecodeResult` instead of the array.
        device : str, optional
            None (default): NumPy.  A torch device (``"cpu"``, ``"cuda"``,
            ``"cuda:1"``): the same layers in PyTorch on that device
            (:mod:`cscore.decoders.torch_backend.unrolled`; needs torch).

        Returns
        -------
        ndarray, shape (N, L) or (B, N, L), or DecodeResult
            float32 when ``Y`` is float32 (computed in float32), float64
            otherwise.  The result's ``residual_norm`` is ``||y - A x||`` per
            channel, ``n_iter`` the layers run, ``stop_reason`` "layers".
        """
        if device is not None:
            from ..torch_backend import check_device

            check_device(device)
        Yb, single, T = self._prepare(Y, n_layers)
        X = self._run(Yb, T, keep=False, device=device)[-1]
        if not return_result:
            return X[0] if single else X
        R = Yb - np.einsum("mn,bnl->bml", self._weights(X.dtype)["A"], X)
        sel: Any = 0 if single else slice(None)
        return DecodeResult(
            x=X[sel], support=(X != 0)[sel], residual_norm=np.linalg.norm(R, axis=1)[sel],
            n_iter=np.full(X.shape[0], T, dtype=np.int64)[sel],
            stop_reason=np.full(X.shape[0], "layers")[sel], extra={"n_layers": T},
        )

    def decode_layers(self, Y: np.ndarray, *, n_layers: int | None = None,
                      device: Any = None) -> np.ndarray:
        """Every layer's output (for per-layer error curves).

        Parameters
        ----------
        Y : ndarray, shape (M, L) or (B, M, L)
            Measurements.
        n_layers : int, optional
            Layers to run (default all).
        device : str, optional
            As in :meth:`decode`.

        Returns
        -------
        ndarray, shape (T, N, L) or (T, B, N, L)
            Entry ``t`` is the estimate after layer ``t + 1`` (equal to
            ``decode(Y, n_layers=t + 1)``).
        """
        if device is not None:
            from ..torch_backend import check_device

            check_device(device)
        Yb, single, T = self._prepare(Y, n_layers)
        out = np.stack(self._run(Yb, T, keep=True, device=device))
        return out[:, 0] if single else out
