"""cscore: compressive-sensing decoders with a C++ core.

Measurements follow ``Y = A S + noise`` with ``A`` of shape (M, N), M < N, and a
sparse ``S`` of shape (N, L).  A single problem's ``Y`` is (M, L); a batch is
(B, M, L).  float64 is the default; float32 input is accepted.
"""

from __future__ import annotations

from typing import Any

from . import _blas
from ._config import get_num_threads, num_threads, set_num_threads
from .bcs import bcs, mtbcs
from .decoder import Decoder, decoder, decoder_names, register_decoder
from .greedy import omp, somp
from .learned import CDSNCS, NWSOMP
from .lstm_cs import BLSTMCS, LSTMCS, list_pretrained, pretrained
from .lstm_cs.train import train_lstm_cs
from .pipeline import decode_file, stream
from .result import DecodeResult
from .sbl import tmsbl, tsbl

_blas.register()


def __getattr__(name: str) -> Any:
    # The sequence-model and text packages (thesis chapters 2 and 3) load on first
    # use, so that decoding does not pay for their imports at start-up.
    if name in ("seq", "text"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__version__ = "0.1.0"

__all__ = [
    "BLSTMCS",
    "CDSNCS",
    "LSTMCS",
    "NWSOMP",
    "DecodeResult",
    "Decoder",
    "__version__",
    "bcs",
    "decode_file",
    "decoder",
    "decoder_names",
    "get_num_threads",
    "list_pretrained",
    "mtbcs",
    "num_threads",
    "omp",
    "pretrained",
    "register_decoder",
    "seq",
    "set_num_threads",
    "somp",
    "stream",
    "text",
    "tmsbl",
    "train_lstm_cs",
    "tsbl",
]
