"""Train a learned decoder and return it ready to decode and save: one function per kind.

* :func:`train_lstm_model` -- LSTM-CS or BLSTM-CS (:func:`~cscore.training.lstm.fit_lstm_cs`);
* :func:`train_nwsomp_model` -- NWSOMP (:func:`~cscore.training.nwsomp.fit_nwsomp`);
* :func:`train_cdsn_model` -- CDSN-CS (:func:`~cscore.training.cdsn.fit_cdsn`).

Each takes training and validation ground truths (see :mod:`cscore.training.data`),
the sensing matrix and the :class:`~cscore.problem.ProblemSpec`, fits, and
returns ``(model, result)``: the decoder, whose ``info`` is the given
provenance plus a ``"training"`` record (settings, history, time), and the
fitting function's result.  ``model.save(path)`` writes the model file.
``cscore train`` and ``scripts/train_pretrained.py`` train through these.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..decoders.learned.weights import BLSTMCSWeights, LSTMCSWeights
from ..problem import ProblemSpec
from .cdsn import CDSNTrainResult, fit_cdsn
from .interrupt import TrainingInterrupted
from .lstm import fit_lstm_cs, training_info
from .lstm_config import TrainConfig, TrainResult
from .nwsomp import NWSOMPTrainResult, fit_nwsomp

if TYPE_CHECKING:
    from ..decoders.learned import CDSNCS, LSTMCS, NWSOMP

__all__ = ["train_cdsn_model", "train_lstm_cs", "train_lstm_model", "train_nwsomp_model"]


def _checked_matrix(A: np.ndarray, spec: ProblemSpec, S_train: np.ndarray) -> np.ndarray:
    """``A`` as float64 after checking it and the ground truths against ``spec``.

    Done before training, so that a mismatch fails at once rather than after the fit.
    """
    if not isinstance(spec, ProblemSpec):
        raise TypeError(f"spec must be a ProblemSpec, got {type(spec).__name__}")
    A = np.asarray(A, dtype=np.float64)
    if A.shape != (spec.M, spec.N):
        raise ValueError(f"A has shape {A.shape}, but spec says (M, N) = ({spec.M}, {spec.N})")
    shape = np.shape(S_train)
    if len(shape) != 3 or shape[1:] != (spec.N, spec.L):
        raise ValueError(f"S_train must be (P, {spec.N}, {spec.L}) for spec, got {shape}")
    return A


_R = TypeVar("_R")
_M = TypeVar("_M")


def _fit_and_wrap(fit: Callable[[], _R], wrap: Callable[[_R], _M]) -> tuple[_M, _R]:
    """``(wrap(result), result)`` of ``fit()``; on Ctrl-C the best model so far,
    wrapped and ready to save, rides on the :class:`TrainingInterrupted`."""
    try:
        res = fit()
    except TrainingInterrupted as stop:
        if stop.result is not None:
            stop.model = wrap(stop.result)
        raise
    return wrap(res), res


def train_lstm_model(
    S_train: np.ndarray,
    S_val: np.ndarray,
    A: np.ndarray,
    spec: ProblemSpec,
    *,
    config: TrainConfig | None = None,
    n_steps: int | None = None,
    k_range: tuple[int, int] | None = None,
    sigma: float = 0.005,
    problems_per_epoch: int | None = None,
    init: LSTMCSWeights | BLSTMCSWeights | None = None,
    info: dict[str, Any] | None = None,
    rollout: float = 0.0,
    **config_kwargs: Any,
) -> tuple[LSTMCS, TrainResult]:
    """Train an LSTM-CS (or, with ``arch="blstm"``, BLSTM-CS) decoder.

    Parameters
    ----------
    S_train, S_val : ndarray (P, N, L)
        Training and validation ground truths.
    A : ndarray (M, N)
        The sensing matrix.
    spec : ProblemSpec
        What the model is for; must match ``A`` and ``S_train``.
    config : TrainConfig, optional
        Or its fields as keyword arguments (``config_kwargs``).
    n_steps, k_range, sigma, problems_per_epoch, rollout
        Training data settings, as in :func:`~cscore.training.lstm.fit_lstm_cs`.
    init : LSTMCSWeights or BLSTMCSWeights, optional
        Weights to continue from.
    info : dict, optional
        Provenance for the model's ``info`` (copied; the training record is
        added by :func:`~cscore.training.lstm.training_info`).
    **config_kwargs
        :class:`~cscore.training.lstm.TrainConfig` fields, when ``config`` is not given.

    Returns
    -------
    model : LSTMCS
        A :class:`~cscore.BLSTMCS` for ``arch="blstm"``; the best weights by
        validation loss.
    result : TrainResult

    Raises
    ------
    ValueError
        ``A`` or ``S_train`` does not match ``spec``, or a setting is out of range.
    """
    from ..decoders.learned import BLSTMCS, LSTMCS

    A = _checked_matrix(A, spec, S_train)

    def wrap(res: TrainResult) -> LSTMCS:
        meta = training_info(res, info)
        if isinstance(res.weights, BLSTMCSWeights):
            return BLSTMCS(res.weights, A, spec, meta)
        return LSTMCS(res.weights, A, spec, meta)

    return _fit_and_wrap(lambda: fit_lstm_cs(
        S_train, S_val, A, n_steps=n_steps, k_range=k_range, sigma=sigma,
        problems_per_epoch=problems_per_epoch, config=config, init=init, rollout=rollout,
        **config_kwargs), wrap)


def train_nwsomp_model(
    S_train: np.ndarray,
    S_val: np.ndarray,
    A: np.ndarray,
    spec: ProblemSpec,
    *,
    info: dict[str, Any] | None = None,
    **fit_kwargs: Any,
) -> tuple[NWSOMP, NWSOMPTrainResult]:
    """Train an NWSOMP decoder.

    Parameters
    ----------
    S_train, S_val : ndarray (P, N, L)
        Training and validation ground truths.
    A : ndarray (M, N)
        The sensing matrix.
    spec : ProblemSpec
        What the model is for; must match ``A`` and ``S_train``.
    info : dict, optional
        Provenance for the model's ``info`` (copied); ``"training"`` is set to
        the fit's settings, best epoch, seconds and history.
    **fit_kwargs
        Settings of :func:`~cscore.training.nwsomp.fit_nwsomp` (``n_hidden``,
        ``k_range``, ``epochs``, ...).

    Returns
    -------
    model : NWSOMP
        The best weights by validation loss.
    result : NWSOMPTrainResult

    Raises
    ------
    ValueError
        ``A`` or ``S_train`` does not match ``spec``, or a setting is out of range.
    """
    from ..decoders.learned import NWSOMP

    A = _checked_matrix(A, spec, S_train)

    def wrap(res: NWSOMPTrainResult) -> NWSOMP:
        meta = dict(info or {})
        meta["training"] = {**res.settings, "best_epoch": res.best_epoch,
                            "seconds": round(res.seconds, 1), "history": res.history}
        w = res.weights
        return NWSOMP(w["W1"], w["b1"], w["W2"], w["b2"], A, spec, meta)

    return _fit_and_wrap(lambda: fit_nwsomp(S_train, S_val, A, **fit_kwargs), wrap)


def train_cdsn_model(
    S_train: np.ndarray,
    S_val: np.ndarray,
    A: np.ndarray,
    spec: ProblemSpec,
    *,
    info: dict[str, Any] | None = None,
    history_entries: int | None = None,
    **fit_kwargs: Any,
) -> tuple[CDSNCS, CDSNTrainResult]:
    """Train a CDSN-CS decoder (NumPy only).

    Parameters
    ----------
    S_train, S_val : ndarray (P, N, L)
        Training and validation ground truths.
    A : ndarray (M, N)
        The sensing matrix.
    spec : ProblemSpec
        What the model is for; must match ``A`` and ``S_train``.
    info : dict, optional
        Provenance for the model's ``info`` (copied); ``"training"`` is set to
        the fit's settings, seconds and log.
    history_entries : int, optional
        Keep only the last this many entries of the training log in ``info``
        (None: all of it).
    **fit_kwargs
        Settings of :func:`~cscore.training.cdsn.fit_cdsn` (``window``,
        ``n_modules``, ``n_hidden``, ...).

    Returns
    -------
    model : CDSNCS
    result : CDSNTrainResult

    Raises
    ------
    ValueError
        ``A`` or ``S_train`` does not match ``spec``, or a setting is out of range.
    """
    from ..decoders.learned import CDSNCS

    if history_entries is not None and (isinstance(history_entries, bool)
                                        or not isinstance(history_entries, int)
                                        or history_entries < 1):
        raise ValueError(f"history_entries must be an int >= 1, got {history_entries!r}")
    A = _checked_matrix(A, spec, S_train)
    res = fit_cdsn(S_train, S_val, A, **fit_kwargs)
    history = res.history if history_entries is None else res.history[-history_entries:]
    meta = dict(info or {})
    meta["training"] = {**res.settings, "seconds": round(res.seconds, 1), "history": history}
    return CDSNCS(res.modules, res.window, A, spec, meta), res


def train_lstm_cs(
    S_train: np.ndarray,
    S_val: np.ndarray,
    A: np.ndarray,
    spec: ProblemSpec | None = None,
    *,
    path: str | Path | None = None,
    info: dict[str, Any] | None = None,
    n_steps: int | None = None,
    k_range: tuple[int, int] | None = None,
    sigma: float = 0.005,
    problems_per_epoch: int | None = None,
    config: TrainConfig | None = None,
    **config_kwargs: Any,
) -> Any:
    """Train an LSTM-CS model and return it as a :class:`cscore.LSTMCS` decoder.

    Parameters
    ----------
    S_train, S_val, A, n_steps, k_range, sigma, problems_per_epoch, config, **config_kwargs
        As in :func:`fit_lstm_cs`.
    spec : ProblemSpec, optional
        What the model is for (default: sizes only, from ``A`` and ``S_train``).
    path : str or Path, optional
        Also write the model file there.
    info : dict, optional
        Free-form provenance stored in the file (training settings are added).

    Returns
    -------
    cscore.LSTMCS
        A :class:`cscore.BLSTMCS` when trained with ``arch="blstm"``.
    """
    A = np.asarray(A, dtype=np.float64)
    S_train = np.asarray(S_train)
    if spec is None:
        spec = ProblemSpec(M=int(A.shape[0]), N=int(A.shape[1]), L=int(S_train.shape[2]))
    if (spec.M, spec.N) != A.shape or spec.L != S_train.shape[2]:
        raise ValueError(f"spec {spec} does not match A {A.shape} and L={S_train.shape[2]}")
    model, _ = train_lstm_model(S_train, S_val, A, spec, config=config, n_steps=n_steps,
                                k_range=k_range, sigma=sigma,
                                problems_per_epoch=problems_per_epoch, info=info,
                                **config_kwargs)
    if path is not None:
        model.save(path)
    return model
