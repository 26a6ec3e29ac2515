"""Package-level settings: the number of threads used to decode batches."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["get_num_threads", "num_threads", "set_num_threads"]


def _default_threads() -> int:
    env = os.environ.get("CSCORE_NUM_THREADS")
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value >= 1:
            return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


_num_threads = _default_threads()


def get_num_threads() -> int:
    """Return the number of threads batched decoders use by default.

    The default is the number of CPUs this process may run on, or the value of the
    ``CSCORE_NUM_THREADS`` environment variable when it is set.
    """
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the number of threads batched decoders use by default.

    Parameters
    ----------
    n : int
        A positive thread count.  Results never depend on it.
    """
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, (int,)) or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    _num_threads = int(n)


@contextmanager
def num_threads(n: int) -> Iterator[None]:
    """Context manager that sets the default thread count temporarily.

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


def resolve_threads(n_threads: int | None) -> int:
    """Return ``n_threads`` checked, or the package default when it is None."""
    if n_threads is None:
        return _num_threads
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        raise ValueError(f"n_threads must be a positive int or None, got {n_threads!r}")
    return n_threads
