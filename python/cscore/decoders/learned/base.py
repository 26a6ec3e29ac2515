"""The foundation of every learned decoder: a model bound to its sensing matrix,
its file, and the one greedy decode skeleton.

:class:`LearnedModel` holds what every trained decoder has: the sensing matrix
``A`` (M, N), the :class:`~cscore.problem.ProblemSpec` it was trained for, free
provenance ``info``, and the checks of a batch ``Y`` against them.

:class:`GreedyModel` adds the decode skeleton that LSTM-CS, BLSTM-CS, NWSOMP
and CDSN-CS share (argument checks, the stopping rules ``n_nonzero`` / ``tol`` /
``tol="auto"``, single problem or batch, the :class:`~cscore.DecodeResult`); a
subclass supplies only :meth:`GreedyModel._run`, the loop that picks atoms
(compiled for the LSTMs, NumPy for the others), and its file architecture
(:attr:`ARCH`, :meth:`file_shapes`), which :func:`cscore.register_decoder`
registers with the model-file loader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..._validation import (
    as_float_array,
    check_nonnegative_float,
    check_positive_int,
    transposed_hint,
)
from ...problem import ProblemSpec
from ...result import STOP_REASONS, DecodeResult
from ..path_stop import auto_decode_path_stop
from ..stopping import auto_decode_mmv, is_auto

__all__ = ["GreedyModel", "GreedyOutput", "LearnedModel", "greedy_result", "support_from_atoms"]

#: What a greedy loop returns for a batch of B problems:
#: ``S`` (B, N, L) float64, ``atoms`` (B, L, k) int64 (-1 padded), ``resid`` (B,)
#: (sum over channels of final residual norms), ``n_iter`` (B,), ``stop`` (B,)
#: (indices into :data:`cscore.result.STOP_REASONS`).
GreedyOutput = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class LearnedModel:
    """A model trained for one sensing matrix ``A`` (M, N) and :class:`ProblemSpec`.

    Subclasses name their file architecture in :attr:`ARCH` and say which
    weight entries such a file holds (:meth:`file_shapes`).
    """

    #: ``arch`` of this model's files (see :mod:`cscore.models.format`)
    ARCH: ClassVar[str] = ""

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

    # -- the model file ---------------------------------------------------------
    @classmethod
    def file_shapes(cls, meta: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """Weight entries (name -> shape) a file of :attr:`ARCH` holds, from its metadata."""
        raise NotImplementedError

    @classmethod
    def check_file_meta(cls, meta: Mapping[str, Any]) -> str | None:
        """What is wrong with a file's architecture-specific metadata, or None."""
        return None

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


class GreedyModel(LearnedModel):
    """A network scores atoms from residuals inside a greedy least-squares loop.

    Subclasses implement :meth:`_run` and set :attr:`JOINT`; their public
    ``decode`` documents its parameters and calls :meth:`_decode`.
    """

    #: One support shared by all channels (SOMP-like) instead of one per channel.
    JOINT: ClassVar[bool] = False

    #: :meth:`_run_path` ends each problem's path itself under ``tol="auto"``
    #: (:func:`cscore.decoders.path_stop.auto_decode_path_stop`); otherwise the
    #: rule decodes through :meth:`_run` (:func:`~cscore.decoders.stopping.auto_decode_mmv`).
    PATH_STOP: ClassVar[bool] = False

    def _run_path(
        self, Y: np.ndarray, K: int, rule: tuple[np.ndarray, np.ndarray, int, int, int],
        **options: Any,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``tol="auto"``'s path of a checked batch ``Y`` (B, M, L) float64 when
        :attr:`PATH_STOP`: atoms (B, L, K) and channel residual norms (B, L, K + 1)."""
        raise NotImplementedError

    def _run(
        self, Y: np.ndarray, k_max: int, tol: float, k_from_user: bool, **options: Any
    ) -> GreedyOutput:
        """The greedy loop over a checked batch ``Y`` (B, M, L) float64."""
        raise NotImplementedError

    def _decode(
        self,
        Y: Any,
        n_nonzero: int | None,
        tol: float | str | None,
        return_result: bool,
        **options: Any,
    ) -> np.ndarray | DecodeResult:
        """The decode skeleton: checks, stopping rules, batch handling, result.

        ``options`` go to :meth:`_run` unchanged (also on the ``tol="auto"``
        path, which decodes with :meth:`_run` too, see :mod:`cscore.decoders.stopping`).
        """
        Y = as_float_array("Y", Y, ndim=(2, 3), empty_batch=(3, 0))
        if is_auto(tol):
            self._check_batch(Y[None] if Y.ndim == 2 else Y)
            if self.PATH_STOP:
                return auto_decode_path_stop(
                    lambda Y3, K, rule: self._run_path(Y3, K, rule, **options),
                    self._A, Y, n_nonzero=n_nonzero, return_result=return_result,
                )  # fmt: skip
            return auto_decode_mmv(
                lambda Y_, k: self._decode(Y_, k, None, True, **options),
                self._A, Y, n_nonzero=n_nonzero, return_result=return_result, joint=self.JOINT,
            )  # fmt: skip
        out_dtype = Y.dtype
        single = Y.ndim == 2
        Yb = Y[None] if single else Y
        self._check_batch(Yb)
        k_max, k_from_user, tol_v = self._iterations(n_nonzero, tol)
        Y64 = np.ascontiguousarray(Yb, dtype=np.float64)
        S, atoms, resid, n_iter, stop = self._run(Y64, k_max, tol_v, k_from_user, **options)
        S = S.astype(out_dtype, copy=False)
        if not return_result:
            return S[0] if single else S
        return greedy_result(S, atoms, resid, n_iter, stop, single=single, out_dtype=out_dtype)


def support_from_atoms(atoms: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The boolean support (B, N, L) of per-channel atoms (B, L, k), -1 padded.

    Parameters
    ----------
    atoms : ndarray (B, L, k) int
    shape : tuple
        ``(B, N, L)``.

    Returns
    -------
    ndarray (B, N, L) bool
    """
    b_idx, l_idx, _ = np.nonzero(atoms >= 0)
    support = np.zeros(shape, dtype=bool)
    support[b_idx, atoms[atoms >= 0], l_idx] = True
    return support


def greedy_result(
    S: np.ndarray,
    atoms: np.ndarray,
    resid: np.ndarray,
    n_iter: np.ndarray,
    stop: np.ndarray,
    *,
    single: bool,
    out_dtype: Any,
) -> DecodeResult:
    """Wrap a greedy decoder's batch outputs (S already in ``out_dtype``) as a DecodeResult.

    ``atoms`` is (B, L, k), -1 padded.
    """
    support = support_from_atoms(atoms, S.shape)
    reasons = np.array([STOP_REASONS[int(s)] for s in stop])
    sel: Any = 0 if single else slice(None)
    return DecodeResult(
        x=S[sel], support=support[sel], residual_norm=resid.astype(out_dtype)[sel],
        n_iter=n_iter[sel], stop_reason=reasons[sel], extra={"atoms": atoms[sel]},
    )
