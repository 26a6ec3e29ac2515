"""Every decoder behind one signature, for experiments.

``run_decoder(name, A, Y, k=..., tol=..., model=...)`` decodes a batch ``Y``
(B, M, L) and returns ``S_hat`` (B, N, L).

Stopping: greedy decoders take either ``k`` (atoms per channel) or ``tol`` (the
LSTM-CS paper's rule: stop once the sum over channels of residual norms is
<= tol; single-channel OMP gets ``tol / L`` per channel), or ``tol="auto"``
(the noise level estimated from the measurements, :mod:`cscore.noise`).  The Bayesian
decoders (BCS, MT-BCS, T-SBL, T-MSBL) use their own convergence rules and
ignore both.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["DECODERS", "decoder_names", "run_decoder"]

Decoder = Callable[..., np.ndarray]


def _channels_as_columns(Y: np.ndarray) -> np.ndarray:
    B, M, L = Y.shape
    return np.ascontiguousarray(Y.transpose(1, 0, 2).reshape(M, B * L))


def _columns_as_channels(X: np.ndarray, B: int, L: int) -> np.ndarray:
    N = X.shape[0]
    return np.ascontiguousarray(X.reshape(N, B, L).transpose(1, 0, 2))


def _omp(
    A: np.ndarray, Y: np.ndarray, *, k: int | None, tol: float | str | None, **_: Any
) -> np.ndarray:
    import cscore

    B, _, L = Y.shape
    X = np.asarray(
        cscore.omp(A, _channels_as_columns(Y), n_nonzero=k,
                   tol=tol if tol is None or isinstance(tol, str) else tol / L)
    )
    return _columns_as_channels(X, B, L)


def _somp(
    A: np.ndarray, Y: np.ndarray, *, k: int | None, tol: float | str | None, **_: Any
) -> np.ndarray:
    import cscore

    return np.asarray(cscore.somp(A, Y, n_nonzero=k, tol=tol))


def _lstm(
    A: np.ndarray,
    Y: np.ndarray,
    *,
    k: int | None,
    tol: float | str | None,
    model: Any = None,
    **_: Any,
) -> np.ndarray:
    if model is None:
        raise ValueError("this learned decoder (lstm-cs, nwsomp, cdsn-cs) needs a model (--model)")
    if not np.array_equal(np.asarray(model.A), A):
        raise ValueError("the problems were not measured with the model's sensing matrix")
    return model.decode(Y, n_nonzero=k, tol=tol)


def _blstm(
    A: np.ndarray, Y: np.ndarray, *, k: int | None, tol: float | None, model: Any = None, **_: Any
) -> np.ndarray:
    from ..lstm_cs.blstm import BLSTMCS

    if not isinstance(model, BLSTMCS):
        raise ValueError("the blstm-cs decoder needs a bidirectional model (a BLSTMCS)")
    return _lstm(A, Y, k=k, tol=tol, model=model)


def _bcs(A: np.ndarray, Y: np.ndarray, **_: Any) -> np.ndarray:
    import cscore

    B, _, L = Y.shape
    return _columns_as_channels(np.asarray(cscore.bcs(A, _channels_as_columns(Y))), B, L)


def _batch_call(name: str) -> Decoder:
    def run(A: np.ndarray, Y: np.ndarray, **_: Any) -> np.ndarray:
        import cscore

        return getattr(cscore, name)(A, Y)

    run.__name__ = f"_{name}"
    return run


#: name -> (decoder, uses stopping rule, description)
DECODERS: dict[str, tuple[Decoder, bool, str]] = {
    "lstm-cs": (_lstm, True, "LSTM-CS (Palangi et al. 2016), per-channel supports"),
    "blstm-cs": (_blstm, True, "bidirectional LSTM-CS (Palangi's thesis 4.6)"),
    "somp": (_somp, True, "simultaneous OMP, joint support"),
    "nwsomp": (_lstm, True, "NWSOMP (Palangi et al. 2013), learned SOMP; needs a model"),
    "cdsn-cs": (_lstm, True, "CDSN-CS (Palangi thesis 4.7), per-channel; needs a model"),
    "omp": (_omp, True, "OMP on each channel independently"),
    "bcs": (_bcs, False, "Bayesian CS (Ji et al. 2008) per channel"),
    "mtbcs": (_batch_call("mtbcs"), False, "multitask BCS (Ji et al. 2009)"),
    "tsbl": (_batch_call("tsbl"), False, "T-SBL (Zhang & Rao 2011)"),
    "tmsbl": (_batch_call("tmsbl"), False, "T-MSBL (Zhang & Rao 2011)"),
}


def decoder_names() -> list[str]:
    """Names accepted by :func:`run_decoder`.

    Returns
    -------
    list of str
        The keys of :data:`DECODERS`.
    """
    return list(DECODERS)


def run_decoder(
    name: str,
    A: np.ndarray,
    Y: np.ndarray,
    *,
    k: int | None = None,
    tol: float | str | None = None,
    model: Any = None,
) -> np.ndarray:
    """Decode the batch ``Y`` (B, M, L) with decoder ``name``; return (B, N, L).

    Parameters
    ----------
    name : str
        One of :func:`decoder_names`.
    A : ndarray (M, N)
    Y : ndarray (B, M, L)
    k : int, optional
        Atoms per channel (greedy decoders).
    tol : float, optional
        Residual threshold (greedy decoders; see the module docstring).
    model : LSTMCS, optional
        Needed by ``"lstm-cs"`` (and a :class:`~cscore.BLSTMCS` by ``"blstm-cs"``).

    Returns
    -------
    ndarray (B, N, L)
        The estimates.
    """
    if name not in DECODERS:
        raise ValueError(f"unknown decoder {name!r}; known: {', '.join(DECODERS)}")
    fn, _, _ = DECODERS[name]
    return fn(A, Y, k=k, tol=tol, model=model)
