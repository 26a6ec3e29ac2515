"""Sequence models from the thesis's chapter 2: ESNs with learned weights and the R-DSN.

``ESN`` and ``RDSN`` follow scikit-learn's estimator conventions on lists of
variable-length sequences: ``fit(X, y)`` with ``X`` a list of (T_i, D) arrays
and ``y`` a list of (T_i,) frame labels; ``predict``, ``decision_function``,
``score``, ``get_params``/``set_params``; ``save``/``load`` without pickle.
``load_japanese_vowels`` reads the shipped Japanese Vowels data (see
docs/seq.md).
"""

from __future__ import annotations

from ._base import context_window
from ._data import SequenceData, load_japanese_vowels, read_ts
from ._esn import ESN
from ._files import SeqModelFileError, load_model
from ._metrics import frame_error, utterance_error
from ._rdsn import RDSN

__all__ = [
    "ESN",
    "RDSN",
    "SeqModelFileError",
    "SequenceData",
    "context_window",
    "frame_error",
    "load_japanese_vowels",
    "load_model",
    "read_ts",
    "utterance_error",
]
