"""Learned greedy MMV decoders beside LSTM-CS: NWSOMP and CDSN-CS.

* :class:`NWSOMP` -- nonlinear weighted SOMP (Palangi, Ward, Deng 2013): a
  one-hidden-layer network scores atoms from each channel's residual; SOMP adds
  the best atom to the joint support.
* :class:`CDSNCS` -- CDSN-CS (Palangi's thesis, section 4.7, Algorithm 4): a
  convolutional deep stacking network over a window of channel residuals picks
  each channel's next atom.

Both share :class:`cscore.LSTMCS`'s ``decode(Y, *, n_nonzero=None, tol=None)``
and its model file container (with ``arch`` in the metadata); load any model
file with :func:`load_model`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..lstm_cs.model import read_model_meta
from ._file import register_arch
from .cdsn import CDSNCS, fit_cdsn
from .nwsomp import NWSOMP

__all__ = ["ARCH_CLASSES", "CDSNCS", "NWSOMP", "fit_cdsn", "load_model"]

#: architecture name in the model file -> class
ARCH_CLASSES: dict[str, Any] = {"nwsomp": NWSOMP, "cdsn": CDSNCS}
for _arch, _cls in ARCH_CLASSES.items():
    register_arch(_arch, _cls.expected_shapes)


def load_model(path: str | Path) -> Any:
    """Load any cscore model file, choosing the class by the ``arch`` in its metadata.

    Parameters
    ----------
    path : path
        An ``.npz`` model file.

    Returns
    -------
    LSTMCS, BLSTMCS, NWSOMP or CDSNCS
        LSTM-CS files (no ``arch``, or ``"lstm"``) load as :class:`cscore.LSTMCS`,
        ``"blstm"`` files as :class:`cscore.BLSTMCS`.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Malformed or of an unknown architecture.
    """
    from ..lstm_cs.model import ModelFileError

    arch = read_model_meta(path)["arch"]
    if arch in ARCH_CLASSES:
        return ARCH_CLASSES[arch].load(path)
    if arch in ("lstm", "blstm"):
        from ..lstm_cs.decoder import LSTMCS

        return LSTMCS.load(path)
    raise ModelFileError(f"{path}: unknown arch {arch!r}; known: lstm, {', '.join(ARCH_CLASSES)}")
