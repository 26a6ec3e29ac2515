"""Package-level settings: the number of threads used to decode batches, and the
instruction set the compiled kernels use."""

from __future__ import annotations

import numbers
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import _core

__all__ = [
    "MAX_THREADS",
    "get_num_threads",
    "instruction_set",
    "num_threads",
    "set_num_threads",
]

#: The largest thread count accepted anywhere (a larger value is a mistake).
MAX_THREADS = 1024


def _check_threads(name: str, value: Any, *, allow_none: bool) -> int | None:
    """Return ``value`` as a Python int in ``[1, MAX_THREADS]`` (or None when allowed)."""
    if value is None and allow_none:
        return None
    none = " or None" if allow_none else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a positive integer{none}, got {type(value).__name__} {value!r}"
        )
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be a positive integer{none}, got {value}")
    if value > MAX_THREADS:
        raise ValueError(f"{name} must be <= {MAX_THREADS}, got {value}")
    return value


def _default_threads() -> int:
    env = os.environ.get("CSCORE_NUM_THREADS")
    if env is not None and env.strip():
        try:
            value = int(env)
        except ValueError:
            value = 0
        if 1 <= value <= MAX_THREADS:
            return value
        warnings.warn(
            f"ignoring CSCORE_NUM_THREADS={env!r}: not an integer in [1, {MAX_THREADS}]",
            RuntimeWarning,
            stacklevel=2,
        )
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


_num_threads = _default_threads()


def get_num_threads() -> int:
    """Return the number of threads batched decoders use by default.

    The default is the number of CPUs this process may run on, or the value of the
    ``CSCORE_NUM_THREADS`` environment variable when it is set.

    Returns
    -------
    int
        The default thread count, in ``[1, MAX_THREADS]``.
    """
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the number of threads batched decoders use by default.

    Parameters
    ----------
    n : int
        A thread count in ``[1, MAX_THREADS]`` (Python or numpy integer).
        Results never depend on it.

    Raises
    ------
    TypeError
        ``n`` is not an integer.
    ValueError
        ``n`` is < 1 or > :data:`MAX_THREADS`.
    """
    global _num_threads
    value = _check_threads("set_num_threads: n", n, allow_none=False)
    assert value is not None
    _num_threads = value


@contextmanager
def num_threads(n: int) -> Iterator[None]:
    """Context manager that sets the default thread count temporarily.

    Parameters
    ----------
    n : int
        The thread count inside the ``with`` block (see :func:`set_num_threads`).

    Yields
    ------
    None
        The previous default is restored on exit, even after an exception.

    Examples
    --------
    >>> import cscore
    >>> with cscore.num_threads(1):
    ...     pass
    """
    old = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(old)


def resolve_threads(n_threads: Any) -> int:
    """Return ``n_threads`` checked, or the package default when it is None.

    Parameters
    ----------
    n_threads : int or None
        A Python or numpy integer in ``[1, MAX_THREADS]``, or None.

    Returns
    -------
    int
        The thread count to use.

    Raises
    ------
    TypeError
        Not an integer (bools and floats included).
    ValueError
        Outside ``[1, MAX_THREADS]``.
    """
    value = _check_threads("n_threads", n_threads, allow_none=True)
    return _num_threads if value is None else value


def instruction_set() -> str:
    """Return the instruction set the compiled kernels use in this process.

    It is the best the CPU supports (``"avx512"``, ``"avx2"`` or ``"generic"``),
    capped by the ``CSCORE_ISA`` environment variable (``generic``, ``avx2``,
    ``avx512`` or ``auto``), which is read once, when cscore is imported.
    ``CSCORE_DISABLE_AVX2=1`` is a deprecated alias of ``CSCORE_ISA=generic``.
    See ``docs/performance.md``.

    Returns
    -------
    str
        ``"avx512"``, ``"avx2"`` or ``"generic"``; never more than the CPU
        supports.

    Examples
    --------
    >>> from cscore._config import instruction_set
    >>> instruction_set() in ("avx512", "avx2", "generic")
    True
    """
    return str(_core.cpu_isa())


def _check_isa_variable() -> None:
    """Warn when ``CSCORE_ISA`` has a value the core did not recognize.

    The core reads the variable once (here, at import) and treats an unknown value
    as ``auto``.
    """
    variable, value, recognized = _core._cpu_isa_request()
    if not recognized:
        warnings.warn(
            f"ignoring {variable}={value!r}: not one of generic, avx2, avx512, auto; "
            f"using the best instruction set the CPU supports ({_core.cpu_isa()})",
            RuntimeWarning,
            stacklevel=3,
        )


_check_isa_variable()
