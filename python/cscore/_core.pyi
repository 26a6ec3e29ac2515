"""Type stub for the compiled core (internal API)."""

from typing import Any, Protocol

def _set_blas(capsules: dict[str, Any]) -> None: ...
def _blas_names() -> list[str]: ...
def hardware_concurrency() -> int: ...
def cpu_isa() -> str: ...
def cpu_isa_supported() -> str: ...
def _cpu_isa_request() -> tuple[str, str, bool]: ...
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
def _greedy_decode_auto(
    A: Any, Y: Any, X: Any, residual: Any, n_iter: Any, stop: Any, warn: Any, atoms: Any,
    sigma: Any, tol: Any, n_signal: Any, max_atoms: int, cap: int, gamma2: Any,
    a: Any, lnbeta: Any, logu: Any, b: float, n_threads: int, gram_limit: int,
    path_end: tuple[Any, int, int, int] | None = None, signal: Any = None,
) -> None: ...
def _greedy_path(
    A: Any, Y: Any, path_atoms: Any, X: Any, residual: Any, energy: Any, n_iter: Any, stop: Any,
    warn: Any, atoms: Any, n_threads: int, gram_limit: int,
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
def _sbl_solve_complex(
    A: Any, Yt: Any, prune: float, lam: float, learn_lambda: bool, enhance_lambda: bool,
    matrix_reg: Any, fixed_b: Any, max_iter: int, tol: float, n_threads: int,
) -> tuple[Any, Any, Any, Any, Any, Any]: ...

# LSTM-CS and BLSTM-CS (cpp/bindings/register_lstm.cpp, register_blstm.cpp): each kernel is
# one C++ template bound at two LSTM precisions (suffix f32/f64), so one signature each
_lstm_panel: int  # output rows per panel of the few-problems layout
_lstm_panel_step: int  # its rows are padded to a multiple of this
_lstm_small_max: int  # problems per call up to which that layout is used
class _LstmLogits(Protocol):
    """``_lstm_logits_<f32|f64>``: one template (register_lstm.cpp), X (B, L, M) -> (B, L, N)."""

    def __call__(
        self, WR: Any, b: Any, U: Any, c_out: Any, cell: str, X: Any, n_threads: int
    ) -> Any: ...

class _LstmDecode(Protocol):
    """``_lstm_decode_<f32|f64>``: LSTM-CS Algorithm 2, one template (register_lstm.cpp)."""

    def __call__(
        self,
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
        panels: tuple[Any, Any] | None = None,
        rrt: tuple[Any, Any, int] | None = None,
    ) -> tuple[Any, ...]: ...

class _BlstmLogits(Protocol):
    """``_blstm_logits_<f32|f64>``: one template (register_blstm.cpp)."""

    def __call__(
        self, WRf: Any, bf: Any, WRb: Any, bb: Any, U: Any, c_out: Any, cell: str, X: Any,
        n_threads: int,
    ) -> Any: ...

class _BlstmDecode(Protocol):
    """``_blstm_decode_<f32|f64>``: BLSTM-CS greedy decoding, one template (register_blstm.cpp)."""

    def __call__(
        self, WRf: Any, bf: Any, WRb: Any, bb: Any, U: Any, c_out: Any, cell: str, At: Any,
        col_norms: Any, Y: Any, k_max: int, tol: float, exclude_selected: bool,
        k_from_user: bool, n_threads: int, chunk: int = 64,
        panels_f: tuple[Any, Any] | None = None, panels_b: tuple[Any, Any] | None = None,
        rrt: tuple[Any, Any, int] | None = None,
    ) -> tuple[Any, ...]: ...

_lstm_logits_f32: _LstmLogits
_lstm_logits_f64: _LstmLogits
_lstm_decode_f32: _LstmDecode
_lstm_decode_f64: _LstmDecode
_blstm_logits_f32: _BlstmLogits
_blstm_logits_f64: _BlstmLogits
_blstm_decode_f32: _BlstmDecode
_blstm_decode_f64: _BlstmDecode
def _lstm_beam_f32(
    WR: Any, b: Any, U: Any, c_out: Any, cell: str, At: Any, Y: Any, atoms: Any, tol: Any,
    limits: Any, k_out: int, width: int, candidates: int, n_threads: int,
) -> Any: ...  # the beam-search rescue's supports (B, L, k_out), -1 padded
def esn_forward(
    A: Any, indptr: Any, indices: Any, data: Any, offsets: Any, n_threads: int = 1
) -> Any: ...
def esn_backward(
    H: Any, G: Any, indptr: Any, indices: Any, data: Any, offsets: Any, m: int,
    n_threads: int = 1,
) -> Any: ...
def esn_rec_grad(
    D: Any, H: Any, indptr: Any, indices: Any, data: Any, offsets: Any, n_threads: int = 1
) -> Any: ...

# AMP / VAMP (cpp/bindings/register_amp.cpp); outputs preallocated by the caller
def _amp_decode(
    A: Any, frob2: float, Y: Any, X: Any, activity: Any, params: Any, n_iter: Any, stop: Any,
    damping_out: Any, denoiser: int, joint: bool, max_iter: int, tol: float, damping: float,
    alpha: float, sparsity: float, learn_sparsity: bool, slab_var: float, noise_var: float,
    snr0: float, n_threads: int,
) -> None: ...
def _vamp_decode(
    U: Any, s: Any, Vt: Any, Y: Any, X: Any, activity: Any, params: Any, n_iter: Any,
    stop: Any, damping_out: Any, denoiser: int, joint: bool, max_iter: int, tol: float,
    damping: float, alpha: float, sparsity: float, learn_sparsity: bool, slab_var: float,
    noise_var: float, snr0: float, n_threads: int,
) -> None: ...
def _column_abs_max(A: Any) -> tuple[Any, bool]: ...
