"""Which decoders a ``cscore bench`` run runs, checked against the registry and the model.

:func:`choose_decoders` takes ``--decoders`` or the experiment's default
(:func:`default_decoders`, or the experiment's registered ``decoders``) and
checks every name against the decoder registry: which decoders need a model,
and which model class, is read from their registrations, so a decoder
registered later works the same way.  :func:`check_decoder_list` is the part
a multi-model run (:mod:`cscore.bench.multi`) shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..decoders import decoder_names, get_decoder_spec
from .config import BenchConfig, BenchConfigError
from .decoders import own_decoder

__all__ = ["check_decoder_list", "choose_decoders", "default_decoders"]


def default_decoders(model: Any) -> list[str]:
    """The decoders run when none are named (and the experiment names none).

    Parameters
    ----------
    model : object or None
        The run's model.

    Returns
    -------
    list of str
        With a model: its decoder (:func:`cscore.bench.decoders.own_decoder`), ``somp``, ``omp``;
        without: ``somp``, ``omp``, ``tmsbl``.
    """
    if model is None:
        return ["somp", "omp", "tmsbl"]
    learned = own_decoder(model)
    return [*([learned] if learned else []), "somp", "omp"]


def check_decoder_list(decoders: Sequence[str] | None) -> list[str]:
    """``--decoders`` checked: not empty, every name registered.

    Parameters
    ----------
    decoders : sequence of str or None
        None passes (the run's default decoders follow).

    Returns
    -------
    list of str

    Raises
    ------
    BenchConfigError
        (option ``--decoders``) no decoder, or an unknown one.
    """
    if decoders is None:
        return []
    decoders = list(decoders)
    if not decoders:
        raise BenchConfigError("--decoders", "--decoders gives no decoder")
    unknown = [d for d in decoders if d not in decoder_names()]
    if unknown:
        raise BenchConfigError(
            "--decoders", f"unknown decoder(s) {unknown}; known: {', '.join(decoder_names())}"
        )
    return decoders


def choose_decoders(config: BenchConfig, model: Any, trained: str | None = None) -> list[str]:
    """The run's decoders, checked against the registry and the model.

    Parameters
    ----------
    config : BenchConfig
    model : object or None
        The model loaded from ``config.model``.
    trained : str, optional
        A model decoder whose models the run trains itself (phase on MNIST
        with ``train_models``): it needs no ``model``.

    Returns
    -------
    list of str
        ``config.decoders``, else the experiment's registered ``decoders``
        after the model's own decoder, else :func:`default_decoders`.

    Raises
    ------
    BenchConfigError
        An unknown decoder, or a model decoder without a model of its class.
    """
    tail = config.spec.decoders
    if config.decoders is not None:
        decoders = check_decoder_list(config.decoders)
    elif tail is not None:
        learned = own_decoder(model) if model is not None else None
        decoders = [*([learned] if learned else []), *tail]
    else:
        decoders = default_decoders(model)
    check_decoder_list(decoders or None)
    for d in decoders:
        spec = get_decoder_spec(d)
        if spec.kind != "model" or d == trained:
            continue
        if model is None:
            raise BenchConfigError("--decoders", f"{d} needs --model (see `cscore models`)")
        if spec.model_type is not None and not isinstance(model, spec.model_type):
            own = own_decoder(model)
            raise BenchConfigError(
                "--decoders",
                f"{d} needs a {spec.model_type.__name__} model, but --model {config.model} "
                f"is a {type(model).__name__}" + (f" (its decoder is {own})" if own else ""),
            )
    return decoders
