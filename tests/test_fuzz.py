"""Property-based fuzzing of every public decoder and data helper (issue 12).

Invariant for every generated call: either a correct result (finite, of the
documented shape and dtype) or ``ValueError`` / ``TypeError`` whose message
names the offending argument -- never another exception, a crash, a NaN.

Profiles (``CSCORE_FUZZ_PROFILE``):

* ``ci`` (default): derandomized (a fixed seed), few examples per property,
  bounded to a few seconds per test; the whole module stays well under 40 s.
* ``long``: many examples with random seeds, for campaigns
  (``scripts/fuzz.sh``, optionally under the sanitizer build).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import cscore  # noqa: E402
from cscore.datasets import sparsify  # noqa: E402
from cscore.datasets.images import image_to_blocks  # noqa: E402
from cscore.metrics import support_recovery  # noqa: E402

settings.register_profile(
    "ci", max_examples=100, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
settings.register_profile(
    "long", max_examples=int(os.environ.get("CSCORE_FUZZ_EXAMPLES", "2000")), deadline=None,
    print_blob=True, suppress_health_check=list(HealthCheck),
)  # fmt: skip
settings.load_profile(os.environ.get("CSCORE_FUZZ_PROFILE", "ci"))

# Special values a hostile caller may pass.
SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-310, 1e-300, 1e-160, 1e154, 1e300, np.nan, np.inf, -np.inf]
SCALES = [1.0, 1e-300, 1e-160, 1e-40, 1e-20, 1e20, 1e150]


@st.composite
def matrices(draw: Any, max_m: int = 8, max_n: int = 12) -> np.ndarray:
    m = draw(st.integers(1, max_m))
    n = draw(st.integers(1, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n)) * draw(st.sampled_from(SCALES))
    kind = draw(st.sampled_from(["plain", "dup", "special", "zero-col", "f32", "fortran", "int"]))
    if kind == "dup" and n > 1:
        A[:, -1] = A[:, 0]
    elif kind == "special":
        A.flat[draw(st.integers(0, A.size - 1))] = draw(st.sampled_from(SPECIAL))
    elif kind == "zero-col":
        A[:, draw(st.integers(0, n - 1))] = 0.0
    elif kind == "f32":
        with np.errstate(over="ignore", under="ignore"):
            A = A.astype(np.float32)
    elif kind == "fortran":
        A = np.asfortranarray(A)
    elif kind == "int":
        A = np.round(A / max(float(np.max(np.abs(A))), 1e-300) * 5).astype(np.int64)
    return A


def _Y_for(draw: Any, A: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal(shape) * draw(st.sampled_from(SCALES))
    kind = draw(st.sampled_from(["plain", "sparse", "zero", "special", "f32", "strided"]))
    if kind == "sparse" and np.isfinite(A).all():
        x = np.zeros(A.shape[1])
        x[rng.integers(0, A.shape[1])] = 1.0
        col = np.asarray(A, dtype=np.float64) @ x
        col = col[None, :, None] if len(shape) == 3 else col[:, None] if len(shape) == 2 else col
        try:
            Y = np.broadcast_to(col, shape).copy()
        except ValueError:
            pass  # shapes that do not match A stay random
    elif kind == "zero":
        Y = np.zeros(shape)
    elif kind == "special" and Y.size:
        Y.flat[draw(st.integers(0, Y.size - 1))] = draw(st.sampled_from(SPECIAL))
    elif kind == "f32":
        with np.errstate(over="ignore", under="ignore"):
            Y = Y.astype(np.float32)
    elif kind == "strided":
        Y = np.repeat(Y, 2, axis=-1)[..., ::2]
    return Y


ARG_NAMES = ("A", "Y", "y", "n_nonzero", "tol", "rtol", "n_threads", "noise_var", "max_iter",
             "lam", "a", "b", "prune_gamma", "snr", "noise", "matrix_reg", "exclude_selected", "x",
             "k", "block_size", "atol", "S", "S_hat", "images", "kind", "levels")  # fmt: skip


def _representable(A: Any, Y: Any) -> bool:
    """False when the solution may exceed the float range (|Y| / |A| beyond it)."""
    f32 = np.asarray(A).dtype == np.float32 or np.asarray(Y).dtype == np.float32
    A, Y = np.asarray(A, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    if not (A.size and Y.size and np.isfinite(A).all() and np.isfinite(Y).all()):
        return True
    with np.errstate(divide="ignore"):
        la = np.log10(np.max(np.abs(A), axis=0))
    ly = np.log10(max(float(np.max(np.abs(Y))), 1e-320))
    fmax = 30 if f32 else 300
    return bool(np.all(ly - la[np.isfinite(la)] < fmax))


def _check(
    call: Any, expect_shape: tuple[int, ...], float32_ok: bool = True, finite: bool = True
) -> None:
    """Run ``call``: a finite result of ``expect_shape`` or a clear error.

    ``finite=False`` (a true solution beyond the float range) accepts inf.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            out = call()
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert any(name in msg for name in ARG_NAMES), f"error names no argument: {msg!r}"
            return
        except FloatingPointError as exc:  # documented for T-SBL / T-MSBL overflow
            assert "divide Y by a constant" in str(exc)
            return
    assert isinstance(out, np.ndarray)
    assert out.shape == expect_shape
    assert out.dtype in (np.float32, np.float64) if float32_ok else out.dtype == np.float64
    if finite:
        assert np.isfinite(out).all(), "non-finite result"
    else:
        assert not np.isnan(out).any(), "NaN result"


common_kw = st.fixed_dictionaries(
    {},
    optional={
        "n_threads": st.sampled_from([1, 2, 3, 0, -1, 2.5, True, "2"]),
    },
)


@given(A=matrices(), data=st.data())
def test_fuzz_omp(A: np.ndarray, data: Any) -> None:
    m, n = A.shape
    B = data.draw(st.sampled_from([None, 0, 1, 3]))
    y = _Y_for(data.draw, A, (m,) if B is None else (m, B))
    kw = data.draw(common_kw)
    kw |= data.draw(st.fixed_dictionaries({}, optional={
        "n_nonzero": st.sampled_from([1, 2, min(m, n), min(m, n) + 1, 0, -3, 1.5, None]),
        "tol": st.sampled_from([0.0, 1e-6, 1.0, -1.0, np.nan, np.inf, None]),
    }))  # fmt: skip
    _check(lambda: cscore.omp(A, y, **kw), (n,) if B is None else (n, B),
           finite=_representable(A, y))


@given(A=matrices(), data=st.data())
def test_fuzz_somp(A: np.ndarray, data: Any) -> None:
    m, n = A.shape
    L = data.draw(st.integers(1, 3))
    B = data.draw(st.sampled_from([None, 0, 1, 3]))
    Y = _Y_for(data.draw, A, (m, L) if B is None else (B, m, L))
    kw = data.draw(common_kw)
    kw |= data.draw(st.fixed_dictionaries({}, optional={
        "n_nonzero": st.sampled_from([1, min(m, n), min(m, n) + 1, 0, None]),
        "tol": st.sampled_from([0.0, 1e-6, -1.0, np.inf, None]),
    }))  # fmt: skip
    _check(lambda: cscore.somp(A, Y, **kw), (n, L) if B is None else (B, n, L),
           finite=_representable(A, Y))


@given(A=matrices(), data=st.data())
def test_fuzz_bcs(A: np.ndarray, data: Any) -> None:
    m, n = A.shape
    B = data.draw(st.sampled_from([None, 0, 1, 2]))
    y = _Y_for(data.draw, A, (m,) if B is None else (m, B))
    kw = data.draw(common_kw)
    kw |= data.draw(st.fixed_dictionaries({}, optional={
        "noise_var": st.sampled_from([1e-12, 0.1, 0.0, -1.0, np.nan, 1e300, None]),
        "rtol": st.sampled_from([0.0, 1e-8, -1.0, None]),
        "max_iter": st.sampled_from([1, 5, 0, 2**40]),
    }))  # fmt: skip
    kw = {k: v for k, v in kw.items() if v is not None}
    _check(lambda: cscore.bcs(A, y, **kw), (n,) if B is None else (n, B),
           finite=_representable(A, y))


@given(A=matrices(max_m=6, max_n=8), data=st.data())
def test_fuzz_mtbcs(A: np.ndarray, data: Any) -> None:
    m, n = A.shape
    L = data.draw(st.integers(1, 3))
    B = data.draw(st.sampled_from([None, 0, 2]))
    Y = _Y_for(data.draw, A, (m, L) if B is None else (B, m, L))
    kw = data.draw(common_kw)
    kw |= data.draw(st.fixed_dictionaries({}, optional={
        "a": st.sampled_from([1e-6, 1.0, 0.0, -1.0]),
        "b": st.sampled_from([1e-6, 1.0, 0.0, np.inf]),
        "max_iter": st.sampled_from([1, 5, 0, 2**40]),
    }))  # fmt: skip
    _check(lambda: cscore.mtbcs(A, Y, **kw), (n, L) if B is None else (B, n, L),
           finite=_representable(A, Y))


@given(A=matrices(max_m=6, max_n=8), data=st.data(), exact=st.booleans())
def test_fuzz_sbl(A: np.ndarray, data: Any, exact: bool) -> None:
    m, n = A.shape
    L = data.draw(st.integers(1, 3))
    B = data.draw(st.sampled_from([None, 0, 2]))
    Y = _Y_for(data.draw, A, (m, L) if B is None else (B, m, L))
    kw = data.draw(common_kw)
    kw |= data.draw(st.fixed_dictionaries({}, optional={
        "lam": st.sampled_from([1e-300, 1e-3, 0.0, -1.0, np.nan]),
        "prune_gamma": st.sampled_from([0.0, 1e-3, -1.0]),
        "max_iter": st.sampled_from([1, 20, 0, 2**40]),
    }))  # fmt: skip
    if exact:
        kw |= data.draw(st.fixed_dictionaries({}, optional={
            "snr": st.sampled_from([None, "inf", "high", "bogus", 3])}))  # fmt: skip
    else:
        kw |= data.draw(st.fixed_dictionaries({}, optional={
            "noise": st.sampled_from([None, "no", "large", "bogus"])}))  # fmt: skip
    kw.setdefault("max_iter", 30)
    f = cscore.tsbl if exact else cscore.tmsbl
    _check(lambda: f(A, Y, **kw), (n, L) if B is None else (B, n, L),
           finite=_representable(A, Y))


_MODEL = None


def _model() -> Any:
    global _MODEL
    if _MODEL is None:
        _MODEL = cscore.pretrained("demo-dct-m32")
    return _MODEL


@given(data=st.data())
def test_fuzz_lstm_cs(data: Any) -> None:
    model = _model()
    M, N, L = model.M, model.N, model.L
    B = data.draw(st.sampled_from([None, 0, 1, 3]))
    shape = (M, L) if B is None else (B, M, L)
    if data.draw(st.booleans()):
        shape = data.draw(st.sampled_from([(M,), (M + 1, L), (M, L + 1), (2, M, 0), (M, 0)]))
    Y = _Y_for(data.draw, model.A, shape)
    kw = data.draw(common_kw)
    kw |= data.draw(st.fixed_dictionaries({}, optional={
        "n_nonzero": st.sampled_from([1, 4, M, M + 1, 0, None]),
        "tol": st.sampled_from([0.0, 1e-200, 0.1, -1.0, np.nan, None]),
        "exclude_selected": st.sampled_from([True, False, "no", 1]),
    }))  # fmt: skip
    expect = (N, L) if B is None else (B, N, L)
    _check(lambda: model.decode(Y, **kw), expect)


@given(data=st.data())
def test_fuzz_data_helpers(data: Any) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    b = data.draw(st.sampled_from([1, 2, 4, 0, -2, 3]))
    kind = data.draw(st.sampled_from(["none", "dct", "haar", "fft"]))
    levels = data.draw(st.sampled_from([0, 1, 2, 5, -1]))
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.complex128, np.int32]))
    x = rng.standard_normal((3, max(b, 1) ** 2)).astype(dtype)
    _check(lambda: sparsify.block_transform(x, kind, b, levels), x.shape)
    k = data.draw(st.sampled_from([1, 3, 0, -1, True, 2.5]))
    shape = data.draw(st.sampled_from([(), (5,), (2, 5), (0,)]))
    v = rng.standard_normal(shape)
    _check(lambda: sparsify.keep_largest(v, k), v.shape)
    side = data.draw(st.sampled_from([4, 6, 8]))
    img = rng.random((2, side, side))
    try:
        out = image_to_blocks(img, b)
        assert out.shape == (2, (side // b) ** 2, b * b)
    except (ValueError, TypeError) as exc:
        assert "block_size" in str(exc) or "divisible" in str(exc)
    S = rng.standard_normal((6, 2))
    S_hat = S.copy()
    if data.draw(st.booleans()):
        S_hat[0, 0] = data.draw(st.sampled_from(SPECIAL))
    atol = data.draw(st.sampled_from([0.0, 0.1, -1.0, np.nan]))
    try:
        r = support_recovery(S_hat, S, atol=atol)
        assert all(0.0 <= v <= 1.0 for v in r.values())
    except (ValueError, TypeError) as exc:
        assert "atol" in str(exc) or "S_hat" in str(exc)
