"""cscore: compressive-sensing decoders with a C++ core.

Measurements follow ``Y = A S + noise`` with ``A`` of shape (M, N), M < N, and a
sparse ``S`` of shape (N, L).  A single problem's ``Y`` is (M, L); a batch is
(B, M, L).  float64 is the default; float32 input is accepted.
"""

from __future__ import annotations

from . import _blas, text
from ._config import get_num_threads, num_threads, set_num_threads
from .bcs import bcs, mtbcs
from .greedy import omp, somp
from .lstm_cs import LSTMCS, list_pretrained, pretrained
from .lstm_cs.train import train_lstm_cs
from .result import DecodeResult
from .sbl import tmsbl, tsbl

_blas.register()

__version__ = "0.1.0"

__all__ = [
    "LSTMCS",
    "DecodeResult",
    "__version__",
    "bcs",
    "get_num_threads",
    "list_pretrained",
    "mtbcs",
    "num_threads",
    "omp",
    "pretrained",
    "set_num_threads",
    "somp",
    "text",
    "tmsbl",
    "train_lstm_cs",
    "tsbl",
]
