"""The checks of the decoder contract, one function per property.

:class:`Case` holds the decoder under test and builds the problems the checks
share; each ``check_*`` function raises an ``AssertionError`` saying what broke
(or :class:`Skip` where the property does not apply); :data:`CHECKS` lists them
in the order :func:`cscore.testing.check_decoder` runs them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._tol import ScaleWarning, column_tol, residual_measure
from ..decoders import Decoder
from ..decoders import decoder as build_decoder
from ..decoders.registry import INPUT_KINDS, DecoderSpec

#: Scales of ``check_scale_equivariance``: powers of two (exact) and the
#: extremes 1e-150 / 1e150 the contract names.
SCALES = (2.0**-500, 1e-150, 2.0**-40, 2.0**40, 1e150, 2.0**500)

#: The largest share of pure-noise problems allowed more than one atom in a channel.
FALSE_ALARM_LIMIT = 0.05


class Skip(Exception):
    """A check that does not apply to this decoder."""


@dataclass
class Case:
    """The decoder under test and the problems the checks share."""

    spec: DecoderSpec
    A: Any
    model: Any
    settings: dict[str, Any]
    rng: np.random.Generator
    k: int
    M: int
    N: int
    L: int

    def build(self, A: Any = None, **settings: Any) -> Decoder:
        """The decoder under test with ``settings`` (and ``A``) over the case's own."""
        merged = {**self.settings, **settings}
        merged = {k: v for k, v in merged.items() if v is not None}
        if self.spec.kind == "model":
            return build_decoder(self.spec.name, model=self.model, **merged)
        return build_decoder(self.spec.name, self.A if A is None else A, **merged)

    @property
    def stop(self) -> dict[str, Any]:
        """The settings of a stopping rule that does not depend on the data's scale."""
        if "n_nonzero" in self.spec.stopping:
            return {"n_nonzero": self.k}
        return {}

    @property
    def A_dense(self) -> np.ndarray:
        """The sensing matrix as an array (the model's, for a model decoder)."""
        return np.asarray(self.A if self.spec.kind == "matrix" else self.model.A)

    def problems(self, B: int, *, sigma: float = 1e-3, dtype: Any = np.float64) -> np.ndarray:
        """``B`` (M, L) problems: k-sparse rows, Gaussian values, a little noise."""
        A = self.A_dense.astype(np.float64) if self.A_dense.dtype.kind != "c" else \
            self.A_dense.real.astype(np.float64)
        S = np.zeros((B, self.N, self.L))
        for b in range(B):
            rows = self.rng.choice(self.N, self.k, replace=False)
            S[b, rows] = self.rng.standard_normal((self.k, self.L))
        Y = A @ S + sigma * self.rng.standard_normal((B, self.M, self.L))
        return Y.astype(dtype)


# -- the checks ------------------------------------------------------------------------


def check_settings_at_build(case: Case) -> None:
    """Bad settings are refused by ``cscore.decoder`` itself, before any data."""
    spec = case.spec
    bad: list[tuple[dict[str, Any], str]] = [({"no_such_setting_xyz": 1}, "no_such_setting_xyz")]
    if "n_nonzero" in spec.stopping:
        bad += [({"n_nonzero": 1.5}, "n_nonzero"), ({"n_nonzero": 0}, "n_nonzero"),
                ({"n_nonzero": True}, "n_nonzero")]
    if "tol" in spec.stopping:
        bad += [({"tol": -1.0}, "tol"), ({"tol": float("nan")}, "tol"),
                ({"tol": "bogus"}, "tol")]
    else:
        bad += [({"tol": 1.0}, "tol")]
    if "auto" not in spec.stopping:
        bad += [({"tol": "auto"}, "tol")]
    if "max_iter" in spec.settings:
        bad += [({"max_iter": 0}, "max_iter")]
    if "n_threads" in spec.settings:
        bad += [({"n_threads": 0}, "n_threads")]
    problems = []
    for settings, name in bad:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                case.build(**settings)
        except (ValueError, TypeError) as exc:
            if name not in str(exc):
                problems.append(f"{settings}: the error does not name {name!r}: {exc}")
            continue
        except Exception as exc:
            problems.append(f"{settings}: {type(exc).__name__} instead of ValueError: {exc}")
            continue
        problems.append(f"{settings} was accepted when the decoder was built")
    if problems:
        raise AssertionError("; ".join(problems))


def check_tol_bounds_residual(case: Case) -> None:
    """A problem reported stopped by ``tol`` has its sum of channel residual norms <= tol."""
    spec = case.spec
    if "tol" not in spec.stopping:
        raise Skip("no tol rule")
    Y = case.problems(12, sigma=1e-2)
    A = case.A_dense
    tol = 4.0 * 1e-2 * np.sqrt(case.M) * case.L  # well above the noise: reachable
    stopped = _tol_stopped(case, Y, tol)
    X = case.build(tol=tol)(Y)
    meas = residual_measure(Y - np.einsum("mn,bnl->bml", A, X))
    if stopped is None:  # no stop reasons: every problem must end within tol
        stopped = np.ones(len(Y), dtype=bool)
    if not stopped.any():
        raise AssertionError(f"no problem reached tol = {tol:.3g} on easy problems")
    over = meas[stopped] > tol * (1 + 1e-9) + 1e-12
    if over.any():
        raise AssertionError(
            f"{int(over.sum())} of {int(stopped.sum())} problems reported reaching tol = "
            f"{tol:.4g} with sum of channel residual norms up to {meas[stopped].max():.4g}"
        )


def _tol_stopped(case: Case, Y: np.ndarray, tol: float) -> np.ndarray | None:
    """Which problems the decoder reports stopped by ``tol`` (None: it cannot say)."""
    spec = case.spec
    settings = {**case.settings, "tol": tol}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if spec.kind == "model":
                res = case.model.decode(Y, return_result=True, **settings)
                reasons = np.asarray(res.stop_reason).reshape(len(Y), -1)
            elif spec.layout == "columns":
                cols = Y.transpose(1, 0, 2).reshape(case.M, -1)
                settings["tol"] = column_tol(tol, case.L)
                res = spec.func(case.A, cols, return_result=True, **settings)
                reasons = np.asarray(res.stop_reason).reshape(len(Y), case.L)
            else:
                res = spec.func(case.A, Y, return_result=True, **settings)
                reasons = np.asarray(res.stop_reason).reshape(len(Y), -1)
        except TypeError:  # no return_result
            return None
    return np.asarray((reasons == "tol").all(axis=1))


def check_batch_independence(case: Case) -> None:
    """A problem decodes to the same bits alone and inside a batch."""
    dec = case.build(**case.stop)
    Y = case.problems(5)
    batch = dec(Y)
    for b in (0, 3):
        alone = dec(Y[b])
        if not np.array_equal(batch[b], alone, equal_nan=True):
            raise AssertionError(f"problem {b}: batch result differs from the result alone")


def check_thread_independence(case: Case) -> None:
    """One thread and two give the same bits."""
    from .._config import get_num_threads, set_num_threads

    Y = case.problems(6)
    old = get_num_threads()
    try:
        out = []
        for n in (1, 2):
            set_num_threads(n)
            extra = {"n_threads": n} if "n_threads" in case.spec.settings else {}
            out.append(case.build(**case.stop, **extra)(Y))
    finally:
        set_num_threads(old)
    if not np.array_equal(out[0], out[1], equal_nan=True):
        raise AssertionError("1 thread and 2 threads give different results")


def check_dtype_kept(case: Case) -> None:
    """float64 stays float64; float32 measurements (and A) give float32."""
    Y = case.problems(2)
    got64 = case.build(**case.stop)(Y).dtype
    if got64 != np.float64:
        raise AssertionError(f"float64 input gave {got64}")
    if case.spec.kind == "matrix":
        dec32 = case.build(A=case.A_dense.astype(np.float32), **case.stop)
    else:
        dec32 = case.build(**case.stop)
    got32 = dec32(Y.astype(np.float32)).dtype
    if got32 != np.float32:
        raise AssertionError(f"float32 input gave {got32}")


def check_scale_equivariance(case: Case) -> None:
    """``decode(c Y) = c decode(Y)`` from c = 1e-150 to 1e150 (or a clear error).

    A decoder registered ``scale_free=False`` (absolute thresholds or priors)
    must instead warn with :class:`cscore.ScaleWarning` (or raise a clear error)
    at 1e-150 and 1e150, and stay quiet at its own scale.
    """
    Y = case.problems(3)
    if not case.spec.scale_free:
        _check_scale_warning(case, Y)
        return
    ref = case.build(**case.stop)(Y)
    scale = float(np.max(np.abs(ref))) or 1.0
    problems = []
    for c in SCALES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = case.build(**case.stop)(Y * c)
        except (ValueError, ArithmeticError) as exc:  # a clear refusal is allowed
            if "scale" not in str(exc) and "magnitude" not in str(exc):
                problems.append(f"c={c:.3g}: {type(exc).__name__} that does not say the data's "
                                f"magnitude is the problem: {exc}")
            continue
        if not np.all(np.isfinite(got)):
            problems.append(f"c={c:.3g}: non-finite estimate")
            continue
        err = float(np.max(np.abs(got / c - ref))) / scale
        if err > 1e-6:
            problems.append(f"c={c:.3g}: decode(cY)/c differs from decode(Y) by {err:.2g} "
                            "(relative to max |X|)")
    if problems:
        raise AssertionError("; ".join(problems))


def _check_scale_warning(case: Case, Y: np.ndarray) -> None:
    dec = case.build(**case.stop)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScaleWarning)
        try:
            dec(Y)
        except ScaleWarning as w:
            raise AssertionError(f"ScaleWarning at the decoder's own scale: {w}") from None
    problems = []
    for c in (1e-150, 1e150):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                dec(Y * c)
            except (ValueError, ArithmeticError) as exc:
                if "scale" in str(exc) or "magnitude" in str(exc):
                    continue
                problems.append(f"c={c:.3g}: {type(exc).__name__} without naming the scale")
                continue
        if not any(issubclass(w.category, ScaleWarning) for w in caught):
            problems.append(f"c={c:.3g}: a scale-dependent decoder gave no ScaleWarning")
    if problems:
        raise AssertionError("; ".join(problems))


def check_nonfinite_refused(case: Case) -> None:
    """NaN or infinity in ``Y`` is a ValueError."""
    dec = case.build(**case.stop)
    Y = case.problems(2)
    for bad in (np.nan, np.inf):
        Z = Y.copy()
        Z[1, 0, 0] = bad
        try:
            dec(Z)
        except ValueError:
            continue
        except Exception as exc:
            raise AssertionError(f"{bad} in Y: {type(exc).__name__} instead of ValueError") \
                from None
        raise AssertionError(f"{bad} in Y was accepted")


def check_pure_noise_auto(case: Case, n_problems: int = 200) -> None:
    """``tol="auto"`` on pure Gaussian noise: <= 1 atom per channel in >= 95 % of problems."""
    if "auto" not in case.spec.stopping:
        raise Skip("no tol='auto'")
    Y = case.rng.standard_normal((n_problems, case.M, case.L))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = case.build(tol="auto")(Y)
    atoms = np.count_nonzero(X, axis=1)  # (B, L)
    alarms = float(np.mean((atoms > 1).any(axis=1)))
    if alarms > FALSE_ALARM_LIMIT:
        raise AssertionError(
            f"pure noise: {alarms:.0%} of {n_problems} problems got more than one atom in a "
            f"channel (limit {FALSE_ALARM_LIMIT:.0%}); median atoms {np.median(atoms):.0f}"
        )


def check_input_kinds(case: Case) -> None:
    """Declared kinds of ``A`` give the dense answer; the others are refused by name."""
    if case.spec.kind != "matrix":
        raise Skip("a model decoder's A is its model's")
    import scipy.sparse as sp
    from scipy.sparse.linalg import aslinearoperator

    A = case.A_dense
    Y = case.problems(2)
    ref = case.build(**case.stop)(Y)
    variants: dict[str, tuple[Any, Any]] = {
        "sparse": (sp.csr_matrix(A), Y),
        "operator": (aslinearoperator(A), Y),
        "complex": (A.astype(np.complex128), Y.astype(np.complex128)),
    }
    words = {"sparse": "sparse", "operator": "LinearOperator", "complex": "complex"}
    problems = []
    for kind in INPUT_KINDS[1:]:
        Ak, Yk = variants[kind]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = case.build(A=Ak, **case.stop)(Yk)
        except (TypeError, ValueError) as exc:
            if kind in case.spec.inputs:
                problems.append(f"declared {kind} A refused: {exc}")
            elif words[kind] not in str(exc):
                problems.append(f"{kind} A refused without naming it: {exc}")
            continue
        if kind not in case.spec.inputs:
            problems.append(f"{kind} A accepted but not declared in inputs")
            continue
        # the dense answer, to BLAS rounding: products go through other kernels
        if not np.allclose(np.real(got), ref, rtol=1e-7, atol=1e-9 * np.max(np.abs(ref))):
            problems.append(f"{kind} A gives another answer than dense A")
    if problems:
        raise AssertionError("; ".join(problems))


#: Every check, in the order :func:`check_decoder` runs them.
CHECKS: tuple[Callable[[Case], None], ...] = (
    check_settings_at_build,
    check_tol_bounds_residual,
    check_batch_independence,
    check_thread_independence,
    check_dtype_kept,
    check_scale_equivariance,
    check_nonfinite_refused,
    check_pure_noise_auto,
    check_input_kinds,
)
