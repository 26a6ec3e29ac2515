"""What AMP and VAMP share: the minimax threshold rule and the argument checks.

The kernels' stop codes and denoiser codes, :func:`minimax_alpha` (the l1
threshold rule) with EM-BG-AMP's initial sparsity, the option checks and the
measurement shapes.  The decode driver both run through is in
:mod:`cscore.decoders._amp_driver`; the algorithms are described in
:mod:`cscore.decoders.amp`.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, TypedDict

import numpy as np

from .._validation import (
    MAX_ITER_LIMIT,
    as_float_array,
    check_bool,
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
    transposed_hint,
)

__all__ = [
    "DENOISERS",
    "STOP_NAMES",
    "AMPOptions",
    "as_measurements",
    "check_options",
    "initial_sparsity",
    "minimax_alpha",
    "shape_out",
]


class AMPOptions(TypedDict, total=False):
    """The keyword options of :func:`~cscore.decoders.amp.amp` and ``vamp`` (typing only)."""

    denoiser: str
    joint: bool
    max_iter: int
    rtol: float
    damping: float
    alpha: float | str | None
    sparsity: float | None
    slab_var: float | None
    noise_var: float | None
    snr0: float
    n_threads: int | None
    return_result: bool
    tol: float | None
    device: Any


#: Stop codes of the compiled kernel (``amp::Stop``), by code.
STOP_NAMES: tuple[str, ...] = ("rtol", "max_iter", "diverged")
DENOISERS = {"l1": 0, "bg": 1}

#: The minimax rule is evaluated at ``min(delta, _DELTA_MAX)``: at ``delta >= 1``
#: the l1 phase transition is trivial (threshold 0).
_DELTA_MAX = 0.95


# --------------------------------------------------------------------------- minimax rule


def _zero_risk(tau: float, L: int) -> float:
    """``E[(||w||_2 - tau)_+^2] / L`` for ``w ~ N(0, I_L)`` (closed form, chi_L)."""
    from scipy.special import gammaincc, gammaln

    x = 0.5 * tau * tau
    e2 = L * gammaincc(0.5 * L + 1.0, x)
    e1 = math.sqrt(2.0) * math.exp(gammaln(0.5 * (L + 1)) - gammaln(0.5 * L))
    e1 *= gammaincc(0.5 * (L + 1), x)
    p = gammaincc(0.5 * L, x)
    return float((e2 - 2.0 * tau * e1 + tau * tau * p) / L)


@functools.lru_cache(maxsize=128)
def _minimax(delta: float, L: int) -> tuple[float, float]:
    """(eps, tau): the phase-transition sparsity and minimax threshold at ``delta``."""
    from scipy.optimize import brentq, minimize_scalar

    hi = 10.0 + 2.0 * math.sqrt(L)

    def best(eps: float) -> tuple[float, float]:
        r = minimize_scalar(
            lambda t: eps * (1.0 + t * t / L) + (1.0 - eps) * _zero_risk(t, L),
            bounds=(0.0, hi), method="bounded", options={"xatol": 1e-10},
        )  # fmt: skip
        return float(r.fun), float(r.x)

    eps = brentq(lambda e: best(e)[0] - delta, 1e-12, 1.0 - 1e-12, xtol=1e-14)
    return float(eps), best(eps)[1]


def minimax_alpha(delta: float, n_channels: int = 1) -> float:
    """The minimax soft-threshold multiplier of AMP for undersampling ``delta = M/N``.

    For a group (row-l2) soft threshold over ``n_channels`` channels at ``alpha``
    times the noise level, the per-entry worst-case risk at sparsity ``eps`` is
    ``eps (1 + alpha^2/L) + (1 - eps) E[(||w|| - alpha)_+^2]/L``.  The minimax
    threshold is the ``alpha`` that minimizes it at the largest ``eps`` whose
    minimal risk still equals ``delta`` -- the phase transition of AMP with this
    denoiser [1]_ (for ``L = 1`` the ``rho_SE`` curve of Donoho, Maleki &
    Montanari).  ``delta`` is capped at 0.95.

    Parameters
    ----------
    delta : float
        ``M / N``, in ``(0, inf)``.
    n_channels : int, default 1
        Group size ``L`` (rows are thresholded jointly over L channels).

    Returns
    -------
    float
        ``alpha`` (0.877 for ``delta = 0.5``, ``L = 1``).

    References
    ----------
    .. [1] D. L. Donoho, I. Johnstone, A. Montanari, "Accurate prediction of
       phase transitions in compressed sensing via a connection to minimax
       denoising", IEEE Trans. Inf. Theory 59(6), 2013.
    """
    d = check_positive_float("delta", delta)
    L = check_positive_int("n_channels", n_channels)
    return _minimax(round(min(d, _DELTA_MAX), 12), L)[1]


def initial_sparsity(M: int, N: int) -> float:
    """EM-BG-AMP's lambda_0 = delta rho_SE(delta), kept in [1/N, 0.9]."""
    eps = _minimax(round(min(M / N, _DELTA_MAX), 12), 1)[0]
    return min(max(eps, 1.0 / N), 0.9)


# --------------------------------------------------------------------------- validation


def check_options(
    fn: str,
    denoiser: Any,
    joint: Any,
    max_iter: Any,
    rtol: Any,
    damping: Any,
    alpha: Any,
    sparsity: Any,
    slab_var: Any,
    noise_var: Any,
    snr0: Any,
) -> dict[str, Any]:
    """Check AMP's or VAMP's options (``fn`` names the caller) and return them in a dict.

    Raises ``ValueError``/``TypeError`` naming the bad argument, or an option
    that does not apply to the chosen denoiser.
    """
    if not isinstance(denoiser, str) or denoiser not in DENOISERS:
        raise ValueError(f"denoiser must be 'bg' or 'l1', got {denoiser!r}")
    opts: dict[str, Any] = {
        "denoiser": denoiser,
        "joint": check_bool("joint", joint),
        "max_iter": check_positive_int("max_iter", max_iter, upper=MAX_ITER_LIMIT),
        "rtol": check_nonnegative_float("rtol", rtol),
        "damping": check_nonnegative_float("damping", damping),
        "snr0": check_positive_float("snr0", snr0),
    }
    if opts["damping"] >= 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}")
    if denoiser == "l1":
        for name, value in (("sparsity", sparsity), ("slab_var", slab_var)):
            if value is not None:
                raise ValueError(f"{fn}: {name} applies to denoiser='bg' only; got {value!r}")
        if fn == "amp" and noise_var is not None:
            raise ValueError(
                "amp: noise_var applies to denoiser='bg' only (AMP-l1 tracks the effective "
                f"noise from the residual); got {noise_var!r}"
            )
        if alpha is None or (isinstance(alpha, str) and alpha == "minimax"):
            opts["alpha"] = None
        else:
            if isinstance(alpha, str):
                raise ValueError(f"alpha must be a positive number or 'minimax', got {alpha!r}")
            opts["alpha"] = check_positive_float("alpha", alpha)
    else:
        if alpha is not None:
            raise ValueError(f"{fn}: alpha applies to denoiser='l1' only; got {alpha!r}")
        opts["alpha"] = None
    if sparsity is not None:
        if isinstance(sparsity, (bool, np.bool_)) or not isinstance(sparsity, numbers.Real):
            raise TypeError(f"sparsity must be a real number, got {type(sparsity).__name__}")
        if not 0.0 < float(sparsity) < 1.0:
            raise ValueError(f"sparsity must be in (0, 1), got {sparsity!r}")
    opts["sparsity"] = None if sparsity is None else float(sparsity)
    opts["slab_var"] = None if slab_var is None else check_positive_float("slab_var", slab_var)
    opts["noise_var"] = None if noise_var is None else check_positive_float("noise_var", noise_var)
    return opts


def as_measurements(
    Y: Any, M: int, dtype: np.dtype, N: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Return (Y as given but checked, the (P, M, L) float64 view for the kernel).

    ``N``, A's column count, lets the row-count error say when A looks transposed.
    """
    Y_arr = as_float_array("Y", Y, ndim=(1, 2, 3), dtype=dtype, empty_batch=(3, 0))
    axis = 0 if Y_arr.ndim < 3 else 1
    if Y_arr.shape[axis] != M:
        where = "the first axis" if axis == 0 else "axis 1 of a (B, M, L) batch"
        raise ValueError(
            f"Y must have M = {M} rows along {where} (A has {M} rows); got Y of shape {Y_arr.shape}"
            + (transposed_hint((M, N), Y_arr.shape[axis]) if N is not None else "")
        )
    if Y_arr.ndim == 1:
        Y3 = Y_arr[None, :, None]
    elif Y_arr.ndim == 2:
        Y3 = Y_arr[None]
    else:
        Y3 = Y_arr
    return Y_arr, np.ascontiguousarray(Y3, dtype=np.float64)


def shape_out(Y_arr: np.ndarray, N: int) -> tuple[int, ...]:
    """The estimate's shape for measurements shaped like ``Y_arr`` and ``N`` atoms."""
    if Y_arr.ndim == 1:
        return (N,)
    if Y_arr.ndim == 2:
        return (N, Y_arr.shape[1])
    return (Y_arr.shape[0], N, Y_arr.shape[2])
