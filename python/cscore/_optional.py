"""The one message for a missing optional dependency (an extra of ``cscore-decoders``)."""

from __future__ import annotations

import importlib
import re
from typing import Any

from ._version import DISTRIBUTION

__all__ = ["EXTRAS", "install_hint", "require"]

#: module -> the extra that installs it
EXTRAS = {
    "zarr": "pipeline",
    "dask": "dask",
    "distributed": "dask",
    "torch": "train",
    "spkit": "sensor",
    "matplotlib": "plot",
    "rank_bm25": "text",
}


def install_hint(module: str) -> str:
    """The install command for ``module``: ``pip install "cscore-decoders[<extra>]"``.

    Parameters
    ----------
    module : str
        Module name (``"zarr"``, ``"dask.array"``, ...); its top-level package
        picks the extra.

    Returns
    -------
    str
        ``pip install "cscore-decoders[<extra>]"``, or ``pip install <module>`` for a
        package that no extra installs.
    """
    extra = EXTRAS.get(module.split(".")[0])
    return f'pip install "{DISTRIBUTION}[{extra}]"' if extra else f"pip install {module}"


def _version_tuple(version: str) -> tuple[int, ...]:
    """Leading numeric release parts: ``"3.0.0rc1"`` -> (3, 0, 0), ``"2.18"`` -> (2, 18)."""
    parts = []
    for piece in version.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if len(digits.group()) != len(piece):
            break
    return tuple(parts)


def _older(version: str, minimum: str) -> bool:
    have, want = _version_tuple(version), _version_tuple(minimum)
    if not have:  # an unreadable version is given the benefit of the doubt
        return False
    width = max(len(have), len(want))
    return have + (0,) * (width - len(have)) < want + (0,) * (width - len(want))


def require(module: str, purpose: str, min_version: str | None = None) -> Any:
    """Import ``module`` or raise an ImportError that says how to install it.

    Call it before any output or progress bar exists, so that a missing package
    leaves nothing behind.

    Parameters
    ----------
    module : str
        Module name (``"zarr"``, ``"dask.array"``, ``"distributed"``, ``"torch"``).
    purpose : str
        What needs it, for the message (``"cscore decode"``).
    min_version : str, optional
        Oldest usable release of the top-level package (``"3"``: zarr 3 or
        newer); an older installed one raises the same install message.  A
        package without a readable ``__version__`` is accepted.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    ImportError
        With ``pip install "cscore-decoders[<extra>]"`` in the message; ``name`` is the module.
    """
    hint = install_hint(module)
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{purpose} needs {module}: {hint}", name=module) from exc
    if min_version is not None:
        top = module.split(".")[0]
        version = str(getattr(importlib.import_module(top), "__version__", ""))
        if _older(version, min_version):
            raise ImportError(
                f"{purpose} needs {top} {min_version} ({top} {version} is installed): {hint}",
                name=top,
            )
    return mod
