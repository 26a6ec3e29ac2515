"""The experiments' convention over the one decoder registry.

``run_decoder(name, A, Y, k=..., tol=..., model=...)`` decodes a batch ``Y``
(B, M, L) with any registered decoder (:func:`cscore.decoder_names`) and
returns ``S_hat`` (B, N, L).  It is an adapter, not a second table: what a
decoder accepts comes from its registration (:class:`cscore.decoders.DecoderSpec`).

Stopping: a decoder that declares the rules ``n_nonzero`` / ``tol`` takes ``k``
(atoms per channel) and ``tol`` (the LSTM-CS paper's rule: stop once the sum
over channels of residual norms is <= tol; a decoder of the ``"columns"``
layout, which decodes each channel alone, gets ``tol / L`` per channel), or
``tol="auto"`` where it declares ``auto`` (the noise level estimated from the
measurements, :mod:`cscore.decoders.stopping`).  Decoders with their own
convergence rule (the Bayesian ones) ignore both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..decoders import Decoder, decoder_names, get_decoder_spec

__all__ = ["decoder_names", "run_decoder", "uses_stopping_rule"]


def uses_stopping_rule(name: str) -> bool:
    """Whether decoder ``name`` takes the bench's ``k`` / ``tol`` stopping rules.

    Parameters
    ----------
    name : str
        A registered decoder.

    Returns
    -------
    bool
    """
    return "n_nonzero" in get_decoder_spec(name).stopping


def needs_model(name: str) -> bool:
    """Whether decoder ``name`` is built from a model rather than a matrix."""
    return get_decoder_spec(name).kind == "model"


def run_decoder(
    name: str,
    A: np.ndarray,
    Y: np.ndarray,
    *,
    k: int | None = None,
    tol: float | str | None = None,
    model: Any = None,
) -> np.ndarray:
    """Decode the batch ``Y`` (B, M, L) with decoder ``name``; return (B, N, L).

    Parameters
    ----------
    name : str
        One of :func:`cscore.decoder_names`.
    A : ndarray (M, N)
    Y : ndarray (B, M, L)
    k : int, optional
        Atoms per channel (decoders with the ``n_nonzero`` rule).
    tol : float or "auto", optional
        Residual threshold (see the module docstring).
    model : object, optional
        The model of a model decoder (an instance of its registered class),
        trained for ``A``.

    Returns
    -------
    ndarray (B, N, L)
        The estimates.
    """
    spec = get_decoder_spec(name)
    settings: dict[str, Any] = {}
    if "n_nonzero" in spec.stopping and k is not None:
        settings["n_nonzero"] = k
    if tol is not None:
        if isinstance(tol, str):
            if "auto" in spec.stopping:
                settings["tol"] = tol
        elif "tol" in spec.stopping:
            settings["tol"] = tol / Y.shape[2] if spec.layout == "columns" else tol
    if spec.kind == "model":
        if model is None:
            raise ValueError(f"the {name} decoder needs a model (--model)")
        if spec.model_type is not None and not isinstance(model, spec.model_type):
            raise ValueError(
                f"the {name} decoder needs a {spec.model_type.__name__} model, "
                f"got a {type(model).__name__}"
            )
        if not np.array_equal(np.asarray(model.A), A):
            raise ValueError("the problems were not measured with the model's sensing matrix")
        return np.asarray(Decoder(name, model=model, **settings)(Y))
    return np.asarray(Decoder(name, A, **settings)(Y))
