"""Bidirectional LSTM-CS (Palangi's thesis, section 4.6): the public decoder.

A forward LSTM runs over the channels ``0..L-1`` and a backward one over
``L-1..0``; at channel j the two outputs are concatenated and mapped to atom
scores, ``z_j = U [v_fwd(j); v_bwd(j)] + c_out`` (weights:
:class:`~cscore.decoders.learned.weights.BLSTMCSWeights`).  Decoding is the greedy loop of
:class:`~cscore.LSTMCS` (per-channel supports, least squares refits, the same
``n_nonzero`` / ``tol`` rules), compiled in ``cpp/include/cscore/blstm.hpp``.

Order within a greedy iteration: the backward LSTM at channel j reads the
residuals of channels ``j..L-1``, so all L residuals are normalized first, both
directions run over them, then every channel takes its atom and is re-fitted.
(For the unidirectional model this order gives the same result as visiting the
channels one after another.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ._lstm_common import Prepared, native_logits, panels
from .base import FileArray
from .lstm import LSTMCS
from .weights import ARCH_ARRAYS, BLSTMCSWeights

__all__ = ["BLSTMCS", "blstm_logits_native"]


class _BiPrepared(Prepared):
    """BLSTM weights laid out for the compiled kernels, in one precision.

    ``args()``: ``(WRf, bf, WRb, bb, U, c_out, cell)``; ``panels``: the decode
    kernel's ``panels_f`` and ``panels_b``.
    """

    @staticmethod
    def _recurrent(w: Any) -> tuple[np.ndarray, ...]:
        """Each direction's input and recurrent weights side by side, and its bias."""
        return (
            np.ascontiguousarray(np.hstack([w.W, w.R])), w.b,
            np.ascontiguousarray(np.hstack([w.Wb, w.Rb])), w.bb,
        )  # fmt: skip

    def _panel_args(self, w: Any, half: bool) -> dict[str, Any]:
        """Each direction's ``[W | R]`` and half of ``U`` as panels."""
        H = w.U.shape[1] // 2
        return {
            "panels_f": (panels(self.recurrent[0], half), panels(w.U[:, :H], half)),
            "panels_b": (panels(self.recurrent[2], half), panels(w.U[:, H:], half)),
        }


def blstm_logits_native(
    weights: BLSTMCSWeights, X: np.ndarray, *, dtype: type = np.float32, n_threads: int = 1
) -> np.ndarray:
    """Run the compiled bidirectional LSTM over channels.

    Parameters
    ----------
    weights : BLSTMCSWeights
    X : ndarray, shape (B, L, M)
        Inputs (max-abs normalized residuals), one sequence over channels per row.
    dtype : {numpy.float32, numpy.float64}, default float32
        Precision of the LSTM arithmetic (float32 is what the decoder uses).
    n_threads : int, default 1

    Returns
    -------
    ndarray, shape (B, L, N), of ``dtype``
        The logits ``U [v_fwd; v_bwd] + c_out`` at each channel.
    """
    return native_logits("blstm", _BiPrepared, weights, BLSTMCSWeights, X, dtype, n_threads)


class BLSTMCS(LSTMCS):
    """A trained bidirectional LSTM-CS decoder and its sensing matrix.

    Same interface as :class:`~cscore.LSTMCS` (``decode``, ``load``, ``save``,
    the properties); only the weights differ (:class:`BLSTMCSWeights`).  See
    the module docstring for the order of work within a greedy iteration.

    Parameters
    ----------
    weights : BLSTMCSWeights
        Forward and backward LSTM weights and ``U`` (N, 2H).
    A : ndarray, shape (M, N)
        The sensing matrix the model was trained for.
    spec : ProblemSpec
        Sizes and signal model.
    info : dict, optional
        Free-form provenance.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> from cscore.decoders.learned import BLSTMCSWeights
    >>> from cscore.problem import ProblemSpec
    >>> rng = np.random.default_rng(0)
    >>> M, N, L, H = 8, 16, 3, 4
    >>> g = lambda *s: rng.normal(size=s)
    >>> w = BLSTMCSWeights(W=g(3 * H, M), R=g(3 * H, H), b=np.zeros(3 * H), Wb=g(3 * H, M),
    ...                    Rb=g(3 * H, H), bb=np.zeros(3 * H), U=g(N, 2 * H), c_out=np.zeros(N))
    >>> model = cscore.BLSTMCS(w, g(M, N), ProblemSpec(M=M, N=N, L=L))
    >>> model.decode(g(M, L), n_nonzero=2).shape
    (16, 3)
    """

    ARCH: ClassVar[str] = "blstm"
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = ARCH_ARRAYS["blstm"]
    _weights_type: ClassVar[type] = BLSTMCSWeights
    _kernel: ClassVar[str] = "blstm"
    _prepared_type: ClassVar[type[Prepared]] = _BiPrepared
