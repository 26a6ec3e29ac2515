"""The result record that decoders return when asked for details."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["STOP_REASONS", "DecodeResult"]

#: Stop-reason codes shared with the C++ core (``cpp/include/cscore/result.hpp``).
STOP_REASONS: tuple[str, ...] = ("n_nonzero", "tol", "dependent", "max_iter", "exhausted")


@dataclass(frozen=True)
class DecodeResult:
    """What a decoder found, beyond the recovered signal.

    Attributes
    ----------
    x : numpy.ndarray
        The recovered signal, shaped as the decoder's plain return value.
    support : numpy.ndarray
        Boolean mask of non-zero rows, the same shape as ``x``.
    residual_norm : numpy.ndarray
        Final residual norm(s) ``||y - A x||_2`` per column (per channel).
    n_iter : numpy.ndarray
        Iterations run, per problem.
    stop_reason : numpy.ndarray
        Why each problem stopped: strings from :data:`STOP_REASONS` or a
        decoder-specific word.
    extra : dict
        Decoder-specific diagnostics (for example noise estimates, gamma, B).
    """

    x: np.ndarray
    support: np.ndarray
    residual_norm: np.ndarray
    n_iter: np.ndarray
    stop_reason: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        n = np.asarray(self.n_iter)
        reasons, counts = np.unique(np.asarray(self.stop_reason), return_counts=True)
        why = ", ".join(f"{r}: {c}" for r, c in zip(reasons, counts))
        return (
            f"DecodeResult(x{tuple(self.x.shape)}, nnz={int(np.count_nonzero(self.support))}, "
            f"n_iter={int(n.min()) if n.size else 0}..{int(n.max()) if n.size else 0}, "
            f"stop=[{why}])"
        )
