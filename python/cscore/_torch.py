"""The one place cscore imports PyTorch (an optional extra: ``cscore-decoders[train]``)."""

from __future__ import annotations

from typing import Any

from ._version import DISTRIBUTION

__all__ = ["import_torch"]


def import_torch(purpose: str = "training cscore models") -> Any:
    """Import torch or raise an ImportError that says how to get it.

    Parameters
    ----------
    purpose : str
        What needs torch, for the message.

    Returns
    -------
    module
        The ``torch`` module.
    """
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f'{purpose} needs PyTorch: pip install "{DISTRIBUTION}[train]" (to keep a CPU-only '
            "build, install one first, e.g. pip install torch==2.13.0)"
        ) from exc
    return torch
