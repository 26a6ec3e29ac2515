"""cscore: compressive-sensing decoders with a C++ core.

Measurements follow ``Y = A S + noise`` with ``A`` of shape (M, N), M < N, and a
sparse ``S`` of shape (N, L).  A single problem's ``Y`` is (M, L); a batch is
(B, M, L).  float64 is the default; float32 input stays float32.

Entry points
------------
Decoders (functions on ``A`` and ``Y``)
    :func:`omp`, :func:`somp` (greedy), :func:`bcs`, :func:`mtbcs` (Bayesian
    CS), :func:`tsbl`, :func:`tmsbl` (sparse Bayesian learning), :func:`amp`,
    :func:`vamp` (message passing).
Learned decoders (models)
    :func:`pretrained` / :func:`list_pretrained` (shipped models),
    :class:`LSTMCS`, :class:`BLSTMCS`, :class:`NWSOMP`, :class:`CDSNCS`,
    :class:`LISTA`, :class:`LAMP`;
    training: :func:`train_lstm_cs` and :mod:`cscore.training` (needs PyTorch).
One interface to every decoder
    :func:`decoder` (``cscore.decoder(name, A or model=..., **settings)``),
    :class:`Decoder` (the class it returns; configs as JSON), :func:`decoder_names`,
    :func:`register_decoder` (add your own).
Pipelines
    :func:`stream` (frames in, decoded frames out), :func:`decode_file`
    (resumable out-of-core runs), ``cscore.dask.decode`` (Dask).
Runtime
    :func:`set_num_threads`, :func:`get_num_threads`, :func:`num_threads`,
    :func:`instruction_set`; :class:`DecodeResult` (``return_result=True``).
Also
    :mod:`cscore.bench` (the paper's experiments), :mod:`cscore.datasets`,
    :mod:`cscore.metrics`, :mod:`cscore.seq` (echo state networks, R-DSN),
    :mod:`cscore.text` (LSTM sentence embeddings), :mod:`cscore.dask`,
    :mod:`cscore.testing` (``check_decoder``, the decoder contract), and the ``cscore`` command
    (``cscore --help``).  The layers: docs/architecture.md.
"""

from __future__ import annotations

from typing import Any

from . import _blas
from ._config import get_num_threads, instruction_set, num_threads, set_num_threads
from ._tol import ScaleWarning
from ._version import __version__
from .decoders import (
    BLSTMCS,
    CDSNCS,
    LAMP,
    LISTA,
    LSTMCS,
    NWSOMP,
    Decoder,
    amp,
    bcs,
    decoder,
    decoder_names,
    mtbcs,
    omp,
    register_decoder,
    somp,
    tmsbl,
    tsbl,
    vamp,
)
from .models import ModelFileError, list_pretrained, pretrained
from .pipelines import decode_file, stream
from .problem import ProblemSpec
from .result import DecodeResult

_blas.register()

#: Subpackages loaded on first use, so that decoding does not pay for their
#: imports at start-up: the sequence-model and text packages (thesis chapters 2
#: and 3), Dask (:mod:`cscore.dask`), training (PyTorch) and the conformance
#: check (:mod:`cscore.testing`).
_LAZY = {"seq": ".seq", "text": ".text", "dask": ".dask", "training": ".training",
         "testing": ".testing", "bench": ".bench", "datasets": ".datasets",
         "metrics": ".metrics"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return importlib.import_module(_LAZY[name], __name__)
    if name == "train_lstm_cs":  # needs torch only when called
        from .training.recipes import train_lstm_cs

        return train_lstm_cs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """What ``cscore`` offers: :data:`__all__` and its subpackages (not its imports)."""
    return sorted(set(__all__) | set(_LAZY) | {"decoders", "models", "pipelines"})


__all__ = [
    "BLSTMCS",
    "CDSNCS",
    "LAMP",
    "LISTA",
    "LSTMCS",
    "NWSOMP",
    "DecodeResult",
    "Decoder",
    "ModelFileError",
    "ProblemSpec",
    "ScaleWarning",
    "__version__",
    "amp",
    "bcs",
    "decode_file",
    "decoder",
    "decoder_names",
    "get_num_threads",
    "instruction_set",
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
    "vamp",
]
