"""The PyTorch decoders behind ``device=`` (cscore.decoders.torch_backend).

``device="cpu"`` runs the same PyTorch code a GPU runs, so every family is
checked here against the compiled path (``device=None``): supports equal on at
least 99% of the problems, NMSE within 1%; a problem's result bit-identical
whatever its batch and the chunking; dtypes kept; the missing-torch message.
The CUDA tests skip without a GPU.  Least-squares values go through BLAS on
both sides (different summation orders), hence tolerances, never bit-identity,
between the two paths.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import cscore

from conftest import shared_data

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from cscore.decoders.torch_backend import _common  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One intra-op thread: the shared test machine is small (results do not depend on it)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _sparse(rng, B, N, L, k, joint=False):
    S = np.zeros((B, N, L))
    for b in range(B):
        if joint:
            S[b, rng.choice(N, k, replace=False)] = rng.standard_normal((k, L))
        else:
            for j in range(L):
                S[b, rng.choice(N, k, replace=False), j] = rng.standard_normal(k)
    return S


def _nmse(X, S):
    return float(np.sum((X - S) ** 2) / np.sum(S**2))


def _close(e1, e0):
    """NMSE within 1%; an exact recovery's rounding-level NMSE (< 1e-20) counts as equal."""
    return abs(e1 - e0) <= 0.01 * e0 + 1e-20


def _agree(r_cpu, r_dev, S, axes=(1, 2)):
    """Share of problems with equal supports, and the two NMSEs against the truth."""
    same = np.mean(np.all(r_cpu.support == r_dev.support, axis=axes))
    return same, _nmse(r_cpu.x, S), _nmse(r_dev.x, S)


# -- LSTM-CS, BLSTM-CS --------------------------------------------------------
@pytest.fixture(scope="module")
def lstm():
    return cscore.pretrained("mnist-m72")


@pytest.mark.parametrize("k", [5, 20, 35])
def test_lstm_device_cpu_matches_the_compiled_kernel(lstm, k):
    rng = np.random.default_rng(k)
    S = _sparse(rng, 48, lstm.N, lstm.L, k)
    Y = np.einsum("mn,bnl->bml", lstm.A, S) + 1e-3 * rng.standard_normal((48, lstm.M, lstm.L))
    r0 = lstm.decode(Y, n_nonzero=k, return_result=True)
    r1 = lstm.decode(Y, n_nonzero=k, return_result=True, device="cpu")
    same, e0, e1 = _agree(r0, r1, S)
    assert same >= 0.99
    assert _close(e1, e0)
    assert np.array_equal(r0.n_iter, r1.n_iter)
    assert np.array_equal(r0.stop_reason, r1.stop_reason)
    np.testing.assert_allclose(r1.residual_norm, r0.residual_norm, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("tol", [0.05, "auto"])
def test_lstm_device_cpu_stopping_rules_match(lstm, tol):
    rng = np.random.default_rng(7)
    S = _sparse(rng, 24, lstm.N, lstm.L, 8)
    Y = np.einsum("mn,bnl->bml", lstm.A, S) + 2e-3 * rng.standard_normal((24, lstm.M, lstm.L))
    r0 = lstm.decode(Y, tol=tol, return_result=True)
    r1 = lstm.decode(Y, tol=tol, return_result=True, device="cpu")
    same, e0, e1 = _agree(r0, r1, S)
    assert same >= 0.99
    assert _close(e1, e0)
    assert np.array_equal(r0.n_iter, r1.n_iter)
    assert np.array_equal(r0.stop_reason, r1.stop_reason)
    if tol == "auto":
        np.testing.assert_allclose(r1.extra["sigma_hat"], r0.extra["sigma_hat"], rtol=1e-6)


def test_blstm_device_cpu_matches_the_compiled_kernel():
    m = cscore.pretrained("msrc-buildings-dct-m32-blstm")
    rng = np.random.default_rng(3)
    S = _sparse(rng, 32, m.N, m.L, 6)
    Y = np.einsum("mn,bnl->bml", m.A, S)
    r0 = m.decode(Y, n_nonzero=6, return_result=True)
    r1 = m.decode(Y, n_nonzero=6, return_result=True, device="cpu")
    same, e0, e1 = _agree(r0, r1, S)
    assert same >= 0.99 and _close(e1, e0)


def test_lstm_beam_rescue_runs_on_the_cpu_after_a_device_greedy(lstm):
    rng = np.random.default_rng(5)
    S = _sparse(rng, 8, lstm.N, lstm.L, 12)
    Y = np.einsum("mn,bnl->bml", lstm.A, S)
    r0 = lstm.decode(Y, n_nonzero=12, beam_width=2, channel_tol=1e-3, return_result=True)
    r1 = lstm.decode(Y, n_nonzero=12, beam_width=2, channel_tol=1e-3, return_result=True,
                     device="cpu")
    assert np.array_equal(r0.extra["rescued"], r1.extra["rescued"])
    assert np.mean(np.all(r0.support == r1.support, axis=(1, 2))) >= 0.99


def test_lstm_result_does_not_depend_on_batch_or_chunking(lstm, monkeypatch):
    rng = np.random.default_rng(11)
    Y = np.einsum("mn,bnl->bml", lstm.A, _sparse(rng, 70, lstm.N, lstm.L, 10))
    full = lstm.decode(Y, n_nonzero=10, return_result=True, device="cpu")
    part = lstm.decode(Y[5:8], n_nonzero=10, return_result=True, device="cpu")
    assert np.array_equal(part.x, full.x[5:8])
    assert np.array_equal(part.extra["atoms"], full.extra["atoms"][5:8])
    monkeypatch.setattr(_common, "CPU_CHUNK", 64)  # 70 problems: two chunks
    chunked = lstm.decode(Y, n_nonzero=10, return_result=True, device="cpu")
    assert np.array_equal(chunked.x, full.x)


def test_lstm_batched_sums_option_decodes_the_same_supports(lstm, monkeypatch):
    from cscore.decoders.torch_backend import lstm as tl

    monkeypatch.setattr(tl, "SEQUENTIAL_SUMS", False)
    rng = np.random.default_rng(14)
    S = _sparse(rng, 32, lstm.N, lstm.L, 15)
    Y = np.einsum("mn,bnl->bml", lstm.A, S) + 1e-3 * rng.standard_normal((32, lstm.M, lstm.L))
    r0 = lstm.decode(Y, n_nonzero=15, return_result=True)
    r1 = lstm.decode(Y, n_nonzero=15, return_result=True, device="cpu")
    same, e0, e1 = _agree(r0, r1, S)
    assert same >= 0.99 and _close(e1, e0)


def test_lstm_device_keeps_the_dtype(lstm):
    Y = np.random.default_rng(0).standard_normal((2, lstm.M, lstm.L))
    assert lstm.decode(Y.astype(np.float32), n_nonzero=3, device="cpu").dtype == np.float32
    assert lstm.decode(Y, n_nonzero=3, device="cpu").dtype == np.float64
    assert lstm.decode(Y[0], n_nonzero=3, device="cpu").shape == (lstm.N, lstm.L)
    assert lstm.decode(Y[:0], n_nonzero=3, device="cpu").shape == (0, lstm.N, lstm.L)


@pytest.mark.data
def test_lstm_device_on_held_out_mnist_digits(lstm):
    from cscore.datasets.mnist import load_mnist, mnist_mmv_problems, mnist_tuples

    d = shared_data("mnist")
    images, labels = load_mnist(d / "images-idx3-ubyte.gz", d / "labels-idx1-ubyte.gz")
    tuples = mnist_tuples(labels, np.arange(6000, 7000), n_tuples=25)  # 100 problems
    for k in (5, 20, 35):
        S = mnist_mmv_problems(images, tuples, k)
        Y = np.einsum("mn,bnl->bml", lstm.A, S)
        r0 = lstm.decode(Y, n_nonzero=k, return_result=True)
        r1 = lstm.decode(Y, n_nonzero=k, return_result=True, device="cpu")
        # (a block with fewer than k pixels is explained before step k; its
        # rounding-noise residual still feeds the LSTM's state, so this holds only
        # because the device's least squares round as the kernel's do)
        same = np.all(r0.support == r1.support, axis=(1, 2))
        assert same.mean() >= 0.99, k
        e0, e1 = _nmse(r0.x, S), _nmse(r1.x, S)
        assert _close(e1, e0), k


# -- OMP, SOMP --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("joint", [False, True])
def test_omp_somp_device_cpu_match_the_compiled_kernel(dtype, joint):
    rng = np.random.default_rng(1)
    M, N, L, B, k = 72, 144, 4, 40, 20
    A = rng.standard_normal((M, N)).astype(dtype)
    S = _sparse(rng, B, N, L, k, joint=joint)
    Y = (np.einsum("mn,bnl->bml", A, S) + 0.01 * rng.standard_normal((B, M, L))).astype(dtype)
    fn = cscore.somp if joint else cscore.omp
    Yin = Y if joint else np.ascontiguousarray(Y.transpose(1, 0, 2).reshape(M, -1))
    axes = (1, 2) if joint else 0
    for kw in ({"n_nonzero": k}, {"tol": 0.011 * np.sqrt(M) * (L if joint else 1)}):
        r0 = fn(A, Yin, return_result=True, **kw)
        r1 = fn(A, Yin, return_result=True, device="cpu", **kw)
        assert r1.x.dtype == r0.x.dtype == dtype
        assert np.mean(np.all(r0.support == r1.support, axis=axes)) >= 0.99
        Sx = S if joint else S.transpose(1, 0, 2).reshape(N, -1)
        e0, e1 = _nmse(r0.x, Sx), _nmse(r1.x, Sx)
        assert _close(e1, e0)
        assert np.mean(r0.stop_reason == r1.stop_reason) >= 0.99


def test_somp_one_sensing_matrix_per_problem():
    from cscore.decoders.torch_backend.greedy import greedy_decode

    rng = np.random.default_rng(2)
    P, M, N, L, k = 5, 20, 40, 3, 4
    A = rng.standard_normal((P, M, N))
    S = _sparse(rng, P, N, L, k, joint=True)
    Y = np.einsum("pmn,pnl->pml", A, S)
    X, _res, n_iter, stop, _, atoms = greedy_decode(A, Y, k, True, -1.0, "cpu")
    for p in range(P):
        ref = cscore.somp(A[p], Y[p], n_nonzero=k, return_result=True)
        assert set(atoms[p]) == set(ref.extra["atoms"])
        np.testing.assert_allclose(X[p], ref.x, atol=1e-10)
    assert np.all(n_iter == k) and np.all(stop == 0)


def test_omp_result_does_not_depend_on_batch_or_chunking(monkeypatch):
    rng = np.random.default_rng(4)
    A = rng.standard_normal((30, 60))
    Y = rng.standard_normal((30, 130))
    full = cscore.omp(A, Y, n_nonzero=8, device="cpu")
    assert np.array_equal(cscore.omp(A, Y[:, 70:73], n_nonzero=8, device="cpu"), full[:, 70:73])
    monkeypatch.setattr(_common, "CPU_CHUNK", 64)
    assert np.array_equal(cscore.omp(A, Y, n_nonzero=8, device="cpu"), full)


def test_omp_device_refuses_what_stays_compiled():
    A = np.random.default_rng(0).standard_normal((10, 20))
    with pytest.raises(ValueError, match="tol='auto'"):
        cscore.omp(A, A[:, 0], tol="auto", device="cpu")
    with pytest.raises(TypeError, match="complex"):
        cscore.somp(A + 0j, A[:, :2] + 0j, n_nonzero=2, device="cpu")


# -- LISTA, LAMP --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["lista-mnist-m72", "lamp-bg-mnist-m72", "lamp-bg-n500-m250"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unrolled_device_cpu_matches_numpy(name, dtype):
    m = cscore.pretrained(name)
    rng = np.random.default_rng(6)
    S = _sparse(rng, 20, m.N, m.L, max(1, m.N // 10))
    Y = (np.einsum("mn,bnl->bml", m.A, S) + 1e-3 * rng.standard_normal((20, m.M, m.L)))
    Y = Y.astype(dtype)
    r0 = m.decode(Y, return_result=True)
    r1 = m.decode(Y, return_result=True, device="cpu")
    assert r1.x.dtype == dtype
    same, e0, e1 = _agree(r0, r1, S, axes=1)
    assert same >= 0.99 and _close(e1, e0)
    layers = m.decode_layers(Y[:3], n_layers=2, device="cpu")
    assert np.array_equal(layers[-1], m.decode(Y[:3], n_layers=2, device="cpu"))


@pytest.mark.parametrize("kind", ["lista", "soft", "pwlin"])
def test_joint_unrolled_device_cpu_matches_numpy(kind):
    from cscore.decoders.learned import LAMP, LISTA
    from cscore.problem import ProblemSpec

    rng = np.random.default_rng(8)
    M, N, L = 20, 40, 3
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    spec = ProblemSpec(M=M, N=N, L=L)
    if kind == "lista":
        m = LISTA.from_ista(A, spec, n_layers=6, lam=0.05, joint=True)
    else:
        theta = (1.2, 1.0) if kind == "soft" else (0.5, 1.5, 0.0, 0.5, 1.0)
        m = LAMP.from_amp(A, spec, n_layers=6, shrinkage=kind, theta=theta, joint=True)
    S = _sparse(rng, 12, N, L, 3, joint=True)
    Y = np.einsum("mn,bnl->bml", A, S) + 1e-3 * rng.standard_normal((12, M, L))
    r0 = m.decode(Y, return_result=True)
    r1 = m.decode(Y, return_result=True, device="cpu")
    assert np.mean(np.all(r0.support == r1.support, axis=1)) >= 0.99
    np.testing.assert_allclose(r1.x, r0.x, rtol=1e-9, atol=1e-12)
    assert np.array_equal(m.decode(Y[4:6], device="cpu"), r1.x[4:6])


# -- AMP ------------------------------------------------------------------------------------
@pytest.mark.parametrize("denoiser", ["bg", "l1"])
@pytest.mark.parametrize("L, joint", [(1, True), (3, True), (3, False)])
def test_amp_device_cpu_matches_the_compiled_kernel(denoiser, L, joint):
    from cscore.decoders.amp import amp

    rng = np.random.default_rng(15)
    M, N, B = 60, 120, 12
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    S = _sparse(rng, B, N, L, 8, joint=True)
    Y = np.einsum("mn,bnl->bml", A, S) + 0.01 * rng.standard_normal((B, M, L))
    r0 = amp(A, Y, denoiser=denoiser, joint=joint, max_iter=60, return_result=True)
    r1 = amp(A, Y, denoiser=denoiser, joint=joint, max_iter=60, return_result=True,
             device="cpu")
    same, e0, e1 = _agree(r0, r1, S)
    assert same >= 0.99 and _close(e1, e0)
    assert np.array_equal(r0.n_iter, r1.n_iter)
    assert np.array_equal(r0.stop_reason, r1.stop_reason)
    if denoiser == "bg":
        np.testing.assert_allclose(r1.extra["noise_var"], r0.extra["noise_var"], rtol=1e-6)
    part = amp(A, Y[3:5], denoiser=denoiser, joint=joint, max_iter=60, device="cpu")
    assert np.array_equal(part, r1.x[3:5])


@pytest.mark.parametrize("denoiser", ["bg", "l1"])
@pytest.mark.parametrize("L, joint", [(1, True), (3, False)])
def test_vamp_device_cpu_matches_the_compiled_kernel(denoiser, L, joint):
    from cscore.decoders.amp import VAMPSolver, vamp

    rng = np.random.default_rng(17)
    M, N, B = 60, 120, 12
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    S = _sparse(rng, B, N, L, 8, joint=True)
    Y = np.einsum("mn,bnl->bml", A, S) + 0.01 * rng.standard_normal((B, M, L))
    r0 = vamp(A, Y, denoiser=denoiser, joint=joint, max_iter=60, return_result=True)
    r1 = vamp(A, Y, denoiser=denoiser, joint=joint, max_iter=60, return_result=True,
              device="cpu")
    same, e0, e1 = _agree(r0, r1, S)
    assert same >= 0.99 and _close(e1, e0)
    assert np.array_equal(r0.n_iter, r1.n_iter)
    np.testing.assert_allclose(r1.extra["noise_var"], r0.extra["noise_var"], rtol=1e-6)
    solver = VAMPSolver(A)
    part = solver(Y[3:5], denoiser=denoiser, joint=joint, max_iter=60, device="cpu")
    assert np.array_equal(part, r1.x[3:5])


def test_amp_device_divergence_guard_matches():
    from cscore.decoders.amp import amp

    rng = np.random.default_rng(16)
    M, N, B = 60, 120, 8
    U, _ = np.linalg.qr(rng.standard_normal((M, M)))
    V, _ = np.linalg.qr(rng.standard_normal((N, N)))
    A = (U * np.logspace(0, -3, M)) @ V[:M]  # ill-conditioned: plain AMP diverges
    S = _sparse(rng, B, N, 1, 8)
    Y = np.einsum("mn,bnl->bml", A, S) + 1e-3 * rng.standard_normal((B, M, 1))
    r0 = amp(A, Y, max_iter=80, return_result=True)
    r1 = amp(A, Y, max_iter=80, return_result=True, device="cpu")
    assert np.all(r0.extra["damping"] > 0)  # the guard did act
    np.testing.assert_array_equal(r1.extra["damping"], r0.extra["damping"])
    assert np.array_equal(r0.stop_reason, r1.stop_reason)
    np.testing.assert_allclose(r1.x, r0.x, rtol=1e-6, atol=1e-9)


# -- the device= plumbing ------------------------------------------------------------------
def test_decoder_config_stream_and_dask_pass_device_through():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((20, 40))
    Y = rng.standard_normal((6, 20, 2))
    dec = cscore.decoder("somp", A, n_nonzero=3, device="cpu")
    assert cscore.Decoder.from_config(dec.config) == dec
    ref = cscore.somp(A, Y, n_nonzero=3)
    np.testing.assert_allclose(dec(Y), ref, atol=1e-12)
    from cscore.pipelines.stream import stream

    got = np.stack(list(stream(dec, iter(Y), batch=4)))
    np.testing.assert_allclose(got, ref, atol=1e-12)
    da = pytest.importorskip("dask.array")
    out = cscore.dask.decode(dec, da.from_array(Y, chunks=(4, 20, 2))).compute()
    np.testing.assert_allclose(out, ref, atol=1e-12)


def test_cli_decode_device(tmp_path):
    pytest.importorskip("zarr")
    from cscore.cli import main

    rng = np.random.default_rng(10)
    A = rng.standard_normal((20, 40))
    Y = rng.standard_normal((5, 20, 2))
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "Y.npy", Y)
    assert main(["decode", "--decoder", "somp", "--matrix", str(tmp_path / "A.npy"),
                 "--n-nonzero", "3", "--device", "cpu", "--input", str(tmp_path / "Y.npy"),
                 "--output", str(tmp_path / "out.zarr"), "--no-progress"]) == 0
    import zarr

    got = zarr.open(str(tmp_path / "out.zarr"), mode="r")[:]
    np.testing.assert_allclose(got, cscore.somp(A, Y, n_nonzero=3), atol=1e-12)


def test_bench_device_reaches_the_decoders_that_take_it(monkeypatch):
    from cscore.bench import decoders as bd

    seen = []
    real = bd.Decoder

    def spy(name, *a, **kw):
        seen.append((name, kw.get("device")))
        return real(name, *a, **kw)

    monkeypatch.setattr(bd, "Decoder", spy)
    rng = np.random.default_rng(12)
    A = rng.standard_normal((20, 40))
    Y = rng.standard_normal((2, 20, 2))
    with bd.decoder_device("cpu"):
        bd.run_decoder("somp", A, Y, k=2)
        bd.run_decoder("somp", A, Y, tol="auto")  # stays compiled
        with warnings.catch_warnings():  # (whether T-MSBL settles is not the point)
            warnings.simplefilter("ignore", RuntimeWarning)
            bd.run_decoder("tmsbl", A, Y)  # takes no device
    bd.run_decoder("somp", A, Y, k=2)
    assert seen == [("somp", "cpu"), ("somp", None), ("tmsbl", None), ("somp", None)]


@pytest.mark.parametrize("bad, exc", [("tpu", ValueError), ("nonsense:x", ValueError),
                                      (3, TypeError), (True, TypeError)])
def test_bad_devices_are_refused(bad, exc):
    A = np.random.default_rng(0).standard_normal((10, 20))
    with pytest.raises(exc, match="device"):
        cscore.omp(A, A[:, 0], n_nonzero=2, device=bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_without_a_gpu_is_refused_clearly():
    with pytest.raises(ValueError, match="no CUDA device"):
        cscore.pretrained("mnist-m72").decode(np.zeros((72, 4)), n_nonzero=2, device="cuda")


def test_missing_torch_gives_the_projects_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    A = np.random.default_rng(0).standard_normal((72, 144))
    calls = [
        lambda: cscore.omp(A, A[:, 0], n_nonzero=2, device="cpu"),
        lambda: cscore.somp(A, A[:, :2], n_nonzero=2, device="cpu"),
        lambda: cscore.pretrained("mnist-m72").decode(A[:, :4], n_nonzero=2, device="cpu"),
        lambda: cscore.pretrained("lista-mnist-m72").decode(A[:, :4], device="cpu"),
        lambda: cscore.amp(A, A[:, :2], device="cpu"),
        lambda: cscore.vamp(A, A[:, :2], device="cpu"),
    ]
    for call in calls:
        with pytest.raises(ImportError, match=r'pip install "cscore-decoders\[train\]"'):
            call()


def test_default_decoding_never_imports_torch():
    code = ("import sys, numpy as np, cscore; A = np.eye(8, 16) + 0.1; "
            "cscore.omp(A, A[:, 0], n_nonzero=1); m = cscore.pretrained('mnist-m72'); "
            "m.decode(np.ones((72, 4)), n_nonzero=2); "
            "cscore.pretrained('lista-mnist-m72').decode(np.ones((72, 4))); "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- CUDA (skipped without a GPU) ----------------------------------------------------------
@cuda
def test_cuda_matches_the_compiled_path(lstm):
    rng = np.random.default_rng(13)
    S = _sparse(rng, 256, lstm.N, lstm.L, 20)
    Y = np.einsum("mn,bnl->bml", lstm.A, S)
    r0 = lstm.decode(Y, n_nonzero=20, return_result=True)
    r1 = lstm.decode(Y, n_nonzero=20, return_result=True, device="cuda")
    same, e0, e1 = _agree(r0, r1, S)
    assert same >= 0.99 and _close(e1, e0)
    part = lstm.decode(Y[100:103], n_nonzero=20, return_result=True, device="cuda")
    assert np.array_equal(part.extra["atoms"], r1.extra["atoms"][100:103])
    A = rng.standard_normal((72, 144))
    Yo = rng.standard_normal((72, 300))
    x0 = cscore.omp(A, Yo, n_nonzero=20, return_result=True)
    x1 = cscore.omp(A, Yo, n_nonzero=20, return_result=True, device="cuda")
    assert np.mean(np.all(x0.support == x1.support, axis=0)) >= 0.99
