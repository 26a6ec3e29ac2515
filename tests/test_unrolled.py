"""LISTA and LAMP (cscore.decoders.learned.unrolled) and their training.

The untrained networks are checked against ISTA and AMP written out here, the
Onsager matrix of the joint shrinkages against finite differences, files for a
bit-identical round trip and for damage, the NumPy decode against the torch
forward pass that training differentiates, and a few seconds of training on a
toy Bernoulli-Gaussian problem for an actual gain.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import cscore
from cscore.decoders import get_decoder_spec
from cscore.decoders.learned import LAMP, LISTA
from cscore.decoders.learned.shrinkage import shrink
from cscore.models import ModelFileError, load_model
from cscore.problem import ProblemSpec

from conftest import shared_data

#: Pure-Python work (no new C++ paths): left out of the sanitizer run (scripts/sanitize.sh).
pytestmark = pytest.mark.slow

M, N = 32, 64


@pytest.fixture(scope="module")
def toy():
    """A toy Bernoulli-Gaussian setting: A (32, 64), rate 0.1, SNR 40 dB."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    X = rng.standard_normal((400, N, 1)) * (rng.random((400, N, 1)) < 0.1)
    Y0 = np.einsum("mn,bnl->bml", A, X)
    sigma = np.sqrt(np.mean(Y0**2) / 1e4)
    return A, X, Y0 + sigma * rng.standard_normal(Y0.shape)


def _nmse(Xh, X):
    return 10 * np.log10(np.sum((Xh - X) ** 2) / np.sum(X**2))


def _soft(x, t):
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def ista(A, Y, lam, n_iter):
    """Plain ISTA on the columns of Y (M, K), step 1 / ||A||_2^2."""
    c = np.linalg.norm(A, 2) ** 2
    X = np.zeros((A.shape[1], Y.shape[1]))
    for _ in range(n_iter):
        X = _soft(X + A.T @ (Y - A @ X) / c, lam / c)
    return X


def amp_l1(A, Y, alpha, n_iter):
    """AMP with the soft threshold alpha * ||v|| / sqrt(M) (Donoho, Maleki, Montanari)."""
    Mm = A.shape[0]
    X = np.zeros((A.shape[1], Y.shape[1]))
    V = Y.copy()
    for _ in range(n_iter):
        X = _soft(X + A.T @ V, alpha * np.linalg.norm(V, axis=0) / np.sqrt(Mm))
        V = Y - A @ X + V * np.count_nonzero(X, axis=0) / Mm
    return X


def _models(A, L=1):
    spec = ProblemSpec(M=M, N=N, L=L)
    return {
        "lista": LISTA.from_ista(A, spec, n_layers=3, lam=0.05),
        "lista-untied-joint": LISTA.from_ista(A, spec, n_layers=3, lam=0.05, untied=True,
                                              joint=True),
        "lamp-soft": LAMP.from_amp(A, spec, n_layers=4, shrinkage="soft", theta=(1.3, 0.9)),
        "lamp-bg-joint": LAMP.from_amp(A, spec, n_layers=4, shrinkage="bg",
                                       theta=(0.1, -2.0), joint=True),
        "lamp-pwlin": LAMP.from_amp(A, spec, n_layers=4, shrinkage="pwlin",
                                    theta=(1.0, 2.5, 0.1, 0.8, 1.05)),
    }


# -- the untrained networks are the algorithms they unroll --------------------------
def test_untrained_networks_are_ista_and_amp(toy):
    A, _, Y = toy
    cols = Y[:50, :, 0].T
    spec = ProblemSpec(M=M, N=N, L=1)
    lista = LISTA.from_ista(A, spec, n_layers=7, lam=0.03)
    np.testing.assert_allclose(lista.decode(cols), ista(A, cols, 0.03, 7), atol=1e-6)
    lamp = LAMP.from_amp(A, spec, n_layers=6, shrinkage="soft", theta=(1.4, 1.0))
    np.testing.assert_allclose(lamp.decode(cols), amp_l1(A, cols, 1.4, 6), atol=1e-5)
    # LAMP's layers match AMP iteration by iteration (the Onsager term included)
    layers = lamp.decode_layers(cols)
    for t in (0, 2, 5):
        np.testing.assert_allclose(layers[t], amp_l1(A, cols, 1.4, t + 1), atol=1e-5)


def test_matched_bg_amp_beats_amp_l1(toy):
    A, X, Y = toy
    spec = ProblemSpec(M=M, N=N, L=1)
    bg = LAMP.from_amp(A, spec, n_layers=12, shrinkage="bg", theta=(0.0, np.log(0.1 / 0.9)))
    l1 = LAMP.from_amp(A, spec, n_layers=12, shrinkage="soft", theta=(1.4, 1.0))
    assert _nmse(bg.decode(Y), X) < _nmse(l1.decode(Y), X) - 1.0


def test_joint_shrinkage_with_one_channel_is_the_scalar_one(rng):
    R = rng.standard_normal((5, 1, 40))
    s2 = rng.random(5) + 0.1
    for kind, th in (("soft", (1.1, 0.8)), ("bg", (0.3, -1.5)),
                     ("pwlin", (0.7, 1.9, 0.2, 0.9, 1.1)), ("lista", (0.4,))):
        X, J = shrink(kind, R, s2, np.array(th), onsager=True)
        Xs, Js = zip(*(shrink(kind, R[p : p + 1], s2[p : p + 1], np.array(th), onsager=True)
                       for p in range(5)))
        np.testing.assert_array_equal(X, np.concatenate(Xs))
        np.testing.assert_allclose(J, np.concatenate(Js), rtol=1e-12)
    # and a joint model on L = 1 decodes as the per-channel one
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    Y = rng.standard_normal((6, M, 1))
    one = ProblemSpec(M=M, N=N, L=1)
    a = LAMP.from_amp(A, one, n_layers=3, shrinkage="bg", theta=(0.0, -2.0), joint=True)
    b = LAMP.from_amp(A, one, n_layers=3, shrinkage="bg", theta=(0.0, -2.0))
    np.testing.assert_allclose(a.decode(Y), b.decode(Y), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind,theta", [("soft", (0.9, 0.8)), ("bg", (0.2, -1.0)),
                                        ("pwlin", (0.6, 1.5, 0.2, 0.9, 1.1))])
def test_joint_onsager_is_the_summed_jacobian(rng, kind, theta):
    G, n = 3, 12
    R = rng.standard_normal((1, G, n)) * 1.5
    s2 = np.array([0.5])
    th = np.array(theta)
    _, J = shrink(kind, R, s2, th, onsager=True)
    num = np.zeros((G, G))
    h = 1e-6
    for i in range(G):  # d x_{g, n} / d r_{i, n}, summed over n
        for k in range(n):
            Rp, Rm = R.copy(), R.copy()
            Rp[0, i, k] += h
            Rm[0, i, k] -= h
            d = (shrink(kind, Rp, s2, th)[0] - shrink(kind, Rm, s2, th)[0])[0, :, k] / (2 * h)
            num[:, i] += d
    np.testing.assert_allclose(J[0], num, rtol=1e-5, atol=1e-7)


# -- shapes, dtypes, layers ---------------------------------------------------------
def test_shapes_dtypes_and_layers(toy):
    A, _, Y = toy
    for name, m in _models(A, L=1).items():
        Yb = Y[:5]
        out = m.decode(Yb)
        assert out.shape == (5, N, 1) and out.dtype == np.float64, name
        assert m.decode(Yb[0]).shape == (N, 1)
        np.testing.assert_array_equal(m.decode(Yb[0]), out[0])
        out32 = m.decode(Yb.astype(np.float32))
        assert out32.dtype == np.float32
        np.testing.assert_allclose(out32, out, atol=1e-4 * np.abs(out).max())
        layers = m.decode_layers(Yb)
        assert layers.shape == (m.n_layers, 5, N, 1)
        for t in range(m.n_layers):
            np.testing.assert_array_equal(layers[t], m.decode(Yb, n_layers=t + 1))
        assert m.decode(np.zeros((0, M, 1))).shape == (0, N, 1)
    m = _models(A)["lamp-soft"]
    res = m.decode(Y[:3], n_layers=2, return_result=True)
    assert res.x.shape == (3, N, 1) and list(res.n_iter) == [2, 2, 2]
    np.testing.assert_allclose(res.residual_norm,
                               np.linalg.norm(Y[:3] - np.einsum("mn,bnl->bml", A, res.x),
                                              axis=1))
    # independent channels: any L; a joint model wants its own L
    assert m.decode(Y[:4, :, 0].T).shape == (N, 4)
    with pytest.raises(ValueError, match="expects L = 1"):
        _models(A)["lamp-bg-joint"].decode(np.zeros((M, 3)))
    with pytest.raises(ValueError, match="n_layers"):
        m.decode(Y[0], n_layers=5)
    with pytest.raises(ValueError, match="M = 32"):
        m.decode(np.zeros((M + 1, 1)))


def test_a_problem_decodes_the_same_in_any_batch(rng):
    """Bit for bit, whatever the batch (chunked files, Dask) and in float32 too."""
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    Y = rng.standard_normal((9, M, 2))
    for m in _models(A, L=2).values():
        for dt in (np.float64, np.float32):
            Yd = Y.astype(dt)
            whole = m.decode(Yd)
            parts = np.concatenate([m.decode(Yd[:1]), m.decode(Yd[1:4]), m.decode(Yd[4:])])
            np.testing.assert_array_equal(parts, whole)
            np.testing.assert_array_equal(m.decode(Yd[5]), whole[5])


# -- files ------------------------------------------------------------------------------
def test_save_load_round_trip_is_bit_identical(toy, tmp_path):
    A, _, Y = toy
    for name, m in _models(A, L=1).items():
        path = tmp_path / f"{name}.npz"
        m.save(path)
        back = load_model(path)
        assert type(back) is type(m) and back.arch_params() == m.arch_params()
        for k, v in m.arrays().items():
            assert back.arrays()[k].dtype == np.float32
            np.testing.assert_array_equal(back.arrays()[k], v)
        np.testing.assert_array_equal(back.decode(Y[:8]), m.decode(Y[:8]))
        np.testing.assert_array_equal(back.A, m.A)


def test_damaged_files_are_model_file_errors(toy, tmp_path):
    A, _, _ = toy
    m = _models(A)["lamp-pwlin"]
    path = tmp_path / "m.npz"
    m.save(path)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(path.read_bytes()[:300])
    with pytest.raises(ModelFileError):
        LAMP.load(bad)
    with pytest.raises(ModelFileError, match="lamp"):
        LISTA.load(path)
    from cscore.models.format import save_model

    w = m.arrays()
    for params, match in (({"n_layers": 4, "joint": 0, "shrinkage": "tanh"}, "shrinkage"),
                          ({"n_layers": 0, "joint": 0, "shrinkage": "pwlin"}, "n_layers"),
                          ({"n_layers": 4, "joint": 0, "shrinkage": "pwlin", "x": 1}, "x"),
                          ({"n_layers": 5, "joint": 0, "shrinkage": "pwlin"}, "shape")):
        save_model(bad, "lamp", w, A, m.spec, {"arch_params": params})
        with pytest.raises(ModelFileError, match=match):
            load_model(bad)
    w["theta"] = w["theta"].copy()
    w["theta"][0, 0] = np.nan
    save_model(bad, "lamp", w, A, m.spec, {"arch_params": m.arch_params()})
    with pytest.raises(ModelFileError, match="NaN"):
        load_model(bad)


# -- the registry ---------------------------------------------------------------------
def test_registered_decoders_and_config_round_trip(toy, tmp_path):
    A, _, Y = toy
    for name, model in (("lista", _models(A)["lista"]), ("lamp", _models(A)["lamp-soft"])):
        spec = get_decoder_spec(name)
        assert spec.kind == "model" and spec.archs == (name,) and spec.stopping == ()
        assert spec.settings == ("n_layers", "device")
        path = tmp_path / f"{name}.npz"
        model.save(path)
        dec = cscore.decoder(name, model=path, n_layers=2)
        np.testing.assert_array_equal(dec(Y[:4]), model.decode(Y[:4], n_layers=2))
        back = cscore.Decoder.from_config(json.loads(json.dumps(dec.config)))
        assert back == dec
        np.testing.assert_array_equal(back(Y[:4]), dec(Y[:4]))
        cfg = tmp_path / f"{name}.json"
        cscore.decoder(name, model=model).save(cfg)
        np.testing.assert_array_equal(cscore.Decoder.from_config(cfg)(Y[:2]), model.decode(Y[:2]))
    with pytest.raises(TypeError, match="must be a LAMP"):
        cscore.decoder("lamp", model=_models(A)["lista"])


# -- torch --------------------------------------------------------------------------------
def test_numpy_decode_equals_the_torch_forward_pass(toy, rng):
    pytest.importorskip("torch")
    from cscore.training.unrolled import torch_layers

    A, _, Y = toy
    for name, m in _models(A, L=1).items():
        np.testing.assert_allclose(torch_layers(m, Y[:20]), m.decode_layers(Y[:20]),
                                   atol=1e-10, err_msg=name)
    # a joint model on 3 channels with perturbed (trained-like) weights
    spec3 = ProblemSpec(M=M, N=N, L=3)
    m = LAMP.from_amp(A, spec3, n_layers=3, shrinkage="pwlin", theta=(0.8, 2.0, 0.1, 0.9, 1.1),
                      joint=True)
    w = {k: v + 0.01 * rng.standard_normal(v.shape) for k, v in m.arrays().items()}
    m = LAMP(w, A, spec3, m.arch_params())
    Y3 = rng.standard_normal((10, M, 3))
    np.testing.assert_allclose(torch_layers(m, Y3), m.decode_layers(Y3), atol=1e-10)


def test_training_beats_the_untrained_networks_and_ista(toy):
    pytest.importorskip("torch")
    from cscore.training.unrolled import (
        BernoulliGaussian,
        UnrolledTrainConfig,
        nmse_db,
        train_unrolled,
    )

    A, _, _ = toy
    src = BernoulliGaussian(A, rate=0.1, snr_db=40.0)
    X, Y = src.draw(1000, seed=123)  # fresh test problems
    # steps, not seconds, bound the stages: the outcome does not depend on the machine
    cfg = UnrolledTrainConfig(n_layers=4, n_train=3000, refine=(0.3,), val_every=10,
                              patience=4, max_steps=120, n_threads=1, progress=False, seed=0)
    lista = train_unrolled("lista", src, cfg)
    lam = float(lista.initial.arrays()["theta"][0, 0]) * np.linalg.norm(A, 2) ** 2
    X_ista = ista(A, Y[:, :, 0].T, lam, 4).T[:, :, None]
    trained = nmse_db(lista.model.decode(Y), X)
    assert trained < nmse_db(lista.initial.decode(Y), X) - 1.0
    assert trained < nmse_db(X_ista, X) - 1.0
    assert len(lista.val_nmse_db) == 4 and lista.model.info["training"]["history"]
    lamp = train_unrolled("lamp", src, cfg, shrinkage="bg")
    with pytest.raises(ValueError, match="arch"):
        train_unrolled("ista", src, cfg)
    with pytest.raises(ValueError, match="lista model"):
        train_unrolled("lamp", src, cfg, init=lista.initial)
    assert nmse_db(lamp.model.decode(Y), X) <= min(trained, nmse_db(lamp.initial.decode(Y), X))


def test_joint_lamp_learns_row_sparse_problems_better_than_per_channel():
    pytest.importorskip("torch")
    from cscore.training.unrolled import (
        BernoulliGaussian,
        UnrolledTrainConfig,
        nmse_db,
        train_unrolled,
    )

    rng = np.random.default_rng(3)
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    src = BernoulliGaussian(A, rate=0.15, snr_db=30.0, L=3, joint=True)
    X, Y = src.draw(500, seed=9)
    cfg = UnrolledTrainConfig(n_layers=3, n_train=1500, refine=(0.3,), val_every=10,
                              patience=4, max_steps=60, n_threads=1, progress=False)
    joint = train_unrolled("lamp", src, cfg, shrinkage="bg", joint=True)
    alone = train_unrolled("lamp", src, cfg, shrinkage="bg", joint=False)
    assert joint.model.joint and joint.model.L == 3 and not alone.model.joint
    assert nmse_db(joint.model.decode(Y), X) < nmse_db(alone.model.decode(Y), X) - 1.0


def test_mnist_source_makes_the_lstm_papers_blocks_for_a_models_matrix():
    from cscore.training.unrolled import mnist_source

    A = cscore.pretrained("mnist-m72").A
    src = mnist_source(A, shared_data("mnist"), n_tuples=20, k_range=(5, 8))
    X, Y = src.draw(12, seed=0)
    assert X.shape == (12, 144, 4) and Y.shape == (12, 72, 4)
    assert np.count_nonzero(X, axis=1).max() <= 8 and X.min() >= 0
    # sigma 0.005 noise on A X
    noise = Y - np.einsum("mn,bnl->bml", A, X)
    assert 0.003 < noise.std() < 0.007


def test_image_problems_source(rng):
    from cscore.training.unrolled import ImageProblems

    A = rng.standard_normal((M, N)) / np.sqrt(M)
    pool = rng.random((30, N, 2))
    src = ImageProblems(A, pool, sigma=0.0, k_range=(3, 5))
    X, Y = src.draw(10, seed=4)
    assert X.shape == (10, N, 2) and Y.shape == (10, M, 2)
    nnz = np.count_nonzero(X, axis=1)
    assert nnz.min() >= 3 and nnz.max() <= 5 and (nnz[:, 0] == nnz[:, 1]).all()
    np.testing.assert_allclose(Y, np.einsum("mn,bnl->bml", A, X))
    X2, _ = src.draw(10, seed=4)
    np.testing.assert_array_equal(X, X2)
