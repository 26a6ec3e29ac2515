"""PyTorch implementations of cscore's decoders, behind ``device=``.

``device=None`` (the default of every decoder) runs the compiled CPU kernels
and never imports torch.  A torch device string (``"cpu"``, ``"cuda"``,
``"cuda:1"``) runs the implementation of the same algorithm here, on that
device: one module per family -- :mod:`.lstm` (LSTM-CS, BLSTM-CS),
:mod:`.greedy` (OMP, SOMP), :mod:`.unrolled` (LISTA, LAMP), :mod:`.amp` (AMP,
VAMP).  torch is imported by :func:`._common.get_torch` only, when a decode
runs; see ``docs/gpu.md``.
"""

from __future__ import annotations

from ._common import check_device

__all__ = ["check_device"]
