"""LSTM-CS: the learned greedy MMV decoder of Palangi, Ward and Deng (2016)."""

from __future__ import annotations

from .blstm import BLSTMCS, blstm_logits_native
from .decoder import LSTMCS, lstm_logits_native
from .model import (
    CELL_GATES,
    BLSTMCSWeights,
    LSTMCSWeights,
    ModelFileError,
    ProblemSpec,
    load_model_file,
    save_model_file,
)
from .pretrained import list_pretrained, pretrained

__all__ = [
    "BLSTMCS",
    "CELL_GATES",
    "LSTMCS",
    "BLSTMCSWeights",
    "LSTMCSWeights",
    "ModelFileError",
    "ProblemSpec",
    "blstm_logits_native",
    "list_pretrained",
    "load_model_file",
    "lstm_logits_native",
    "pretrained",
    "save_model_file",
]
