"""The decoder contract (docs/decoders.md) and its public check, cscore.testing.

Every registered decoder passes :func:`cscore.testing.check_decoder`; toy
decoders that each break one item of the contract fail exactly that check.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import aslinearoperator

import cscore
from cscore import _tol
from cscore.datasets import expected_noise_tol
from cscore.decoders import decoder_names, register_decoder, unregister_decoder
from cscore.testing import CHECKS, check_decoder


@pytest.mark.parametrize("name", decoder_names())
def test_every_registered_decoder_keeps_the_contract(name):
    report = check_decoder(name, raise_on_failure=False)
    assert report.ok, str(report)
    assert report.passed


# -- toy decoders, each breaking one item ---------------------------------------------


def _good(A, Y, *, n_nonzero=None, tol=None, n_threads=None):
    return cscore.somp(A, Y, n_nonzero=n_nonzero, tol=tol, n_threads=n_threads)


_GOOD = {"stopping": ("n_nonzero", "tol")}


def test_a_correct_toy_decoder_passes():
    report = check_decoder(_good, register=_GOOD)
    assert report.ok and "check_settings_at_build" in report.passed
    assert "check_tol_bounds_residual" in report.passed


def _unchecked(A, Y, *, n_nonzero=None, tol=None, n_threads=None):
    Y = np.asarray(Y)
    if not np.any(Y):  # answers the probe without looking at its settings
        return np.zeros((*Y.shape[:-2], A.shape[1], Y.shape[-1]))
    return _good(A, Y, n_nonzero=n_nonzero, tol=tol, n_threads=n_threads)


def _loose_tol(A, Y, *, n_nonzero=None, tol=None, n_threads=None):
    return _good(A, Y, n_nonzero=n_nonzero or 1, n_threads=n_threads)  # ignores tol


def _batch_dependent(A, Y, *, n_nonzero=None, tol=None, n_threads=None):
    Y = np.asarray(Y)
    c = np.max(np.abs(Y)) or 1.0  # one scale for the whole batch: float32 rounding differs
    X = _good(A, (Y / c).astype(np.float32).astype(np.float64), n_nonzero=n_nonzero,
              tol=None if tol is None else tol / c, n_threads=n_threads)
    return X * c


def _always_float64(A, Y, **kw):
    return np.asarray(_good(A, Y, **kw), dtype=np.float64)


def _absolute_threshold(A, Y, **kw):
    X = _good(A, Y, **kw)
    return np.where(np.abs(X) < 1e-3, 0.0, X)  # an absolute threshold: not scale-free


def _thread_dependent(A, Y, *, n_nonzero=None, tol=None, n_threads=None):
    X = _good(A, Y, n_nonzero=n_nonzero, tol=tol, n_threads=n_threads)
    return X * (1 + 1e-12 * ((n_threads or cscore.get_num_threads()) - 1))


def _noisy_auto(A, Y, *, n_nonzero=None, tol=None, n_threads=None):
    if tol == "auto":
        return _good(A, Y, n_nonzero=A.shape[0] // 4, n_threads=n_threads)
    return _good(A, Y, n_nonzero=n_nonzero, tol=tol, n_threads=n_threads)


def _dense_only_declared_sparse(A, Y, **kw):
    if sp.issparse(A):  # declares sparse A, then mishandles it
        A = np.asarray(A.todense()) * 1.5
    return _good(A, Y, **kw)


def _complex_declared_but_refused(A, Y, **kw):
    if np.iscomplexobj(A) or np.iscomplexobj(Y):
        raise TypeError("real data only")
    return _good(A, Y, **kw)


@pytest.mark.parametrize(
    ("func", "register", "broken"),
    [
        (_unchecked, _GOOD, "check_settings_at_build"),
        (_loose_tol, _GOOD, "check_tol_bounds_residual"),
        (_batch_dependent, _GOOD, "check_batch_independence"),
        (_thread_dependent, _GOOD, "check_thread_independence"),
        (_always_float64, _GOOD, "check_dtype_kept"),
        (_absolute_threshold, _GOOD, "check_scale_equivariance"),
        (_absolute_threshold, {**_GOOD, "scale_free": False}, "check_scale_equivariance"),
        (_noisy_auto, {"stopping": ("n_nonzero", "tol", "auto")}, "check_pure_noise_auto"),
        (_dense_only_declared_sparse, {**_GOOD, "inputs": ("dense", "sparse")},
         "check_input_kinds"),
        (_complex_declared_but_refused, {**_GOOD, "inputs": ("dense", "complex")},
         "check_input_kinds"),
    ],
)
def test_a_broken_toy_decoder_fails_its_check(func, register, broken):
    report = check_decoder(func, register=register, raise_on_failure=False)
    assert broken in report.failed, str(report)
    with pytest.raises(AssertionError, match=broken):
        check_decoder(func, register=register, checks=[broken])


def test_nonfinite_data_never_reaches_a_decoder(rng):
    seen = []

    def spy(A, Y, *, n_nonzero=None):
        seen.append(np.asarray(Y).copy())
        return cscore.somp(A, Y, n_nonzero=n_nonzero)

    report = check_decoder(spy, checks=["check_nonfinite_refused"])
    assert report.passed == ["check_nonfinite_refused"]
    assert all(np.isfinite(y).all() for y in seen)  # the Decoder refused them first


def test_checks_are_named_for_their_property():
    names = [c.__name__ for c in CHECKS]
    assert len(set(names)) == len(names) and all(n.startswith("check_") for n in names)
    for c in CHECKS:
        assert c.__doc__ and c.__name__ in cscore.testing.__all__


def test_the_temporary_registration_is_removed():
    before = decoder_names()
    check_decoder(_good, register=_GOOD, checks=["check_dtype_kept"])
    assert decoder_names() == before


# -- item 1: one meaning of tol --------------------------------------------------------


def _problem(rng, M=24, N=48, L=3, k=3, sigma=0.02):
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((N, L))
    S[rng.choice(N, k, replace=False)] = rng.standard_normal((k, L))
    return A, A @ S + sigma * rng.standard_normal((M, L))


@pytest.mark.parametrize("name", ["omp", "somp"])
def test_tol_bounds_the_problems_sum_of_channel_norms(name, rng):
    A, Y = _problem(rng)
    tol = 0.6
    X = cscore.decoder(name, A, tol=tol)(Y)
    assert float(_tol.residual_measure(Y - A @ X)) <= tol
    # and omp is not allowed the whole tol on every channel (the old per-column meaning)
    X_old = cscore.omp(A, Y, tol=tol)
    if name == "omp":
        assert float(_tol.residual_measure(Y - A @ X_old)) > tol or np.array_equal(X, X_old)


def test_omp_decoder_splits_tol_over_channels_in_batches(rng):
    A, _ = _problem(rng)
    Y = np.stack([_problem(np.random.default_rng(s))[1] for s in range(4)])
    Y = np.stack([A @ np.linalg.lstsq(A, y, rcond=None)[0] * 0 + y for y in Y])
    X = cscore.decoder("omp", A, tol=0.5)(Y)
    for b in range(len(Y)):
        np.testing.assert_array_equal(X[b], cscore.omp(A, Y[b], tol=0.5 / Y.shape[2]))


def test_the_papers_threshold_is_written_once():
    assert expected_noise_tol(72, 4, 0.005) == _tol.paper_noise_tol(72, 4, 0.005)
    np.testing.assert_allclose(_tol.paper_noise_tol(72, 4, 0.005), 4 * 0.005 * np.sqrt(288))


@pytest.mark.parametrize("fn", ["bcs", "mtbcs", "tsbl", "tmsbl", "amp", "vamp"])
def test_convergence_tolerance_is_rtol_and_tol_is_deprecated(fn, rng):
    A, Y = _problem(rng)
    f = getattr(cscore, fn)
    y = Y[:, 0] if fn == "bcs" else Y
    new = f(A, y, rtol=1e-4, return_result=True)
    with pytest.warns(DeprecationWarning, match="rtol"):
        old = f(A, y, tol=1e-4, return_result=True)
    np.testing.assert_array_equal(old.x, new.x)
    assert "tol" not in set(np.ravel(new.stop_reason))


@pytest.mark.parametrize("name", ["bcs", "mtbcs", "tsbl", "tmsbl", "amp", "vamp", "lista"])
def test_a_decoder_without_the_residual_rule_refuses_tol(name, rng):
    A, _ = _problem(rng)
    kw = {"model": "lista-mnist-m72"} if name == "lista" else {"A": A}
    with pytest.raises(ValueError, match="tol"):
        cscore.decoder(name, tol=0.1, **kw)
    with pytest.raises(ValueError, match="tol"):
        cscore.decoder(name, tol="auto", **kw)


# -- item 2: settings checked at build, names matched one way --------------------------


@pytest.mark.parametrize(
    ("name", "settings", "word"),
    [("omp", {"n_nonzero": 1.5}, "n_nonzero"), ("somp", {"tol": -1}, "tol"),
     ("amp", {"damping": 2.0}, "damping"), ("tmsbl", {"noise": "loud"}, "noise"),
     ("bcs", {"noise_var": -1.0}, "noise_var"), ("vamp", {"denoiser": "x"}, "denoiser")],
)
def test_bad_values_are_refused_when_the_decoder_is_built(name, settings, word, rng):
    A, _ = _problem(rng)
    with pytest.raises((ValueError, TypeError), match=word) as info:
        cscore.decoder(name, A, **settings)
    assert name in str(info.value)


def test_names_match_one_way():
    def f(A, Y, *, n_nonzero=None):
        return cscore.somp(A, Y, n_nonzero=n_nonzero)

    spec = register_decoder("MyDec", f)
    try:
        assert spec.name == "mydec" and "mydec" in decoder_names()
        assert cscore.decoders.get_decoder_spec("MyDec") is spec
        with pytest.raises(ValueError, match="already registered"):
            register_decoder("MYDEC", f)
    finally:
        unregister_decoder("MyDec")
    with pytest.raises(ValueError, match="already registered"):
        register_decoder("OMP", f)


def test_registration_arguments_are_checked():
    def f(A, Y, *, n_nonzero=None, tol=None):
        return cscore.somp(A, Y, n_nonzero=n_nonzero, tol=tol)

    spec = register_decoder("one-rule", f, stopping="tol")
    try:
        assert spec.stopping == ("tol",)
    finally:
        unregister_decoder("one-rule")
    with pytest.raises(TypeError, match="callable"):
        register_decoder("not-callable", "somp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="input kind"):
        register_decoder("bad-kind", f, inputs=("dense", "gpu-tensor"))


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "cscore", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_cscore_decode_refuses_bad_settings_before_writing(tmp_path, rng):
    pytest.importorskip("zarr")
    A, _ = _problem(rng, L=2)
    Y = np.stack([_problem(np.random.default_rng(s), L=2)[1] for s in range(3)])
    Y = np.einsum("mn,bnl->bml", A, np.linalg.pinv(A) @ Y)
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "Y.npy", Y)
    out = tmp_path / "out"
    for bad in (["--set", "n_nonzero=1.5"], ["--tol", "-1"]):
        r = _cli("decode", "--input", "Y.npy", "--output", str(out), "--decoder", "somp",
                 "--matrix", "A.npy", *bad, cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert not out.exists()
    r = _cli("decode", "--input", "Y.npy", "--output", str(out), "--decoder", "amp",
             "--matrix", "A.npy", "--tol", "auto", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "auto" in r.stderr
    assert not out.exists()
    r = _cli("decode", "--input", "Y.npy", "--output", str(out), "--decoder", "somp",
             "--matrix", "A.npy", "--set", "n_nonzero=2", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "cscore-manifest.json").read_text())["done"]


def test_a_run_that_fails_before_its_first_chunk_leaves_nothing(tmp_path, rng):
    pytest.importorskip("zarr")
    A, _ = _problem(rng, L=2)
    Y = np.zeros((3, A.shape[0], 2))
    np.save(tmp_path / "Y.npy", Y)

    def failing(A, Y, *, n_nonzero=None):
        if np.ndim(Y) == 3:  # the probe (M, L) passes; the run's batches fail
            raise RuntimeError("decoder failed")
        return np.zeros((A.shape[1], Y.shape[-1]))

    register_decoder("fails-on-batches", failing)
    try:
        dec = cscore.decoder("fails-on-batches", A)
        with pytest.raises(RuntimeError):
            cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "out")
        assert not (tmp_path / "out").exists()
    finally:
        unregister_decoder("fails-on-batches")


# -- item 5 (the decoder half): every input a decoder accepts, accepted everywhere -----


@pytest.mark.parametrize("name", ["omp", "somp"])
@pytest.mark.parametrize("kind", ["sparse", "operator"])
def test_decoder_takes_what_the_function_takes(name, kind, rng):
    A, Y = _problem(rng)
    Ak = sp.csr_matrix(A) if kind == "sparse" else aslinearoperator(A)
    dec = cscore.decoder(name, Ak, n_nonzero=3)
    np.testing.assert_allclose(dec(Y), cscore.decoder(name, A, n_nonzero=3)(Y),
                               rtol=1e-9, atol=1e-12)  # products through other BLAS calls
    with pytest.raises(ValueError, match="config"):
        dec.config


@pytest.mark.parametrize("name", ["vamp", "tmsbl", "bcs"])
def test_decoder_names_the_kind_it_refuses(name, rng):
    A, _ = _problem(rng)
    with pytest.raises(TypeError, match="LinearOperator"):
        cscore.decoder(name, aslinearoperator(A))
    with pytest.raises(TypeError, match="sparse"):
        cscore.decoder(name, sp.csr_matrix(A))


@pytest.mark.parametrize("name", ["tsbl", "tmsbl", "mtbcs"])
def test_scale_dependent_decoders_say_so(name, rng):
    A, Y = _problem(rng)
    with pytest.warns(cscore.ScaleWarning, match="scale"):
        getattr(cscore, name)(A, Y * 1e-150)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cscore.ScaleWarning)
        getattr(cscore, name)(A, Y)
    assert not cscore.decoders.get_decoder_spec(name).scale_free


def test_probe_warnings_do_not_leak(rng):
    A, _ = _problem(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cscore.decoder("tsbl", A)
        cscore.decoder("bcs", A)


def test_docs_state_the_contract():
    text = (Path(__file__).resolve().parents[1] / "docs" / "decoders.md").read_text()
    for word in ("rtol", "sum of channel residual norms", "check_decoder", "tol / L"):
        assert word in text


def test_decode_file_takes_a_sparse_decoder_and_refuses_an_operator(tmp_path, rng):
    pytest.importorskip("zarr")
    A, _ = _problem(rng)
    Y = np.stack([_problem(np.random.default_rng(s))[1] for s in range(3)])
    np.save(tmp_path / "Y.npy", Y)
    dec = cscore.decoder("somp", sp.csr_matrix(A), n_nonzero=3)
    out = cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "out", progress=False)
    np.testing.assert_allclose(np.asarray(out), cscore.decoder("somp", A, n_nonzero=3)(Y),
                               rtol=1e-9, atol=1e-12)  # sparse products: other rounding
    op = cscore.decoder("somp", aslinearoperator(A), n_nonzero=3)
    with pytest.raises(ValueError, match="LinearOperator"):
        cscore.decode_file(op, tmp_path / "Y.npy", tmp_path / "out2", progress=False)
    assert not (tmp_path / "out2").exists()


@pytest.mark.parametrize("fn", ["omp", "bcs"])
def test_measurements_are_Y_everywhere(fn, rng):
    A, Y = _problem(rng)
    f = getattr(cscore, fn)
    new = f(A, Y=Y[:, 0])
    with pytest.warns(DeprecationWarning, match="Y"):
        old = f(A, y=Y[:, 0])
    np.testing.assert_array_equal(old, new)
    np.testing.assert_array_equal(f(A, Y[:, 0]), new)
    with pytest.raises(TypeError, match="once"):
        f(A, Y[:, 0], y=Y[:, 0])
    with pytest.raises(TypeError, match="Y must be an array"):
        f(A)
