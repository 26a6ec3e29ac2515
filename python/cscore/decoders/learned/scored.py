"""What NWSOMP and CDSN-CS share: a NumPy scoring network in the greedy loop, and
their model files (weights named by the network, sizes in ``arch_params``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...models.format import MAX_DIM, ModelFileError, load_model_arrays, save_model
from ...problem import ProblemSpec
from ...result import DecodeResult
from ._greedy import greedy_decode
from .base import GreedyModel, GreedyOutput

__all__ = ["ScoredGreedyModel"]


def _arch_params(meta: Mapping[str, Any]) -> dict[str, int]:
    params = meta.get("arch_params")
    if not isinstance(params, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_DIM
        for v in params.values()
    ):
        raise ValueError(f"bad arch_params {params!r}")
    return dict(params)


class ScoredGreedyModel(GreedyModel):
    """Base class: a NumPy network scores atoms from residuals inside a greedy loop.

    Subclasses set :attr:`ARCH` and :attr:`JOINT` and implement :meth:`_score`,
    :meth:`expected_shapes`, :meth:`arrays`, :meth:`arch_params` and
    :meth:`_from_arrays`.
    """

    def __init__(self, A: np.ndarray, spec: ProblemSpec, info: dict[str, Any] | None) -> None:
        self._set_spec(A, spec, info)

    # -- subclass hooks -------------------------------------------------------
    @staticmethod
    def expected_shapes(spec: ProblemSpec, params: dict[str, int]) -> dict[str, tuple[int, ...]]:
        """Entry name -> shape of the weights for ``spec`` and ``params``."""
        raise NotImplementedError

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights as named float32 arrays (the file's entries)."""
        raise NotImplementedError

    def arch_params(self) -> dict[str, int]:
        """The architecture sizes stored in the metadata."""
        raise NotImplementedError

    @classmethod
    def _from_arrays(
        cls, arrays: dict[str, np.ndarray], A: np.ndarray, spec: ProblemSpec,
        params: dict[str, int], info: dict[str, Any],
    ) -> Any:
        raise NotImplementedError

    def _score(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- files ----------------------------------------------------------------
    @classmethod
    def file_shapes(cls, meta: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """Weight entries of a file, from its ``spec`` and ``arch_params``."""
        spec = ProblemSpec(**meta["spec"])
        shapes = cls.expected_shapes(spec, _arch_params(meta))
        return {k: tuple(int(v) for v in s) for k, s in shapes.items()}

    @classmethod
    def load(cls, path: str | Path) -> Any:
        """Load a model file written by :meth:`save` (no pickle involved).

        Parameters
        ----------
        path : path
            The ``.npz`` model file.

        Returns
        -------
        The model.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ModelFileError
            Malformed, of another architecture, or inconsistent.
        """
        meta, arrays, A, spec = load_model_arrays(path, (cls.ARCH,))
        w = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
        try:
            return cls._from_arrays(w, A, spec, _arch_params(meta), dict(meta["info"]))
        except (ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: {exc}") from exc

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (``.npz``, see :mod:`cscore.models.format`).

        Parameters
        ----------
        path : path
            File to write (overwritten).
        """
        params = {k: int(v) for k, v in self.arch_params().items()}
        save_model(path, self.ARCH, self.arrays(), self._A, self._spec,
                   {"arch_params": params}, self._info)

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
