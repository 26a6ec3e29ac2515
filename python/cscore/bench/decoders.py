"""The experiments' convention over the one decoder registry.

``run_decoder(name, A, Y, k=..., tol=..., model=...)`` decodes a batch ``Y``
(B, M, L) with any registered decoder (:func:`cscore.decoder_names`) and
returns ``S_hat`` (B, N, L).  It is an adapter, not a second table: what a
decoder accepts comes from its registration (:class:`cscore.decoders.DecoderSpec`).

Stopping: a decoder that declares the rules ``n_nonzero`` / ``tol`` takes ``k``
(atoms per channel) and ``tol`` (the LSTM-CS paper's rule: stop once the sum
over channels of residual norms is <= tol, :mod:`cscore._tol`; the
:class:`~cscore.decoders.Decoder` gives a decoder of the ``"columns"`` layout,
which decodes each channel alone, ``tol / L`` per channel), or
``tol="auto"`` where it declares ``auto`` (the noise level estimated from the
measurements, :mod:`cscore.decoders.stopping`).  Decoders with their own
convergence rule (the Bayesian ones) ignore both.

Several models (``cscore bench --model a,b``): :func:`pair_models` runs every
model decoder once per model of its registered class, labelled
``decoder[model]`` (:func:`run_label`); :func:`sweep_runs` adds the stopping rules.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

import numpy as np

from ..decoders import Decoder, decoder_names, decoder_specs, get_decoder_spec

__all__ = ["STOP_RULES", "SweepRun", "decoder_device", "decoder_names", "own_decoder",
           "pair_models", "run_decoder", "run_label", "sweep_runs", "uses_stopping_rule"]

#: The stopping rules of the greedy decoders in a sweep: the paper's threshold with the
#: true noise level, the same on an estimated one, the true sparsity.
STOP_RULES = ("tol", "auto", "k")

#: The torch device of :func:`decoder_device` (None: the compiled decoders).
_DEVICE: contextvars.ContextVar[str | None] = contextvars.ContextVar("cscore_bench_device",
                                                                    default=None)


@contextlib.contextmanager
def decoder_device(device: str | None) -> Iterator[None]:
    """Within the block, :func:`run_decoder` passes ``device=device`` to every
    decoder that takes it (``cscore bench --device``); None changes nothing.

    Parameters
    ----------
    device : str or None
        A torch device string.
    """
    token = _DEVICE.set(device)
    try:
        yield
    finally:
        _DEVICE.reset(token)


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
            settings["tol"] = tol  # Decoder gives a "columns" decoder tol / L per channel
    # (S)OMP's tol="auto" runs compiled only (device= refuses it)
    auto_matrix = isinstance(settings.get("tol"), str) and spec.kind == "matrix"
    if _DEVICE.get() is not None and "device" in spec.settings and not auto_matrix:
        settings["device"] = _DEVICE.get()
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


def own_decoder(model: Any) -> str | None:
    """The registered decoder that runs ``model`` (its class exactly, else a base class).

    Parameters
    ----------
    model : object
        A loaded model (LSTMCS, NWSOMP, ... or any registered model class).

    Returns
    -------
    str or None
        The decoder's name; None when no model decoder takes this class.
    """
    specs = [s for s in decoder_specs() if s.kind == "model" and s.model_type is not None]
    for s in specs:
        if type(model) is s.model_type:
            return s.name
    for s in specs:
        if isinstance(model, s.model_type):  # type: ignore[arg-type]
            return s.name
    return None


def run_label(decoder: str, model_name: str | None) -> str:
    """The label of a decoder run in a multi-model bench: ``decoder[model_name]``.

    Parameters
    ----------
    decoder : str
        A registered decoder.
    model_name : str or None
        The model it runs with; None for a matrix decoder (the label is ``decoder``).

    Returns
    -------
    str
    """
    return f"{decoder}[{model_name}]" if model_name is not None else decoder


def pair_models(
    decoders: Sequence[str], models: Mapping[str, Any]
) -> list[tuple[str, str, str | None]]:
    """The runs of a multi-model bench: each model decoder once per model of its class.

    A model goes to its own decoder (:func:`own_decoder`); a decoder whose
    registered ``model_type`` is a base class of the model's (``lstm-cs`` for a
    BLSTM-CS model) also takes it when the model's own decoder is not in
    ``decoders``, as a single ``--model`` would.

    Parameters
    ----------
    decoders : sequence of str
        Registered decoder names.
    models : mapping
        Model name -> loaded model, in the order given.

    Returns
    -------
    list of (str, str, str or None)
        ``(label, decoder, model name)``: :func:`run_label` labels; a matrix
        decoder runs once, with no model.

    Raises
    ------
    ValueError
        A model decoder with no model of its class among ``models``.
    """
    runs: list[tuple[str, str, str | None]] = []
    for d in decoders:
        spec = get_decoder_spec(d)
        if spec.kind != "model":
            runs.append((d, d, None))
            continue
        mine = [n for n, m in models.items() if own_decoder(m) == d or (
            own_decoder(m) not in decoders
            and (spec.model_type is None or isinstance(m, spec.model_type)))]
        if not mine:
            kind = spec.model_type.__name__ if spec.model_type is not None else "suitable"
            have = ", ".join(f"{n} ({type(m).__name__})" for n, m in models.items())
            raise ValueError(f"{d} needs a {kind} model, but none of the models is one: {have}")
        runs += [(run_label(d, n), d, n) for n in mine]
    return runs


#: One decoder run of a sweep: (label, label without the stopping rule, decoder,
#: stopping rule or None, model or None, model name or None).
SweepRun = tuple[str, str, str, Optional[str], Any, Optional[str]]


def sweep_runs(
    decoders: Sequence[str],
    stop: Sequence[str],
    model: Any = None,
    models: Mapping[str, Any] | None = None,
) -> list[SweepRun]:
    """The runs of a sweep: every decoder (and model) once per stopping rule it takes.

    Parameters
    ----------
    decoders : sequence of str
        Registered decoder names.
    stop : sequence of str
        Stopping rules; a greedy decoder's label gets `` (rule)``.
    model : object, optional
        The one model of the model decoders (``models`` None).
    models : mapping, optional
        Model name -> model: each model decoder runs once per model of its
        class, labelled ``decoder[name]`` (:func:`pair_models`).

    Returns
    -------
    list of SweepRun
    """
    if models is None:
        pairs: list[tuple[str, str, str | None]] = [(d, d, None) for d in decoders]
    else:
        pairs = pair_models(decoders, models)
    runs: list[SweepRun] = []
    for base, name, model_name in pairs:
        m = model if models is None else (models[model_name] if model_name else None)
        if uses_stopping_rule(name):
            runs += [(f"{base} ({r})", base, name, r, m, model_name) for r in stop]
        else:
            runs.append((base, base, name, None, m, model_name))
    return runs
