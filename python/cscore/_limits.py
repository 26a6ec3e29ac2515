"""The memory a single setting may ask for, and the one error that refuses it.

Settings that size an allocation (a beam width, a number of problems, a shape read
from a file) are checked against a memory budget before anything is allocated:
the estimate of the bytes the setting needs is compared with
:func:`memory_limit`, and a ``ValueError`` names the setting, the estimate and the
limit.  The budget is 4 GiB, or ``CSCORE_MEMORY_LIMIT`` (bytes, or with a suffix
``K``, ``M``, ``G``, ``T``: powers of 1024) when that environment variable is set.
It bounds what one setting can request, not what a process may use.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_MEMORY_LIMIT", "check_memory", "format_bytes", "memory_limit"]

#: The budget when ``CSCORE_MEMORY_LIMIT`` is unset: 4 GiB.
DEFAULT_MEMORY_LIMIT = 4 << 30

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memory_limit() -> int:
    """The memory budget of one setting, in bytes.

    Returns
    -------
    int
        ``CSCORE_MEMORY_LIMIT`` when set (``"512M"``, ``"8G"``, ``"1000000"``),
        else :data:`DEFAULT_MEMORY_LIMIT`.

    Raises
    ------
    ValueError
        ``CSCORE_MEMORY_LIMIT`` is set but is not a positive size.
    """
    raw = os.environ.get("CSCORE_MEMORY_LIMIT", "").strip()
    if not raw:
        return DEFAULT_MEMORY_LIMIT
    text = raw.upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _SUFFIX and text[-1:] else ""
    number = text[: len(text) - len(unit)].strip()
    try:
        value = float(number) * _SUFFIX[unit]
    except ValueError:
        value = float("nan")
    if not (value >= 1.0 and value < float(1 << 62)):
        raise ValueError(
            f"CSCORE_MEMORY_LIMIT must be a positive size such as 512M or 8G; got {raw!r}"
        )
    return int(value)


def format_bytes(n: float) -> str:
    """``n`` bytes as a short human string (``"1.5 GiB"``)."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def check_memory(setting: str, estimate: float, what: str = "") -> None:
    """Refuse a setting whose estimated memory exceeds :func:`memory_limit`.

    Parameters
    ----------
    setting : str
        The setting as the user wrote it (``"beam_width=1000000"``).
    estimate : float
        Bytes the setting would allocate (may be larger than any integer type).
    what : str, optional
        What the memory is for, appended to the message.

    Raises
    ------
    ValueError
        ``estimate`` exceeds the limit; one line naming the setting, the estimate
        and the limit.
    """
    limit = memory_limit()
    if not estimate <= limit:
        for_what = f" for {what}" if what else ""
        raise ValueError(
            f"{setting} would need about {format_bytes(estimate)}{for_what}, over the memory "
            f"limit of {format_bytes(limit)} (set CSCORE_MEMORY_LIMIT to raise it)"
        )
