"""The one greedy decode skeleton of the learned decoders: :class:`GreedyModel`.

It adds to :class:`~cscore.decoders.learned.base.LearnedModel` (a model, its
matrix and its file) what LSTM-CS, BLSTM-CS, NWSOMP and CDSN-CS share: argument
checks, the stopping rules ``n_nonzero`` / ``tol`` / ``tol="auto"``, single
problem or batch, the :class:`~cscore.DecodeResult`.  A subclass supplies only
:meth:`GreedyModel._run`, the loop that picks atoms (compiled for the LSTMs,
NumPy for the others), and its file tables, which :func:`cscore.register_decoder`
registers with the model-file loader.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..._validation import as_float_array
from ...result import STOP_REASONS, DecodeResult
from ..path_stop import auto_decode_path_stop
from ..stopping import auto_decode_mmv, is_auto
from .base import LearnedModel

__all__ = ["GreedyModel", "GreedyOutput", "greedy_result", "support_from_atoms"]

#: What a greedy loop returns for a batch of B problems:
#: ``S`` (B, N, L) float64, ``atoms`` (B, L, k) int64 (-1 padded), ``resid`` (B,)
#: (sum over channels of final residual norms), ``n_iter`` (B,), ``stop`` (B,)
#: (indices into :data:`cscore.result.STOP_REASONS`).
GreedyOutput = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


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
