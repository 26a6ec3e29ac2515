"""LSTM-CS: the learned greedy MMV decoder of Palangi, Ward and Deng (2016)."""

from __future__ import annotations

from .model import (
    CELL_GATES,
    LSTMCSWeights,
    ModelFileError,
    ProblemSpec,
    load_model_file,
    save_model_file,
)

__all__ = [
    "CELL_GATES",
    "LSTMCSWeights",
    "ModelFileError",
    "ProblemSpec",
    "load_model_file",
    "save_model_file",
]
