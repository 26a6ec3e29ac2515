"""What LSTM-CS and BLSTM-CS share below the decoder: their weights laid out for
the compiled kernels (:class:`Prepared`, :func:`panels`), the float16 rounding of
``weights_dtype="float16"`` (:func:`round_to_half`), and the checked call of the
logits kernels (:func:`native_logits`).

Used by :mod:`~cscore.decoders.learned.lstm` and
:mod:`~cscore.decoders.learned.blstm` only (a private module: no public API).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _core
from ..._blas import single_threaded_blas
from ..._config import instruction_set, resolve_threads
from ..._validation import as_float_array

__all__ = ["WEIGHTS_DTYPES", "Prepared", "native_logits", "panels", "round_to_half"]


#: Values of ``LSTMCS.decode(weights_dtype=...)``: the precision the LSTM's
#: matrices (W, R, U) are stored in; the arithmetic stays float32.
WEIGHTS_DTYPES = ("float32", "float16")

#: The matrices that ``weights_dtype="float16"`` rounds (biases and c_out stay).
_MATRICES = ("W", "R", "Wb", "Rb", "U")


def round_to_half(w: Any) -> Any:
    """A copy of the weights ``w`` with every matrix rounded to float16 values
    (held in ``w``'s dtype); ValueError if one does not fit float16's range."""
    arrays = {k: getattr(w, k) for k in w._ARRAYS}
    for k in _MATRICES:
        if k in arrays:
            a = arrays[k]
            if a.size and float(np.max(np.abs(a))) > float(np.finfo(np.float16).max):
                raise ValueError(
                    f'weights_dtype="float16": weight {k} exceeds the float16 range (65504)'
                )
            arrays[k] = a.astype(np.float16).astype(a.dtype)
    return type(w)(**arrays, cell=w.cell, extra=dict(w.extra))


def panels(mat: np.ndarray, half: bool) -> np.ndarray:
    """``mat`` (m, k) in the compiled few-problems layout (``lstm::Weights::WRp``):
    rows zero-padded to a multiple of ``_core._lstm_panel_step``, cut into panels
    of ``_core._lstm_panel`` rows (the last one narrower), panel after panel, each
    stored input-major; 1-D, float32, or the float16 bits as uint16 when ``half``."""
    P, step = int(_core._lstm_panel), int(_core._lstm_panel_step)
    m, k = mat.shape
    padded = np.zeros((-(-m // step) * step, k), dtype=np.float16 if half else np.float32)
    padded[:m] = mat
    out = np.concatenate([padded[p : p + P].T.ravel() for p in range(0, len(padded), P)])
    return out.view(np.uint16) if half else out


class Prepared:
    """Weights laid out for the compiled kernels, in one precision.

    ``args()`` is what the ``_lstm_*`` kernels take before their own arguments:
    ``(WR, b, U, c_out, cell)``; :class:`~cscore.decoders.learned.blstm._BiPrepared`
    overrides :meth:`_recurrent` and :meth:`_panel_args` for the ``_blstm_*`` ones.
    ``panels`` (keywords of the decode kernels, float32 only) is the second layout
    of the matrices that decodes of a few problems stream (same results);
    ``weights_dtype="float16"`` rounds the matrices to float16 values for every
    path, and stores the panels as float16 where the instruction set converts
    them (avx2 and above).
    """

    def __init__(self, weights: Any, dtype: type, weights_dtype: str = "float32") -> None:
        w = weights.astype(dtype)
        half = weights_dtype == "float16"
        if half:
            w = round_to_half(w)
        self.recurrent = self._recurrent(w)
        self.U = w.U
        self.c_out = w.c_out
        self.cell = weights.cell
        self.suffix = "f32" if dtype == np.float32 else "f64"
        self.panels: dict[str, Any] = {}
        if dtype == np.float32:
            self.panels = self._panel_args(w, half and instruction_set() != "generic")

    @staticmethod
    def _recurrent(w: Any) -> tuple[np.ndarray, ...]:
        """The LSTM's input and recurrent weights side by side, and its bias."""
        return (np.ascontiguousarray(np.hstack([w.W, w.R])), w.b)

    def _panel_args(self, w: Any, half: bool) -> dict[str, Any]:
        """The decode kernel's ``panels`` keyword: ``[W | R]`` and ``U`` as panels."""
        return {"panels": (panels(self.recurrent[0], half), panels(w.U, half))}

    def args(self) -> tuple[Any, ...]:
        return (*self.recurrent, self.U, self.c_out, self.cell)


def native_logits(
    kernel: str,
    prepared_type: type[Prepared],
    weights: Any,
    weights_type: type[Any],
    X: np.ndarray,
    dtype: type,
    n_threads: int,
    hint: str = "",
) -> np.ndarray:
    """Check the arguments of ``{lstm,blstm}_logits_native`` and run the kernel."""
    dtype = np.dtype(dtype).type
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    if not isinstance(weights, weights_type):
        raise TypeError(
            f"weights must be {weights_type.__name__}, got {type(weights).__name__}{hint}"
        )
    X = as_float_array("X", X, ndim=3, dtype=dtype)
    weights.validate(X.shape[2], weights.U.shape[0])
    prep = prepared_type(weights, dtype)
    fn = getattr(_core, f"_{kernel}_logits_{prep.suffix}")
    with single_threaded_blas():
        return np.asarray(fn(*prep.args(), X, resolve_threads(n_threads)))
