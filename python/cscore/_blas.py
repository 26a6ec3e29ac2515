"""Hand SciPy's BLAS/LAPACK function pointers to the compiled core.

cscore is built without any BLAS headers or libraries.  SciPy ships an optimized
BLAS/LAPACK and exports every routine as a PyCapsule in
``scipy.linalg.cython_blas.__pyx_capi__`` (and ``cython_lapack``).  At import we
pass the routines the core uses to ``_core._set_blas``; the core falls back to
portable loops for any routine that is missing.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import _core

#: BLAS routines the core may call (Fortran interface, column-major).
BLAS_ROUTINES: tuple[str, ...] = (
    "sgemm",
    "dgemm",
    "zgemm",
    "sgemv",
    "dgemv",
    "dsyrk",
    "ssyrk",
    "dtrsm",
    "strsm",
    "dtrsv",
    "strsv",
)

#: LAPACK routines the core may call.
LAPACK_ROUTINES: tuple[str, ...] = (
    "dpotrf",
    "spotrf",
    "dpotrs",
    "dpotri",
    "dsyev",
    "dsyevd",
    "zheevd",
    "dgesv",
    "dgeqrf",
)


def register() -> list[str]:
    """Register SciPy's BLAS/LAPACK with the core; return the registered names.

    Returns an empty list (and the core uses its fallbacks) if SciPy's capsules
    are not available.
    """
    capsules: dict[str, object] = {}
    try:
        from scipy.linalg import cython_blas, cython_lapack
    except ImportError:  # pragma: no cover - scipy is a hard dependency
        return []
    blas_capi = getattr(cython_blas, "__pyx_capi__", {})
    lapack_capi = getattr(cython_lapack, "__pyx_capi__", {})
    for name in BLAS_ROUTINES:
        if name in blas_capi:
            capsules[name] = blas_capi[name]
    for name in LAPACK_ROUTINES:
        if name in lapack_capi:
            capsules[name] = lapack_capi[name]
    _core._set_blas(capsules)
    return sorted(capsules)


# --------------------------------------------------------------------------- thread limit

_LIMIT_LOCK = threading.Lock()
_LIMIT_DEPTH = 0
_LIMIT_SAVED: list[tuple[Any, int]] = []
_BLAS_LIBS: list[Any] | None = None
_LOCAL_SETTERS: list[Any] | None = None


def _local_setters() -> list[Any]:
    """OpenBLAS's per-thread ``openblas_set_num_threads_local`` (0.3.27+), if any."""
    global _LOCAL_SETTERS
    if _LOCAL_SETTERS is None:
        found = []
        for lib in _blas_controllers():
            fn = getattr(getattr(lib, "dynlib", None), "openblas_set_num_threads_local", None)
            if fn is not None:
                fn.restype = ctypes.c_int
                fn.argtypes = [ctypes.c_int]
                found.append((lib, fn))
        _LOCAL_SETTERS = found
    return _LOCAL_SETTERS


def _blas_controllers() -> list[Any]:
    """threadpoolctl's controllers of the loaded BLAS libraries (looked up once)."""
    global _BLAS_LIBS
    if _BLAS_LIBS is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a declared dependency
            _BLAS_LIBS = []
        else:
            ctl = ThreadpoolController()
            _BLAS_LIBS = [lib for lib in ctl.lib_controllers if lib.user_api == "blas"]
    return _BLAS_LIBS


#: Keep the BLAS single-threaded while a decoder runs (the default; see
#: ``benchmarks/bench_lstm_speed.py`` for the measurement behind it).  A
#: benchmarking switch: with False, :func:`single_threaded_blas` does nothing.
LIMIT_BLAS_THREADS = True


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Keep the process's BLAS single-threaded while the block runs.

    The setting is process-wide, so overlapping blocks (several Python threads
    decoding at once) share one limit: the first to enter saves every BLAS
    library's thread count and sets it to 1, the last to leave restores the saved
    counts.  (Saving and restoring per block would let a block that starts while
    another holds the limit save "1" and restore it last, leaving the BLAS
    single-threaded for good.)

    OpenBLAS (0.3.30 at least) does not always honour the process-wide setting
    for calls made from a thread other than the one that changed it, so the
    calling thread's own count is also set to 1 with OpenBLAS's
    ``openblas_set_num_threads_local`` (and set back by the last one out), so a
    decode gives the same result on the main thread and on a worker thread.
    """
    global _LIMIT_DEPTH, _LIMIT_SAVED
    if not LIMIT_BLAS_THREADS:
        yield
        return
    with _LIMIT_LOCK:
        if _LIMIT_DEPTH == 0:
            saved = [(lib, lib.get_num_threads()) for lib in _blas_controllers()]
            for lib, n in saved:
                if n != 1:
                    lib.set_num_threads(1)
            _LIMIT_SAVED = saved
        _LIMIT_DEPTH += 1
        for _lib, fn in _local_setters():
            fn(1)
    try:
        yield
    finally:
        with _LIMIT_LOCK:
            _LIMIT_DEPTH -= 1
            if _LIMIT_DEPTH == 0:
                for lib, n in _LIMIT_SAVED:
                    if n != 1:
                        lib.set_num_threads(n)
                saved_n = {id(lib): n for lib, n in _LIMIT_SAVED}
                for lib, fn in _local_setters():
                    if saved_n.get(id(lib), 1) != 1:
                        fn(saved_n[id(lib)])
                _LIMIT_SAVED = []
