"""The learned decoders: a network picks atoms inside a greedy least-squares loop.

* :class:`LSTMCS` -- LSTM-CS (Palangi, Ward, Deng 2016): an LSTM over the
  channels names each channel's next atom (compiled kernel).
* :class:`BLSTMCS` -- bidirectional LSTM-CS (thesis section 4.6).
* :class:`NWSOMP` -- nonlinear weighted SOMP (Palangi, Ward, Deng 2013): a
  one-hidden-layer network scores atoms; one support shared by the channels.
* :class:`CDSNCS` -- CDSN-CS (thesis section 4.7): a convolutional deep stacking
  network over a window of channel residuals.

All share :class:`~cscore.decoders.learned.base.GreedyModel` (the decode
skeleton: ``decode(Y, *, n_nonzero=None, tol=None, return_result=False)``) and
one model file container (:mod:`cscore.models.format`).  Training lives in
:mod:`cscore.training`.
"""

from __future__ import annotations

from .base import GreedyModel, LearnedModel
from .blstm import BLSTMCS, blstm_logits_native
from .cdsn import CDSNCS
from .lstm import LSTMCS, lstm_logits_native
from .nwsomp import NWSOMP
from .scored import ScoredGreedyModel
from .weights import CELL_GATES, BLSTMCSWeights, LSTMCSWeights, load_model_file, save_model_file

__all__ = [
    "BLSTMCS",
    "CDSNCS",
    "CELL_GATES",
    "LSTMCS",
    "NWSOMP",
    "BLSTMCSWeights",
    "GreedyModel",
    "LSTMCSWeights",
    "LearnedModel",
    "ScoredGreedyModel",
    "blstm_logits_native",
    "load_model_file",
    "lstm_logits_native",
    "save_model_file",
]
