"""Type stub for the compiled core (internal API)."""

from typing import Any

def _set_blas(capsules: dict[str, Any]) -> None: ...
def _blas_names() -> list[str]: ...
def hardware_concurrency() -> int: ...

# LSTM-CS (cpp/bindings/register_lstm.cpp); suffix = LSTM precision
def _lstm_logits_f32(
    WR: Any, b: Any, U: Any, c_out: Any, cell: str, X: Any, n_threads: int
) -> Any: ...
def _lstm_logits_f64(
    WR: Any, b: Any, U: Any, c_out: Any, cell: str, X: Any, n_threads: int
) -> Any: ...
def _lstm_decode_f32(
    WR: Any,
    b: Any,
    U: Any,
    c_out: Any,
    cell: str,
    At: Any,
    col_norms: Any,
    Y: Any,
    k_max: int,
    tol: float,
    exclude_selected: bool,
    k_from_user: bool,
    n_threads: int,
    chunk: int = 64,
) -> tuple[Any, Any, Any, Any, Any]: ...
def _lstm_decode_f64(
    WR: Any,
    b: Any,
    U: Any,
    c_out: Any,
    cell: str,
    At: Any,
    col_norms: Any,
    Y: Any,
    k_max: int,
    tol: float,
    exclude_selected: bool,
    k_from_user: bool,
    n_threads: int,
    chunk: int = 64,
) -> tuple[Any, Any, Any, Any, Any]: ...
