"""What NWSOMP and CDSN-CS share: the sensing matrix, the spec, decode, files."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._validation import as_float_array
from ..lstm_cs._spec_model import SpecModel, greedy_result
from ..lstm_cs.model import ModelFileError, ProblemSpec
from ..noise import auto_decode_mmv, is_auto
from ..result import DecodeResult
from ._file import load_arch_file, save_arch_file
from ._greedy import greedy_decode

__all__ = ["LearnedGreedyDecoder"]


class LearnedGreedyDecoder(SpecModel):
    """Base class: a network scores atoms from residuals inside a greedy loop.

    Subclasses set :attr:`ARCH`, :attr:`JOINT` and implement :meth:`_score`,
    :meth:`expected_shapes` and :meth:`_from_arrays`.
    """

    ARCH: ClassVar[str] = ""
    JOINT: ClassVar[bool] = False

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
        arrays, A, spec, params, info = load_arch_file(path, cls.ARCH)
        try:
            return cls._from_arrays(arrays, A, spec, params, info)
        except (ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: {exc}") from exc

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (``.npz``, see :mod:`cscore.learned._file`).

        Parameters
        ----------
        path : path
            File to write (overwritten).
        """
        save_arch_file(path, self.ARCH, self.arrays(), self._A, self._spec,
                       self.arch_params(), self._info)

    # -- decoding -------------------------------------------------------------
    def decode(
        self,
        Y: np.ndarray,
        *,
        n_nonzero: int | None = None,
        tol: float | None = None,
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
            decoder's own greedy path, :mod:`cscore.noise`) and stops on it.
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
        NumPy over the batch (see :mod:`cscore.learned._greedy`).
        """
        Y = as_float_array("Y", Y, ndim=(2, 3))
        if is_auto(tol):
            self._check_batch(Y[None] if Y.ndim == 2 else Y)
            return auto_decode_mmv(
                lambda Y_, k: self.decode(Y_, n_nonzero=k, return_result=True),
                self._A, Y, n_nonzero=n_nonzero, return_result=return_result, joint=self.JOINT,
            )  # fmt: skip
        out_dtype = Y.dtype
        single = Y.ndim == 2
        Yb = Y[None] if single else Y
        self._check_batch(Yb)
        k_max, k_from_user, tol_v = self._iterations(n_nonzero, tol)
        Y64 = np.ascontiguousarray(Yb, dtype=np.float64)
        S, atoms, resid, n_iter, stop = greedy_decode(
            self._A, Y64, self._score, joint=self.JOINT, k_max=k_max, tol=tol_v,
            k_from_user=k_from_user,
        )
        S = S.astype(out_dtype, copy=False)
        if not return_result:
            return S[0] if single else S
        return greedy_result(S, atoms, resid, n_iter, stop, single=single, out_dtype=out_dtype)
