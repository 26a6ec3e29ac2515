"""NWSOMP and CDSN-CS: decoders against plain references, training pieces, model files."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import cscore
from cscore.datasets import gaussian_matrix
from cscore.decoders.learned import CDSNCS, NWSOMP
from cscore.decoders.learned._greedy import normalize_maxabs
from cscore.decoders.learned.cdsn import window_inputs
from cscore.models import load_model
from cscore.models.format import ModelFileError
from cscore.problem import ProblemSpec
from cscore.training.cdsn import (
    _samples,
    closed_form_output_weights,
    fit_cdsn,
    rbm_cd1_step,
    rbm_reconstruction_error,
)

from conftest import requires_torch, shared_data

M, N, L, H = 10, 20, 4, 7


@pytest.fixture
def A():
    return gaussian_matrix(M, N, seed=5)


@pytest.fixture
def spec():
    return ProblemSpec(M=M, N=N, L=L)


def _nwsomp(A, spec, seed=0):
    rng = np.random.default_rng(seed)
    return NWSOMP(rng.normal(size=(H, M)), rng.normal(size=H), rng.normal(size=(N, H)),
                  rng.normal(size=N), A, spec, {"who": "test"})


def _cdsn(A, spec, seed=0, w=3, n_mod=2):
    rng = np.random.default_rng(seed)
    mods = [(rng.normal(size=(H, w * M + i * N + 1)), rng.normal(size=(H + 1, N)))
            for i in range(n_mod)]
    return CDSNCS(mods, w, A, spec, {"who": "test"})


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _ref_scores_nwsomp(m, R):
    """Sum over channels of softmax(W2 sigmoid(W1 x + b1) + b2), written out per channel."""
    w = {k: v.astype(np.float64) for k, v in m.arrays().items()}
    total = np.zeros(N)
    for j in range(L):
        x = normalize_maxabs(R[:, j][None])[0]
        z = w["W2"] @ _sigmoid(w["W1"] @ x + w["b1"]) + w["b2"]
        p = np.exp(z - z.max())
        total += p / p.sum()
    return total


def _ref_scores_cdsn(m, R, j):
    """Channel j's top-module output, the window and the stack written out by hand."""
    X = normalize_maxabs(R.T)
    h = m.window // 2
    r = np.concatenate([X[c] if 0 <= c < L else np.zeros(M) for c in range(j - h, j + h + 1)])
    outs: list[np.ndarray] = []
    for W1, W2 in m.modules:
        z = np.concatenate([*outs, r, [1.0]])
        hid = _sigmoid(W1.astype(np.float64) @ z)
        outs.append(np.concatenate([hid, [1.0]]) @ W2.astype(np.float64))
    return outs[-1]


def _reference_decode(m, A, Y, k, tol, joint):
    """One problem at a time, least squares by lstsq after every atom."""
    out = np.zeros((Y.shape[0], N, L))
    for b in range(Y.shape[0]):
        sup: list[list[int]] = [[] for _ in range(L)]
        R = Y[b].copy()
        for _ in range(k):
            if tol is not None and np.linalg.norm(R, axis=0).sum() <= tol:
                break
            if joint:
                sc = _ref_scores_nwsomp(m, R)
                sc[sup[0]] = -np.inf
                pick = [int(np.argmax(sc))] * L
            else:
                pick = []
                for j in range(L):
                    sc = _ref_scores_cdsn(m, R, j)
                    sc[sup[j]] = -np.inf
                    pick.append(int(np.argmax(sc)))
            for j in range(L):
                sup[j].append(pick[j])
                c = np.linalg.lstsq(A[:, sup[j]], Y[b][:, j], rcond=None)[0]
                R[:, j] = Y[b][:, j] - A[:, sup[j]] @ c
        for j in range(L):
            if sup[j]:
                out[b, sup[j], j] = np.linalg.lstsq(A[:, sup[j]], Y[b][:, j], rcond=None)[0]
    return out


def _problems(A, B=6, k=3, seed=1, sigma=0.01):
    rng = np.random.default_rng(seed)
    S = np.zeros((B, N, L))
    for b in range(B):
        for j in range(L):
            S[b, rng.choice(N, k, replace=False), j] = rng.normal(size=k)
    return S, np.einsum("mn,bnl->bml", A, S) + sigma * rng.normal(size=(B, M, L))


@pytest.mark.parametrize("kind", ["nwsomp", "cdsn"])
@pytest.mark.parametrize("k,tol", [(1, None), (4, None), (None, 0.3)])
def test_decode_equals_reference(A, spec, kind, k, tol):
    m = _nwsomp(A, spec) if kind == "nwsomp" else _cdsn(A, spec)
    _, Y = _problems(A)
    got = m.decode(Y, n_nonzero=k, tol=tol)
    want = _reference_decode(m, A, Y, k if k else M, tol, kind == "nwsomp")
    np.testing.assert_allclose(got, want, atol=1e-8)
    assert (np.count_nonzero(got, axis=1) <= (k or M)).all()


def test_nwsomp_support_is_joint_and_cdsn_per_channel(A, spec):
    _, Y = _problems(A)
    r = _nwsomp(A, spec).decode(Y, n_nonzero=3, return_result=True)
    atoms = r.extra["atoms"]  # (B, L, 3)
    assert (atoms == atoms[:, :1]).all() and (r.stop_reason == "n_nonzero").all()
    r2 = _cdsn(A, spec).decode(Y, n_nonzero=3, return_result=True)
    assert r2.x.shape == (6, N, L) and (r2.n_iter == 3).all()
    assert not (r2.extra["atoms"] == r2.extra["atoms"][:, :1]).all()


def test_decode_single_problem_float32_and_tol_stop(A, spec):
    m = _cdsn(A, spec)
    _, Y = _problems(A, B=3, sigma=0.0)
    one = m.decode(Y[0].astype(np.float32), n_nonzero=2)
    assert one.shape == (N, L) and one.dtype == np.float32
    np.testing.assert_allclose(one, m.decode(Y[:1], n_nonzero=2)[0], rtol=1e-4, atol=1e-5)
    big = 1e6  # already below tol: no atom at all
    r = m.decode(Y, tol=big, return_result=True)
    assert (r.x == 0).all() and (r.stop_reason == "tol").all() and (r.n_iter == 0).all()


@pytest.mark.parametrize("kind", ["nwsomp", "cdsn"])
def test_decode_input_validation(A, spec, kind):
    m = _nwsomp(A, spec) if kind == "nwsomp" else _cdsn(A, spec)
    _, Y = _problems(A)
    with pytest.raises(ValueError, match="rows"):
        m.decode(Y[:, :-1])
    with pytest.raises(ValueError, match="channels"):
        m.decode(Y[:, :, :-1])
    bad = Y.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="Y"):
        m.decode(bad)
    with pytest.raises(ValueError, match="n_nonzero"):
        m.decode(Y, n_nonzero=M + 1)
    with pytest.raises(ValueError, match="tol"):
        m.decode(Y, tol=-1.0)
    with pytest.raises(ValueError, match="Y"):
        m.decode(np.zeros((M,)))


def test_constructor_validation(A, spec):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="W2"):
        NWSOMP(rng.normal(size=(H, M)), np.zeros(H), rng.normal(size=(N + 1, H)), np.zeros(N),
               A, spec)
    with pytest.raises(ValueError, match="A has shape"):
        _nwsomp(A[:, :-1], spec)
    with pytest.raises(ValueError, match="odd"):
        CDSNCS([(rng.normal(size=(H, 2 * M + 1)), rng.normal(size=(H + 1, N)))], 2, A, spec)
    with pytest.raises(ValueError, match="W1_1"):
        CDSNCS([(rng.normal(size=(H, 3 * M + 1)), rng.normal(size=(H + 1, N)))] * 2, 3, A, spec)


def test_window_inputs_zero_pads_the_ends():
    X = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2)
    W = window_inputs(X, 3)
    assert W.shape == (2, 3, 6)
    np.testing.assert_array_equal(W[:, 0, :2], 0)
    np.testing.assert_array_equal(W[:, 0, 2:], X[:, :2].reshape(2, 4))
    np.testing.assert_array_equal(W[:, 2, 4:], 0)


# -- CDSN training pieces --------------------------------------------------------------

def test_closed_form_output_weights_equal_ridge_lstsq():
    rng = np.random.default_rng(0)
    Hm = rng.random((50, 6))
    T = rng.normal(size=(50, 4))
    mu = 0.01
    W2 = closed_form_output_weights(Hm, T, mu)
    # min ||H W - T||^2 + mu ||W||^2 == least squares on [H; sqrt(mu) I] vs [T; 0]
    Haug = np.vstack([Hm, np.sqrt(mu) * np.eye(6)])
    Taug = np.vstack([T, np.zeros((6, 4))])
    np.testing.assert_allclose(W2, np.linalg.lstsq(Haug, Taug, rcond=None)[0], atol=1e-10)


def test_fit_cdsn_output_weights_are_the_ridge_solution(A):
    rng = np.random.default_rng(2)
    S = rng.normal(size=(30, N, L))
    res = fit_cdsn(S[:24], S[24:], A, window=3, n_modules=2, n_hidden=5, n_steps=3,
                   k_range=(2, 4), rbm_epochs=1, n_iter=3, lr=5.0, seed=4)
    # the training samples fit_cdsn drew (same seed), and module 0's hidden layer
    R, t = _samples(A, S[:24], 3, 3, 0.005, (2, 4), None, 4 * 1000 + 1)
    W1, W2 = res.modules[0]
    Hm = _sigmoid(np.hstack([R, np.ones((R.shape[0], 1))]) @ W1.astype(np.float64).T)
    Hm = np.hstack([Hm, np.ones((Hm.shape[0], 1))])
    T = np.eye(N)[t]
    Haug = np.vstack([Hm, np.sqrt(0.01) * np.eye(Hm.shape[1])])
    Taug = np.vstack([T, np.zeros((Hm.shape[1], N))])
    want = np.linalg.lstsq(Haug, Taug, rcond=None)[0]
    np.testing.assert_allclose(W2, want, atol=2e-3 * np.abs(want).max())
    assert len(res.modules) == 2 and res.modules[1][0].shape == (5, 3 * M + N + 1)


def test_rbm_cd1_reduces_reconstruction_error():
    rng = np.random.default_rng(0)
    basis = rng.normal(size=(3, 12))
    V = (rng.random((400, 3)) < 0.5) @ basis + 0.05 * rng.normal(size=(400, 12))
    W = 0.01 * rng.normal(size=(12, 8))
    bv = np.zeros(12)
    bh = np.zeros(8)
    before = rbm_reconstruction_error(W, bv, bh, V)
    W1, bv1, bh1 = rbm_cd1_step(W, bv, bh, V, 0.05, rng)
    assert rbm_reconstruction_error(W1, bv1, bh1, V) < before  # one CD step already helps
    for _ in range(200):
        W1, bv1, bh1 = rbm_cd1_step(W1, bv1, bh1, V, 0.05, rng)
    assert rbm_reconstruction_error(W1, bv1, bh1, V) < 0.5 * before


# -- model files ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["nwsomp", "cdsn"])
def test_file_round_trip(tmp_path, A, spec, kind):
    m = _nwsomp(A, spec) if kind == "nwsomp" else _cdsn(A, spec)
    path = tmp_path / "m.npz"
    m.save(path)
    m2 = load_model(path)
    assert type(m2) is type(m) and m2.spec == spec and m2.info == {"who": "test"}
    for name, arr in m.arrays().items():
        np.testing.assert_array_equal(arr, m2.arrays()[name])
    np.testing.assert_array_equal(m2.A, A)
    _, Y = _problems(A)
    np.testing.assert_array_equal(m.decode(Y, n_nonzero=3), m2.decode(Y, n_nonzero=3))
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes())
        assert meta["arch"] == m.ARCH and z["A"].dtype == np.float64
        assert all(z[k].dtype == np.float32 for k in m.arrays())
    # the other class refuses it
    other = CDSNCS if kind == "nwsomp" else NWSOMP
    with pytest.raises(ModelFileError, match="arch"):
        other.load(path)


def _rewrite(src, dst, change):
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    with open(dst, "wb") as fh:
        np.savez_compressed(fh, **arrays)


@pytest.mark.parametrize("damage,match", [
    (lambda a: a.__setitem__("W1", a["W1"].ravel()), "'W1'.*shape"),
    (lambda a: a.__setitem__("W2", a["W2"].astype(np.int32)), "'W2'.*dtype"),
    (lambda a: a.__setitem__("b1", np.full_like(a["b1"], np.nan)), "'b1'.*NaN"),
    (lambda a: a.pop("b2"), "lacks.*b2"),
    (lambda a: a.__setitem__("extra", np.zeros(3)), "does not define.*extra"),
    (lambda a: a.__setitem__("meta", np.frombuffer(b"{not json", np.uint8)), "'meta'.*JSON"),
    (lambda a: a.__setitem__("meta", np.zeros(3)), "'meta'"),
    (lambda a: a.pop("meta"), "'meta'"),
    (lambda a: a.__setitem__("A", np.zeros_like(a["A"])), "'A'.*zero column"),
    (lambda a: a.__setitem__("meta", np.frombuffer(json.dumps(
        {**json.loads(a["meta"].tobytes()), "arch_params": {"n_hidden": -3}}).encode(),
        np.uint8)), "arch_params"),
])
def test_malformed_files_raise_model_file_error(tmp_path, A, spec, damage, match):
    src = tmp_path / "ok.npz"
    _nwsomp(A, spec).save(src)
    dst = tmp_path / "bad.npz"
    _rewrite(src, dst, damage)
    with pytest.raises(ModelFileError, match=match):
        NWSOMP.load(dst)


def test_object_array_and_truncation_and_flipped_bytes(tmp_path, A, spec):
    src = tmp_path / "ok.npz"
    _cdsn(A, spec).save(src)
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["W1_0"] = np.array([object()] * 3, dtype=object)
    bad = tmp_path / "obj.npz"
    np.savez(bad, **arrays)  # object arrays are pickled; the loader refuses pickle
    with pytest.raises(ModelFileError, match="W1_0"):
        CDSNCS.load(bad)
    raw = src.read_bytes()
    for cut in (0, 10, len(raw) // 2, len(raw) - 5):
        p = tmp_path / f"cut{cut}.npz"
        p.write_bytes(raw[:cut])
        with pytest.raises(ModelFileError):
            CDSNCS.load(p)
    rng = np.random.default_rng(7)
    for i in range(25):
        b = bytearray(raw)
        for pos in rng.choice(len(b), 3, replace=False):
            b[pos] ^= 0xFF
        p = tmp_path / f"flip{i}.npz"
        p.write_bytes(bytes(b))
        try:
            CDSNCS.load(p)  # a flip in unused bytes may go unnoticed; anything else must
        except ModelFileError:  # be reported as ModelFileError
            pass
    with pytest.raises(FileNotFoundError):
        CDSNCS.load(tmp_path / "absent.npz")
    assert zipfile.is_zipfile(src)


def test_lstm_file_loads_through_load_model(tmp_path):
    pytest.importorskip("cscore._core")
    import cscore
    from cscore.decoders.learned import LSTMCSWeights

    rng = np.random.default_rng(0)
    w = LSTMCSWeights(W=rng.normal(size=(3 * H, M)), R=rng.normal(size=(3 * H, H)),
                      b=np.zeros(3 * H), U=rng.normal(size=(N, H)), c_out=np.zeros(N))
    path = tmp_path / "lstm.npz"
    cscore.LSTMCS(w, gaussian_matrix(M, N, seed=1), ProblemSpec(M=M, N=N, L=L)).save(path)
    assert isinstance(load_model(path), cscore.LSTMCS)


def test_pretrained_dispatches_by_arch(tmp_path, A, spec, monkeypatch):
    import cscore

    _nwsomp(A, spec).save(tmp_path / "tiny-nwsomp.npz")
    _cdsn(A, spec).save(tmp_path / "tiny-cdsn.npz")
    monkeypatch.setenv("CSCORE_MODEL_PATH", str(tmp_path))
    assert isinstance(cscore.pretrained("tiny-nwsomp"), NWSOMP)
    assert isinstance(cscore.pretrained("tiny-cdsn"), CDSNCS)
    assert {"tiny-nwsomp", "tiny-cdsn"} <= set(dict(cscore.list_pretrained()))


def test_bench_decoders_run_learned_models(A, spec):
    from cscore.bench import run_decoder

    _, Y = _problems(A)
    for name, m in (("nwsomp", _nwsomp(A, spec)), ("cdsn-cs", _cdsn(A, spec))):
        np.testing.assert_array_equal(run_decoder(name, A, Y, k=2, model=m),
                                      m.decode(Y, n_nonzero=2))
        with pytest.raises(ValueError, match="needs a model"):
            run_decoder(name, A, Y, k=2)


def test_cli_train_cdsn(tmp_path, capsys):
    from cscore.cli import main

    out = tmp_path / "cdsn.npz"
    rc = main(["train", "--arch", "cdsn", "--data", "demo", "-M", "16", "--hidden", "6",
               "--modules", "2", "--window", "3", "--rbm-epochs", "1", "--fista-iters", "2",
               "--problems-per-epoch", "30", "--k-max", "4", "--quiet", "--out", str(out)])
    assert rc == 0 and "wrote" in capsys.readouterr().out
    m = load_model(out)
    assert isinstance(m, CDSNCS) and (m.M, m.N, m.L, m.window, m.n_modules) == (16, 64, 4, 3, 2)
    assert m.spec.transform == "dct" and m.info["command"] == "cscore train --arch cdsn"


@requires_torch
def test_cli_train_nwsomp(tmp_path, capsys):
    from cscore.cli import main

    out = tmp_path / "nw.npz"
    rc = main(["train", "--arch", "nwsomp", "--data", "demo", "-M", "16", "--hidden", "8",
               "--epochs", "1", "--problems-per-epoch", "30", "--k-max", "4", "--quiet",
               "--threads", "1", "--out", str(out)])
    assert rc == 0 and "wrote" in capsys.readouterr().out
    m = load_model(out)
    assert isinstance(m, NWSOMP) and m.n_hidden == 8 and (m.M, m.N) == (16, 64)


@requires_torch
def test_fit_nwsomp_learns_a_planted_rule(A):
    """The network must learn something: validation loss falls below its start."""
    from cscore.training.nwsomp import fit_nwsomp

    rng = np.random.default_rng(0)
    S = rng.normal(size=(60, N, L))
    res = fit_nwsomp(S[:50], S[50:], A, n_hidden=16, n_steps=3, k_range=(2, 3), epochs=4,
                     lr=1e-2, batch_size=64, seed=0, n_threads=1)
    assert res.history[-1]["val_loss"] < res.history[0]["val_loss"]
    assert res.weights["W1"].shape == (16, M) and res.weights["W2"].shape == (N, 16)


def test_shipped_models_beat_somp_on_held_out_data():
    """The shipped models on a few held-out problems (the benchmark's protocol, smaller)."""
    import cscore
    from cscore.datasets import (
        expected_noise_tol,
        image_mmv_problems,
        load_image_folder,
        load_mnist,
        measure,
        mnist_mmv_problems,
        mnist_tuples,
    )
    from cscore.metrics import nmse

    mnist = shared_data("mnist")
    nw = cscore.pretrained("nwsomp-mnist-m72")
    assert isinstance(nw, NWSOMP) and nw.spec.M == 72
    images, labels = load_mnist(mnist / "images-idx3-ubyte.gz", mnist / "labels-idx1-ubyte.gz")
    S = mnist_mmv_problems(images, mnist_tuples(labels, np.arange(6000, 8000))[:6], 20)
    Y, _ = measure(nw.A, S, 0.005, seed=0)
    tol = expected_noise_tol(72, 4, 0.005)
    assert nmse(nw.decode(Y, tol=tol), S) < 0.7 * nmse(cscore.somp(nw.A, Y, tol=tol), S)

    cd = cscore.pretrained("cdsn-msrc-dct-m25")
    assert isinstance(cd, CDSNCS) and (cd.L, cd.window) == (8, 5)
    imgs, names = load_image_folder(shared_data("msrc-v2", "buildings"), 64)
    test = imgs[[names.index(n) for n in ("18.png", "19.png")]]
    S = image_mmv_problems(test, block_size=8, transform="dct", k=8, L=8)
    Y, _ = measure(cd.A, S, 0.005, seed=0)
    tol = expected_noise_tol(25, 8, 0.005)
    assert nmse(cd.decode(Y, tol=tol), S) < 0.7 * nmse(cscore.somp(cd.A, Y, tol=tol), S)


@pytest.mark.parametrize("name", ["nwsomp-mnist-m72", "cdsn-msrc-dct-m25"])
def test_auto_tol_tracks_the_oracle(name):
    """tol="auto" (noise estimated from Y) ends near the oracle rule on sparse signals."""
    model = cscore.pretrained(name)
    rng = np.random.default_rng(11)
    B, k, sigma = 30, 6, 0.01
    S = np.zeros((B, model.N, model.L))
    for b in range(B):
        for j in range(model.L):
            S[b, rng.choice(model.N, k, replace=False), j] = rng.choice([-1, 1], k) * (
                1 + rng.random(k))
    Y = model.A @ S + sigma * rng.standard_normal((B, model.M, model.L))
    oracle = model.decode(Y, tol=model.L * sigma * np.sqrt(model.M * model.L))
    auto = model.decode(Y, tol="auto")
    assert auto.shape == S.shape and np.isfinite(auto).all()
    err = lambda X: np.linalg.norm(X - S) / np.linalg.norm(S)  # noqa: E731
    assert err(auto) <= 1.5 * err(oracle) + 1e-3
    res = model.decode(Y[0], tol="auto", return_result=True)
    assert res.x.shape == (model.N, model.L) and "sigma_hat" in res.extra


# -- recipes (cscore.training.recipes) -----------------------------------------------------


def test_train_cdsn_model_returns_the_fitted_decoder(tmp_path, A, spec):
    from cscore.training.recipes import train_cdsn_model

    S = np.random.default_rng(2).normal(size=(30, N, L))
    kw = {"window": 3, "n_modules": 2, "n_hidden": 5, "n_steps": 3, "k_range": (2, 3),
          "rbm_epochs": 1, "n_iter": 4, "seed": 3}
    model, res = train_cdsn_model(S[:24], S[24:], A, spec, info={"who": "test"},
                                  history_entries=2, **kw)
    ref = fit_cdsn(S[:24], S[24:], A, **kw)
    assert isinstance(model, CDSNCS) and (model.window, model.n_modules) == (3, 2)
    for (w1, w2), (r1, r2) in zip(res.modules, ref.modules):  # same seed, same fit
        np.testing.assert_array_equal(w1, r1)
        np.testing.assert_array_equal(w2, r2)
    assert model.info["who"] == "test"
    assert model.info["training"]["history"] == res.history[-2:] and len(res.history) > 2
    assert model.info["training"]["n_modules"] == 2
    model.save(tmp_path / "c.npz")
    again = load_model(tmp_path / "c.npz")
    Y = np.random.default_rng(4).normal(size=(3, M, L))
    np.testing.assert_array_equal(again.decode(Y, n_nonzero=2), model.decode(Y, n_nonzero=2))
    with pytest.raises(ValueError, match="history_entries"):
        train_cdsn_model(S[:24], S[24:], A, spec, history_entries=0, **kw)
    with pytest.raises(ValueError, match=r"^A has shape"):
        train_cdsn_model(S[:24], S[24:], A[:-1], spec, **kw)
    with pytest.raises(ValueError, match=r"^window"):
        train_cdsn_model(S[:24], S[24:], A, spec, **{**kw, "window": 2})


@requires_torch
def test_train_nwsomp_model_returns_the_fitted_decoder(A, spec):
    from cscore.training.nwsomp import fit_nwsomp
    from cscore.training.recipes import train_nwsomp_model

    S = np.random.default_rng(0).normal(size=(40, N, L))
    kw = {"n_hidden": 6, "n_steps": 3, "k_range": (2, 3), "epochs": 2, "batch_size": 32,
          "seed": 1, "n_threads": 1}
    model, res = train_nwsomp_model(S[:30], S[30:], A, spec, info={"who": "test"}, **kw)
    ref = fit_nwsomp(S[:30], S[30:], A, **kw)
    assert isinstance(model, NWSOMP) and model.n_hidden == 6
    for k, v in ref.weights.items():
        np.testing.assert_array_equal(res.weights[k], v)
    t = model.info["training"]
    assert model.info["who"] == "test" and t["best_epoch"] == res.best_epoch
    assert t["history"] == res.history and t["n_hidden"] == 6
    with pytest.raises(ValueError, match=r"^S_train"):
        train_nwsomp_model(S[:30, :, :2], S[30:], A, spec, **kw)
