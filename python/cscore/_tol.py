"""What ``tol`` means in cscore, written once.

Every decoder that accepts a numeric ``tol`` reads it as a **bound on each
problem's residual**, measured as the LSTM-CS paper measures it: the sum over
the problem's channels of the channel residual norms,

    ||R||_{2,1} = sum_c ||y_c - A s_c||_2        (R = Y - A S, one (M, L) problem).

A decoder that reports a problem's stop reason as ``"tol"`` has brought this
sum to at most ``tol``; since ``||R||_F <= ||R||_{2,1}``, the problem's
Frobenius norm is then at most ``tol`` too.  A decoder that decodes a problem's
channels independently (``omp``, ``bcs``: the registry's ``"columns"`` layout)
gets ``tol / L`` per channel through :func:`cscore.decoder`, ``cscore decode``
and the bench (:func:`column_tol`), so the same ``tol`` bounds the same sum.
Called directly on a (M, K) array, :func:`cscore.omp` decodes K one-channel
problems, and ``tol`` bounds each column's norm: the same rule with L = 1.

Convergence tests of iterative decoders (BCS, MT-BCS, T-SBL, T-MSBL, AMP,
VAMP) are a different thing and are called ``rtol``; their old name ``tol`` is
deprecated (:func:`resolve_rtol`).

The noise-level threshold of the paper, ``L sigma sqrt(M L)`` (the authors'
``L * norm(noise(:))`` with ``E||noise||_F ~= sigma sqrt(M L)``), is
:func:`paper_noise_tol`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

__all__ = [
    "SCALE_RANGE",
    "ScaleWarning",
    "column_tol",
    "paper_noise_tol",
    "residual_measure",
    "resolve_rtol",
    "warn_scale",
]

#: The magnitudes of ``Y`` (largest absolute entry of a problem) for which a
#: decoder with absolute thresholds or priors (T-SBL, T-MSBL, MT-BCS, LISTA, LAMP)
#: is used as designed; outside it :func:`warn_scale` warns.
SCALE_RANGE = (1e-6, 1e6)


class ScaleWarning(RuntimeWarning):
    """``Y``'s magnitude is far from what a scale-dependent decoder is built for.

    T-SBL, T-MSBL and MT-BCS keep the original programs' absolute thresholds and
    priors, LISTA and LAMP their thresholds learned at the training data's scale,
    so for them ``decode(c Y)`` is not ``c decode(Y)``: divide ``Y`` by a
    constant (its largest absolute value, say) and multiply the result by it.
    """


def residual_measure(R: Any) -> np.ndarray:
    """The residual measure that ``tol`` bounds: the sum of channel norms.

    Parameters
    ----------
    R : array_like, shape (M, L) or (B, M, L)
        Residuals ``Y - A S`` of one problem or of a batch.

    Returns
    -------
    ndarray
        A 0-d array for one problem, shape (B,) for a batch.
    """
    R = np.asarray(R)
    if R.ndim not in (2, 3):
        raise ValueError(f"R must be (M, L) or (B, M, L), got shape {R.shape}")
    return np.asarray(np.linalg.norm(R, axis=-2).sum(axis=-1))


def column_tol(tol: float, L: int) -> float:
    """The per-channel bound that makes ``L`` independent channels meet ``tol``.

    Parameters
    ----------
    tol : float
        The bound on the problem's sum of channel residual norms.
    L : int
        Channels per problem.

    Returns
    -------
    float
        ``tol / L``: if every channel's residual norm is at most this, their sum
        is at most ``tol``.
    """
    return float(tol) / max(int(L), 1)


def paper_noise_tol(M: int, L: int, sigma: Any) -> Any:
    """The LSTM-CS paper's noise-level threshold ``L sigma sqrt(M L)``.

    Parameters
    ----------
    M, L : int
        Measurements per channel and channels per problem.
    sigma : float or ndarray
        Standard deviation of the additive Gaussian noise (an array gives one
        threshold per entry).

    Returns
    -------
    float or ndarray
        ``L * sigma * sqrt(M * L)``: ``L`` times the expected Frobenius norm of
        the (M, L) noise, the authors' ``res_min = L * norm(noise(:))``.
    """
    out = L * np.asarray(sigma, dtype=np.float64) * math.sqrt(M * L)
    return float(out) if out.ndim == 0 else out


def resolve_rtol(func: str, rtol: Any, tol: Any) -> Any:
    """The convergence tolerance from ``rtol``, or from its deprecated name ``tol``.

    Parameters
    ----------
    func : str
        The decoder's name, for the message.
    rtol : object
        The value of ``rtol``.
    tol : object
        The value passed under the old name (``None`` when not given); when
        given it wins, with a ``DeprecationWarning``.

    Returns
    -------
    object
        The value to use (checked by the caller).
    """
    if tol is None:
        return rtol
    warnings.warn(
        f"{func}(tol=...) is deprecated: its convergence tolerance is now rtol=; in cscore "
        "tol= always bounds the residual (docs/decoders.md)",
        DeprecationWarning,
        stacklevel=3,
    )
    return tol


def warn_scale(name: str, Y: Any, *, why: str) -> None:
    """Warn (:class:`ScaleWarning`) when a problem's max ``|Y|`` is outside :data:`SCALE_RANGE`.

    Parameters
    ----------
    name : str
        The decoder, for the message.
    Y : array_like
        The measurements (any shape; all-zero problems are not warned about).
    why : str
        What makes the decoder scale-dependent, for the message.
    """
    Y = np.asarray(Y)
    if Y.size == 0:
        return
    mag = np.abs(Y)
    flat = mag.reshape(-1, Y.shape[-2] * Y.shape[-1]) if Y.ndim >= 2 else mag[None]
    peaks = flat.max(axis=1)  # one per problem; all-zero problems are not warned about
    peaks = peaks[peaks > 0]
    lo, hi = SCALE_RANGE
    if peaks.size and (peaks.min() < lo or peaks.max() > hi):
        warnings.warn(
            f"{name}: max |Y| is {peaks.min():.3g}..{peaks.max():.3g}, outside {lo:g}..{hi:g}; "
            f"{why}, so the result depends on Y's scale: divide Y by a constant (e.g. its "
            "largest absolute value) and multiply the result by it",
            ScaleWarning,
            stacklevel=3,
        )
