"""LSTM-CS: the learned greedy MMV decoder of Palangi, Ward and Deng (2016)."""

from __future__ import annotations

from .blstm import BLSTMCS, blstm_logits_native
from .decoder import LSTMCS, lstm_logits_native
from .model import (
    BLSTMCSWeights,
    CELL_GATES,
    LSTMCSWeights,
    ModelFileError,
    ProblemSpec,
    load_model_file,
    save_model_file,
)
from .pretrained import list_pretrained, pretrained

__all__ = [
    "BLSTMCS",
    "BLSTMCSWeights",
    "CELL_GATES",
    "LSTMCS",
    "LSTMCSWeights",
    "ModelFileError",
    "ProblemSpec",
    "list_pretrained",
    "blstm_logits_native",
    "load_model_file",
    "lstm_logits_native",
    "pretrained",
    "save_model_file",
]
