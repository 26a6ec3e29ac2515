"""Type stub for the compiled core (internal API)."""

from typing import Any

def _set_blas(capsules: dict[str, Any]) -> None: ...
def _blas_names() -> list[str]: ...
def hardware_concurrency() -> int: ...
def _greedy_decode(
    A: Any,
    Y: Any,
    X: Any,
    residual: Any,
    n_iter: Any,
    stop: Any,
    warn: Any,
    atoms: Any,
    max_atoms: int,
    cap_is_n_nonzero: bool,
    tol: float,
    n_threads: int,
    gram_limit: int,
) -> None: ...
