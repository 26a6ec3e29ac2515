"""Training the learned decoders (PyTorch for the LSTMs and NWSOMP, NumPy for CDSN-CS).

* :mod:`~cscore.training.sequences` -- the training data of section 4.3.2 of
  Palangi's thesis (residuals and next-atom targets), shared by every kind;
* :mod:`~cscore.training.lstm` -- LSTM-CS and BLSTM-CS (``train_lstm_cs``,
  ``fit_lstm_cs``, :class:`TrainConfig`);
* :mod:`~cscore.training.nwsomp` -- NWSOMP's network (``fit_nwsomp``);
* :mod:`~cscore.training.cdsn` -- CDSN-CS (``fit_cdsn``);
* :mod:`~cscore.training.data` -- the data sources: ground truths and
  :class:`~cscore.problem.ProblemSpec` for MNIST, an image folder, the demo
  images, the CDSN-CS MSRC split;
* :mod:`~cscore.training.recipes` -- one function per model kind that trains
  and returns the decoder (``cscore train`` and ``scripts/train_pretrained.py``
  use them).

This layer imports the decoders and the data sets; nothing under
:mod:`cscore.decoders` imports it.  torch is imported only when a function that
needs it runs.
"""

from __future__ import annotations

from .cdsn import CDSNTrainResult, fit_cdsn
from .data import (
    TRAINING_SOURCES,
    cdsn_msrc_training_data,
    demo_training_data,
    folder_training_data,
    mnist_training_data,
)
from .interrupt import TrainingInterrupted
from .lstm import fit_lstm_cs, fit_sequences
from .lstm_config import TrainConfig, TrainResult
from .nwsomp import NWSOMPTrainResult, fit_nwsomp
from .recipes import train_cdsn_model, train_lstm_cs, train_lstm_model, train_nwsomp_model
from .sequences import IGNORE, default_steps, sequences_for_epoch, training_sequences
from .unrolled import UnrolledTrainConfig, UnrolledTrainResult, train_unrolled

__all__ = [
    "IGNORE",
    "TRAINING_SOURCES",
    "CDSNTrainResult",
    "NWSOMPTrainResult",
    "TrainConfig",
    "TrainResult",
    "TrainingInterrupted",
    "UnrolledTrainConfig",
    "UnrolledTrainResult",
    "cdsn_msrc_training_data",
    "default_steps",
    "demo_training_data",
    "fit_cdsn",
    "fit_lstm_cs",
    "fit_nwsomp",
    "fit_sequences",
    "folder_training_data",
    "mnist_training_data",
    "sequences_for_epoch",
    "train_cdsn_model",
    "train_lstm_cs",
    "train_lstm_model",
    "train_nwsomp_model",
    "train_unrolled",
    "training_sequences",
]
