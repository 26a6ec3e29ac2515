"""The one message for a missing optional dependency (an extra of ``cscore``)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["EXTRAS", "require"]

#: module -> the extra that installs it
EXTRAS = {"zarr": "pipeline", "dask": "dask", "distributed": "dask", "torch": "train"}


def require(module: str, purpose: str) -> Any:
    """Import ``module`` or raise an ImportError that says how to install it.

    Call it before any output or progress bar exists, so that a missing package
    leaves nothing behind.

    Parameters
    ----------
    module : str
        Top-level module name (``"zarr"``, ``"dask"``, ``"distributed"``, ``"torch"``).
    purpose : str
        What needs it, for the message (``"cscore decode"``).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    ImportError
        With ``pip install "cscore[<extra>]"`` in the message; ``name`` is the module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(module.split(".")[0])
        hint = f'pip install "cscore[{extra}]"' if extra else f"pip install {module}"
        raise ImportError(f"{purpose} needs {module}: {hint}", name=module) from exc
