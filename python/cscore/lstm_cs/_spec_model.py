"""What every trained decoder shares: the sensing matrix, the spec, the Y checks.

:class:`SpecModel` is the base of :class:`~cscore.LSTMCS` (and so
:class:`~cscore.BLSTMCS`) and of the learned greedy decoders
(:class:`cscore.learned._base.LearnedGreedyDecoder`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_float_array, check_nonnegative_float, check_positive_int
from ..result import STOP_REASONS, DecodeResult
from .model import ProblemSpec

__all__ = ["SpecModel", "greedy_result"]


class SpecModel:
    """A model trained for one sensing matrix ``A`` (M, N) and :class:`ProblemSpec`."""

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
            raise ValueError(f"A has shape {A.shape}, but spec says (M, N) = ({spec.M}, {spec.N})")
        norms = np.linalg.norm(A, axis=0)
        if np.any(norms == 0):
            raise ValueError(f"A has an all-zero column (column {int(np.argmin(norms))})")
        self._A = A
        self._A.setflags(write=False)
        self._spec = spec
        self._info = dict(info or {})
        return norms

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
        """``(k_max, k_from_user, tol)`` of the greedy loop (tol -1 when not given)."""
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
    """Wrap a greedy decoder's batch outputs (S already in ``out_dtype``) as a DecodeResult."""
    b_idx, l_idx, _ = np.nonzero(atoms >= 0)
    support = np.zeros(S.shape, dtype=bool)
    support[b_idx, atoms[atoms >= 0], l_idx] = True
    reasons = np.array([STOP_REASONS[int(s)] for s in stop])
    sel: Any = 0 if single else slice(None)
    return DecodeResult(
        x=S[sel], support=support[sel], residual_norm=resid.astype(out_dtype)[sel],
        n_iter=n_iter[sel], stop_reason=reasons[sel], extra={"atoms": atoms[sel]},
    )
