"""The learned decoders: greedy loops whose atom choice a network makes, and unrolled networks.

* :class:`LSTMCS` -- LSTM-CS (Palangi, Ward, Deng 2016): an LSTM over the
  channels names each channel's next atom (compiled kernel).
* :class:`BLSTMCS` -- bidirectional LSTM-CS (thesis section 4.6).
* :class:`NWSOMP` -- nonlinear weighted SOMP (Palangi, Ward, Deng 2013): a
  one-hidden-layer network scores atoms; one support shared by the channels.
* :class:`CDSNCS` -- CDSN-CS (thesis section 4.7): a convolutional deep stacking
  network over a window of channel residuals.
* :class:`LISTA`, :class:`LAMP` -- unrolled networks (learned ISTA, Gregor &
  LeCun 2010; learned AMP, Borgerding et al. 2017): T layers of a linear step and
  a shrinkage, ``decode(Y, *, n_layers=None, return_result=False)``
  (:mod:`~cscore.decoders.learned.lista`, :mod:`~cscore.decoders.learned.lamp` on
  :mod:`~cscore.decoders.learned.unrolled`; not greedy).

The greedy ones share :class:`~cscore.decoders.learned.greedy_model.GreedyModel` (the decode
skeleton: ``decode(Y, *, n_nonzero=None, tol=None, return_result=False)``).  Every
one reads and writes its files through the one model-file protocol of
:class:`~cscore.decoders.learned.base.LearnedModel` (a table of parameters,
:class:`FileParam`, and of entries, :class:`FileArray`, and two hooks) in the one
container (:mod:`cscore.models.format`).  Training lives in :mod:`cscore.training`.
"""

from __future__ import annotations

from .base import FileArray, FileParam, LearnedModel
from .blstm import BLSTMCS, blstm_logits_native
from .cdsn import CDSNCS
from .greedy_model import GreedyModel
from .lamp import LAMP
from .lista import LISTA
from .lstm import LSTMCS, lstm_logits_native
from .nwsomp import NWSOMP
from .scored import ScoredGreedyModel
from .unrolled import UnrolledModel
from .weights import CELL_GATES, BLSTMCSWeights, LSTMCSWeights, load_model_file, save_model_file

__all__ = [
    "BLSTMCS",
    "CDSNCS",
    "CELL_GATES",
    "LAMP",
    "LISTA",
    "LSTMCS",
    "NWSOMP",
    "BLSTMCSWeights",
    "FileArray",
    "FileParam",
    "GreedyModel",
    "LSTMCSWeights",
    "LearnedModel",
    "ScoredGreedyModel",
    "UnrolledModel",
    "blstm_logits_native",
    "load_model_file",
    "lstm_logits_native",
    "save_model_file",
]
