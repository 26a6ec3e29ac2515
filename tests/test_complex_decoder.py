"""Complex data through cscore.decoder / streams, and OMP/SOMP on complex operators (issue 28)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

import cscore
from cscore.decoders import decoder_specs, register_decoder, unregister_decoder


def _cn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _problem(seed: int, M: int = 24, N: int = 60, L: int = 3, k: int = 4, B: int = 0):
    rng = np.random.default_rng(seed)
    A = _cn(rng, M, N) * rng.uniform(0.5, 2.0, N)  # unequal column norms
    lead = (B,) if B else ()
    X = np.zeros((*lead, N, L), complex)
    for b in range(max(B, 1)):
        rows = rng.choice(N, k, replace=False)
        (X[b] if B else X)[rows] = _cn(rng, k, L) + 1.5
    Y = A @ X + 0.01 * _cn(rng, *lead, M, L)
    return A, X, Y


# -- cscore.decoder -------------------------------------------------------------------


def test_complex_ok_registrations():
    ok = {s.name for s in decoder_specs() if s.complex_ok}
    assert ok == {"omp", "somp", "tmsbl"}


@pytest.mark.parametrize("name, kw", [("omp", {"n_nonzero": 4}), ("somp", {"n_nonzero": 4}),
                                      ("tmsbl", {"noise": "small"})])
def test_decoder_passes_complex_data_through(name, kw):
    A, _, Y = _problem(0, B=3)
    func = getattr(cscore, name)
    dec = cscore.decoder(name, A, **kw)
    assert dec.A.dtype == np.complex128
    got = dec(Y[1])
    np.testing.assert_array_equal(got, func(A, Y[1], **kw))
    assert got.dtype == np.complex128 == dec.output_dtype(Y.dtype)
    batch = dec(Y)
    assert batch.shape == (3, 60, 3) and batch.dtype == np.complex128
    if name == "omp":  # the columns layout: every channel of every problem a column
        cols = Y.transpose(1, 0, 2).reshape(24, -1)
        want = cscore.omp(A, cols, **kw).reshape(60, 3, 3).transpose(1, 0, 2)
        np.testing.assert_array_equal(batch, want)
    else:
        np.testing.assert_array_equal(batch, func(A, Y, **kw))


@pytest.mark.parametrize(
    "a_dt, y_dt, want",
    [
        (np.complex64, np.complex64, np.complex64),
        (np.float32, np.complex64, np.complex64),
        (np.complex64, np.float32, np.complex64),
        (np.complex64, np.float64, np.complex128),
        (np.float64, np.complex64, np.complex128),
    ],
)
def test_decoder_dtype_rule(a_dt, y_dt, want):
    A, _, Y = _problem(1)
    A_, Y_ = (A.real if np.dtype(a_dt).kind == "f" else A).astype(a_dt), \
        (Y.real if np.dtype(y_dt).kind == "f" else Y).astype(y_dt)
    dec = cscore.decoder("somp", A_, n_nonzero=3)
    out = dec(Y_)
    assert out.dtype == want == dec.output_dtype(y_dt)
    np.testing.assert_array_equal(out, cscore.somp(A_, Y_, n_nonzero=3))
    empty = dec(np.zeros((0, 24, 3), dtype=y_dt))
    assert empty.shape == (0, 60, 3) and empty.dtype == want


def test_real_data_keeps_real_dtypes():
    A, _, Y = _problem(2)
    dec = cscore.decoder("somp", A.real.astype(np.float32), n_nonzero=3)
    assert dec.A.dtype == np.float32
    assert dec(Y.real.astype(np.float32)).dtype == np.float32
    assert dec.output_dtype(np.float64) == np.float64


@pytest.mark.parametrize("name", ["bcs", "mtbcs", "tsbl", "amp"])
def test_real_only_decoders_refuse_complex_naming_the_decoder(name):
    A, _, Y = _problem(3)
    with pytest.raises(TypeError, match=rf"decoder '{name}' takes real data only; A is complex"):
        cscore.decoder(name, A)
    dec = cscore.decoder(name, A.real)
    with pytest.raises(TypeError, match=rf"'{name}' takes real data only; Y is complex.*somp"):
        dec(Y)
    with pytest.raises(TypeError, match="Y is complex"):
        dec(np.zeros((0, 24, 3), complex))  # even an empty batch


def test_complex_checks_still_apply():
    A, _, Y = _problem(4)
    dec = cscore.decoder("somp", A, n_nonzero=2)
    bad = Y.copy()
    bad[0, 0] = complex(0.0, np.inf)
    with pytest.raises(ValueError, match="Y"):
        dec(bad)
    with pytest.raises(ValueError, match="M = 24"):
        dec(Y[:20])
    A_nan = A.copy()
    A_nan[2, 3] = complex(np.nan, 0.0)
    with pytest.raises(ValueError, match="A"):
        cscore.decoder("omp", A_nan)


def test_complex_config_round_trips_exactly(tmp_path):
    A, _, Y = _problem(5)
    A[0, 0] = complex(-0.0, 0.1)  # the sign of a zero part survives too
    A = A.astype(np.complex64)
    dec = cscore.decoder("omp", A, n_nonzero=3)
    cfg = json.loads(json.dumps(dec.config))
    assert cfg["A"]["dtype"] == "complex64" and "imag" in cfg["A"]
    back = cscore.Decoder.from_config(cfg)
    assert back == dec and back.A.dtype == np.complex64
    assert back.A.tobytes() == dec.A.tobytes()
    np.testing.assert_array_equal(back(Y.astype(np.complex64)), dec(Y.astype(np.complex64)))
    path = dec.save(tmp_path / "dec.json", inline=False)  # A in a .npy beside it
    assert cscore.Decoder.from_config(path) == dec
    del cfg["A"]["imag"]
    with pytest.raises(ValueError, match="needs 'imag'"):
        cscore.Decoder.from_config(cfg)
    cfg["A"]["imag"] = cfg["A"]["data"][:-1]
    with pytest.raises(ValueError, match="'imag' has shape"):
        cscore.Decoder.from_config(cfg)


def test_register_decoder_complex_ok():
    def real_somp(A, Y, n_nonzero=None):
        return cscore.somp(A, Y, n_nonzero=n_nonzero)

    try:
        spec = register_decoder("t-real", real_somp)
        assert spec.complex_ok is False
        spec = register_decoder("t-cplx", real_somp, complex_ok=True)
        assert spec.complex_ok is True
        A, _, Y = _problem(6)
        with pytest.raises(TypeError, match="'t-real' takes real data only"):
            cscore.decoder("t-real", A)
        assert cscore.decoder("t-cplx", A, n_nonzero=2)(Y).dtype == np.complex128
        with pytest.raises(ValueError, match="matrix decoders only"):
            register_decoder("t-model", model_type=cscore.LSTMCS, complex_ok=True)
    finally:
        for name in ("t-real", "t-cplx", "t-model"):
            if name in cscore.decoder_names():
                unregister_decoder(name)


def test_stream_passes_complex_frames():
    A, _, Y = _problem(7, B=5)
    dec = cscore.decoder("somp", A, n_nonzero=4)
    out = list(cscore.stream(dec, iter(Y), batch=2))
    assert len(out) == 5 and all(o.dtype == np.complex128 for o in out)
    np.testing.assert_array_equal(np.stack(out), dec(Y))
    real_only = cscore.decoder("mtbcs", A.real)
    with pytest.raises(TypeError, match="'mtbcs' takes real data only"):
        list(cscore.stream(real_only, iter(Y), batch=2))


# -- OMP / SOMP on complex operators ---------------------------------------------------


class _Duck:
    """A complex operator that is not a SciPy LinearOperator (no rmatmat)."""

    def __init__(self, A):
        self.A, self.shape, self.dtype = A, A.shape, A.dtype

    def matvec(self, v):
        return self.A @ v

    def rmatvec(self, v):
        return self.A.conj().T @ v


def _operators(A):
    norms = np.linalg.norm(A, axis=0)
    return [
        ("linop", aslinearoperator(A), {"column_norms": norms}),
        ("sparse", sp.csr_matrix(A), {}),
        ("duck", _Duck(A), {"column_norms": norms}),
    ]


@pytest.mark.parametrize("kind", ["linop", "sparse", "duck"])
def test_complex_operator_equals_dense(kind):
    A, X, Y = _problem(8, B=4)
    _, op, kw = next(o for o in _operators(A) if o[0] == kind)
    for stop in ({"n_nonzero": 4}, {"tol": 0.3}, {"n_nonzero": 3, "tol": 0.3}):
        d = cscore.somp(A, Y, return_result=True, **stop)
        o = cscore.somp(op, Y, return_result=True, **stop, **kw)
        assert o.x.dtype == np.complex128 and o.residual_norm.dtype == np.float64
        np.testing.assert_allclose(o.x, d.x, rtol=0, atol=1e-10)
        np.testing.assert_allclose(o.residual_norm, d.residual_norm, rtol=1e-9)
        np.testing.assert_array_equal(o.extra["atoms"], d.extra["atoms"])
        np.testing.assert_array_equal(o.stop_reason, d.stop_reason)
        cols = Y[0]
        d = cscore.omp(A, cols, return_result=True, **stop)
        o = cscore.omp(op, cols, return_result=True, **stop, **kw)
        np.testing.assert_allclose(o.x, d.x, rtol=0, atol=1e-10)
        np.testing.assert_array_equal(o.n_iter, d.n_iter)
    # the support is found and the fit is Hermitian least squares
    x = cscore.somp(op, Y[0], n_nonzero=4, **kw)
    assert set(np.flatnonzero(np.abs(x).sum(1))) == set(np.flatnonzero(np.abs(X[0]).sum(1)))


def test_real_operator_with_complex_data_and_complex64():
    A, X, Y = _problem(9)
    Ar = A.real.copy()
    Yc = Ar @ X
    for op, kw in ((aslinearoperator(Ar), {"column_norms": np.linalg.norm(Ar, axis=0)}),
                   (sp.csc_matrix(Ar), {})):
        got = cscore.somp(op, Yc, n_nonzero=4, **kw)
        assert got.dtype == np.complex128
        np.testing.assert_allclose(got, cscore.somp(Ar, Yc, n_nonzero=4), rtol=0, atol=1e-10)
    # a real operator is only ever given real vectors
    calls = []
    lin = LinearOperator(Ar.shape, matvec=lambda v: calls.append(v.dtype) or Ar @ v,
                         rmatvec=lambda v: calls.append(v.dtype) or Ar.T @ v, dtype=np.float64)
    cscore.omp(lin, Yc[:, 0], n_nonzero=3, column_norms=np.ones(60))
    assert calls and all(np.dtype(dt).kind == "f" for dt in calls)
    op64 = aslinearoperator(A.astype(np.complex64))
    res = cscore.somp(op64, Y.astype(np.complex64), n_nonzero=4, return_result=True,
                      column_norms=np.linalg.norm(A, axis=0))
    assert res.x.dtype == np.complex64 and res.residual_norm.dtype == np.float32
    dense = cscore.somp(A.astype(np.complex64), Y.astype(np.complex64), n_nonzero=4)
    np.testing.assert_allclose(res.x, dense, rtol=0, atol=1e-4)
    f32 = cscore.omp(aslinearoperator(Ar.astype(np.float32)), Yc[:, 0].astype(np.complex64),
                     n_nonzero=3, column_norms=np.ones(60))
    assert f32.dtype == np.complex64


def test_complex_operator_errors():
    A, _, Y = _problem(10)
    op = aslinearoperator(A)
    with pytest.raises(ValueError, match="tol='auto' is not available"):
        cscore.somp(op, Y, tol="auto")
    with pytest.raises(ValueError, match="NaN"):
        cscore.omp(op, np.full(24, complex(np.nan, 0)), n_nonzero=2, column_norms=np.ones(60))
    A0 = A.copy()
    A0[:, 5] = 0
    with pytest.raises(ValueError, match="all-zero column"):
        cscore.omp(sp.csr_matrix(A0), Y, n_nonzero=2)
    assert not cscore.omp(sp.csr_matrix(A), np.zeros(24, complex), n_nonzero=2).any()
