"""The result record that decoders return when asked for details."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CONVERGENCE_STOP_REASONS", "STOP_REASONS", "DecodeResult", "batch_result"]

#: Stop-reason codes shared with the C++ core (``cpp/include/cscore/result.hpp``).
STOP_REASONS: tuple[str, ...] = ("n_nonzero", "tol", "dependent", "max_iter", "exhausted")

#: The same codes for decoders with a convergence test: code 1 means the test
#: ``rtol`` passed (``"tol"`` is kept for the residual bound, ``cscore._tol``).
CONVERGENCE_STOP_REASONS: tuple[str, ...] = ("n_nonzero", "rtol", "dependent", "max_iter",
                                             "exhausted")


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


def batch_result(
    x: np.ndarray,
    support: np.ndarray,
    residual_norm: Any,
    n_iter: Any,
    stop_reason: Any,
    extra: Mapping[str, Any] | None = None,
    *,
    single: bool,
    extra_as_is: Mapping[str, Any] | None = None,
) -> DecodeResult:
    """A :class:`DecodeResult` from the per-problem fields of a batch decode.

    A decoder runs one problem as a batch of one; this drops the batch axis again
    when the caller passed a single problem, so that every decoder shapes its
    result the same way.

    Parameters
    ----------
    x, support : numpy.ndarray
        The recovered signal and its support mask, shaped as returned.
    residual_norm, n_iter, stop_reason : array_like
        Per-problem values with a leading problem axis.
    extra : mapping, optional
        Per-problem diagnostics: arrays with a leading problem axis, or lists
        with one item per problem.
    single : bool
        The caller passed one problem, not a batch: the leading problem axis is
        dropped from ``residual_norm``, ``n_iter``, ``stop_reason`` and every
        value of ``extra`` (an array of shape (1, ...) becomes its view of shape
        (...), a list its one item).  With False they are kept as they are.
    extra_as_is : mapping, optional
        Diagnostics added to ``extra`` (after those of ``extra``) unchanged.

    Returns
    -------
    DecodeResult
        The record, ``extra`` holding the entries of ``extra`` then those of
        ``extra_as_is``.
    """

    def pick(v: Any) -> Any:
        if not single:
            return v
        return v.reshape(v.shape[1:]) if isinstance(v, np.ndarray) else v[0]

    out_extra = {k: pick(v) for k, v in (extra or {}).items()}
    out_extra.update(extra_as_is or {})
    return DecodeResult(
        x=x,
        support=support,
        residual_norm=pick(np.asarray(residual_norm)),
        n_iter=pick(np.asarray(n_iter)),
        stop_reason=pick(np.asarray(stop_reason)),
        extra=out_extra,
    )
