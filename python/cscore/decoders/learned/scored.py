"""What NWSOMP and CDSN-CS share: a NumPy scoring network in the greedy loop.

Their files follow the one model-file protocol of
:class:`~cscore.decoders.learned.base.LearnedModel` (weights named by the
network, sizes in ``arch_params``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...problem import ProblemSpec
from ...result import DecodeResult
from ._greedy import greedy_decode
from .greedy_model import GreedyModel, GreedyOutput

__all__ = ["ScoredGreedyModel"]


class ScoredGreedyModel(GreedyModel):
    """Base class: a NumPy network scores atoms from residuals inside a greedy loop.

    Subclasses set :attr:`ARCH`, :attr:`JOINT`, :attr:`FILE_PARAMS` and
    :attr:`FILE_ARRAYS`, and implement :meth:`_score`, :meth:`arrays`,
    :meth:`arch_params` and :meth:`_from_arrays`.
    """

    def __init__(self, A: np.ndarray, spec: ProblemSpec, info: dict[str, Any] | None) -> None:
        self._set_spec(A, spec, info)

    # -- subclass hooks -------------------------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        """The weights as named float32 arrays (the file's entries)."""
        raise NotImplementedError

    def arch_params(self) -> dict[str, int]:
        """The architecture sizes stored in the metadata."""
        raise NotImplementedError

    def _score(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return self.arrays(), self.arch_params()

    # -- decoding -------------------------------------------------------------
    def _run(
        self, Y: np.ndarray, k_max: int, tol: float, k_from_user: bool, **options: Any
    ) -> GreedyOutput:
        return greedy_decode(self._A, Y, self._score, joint=self.JOINT, k_max=k_max, tol=tol,
                             k_from_user=k_from_user)

    def decode(
        self,
        Y: np.ndarray,
        *,
        n_nonzero: int | None = None,
        tol: float | str | None = None,
        return_result: bool = False,
    ) -> np.ndarray | DecodeResult:
        """Recover sparse ``S`` from ``Y = A S + noise`` with the learned greedy loop.

        Parameters
        ----------
        Y : ndarray, shape (M, L) or (B, M, L)
            Measurements of one problem or a batch.
        n_nonzero : int, optional
            Atoms per channel (greedy iterations), ``1 <= n_nonzero <= min(M, N)``.
        tol : float or "auto", optional
            Stop a problem once the sum over channels of residual l2 norms is
            ``<= tol`` (checked before each iteration).  ``"auto"`` estimates the
            noise level from ``Y`` itself (residual ratio thresholding on the
            decoder's own greedy path, :mod:`cscore.decoders.stopping`) and stops on it.
        return_result : bool, default False
            Return a :class:`cscore.DecodeResult` instead of the array.

        Returns
        -------
        ndarray, shape (N, L) or (B, N, L), or DecodeResult
            float32 when ``Y`` is float32, float64 otherwise; ``extra["atoms"]``
            holds the atoms in selection order, (..., L, k) padded with -1.

        Notes
        -----
        The stopping rules are :meth:`cscore.LSTMCS.decode`'s: with neither
        ``n_nonzero`` nor ``tol``, ``n_nonzero = max(1, M // 4)``; with only
        ``tol``, iterations are capped at ``min(M, N)``.  The loop is vectorized
        NumPy over the batch (see :mod:`cscore.decoders.learned._greedy`).
        """
        return self._decode(Y, n_nonzero, tol, return_result)
