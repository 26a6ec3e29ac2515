"""The decoder contract as a public conformance check: :func:`check_decoder`.

In the spirit of scikit-learn's ``check_estimator``: one suite that every
registered decoder -- cscore's own and those a user registers with
:func:`cscore.register_decoder` -- must pass.  Each check is a small function
named for the property it checks (``check_settings_at_build``,
``check_tol_bounds_residual``, ...); :func:`check_decoder` runs them all on a
decoder and raises an ``AssertionError`` listing every property it breaks.

The contract (``docs/decoders.md``):

* every setting is checked when the decoder is built, before data or files;
* ``tol`` bounds each problem's sum of channel residual norms (:mod:`cscore._tol`);
* results do not depend on the batch a problem is in, nor on the thread count;
* float64 in gives float64 out, float32 in (and a float32 ``A``) gives float32;
* ``decode(c Y) = c decode(Y)`` for every finite ``c`` from 1e-150 to 1e150;
* NaN and infinity are refused with a ``ValueError``;
* with ``tol="auto"``, pure Gaussian noise gives at most one atom per channel
  in at least 95 % of problems;
* the kinds of ``A`` a decoder declares (dense, sparse, operator, complex) are
  accepted and give the dense answer; the others are refused with an error that
  names the kind.

Examples
--------
>>> from cscore.testing import check_decoder
>>> report = check_decoder("somp")
>>> report.ok
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..decoders import decoder as build_decoder
from ..decoders import get_decoder_spec, register_decoder, unregister_decoder
from ..decoders.registry import DecoderSpec
from ._checks import (
    CHECKS,
    FALSE_ALARM_LIMIT,  # noqa: F401  (offered here too)
    SCALES,  # noqa: F401
    Case,
    Skip,
    check_batch_independence,
    check_dtype_kept,
    check_input_kinds,
    check_nonfinite_refused,
    check_pure_noise_auto,
    check_scale_equivariance,
    check_settings_at_build,
    check_thread_independence,
    check_tol_bounds_residual,
)

__all__ = [
    "CHECKS",
    "CheckReport",
    "check_batch_independence",
    "check_decoder",
    "check_dtype_kept",
    "check_input_kinds",
    "check_nonfinite_refused",
    "check_pure_noise_auto",
    "check_scale_equivariance",
    "check_settings_at_build",
    "check_thread_independence",
    "check_tol_bounds_residual",
]


@dataclass
class CheckReport:
    """What :func:`check_decoder` found.

    Attributes
    ----------
    decoder : str
        The registry name checked.
    passed, skipped : list of str
        Names of the checks that passed, or did not apply (with the reason).
    failed : dict
        Check name -> what it found.
    """

    decoder: str
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.failed

    def __str__(self) -> str:
        lines = [f"check_decoder({self.decoder!r}): {len(self.passed)} passed, "
                 f"{len(self.failed)} failed, {len(self.skipped)} skipped"]
        lines += [f"  FAILED {k}: {v}" for k, v in self.failed.items()]
        return "\n".join(lines)


def _default_model(spec: DecoderSpec) -> Any:
    from ..models.registry import pretrained, pretrained_entries

    entries = [e for e in pretrained_entries() if e.arch in spec.archs and not e.error]
    if not entries:
        raise ValueError(f"no shipped model for decoder {spec.name!r}; pass model=")
    best = min(entries, key=lambda e: (e.size_bytes, e.name))
    return pretrained(best.name)


def _default_matrix(rng: np.random.Generator) -> np.ndarray:
    A = rng.standard_normal((32, 64))
    return A / np.linalg.norm(A, axis=0)


def check_decoder(
    decoder: str | Callable[..., Any],
    A: Any = None,
    *,
    model: Any = None,
    settings: dict[str, Any] | None = None,
    checks: Iterable[str] | None = None,
    register: dict[str, Any] | None = None,
    seed: int = 0,
    raise_on_failure: bool = True,
) -> CheckReport:
    """Check that a decoder keeps cscore's decoder contract.

    Parameters
    ----------
    decoder : str or callable
        A registered name, or a function ``func(A, Y, **settings)`` to check as
        a matrix decoder (registered for the check only, with ``register`` as
        the keyword arguments of :func:`cscore.register_decoder`).
    A : array_like (M, N), optional
        Matrix decoders: the sensing matrix; default a seeded Gaussian 32 x 64
        with unit-norm columns.
    model : str, path or model, optional
        Model decoders: the model; default the smallest shipped model of the
        decoder's class.
    settings : dict, optional
        Settings every decode uses besides the stopping rule under test.
    checks : iterable of str, optional
        Names from :data:`CHECKS` to run (default all).
    register : dict, optional
        For a callable ``decoder``: ``layout``, ``stopping``, ``inputs``, ...
    seed : int, default 0
        Seed of the problems.
    raise_on_failure : bool, default True
        Raise an ``AssertionError`` listing the failed checks.

    Returns
    -------
    CheckReport

    Raises
    ------
    AssertionError
        A check failed (with ``raise_on_failure``).
    """
    temp = None
    if callable(decoder) and not isinstance(decoder, str):
        temp = f"check-decoder-{id(decoder):x}"
        register_decoder(temp, decoder, **(register or {}))
        name = temp
    else:
        name = decoder
    try:
        spec = get_decoder_spec(name)
        rng = np.random.default_rng(seed)
        if spec.kind == "model":
            if model is None:
                model = _default_model(spec)
            elif not hasattr(model, "decode"):
                model = build_decoder(spec.name, model=model).model
            mA = np.asarray(model.A)
            M, N = mA.shape
            L = int(getattr(model, "L", 1) or 1)
        else:
            A = _default_matrix(rng) if A is None else A
            M, N = A.shape
            L = 3
        k = max(1, min(M // 6, N // 8))
        case = Case(spec, A, model, dict(settings or {}), rng, k, M, N, L)
        wanted = set(checks) if checks is not None else None
        report = CheckReport(spec.name)
        for check in CHECKS:
            if wanted is not None and check.__name__ not in wanted:
                continue
            case.rng = np.random.default_rng([seed, *map(ord, check.__name__)])
            try:
                check(case)
            except Skip as why:
                report.skipped.append(f"{check.__name__} ({why})")
            except AssertionError as exc:
                report.failed[check.__name__] = str(exc)
            except Exception as exc:
                report.failed[check.__name__] = f"raised {type(exc).__name__}: {exc}"
            else:
                report.passed.append(check.__name__)
    finally:
        if temp is not None:
            unregister_decoder(temp)
    if raise_on_failure and not report.ok:
        raise AssertionError(str(report))
    return report
