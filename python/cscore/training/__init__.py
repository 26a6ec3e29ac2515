"""Training the learned decoders (PyTorch for the LSTMs and NWSOMP, NumPy for CDSN-CS).

* :mod:`~cscore.training.sequences` -- the training data of section 4.3.2 of
  Palangi's thesis (residuals and next-atom targets), shared by every kind;
* :mod:`~cscore.training.lstm` -- LSTM-CS and BLSTM-CS (``train_lstm_cs``,
  ``fit_lstm_cs``, :class:`TrainConfig`);
* :mod:`~cscore.training.nwsomp` -- NWSOMP's network (``fit_nwsomp``);
* :mod:`~cscore.training.cdsn` -- CDSN-CS (``fit_cdsn``).

This layer imports the decoders and the data sets; nothing under
:mod:`cscore.decoders` imports it.  torch is imported only when a function that
needs it runs.
"""

from __future__ import annotations

from .cdsn import CDSNTrainResult, fit_cdsn
from .lstm import TrainConfig, TrainResult, fit_lstm_cs, fit_sequences, train_lstm_cs
from .nwsomp import NWSOMPTrainResult, fit_nwsomp
from .sequences import IGNORE, default_steps, sequences_for_epoch, training_sequences

__all__ = [
    "IGNORE",
    "CDSNTrainResult",
    "NWSOMPTrainResult",
    "TrainConfig",
    "TrainResult",
    "default_steps",
    "fit_cdsn",
    "fit_lstm_cs",
    "fit_nwsomp",
    "fit_sequences",
    "sequences_for_epoch",
    "train_lstm_cs",
    "training_sequences",
]
