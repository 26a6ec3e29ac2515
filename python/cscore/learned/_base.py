"""What NWSOMP and CDSN-CS share: the sensing matrix, the spec, decode, files."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._validation import as_float_array, check_nonnegative_float, check_positive_int
from ..lstm_cs.model import ModelFileError, ProblemSpec
from ..result import STOP_REASONS, DecodeResult
from ._file import load_arch_file, save_arch_file
from ._greedy import greedy_decode

__all__ = ["LearnedGreedyDecoder"]


class LearnedGreedyDecoder:
    """Base class: a network scores atoms from residuals inside a greedy loop.

    Subclasses set :attr:`ARCH`, :attr:`JOINT` and implement :meth:`_score`,
    :meth:`expected_shapes` and :meth:`_from_arrays`.
    """

    ARCH: ClassVar[str] = ""
    JOINT: ClassVar[bool] = False

    def __init__(self, A: np.ndarray, spec: ProblemSpec, info: dict[str, Any] | None) -> None:
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
        tol : float, optional
            Stop a problem once the sum over channels of residual l2 norms is
            ``<= tol`` (checked before each iteration).
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
        out_dtype = Y.dtype
        single = Y.ndim == 2
        Yb = Y[None] if single else Y
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
        Y64 = np.ascontiguousarray(Yb, dtype=np.float64)
        S, atoms, resid, n_iter, stop = greedy_decode(
            self._A, Y64, self._score, joint=self.JOINT, k_max=k_max, tol=tol_v,
            k_from_user=k_from_user,
        )
        S = S.astype(out_dtype, copy=False)
        if not return_result:
            return S[0] if single else S
        b_idx, l_idx, _ = np.nonzero(atoms >= 0)
        support = np.zeros(S.shape, dtype=bool)
        support[b_idx, atoms[atoms >= 0], l_idx] = True
        reasons = np.array([STOP_REASONS[int(s)] for s in stop])
        sel = 0 if single else slice(None)
        return DecodeResult(
            x=S[sel], support=support[sel], residual_norm=resid.astype(out_dtype)[sel],
            n_iter=n_iter[sel], stop_reason=reasons[sel], extra={"atoms": atoms[sel]},
        )
