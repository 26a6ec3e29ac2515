"""What every PyTorch decoder shares: the lazy torch import, devices, chunks.

torch is imported only here, and only when a decode asks for a device
(``device="cpu"``, ``"cuda"``, ``"cuda:1"``), through the project's one
missing-extra message (:func:`cscore._optional.require`).

Batch independence.  A problem's atoms must not depend on the batch it is
decoded in nor on how the batch is cut into chunks.  A BLAS matrix product's
rows depend on the product's shape (the kernel's blocking changes with the
number of rows), so every product that feeds a decision goes through
:func:`row_matmul`: the rows are cut into blocks of :data:`BLOCK` rows (the last
one padded with zeros) and multiplied as one batched product of equal
``BLOCK``-row matrices, so a row's result is the same whatever the number of
rows.  The rest is elementwise or reduces over one problem's own entries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._optional import require

__all__ = ["BLOCK", "check_device", "chunk_rows", "get_torch", "row_matmul", "to_numpy"]

#: Rows per block of :func:`row_matmul` (and the granularity of chunks).
BLOCK = 64
#: Problems per chunk on a CPU device (fixed: results never depend on it anyway).
CPU_CHUNK = 256
#: Most problems per chunk on a GPU.
GPU_CHUNK_MAX = 65536
#: Share of the free device memory a chunk may take.
MEMORY_SHARE = 0.5


def get_torch() -> Any:
    """Import torch with the project's missing-extra message."""
    return require("torch", "decoding with device=")


def check_device(device: Any) -> Any:
    """The ``torch.device`` that ``device`` names; raises before any work.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ... (``None`` is the compiled path
        and never reaches here).

    Returns
    -------
    torch.device

    Raises
    ------
    ImportError
        torch is not installed (the message says how to get it).
    TypeError
        ``device`` is neither a string nor a ``torch.device``.
    ValueError
        Not a device name, or a CUDA device that is not there.
    """
    if isinstance(device, bool) or not (isinstance(device, str) or hasattr(device, "type")):
        raise TypeError(f"device must be None or a torch device string such as 'cpu' or "
                        f"'cuda', got {type(device).__name__}")
    torch = get_torch()
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"device {device!r} is not a torch device: {exc}") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r}: no CUDA device is available")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA "
                             "device(s)")
    elif dev.type != "cpu":
        raise ValueError(f"device {device!r}: cscore runs on 'cpu' and 'cuda' devices")
    return dev


def chunk_rows(dev: Any, bytes_per_problem: int, chunk: int | None = None,
               batch: int | None = None) -> int:
    """Problems per chunk: ``chunk`` if given, else :data:`CPU_CHUNK` on a CPU and
    what fits in :data:`MEMORY_SHARE` of the free memory of a GPU (at most
    :data:`GPU_CHUNK_MAX`); no more than the ``batch`` rounded up to whole
    blocks; a multiple of :data:`BLOCK`, at least one block.

    A batch larger than a chunk is decoded chunk after chunk, so no decode fails
    for its size alone; the results do not depend on the chunk size.
    """
    if chunk is None:
        if dev.type == "cuda":
            torch = get_torch()
            free, _ = torch.cuda.mem_get_info(dev)
            chunk = min(GPU_CHUNK_MAX, int(MEMORY_SHARE * free) // max(1, bytes_per_problem))
        else:
            chunk = CPU_CHUNK
    if batch is not None:
        chunk = min(int(chunk), -(-batch // BLOCK) * BLOCK)
    return max(BLOCK, int(chunk) // BLOCK * BLOCK)


def row_matmul(X: Any, Wt: Any) -> Any:
    """``X @ Wt`` for ``X`` (R, K), ``Wt`` (K, N), each row independent of R.

    The rows go in blocks of :data:`BLOCK` (zero padded) through one batched
    product of equal matrices (see the module docstring).
    """
    torch = get_torch()
    R, K = X.shape
    nb = -(-R // BLOCK)
    if nb * BLOCK != R:
        X = torch.cat([X, X.new_zeros((nb * BLOCK - R, K))])
    out = torch.bmm(X.reshape(nb, BLOCK, K), Wt.unsqueeze(0).expand(nb, K, Wt.shape[1]))
    return out.reshape(nb * BLOCK, -1)[:R]


def to_numpy(t: Any) -> np.ndarray:
    """A torch tensor as a NumPy array on the host."""
    return np.asarray(t.detach().cpu().numpy())
