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
) -> None: ...
def _bcs(
    A: Any, At: Any, Y: Any, sigma2: Any, tol: float, max_iter: int, n_threads: int
) -> tuple[Any, dict[str, Any]]: ...
def _mtbcs(
    A: Any, At: Any, Y: Any, a: float, b: float, tol: float, max_iter: int, n_threads: int
) -> tuple[Any, dict[str, Any]]: ...
def _sbl_solve(
    A: Any, Yt: Any, exact: bool, prune: float, lam: float, learn_lambda: bool,
    enhance_lambda: bool, matrix_reg: Any, fixed_b: Any, max_iter: int, tol: float,
    n_threads: int,
) -> tuple[Any, Any, Any, Any, Any, Any]: ...
