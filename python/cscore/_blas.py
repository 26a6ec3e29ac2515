"""Hand SciPy's BLAS/LAPACK function pointers to the compiled core.

cscore is built without any BLAS headers or libraries.  SciPy ships an optimized
BLAS/LAPACK and exports every routine as a PyCapsule in
``scipy.linalg.cython_blas.__pyx_capi__`` (and ``cython_lapack``).  At import we
pass the routines the core uses to ``_core._set_blas``; the core falls back to
portable loops for any routine that is missing.
"""

from __future__ import annotations

from . import _core

#: BLAS routines the core may call (Fortran interface, column-major).
BLAS_ROUTINES: tuple[str, ...] = (
    "sgemm",
    "dgemm",
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
