"""The one decoder registry: what every consumer of a decoder reads.

:func:`register_decoder` records a :class:`DecoderSpec` per name; the consumers
-- :func:`cscore.decoder` and :class:`cscore.Decoder` (and so configs, streams,
``cscore.decode_file``, Dask), ``cscore bench``, ``cscore decode`` and the docs
table -- read it through :func:`decoder_names`, :func:`get_decoder_spec` and
:func:`decoder_specs`.  A registration declares what they need: matrix or model
decoder, vector ("columns") or MMV ("batch") layout, the settings it accepts,
the stopping rules it supports, and for a learned decoder its model class (whose
file architecture is registered with the model-file loader at the same time).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..models.format import ARCHITECTURES, register_arch

__all__ = [
    "INPUT_KINDS",
    "STOPPING_RULES",
    "DecoderSpec",
    "decoder_names",
    "decoder_specs",
    "decoder_table",
    "get_decoder_spec",
    "register_decoder",
    "unregister_decoder",
]

#: The stopping rules a registration may declare: a fixed atom count
#: (``n_nonzero=``), a residual threshold (``tol=`` float) and the threshold
#: estimated from the measurements (``tol="auto"``).
STOPPING_RULES = ("n_nonzero", "tol", "auto")

#: The kinds of sensing matrix a registration may declare it takes: a NumPy array
#: (``"dense"``), a SciPy sparse matrix (``"sparse"``), a SciPy/PyLops
#: ``LinearOperator`` (``"operator"``) and complex data (``"complex"``).
INPUT_KINDS = ("dense", "sparse", "operator", "complex")


@dataclass(frozen=True)
class DecoderSpec:
    """How the consumers run one registered decoder.

    Attributes
    ----------
    name : str
        The registry name (``cscore.decoder(name, ...)``).
    func : callable
        Matrix decoders: ``func(A, Y, **settings)`` with the layout below.
        Model decoders: ``func(model, Y, **settings)`` on (M, L) or (B, M, L).
    kind : {"matrix", "model"}
        Whether the decoder is built from a sensing matrix or from a model.
    layout : {"batch", "columns"}
        ``"batch"``: ``func`` takes (M, L) or (B, M, L); ``"columns"``: ``func``
        takes (M,) or (M, K) independent columns (OMP, BCS), and a problem's L
        channels are decoded as L columns.
    load : callable, optional
        Model decoders: ``load(path) -> model`` (a model file, no pickle).
    pretrained : callable, optional
        Model decoders: ``pretrained(name) -> model``.
    model_type : type, optional
        Model decoders: the class a model object must be an instance of.
    description : str
        One line for listings.
    settings : tuple of str
        Accepted settings (keyword arguments of ``func``), for clear errors.
    stopping : tuple of str
        The stopping rules of :data:`STOPPING_RULES` it supports; empty for a
        decoder with its own convergence rule (the Bayesian ones).
    complex_ok : bool
        Matrix decoders: whether ``func`` takes complex64/complex128 ``A`` and
        measurements (OMP, SOMP, T-MSBL).  :class:`cscore.Decoder` passes
        complex data through only then, with the dtype rule of
        :mod:`cscore.decoders._complex`; otherwise complex data is a
        ``TypeError`` naming the decoder.
    inputs : tuple of str
        The kinds of :data:`INPUT_KINDS` the decoder takes (``"complex"`` when
        ``complex_ok``); :class:`cscore.Decoder` refuses the others with an
        error naming the kind.
    scale_free : bool
        ``decode(c Y) = c decode(Y)``.  False for decoders with absolute
        thresholds or priors (T-SBL, T-MSBL, MT-BCS, LISTA, LAMP), which warn
        with :class:`cscore.ScaleWarning` for ``Y`` far from their scale instead.
    """

    name: str
    func: Callable[..., Any]
    kind: str = "matrix"
    layout: str = "batch"
    load: Callable[[Any], Any] | None = None
    pretrained: Callable[[str], Any] | None = None
    model_type: type | None = None
    description: str = ""
    settings: tuple[str, ...] = field(default_factory=tuple)
    stopping: tuple[str, ...] = field(default_factory=tuple)
    complex_ok: bool = False
    inputs: tuple[str, ...] = ("dense",)
    scale_free: bool = True

    @property
    def archs(self) -> tuple[str, ...]:
        """Model-file architectures this decoder reads (its model class's ``ARCH``)."""
        arch = getattr(self.model_type, "ARCH", "")
        return (arch,) if arch else ()


_REGISTRY: dict[str, DecoderSpec] = {}

#: Settings the Decoder manages itself and never forwards.
RESERVED_SETTINGS = frozenset({"return_result", "A", "Y", "y", "self", "model"})


def _keyword_params(func: Callable[..., Any]) -> tuple[str, ...]:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return ()
    names = []
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return ()  # accepts anything
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            if p.name not in RESERVED_SETTINGS and not p.name.startswith("_"):
                names.append(p.name)
    return tuple(names)


def _model_decode(model: Any, Y: np.ndarray, **settings: Any) -> Any:
    return model.decode(Y, **settings)


def _default_pretrained(name: str) -> Any:
    from ..models.registry import pretrained

    return pretrained(name)


def canonical_name(name: Any) -> str:
    """The registry key of ``name``: stripped and lower-cased (names match one way).

    Parameters
    ----------
    name : str
        A decoder name as a user typed it.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        ``name`` is not a non-empty str.
    """
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"a decoder name must be a non-empty str, got {name!r}")
    return name.strip().lower()


def _stopping(stopping: Iterable[str] | None, settings: tuple[str, ...]) -> tuple[str, ...]:
    if stopping is None:  # what the settings show; "auto" only when declared
        return tuple(r for r in ("n_nonzero", "tol") if r in settings)
    out = (stopping,) if isinstance(stopping, str) else tuple(stopping)
    bad = [r for r in out if r not in STOPPING_RULES]
    if bad:
        raise ValueError(f"unknown stopping rule {bad[0]!r}; known: {', '.join(STOPPING_RULES)}")
    return out


def register_decoder(
    name: str,
    func: Callable[..., Any] | None = None,
    *,
    load: Callable[[Any], Any] | None = None,
    pretrained: Callable[[str], Any] | None = None,
    model_type: type | None = None,
    layout: str = "batch",
    description: str = "",
    settings: tuple[str, ...] | None = None,
    stopping: Iterable[str] | None = None,
    complex_ok: bool = False,
    inputs: Iterable[str] | None = None,
    scale_free: bool = True,
    replace: bool = False,
) -> DecoderSpec:
    """Add a decoder to the registry that every consumer reads.

    A matrix decoder passes ``func(A, Y, **settings)``.  A model-based decoder
    passes ``model_type`` (its model class, with ``load(path)``, ``decode(Y,
    **settings)`` and, to be read from model files, an ``ARCH`` and
    ``file_shapes(meta)`` as :class:`cscore.decoders.learned.LearnedModel` has);
    ``load``, ``pretrained`` and ``func`` default to ``model_type.load``,
    :func:`cscore.pretrained` and ``model.decode(Y, **settings)``.  One line for
    a learned decoder::

        register_decoder("blstm-cs", model_type=BLSTMCS, stopping=("n_nonzero", "tol", "auto"))

    Parameters
    ----------
    name : str
        Registry name.  Names match one way: the name is stored stripped and
        lower-cased, and looked up the same way (``"OMP"`` is ``"omp"``).
    func : callable, optional
        The decoding function (see above); required for matrix decoders.
    load, pretrained : callable, optional
        Model loaders (model decoders).
    model_type : type, optional
        The model class; giving it (or ``load``) makes this a model decoder.
        Its file architecture (``model_type.ARCH``) is registered with the
        model-file loader.
    layout : {"batch", "columns"}, default "batch"
        Matrix decoders only: ``"columns"`` for single-vector functions such as
        :func:`cscore.omp` that take (M, K) independent columns.
    description : str
        One line for listings.
    settings : tuple of str, optional
        Accepted settings; default: the keyword parameters of ``func`` (of
        ``model_type.decode`` for model decoders, also when their ``func`` takes
        ``**settings``).
    stopping : str or iterable of str, optional
        Supported stopping rules, from :data:`STOPPING_RULES` (one rule may be
        given as a str); default: those
        of ``n_nonzero`` and ``tol`` that are settings (``"auto"`` only when
        declared).
    complex_ok : bool, default False
        Matrix decoders: ``func`` accepts complex ``A`` and measurements, so
        :class:`cscore.Decoder` passes complex data through instead of refusing
        it (see :mod:`cscore.decoders._complex` for the dtype rule).  Not for
        model decoders.
    inputs : str or iterable of str, optional
        Matrix decoders: the kinds of sensing matrix ``func`` takes, from
        :data:`INPUT_KINDS`; default ``("dense",)``, plus ``"complex"`` with
        ``complex_ok`` (and ``"complex"`` listed here sets ``complex_ok``).
        :func:`cscore.testing.check_decoder` checks the declaration.
    scale_free : bool, default True
        Whether ``decode(c Y) = c decode(Y)``; a decoder declaring False must
        warn (:class:`cscore.ScaleWarning`) or raise for ``Y`` far from its scale.
    replace : bool, default False
        Allow replacing an existing entry.

    Returns
    -------
    DecoderSpec
        The registered entry.
    """
    name = canonical_name(name)
    if name in _REGISTRY and not replace:
        raise ValueError(f"a decoder named {name!r} is already registered")
    if func is not None and not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    for what, f in (("load", load), ("pretrained", pretrained)):
        if f is not None and not callable(f):
            raise TypeError(f"{what} must be callable, got {type(f).__name__}")
    if model_type is not None and not isinstance(model_type, type):
        raise TypeError(f"model_type must be a class, got {type(model_type).__name__}")
    if settings is not None:
        if isinstance(settings, str) or not all(isinstance(x, str) for x in settings):
            raise TypeError("settings must be a tuple of setting names (str)")
    if layout not in ("batch", "columns"):
        raise ValueError(f"layout must be 'batch' or 'columns', got {layout!r}")
    kind = "model" if (load is not None or pretrained is not None or model_type is not None) \
        else "matrix"
    if kind == "matrix" and func is None:
        raise ValueError("a matrix decoder needs func(A, Y, **settings)")
    if kind == "model":
        if load is None:
            load = getattr(model_type, "load", None)
        if func is None:
            func = _model_decode
            if settings is None and model_type is not None and hasattr(model_type, "decode"):
                settings = _keyword_params(model_type.decode)
        if pretrained is None:
            pretrained = _default_pretrained
    kinds = ("dense",) if inputs is None else (
        (inputs,) if isinstance(inputs, str) else tuple(inputs))
    bad_kinds = [k for k in kinds if k not in INPUT_KINDS]
    if bad_kinds:
        raise ValueError(f"unknown input kind {bad_kinds[0]!r}; known: {', '.join(INPUT_KINDS)}")
    if complex_ok and kind != "matrix":
        raise ValueError("complex_ok is for matrix decoders only")
    if kind == "model" and kinds != ("dense",):
        raise ValueError("inputs is for matrix decoders only")
    complex_ok = bool(complex_ok) or "complex" in kinds
    if complex_ok and "complex" not in kinds:
        kinds = (*kinds, "complex")
    assert func is not None
    if settings is None:
        settings = _keyword_params(func) if func is not _model_decode else ()
        if not settings and model_type is not None and hasattr(model_type, "decode"):
            # a wrapper ``func(model, Y, **settings)`` passes them to model.decode
            settings = _keyword_params(model_type.decode)
    spec = DecoderSpec(
        name=name, func=func, kind=kind, layout=layout, load=load, pretrained=pretrained,
        model_type=model_type, description=description, settings=tuple(settings),
        stopping=_stopping(stopping, tuple(settings)), complex_ok=bool(complex_ok),
        inputs=kinds, scale_free=bool(scale_free),
    )  # fmt: skip
    _register_file_arch(spec)
    _REGISTRY[name] = spec
    return spec


def _register_file_arch(spec: DecoderSpec) -> None:
    """Register the model class's file architecture with the loader, once.

    A subclass of the class already registered for its ``ARCH`` (a user's
    variant of LSTMCS, say) leaves the table alone: files of that architecture
    keep loading as the original class.  Another class claiming a taken
    architecture is an error.
    """
    shapes = getattr(spec.model_type, "file_shapes", None)
    if not spec.archs or shapes is None:
        return
    arch = spec.archs[0]
    have = ARCHITECTURES.get(arch)
    if have is not None and have.model_class not in (None, spec.model_type):
        if have.model_class is not None and issubclass(spec.model_type, have.model_class):  # type: ignore[arg-type]
            return
        raise ValueError(
            f"model-file architecture {arch!r} is already read by "
            f"{getattr(have.model_class, '__name__', have.model_class)}; give "
            f"{getattr(spec.model_type, '__name__', spec.model_type)} its own ARCH"
        )
    register_arch(arch, shapes, spec.model_type,
                  check_meta=getattr(spec.model_type, "check_file_meta", None))


def unregister_decoder(name: str) -> DecoderSpec:
    """Remove decoder ``name`` from the registry (for tests and plugins).

    A model-file architecture its model class brought stays registered.

    Parameters
    ----------
    name : str
        A registered name.

    Returns
    -------
    DecoderSpec
        The removed entry.
    """
    spec = get_decoder_spec(name)
    del _REGISTRY[spec.name]
    return spec


def decoder_names() -> list[str]:
    """Names accepted by :func:`cscore.decoder`, in registration order.

    Returns
    -------
    list of str
    """
    return list(_REGISTRY)


def decoder_specs() -> list[DecoderSpec]:
    """Every registered :class:`DecoderSpec`, in registration order.

    Returns
    -------
    list of DecoderSpec
    """
    return list(_REGISTRY.values())


def get_decoder_spec(name: str) -> DecoderSpec:
    """The registration of decoder ``name`` (case-insensitive).

    Parameters
    ----------
    name : str
        A registered name.

    Returns
    -------
    DecoderSpec

    Raises
    ------
    ValueError
        Unknown name; the message lists the known ones.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    key = name.strip().lower()
    if key not in _REGISTRY:
        raise ValueError(f"unknown decoder {name!r}; known decoders: {', '.join(_REGISTRY)}")
    return _REGISTRY[key]


def decoder_table() -> str:
    """A markdown table of every registered decoder (the docs' table is this one).

    Returns
    -------
    str
        One row per decoder: name, what it is built from, the problem layout,
        the stopping rules it supports and its description.
    """
    rows = ["| name | built from | problem | stopping | description |",
            "|---|---|---|---|---|"]
    for s in decoder_specs():
        built = "a model (`model=`)" if s.kind == "model" else "a matrix `A`"
        layout = "each channel alone" if s.layout == "columns" else "(M, L) / (B, M, L)"
        stop = ", ".join(f"`{r}`" for r in s.stopping) or "its own (convergence, or fixed depth)"
        rows.append(f"| `{s.name}` | {built} | {layout} | {stop} | {s.description} |")
    return "\n".join(rows)
