"""LSTM-CS training data, the PyTorch trainer and the exported weights."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from cscore.datasets import gaussian_matrix, keep_largest, measure
from cscore.decoders.learned._greedy import normalize_maxabs
from cscore.decoders.learned.reference import lstm_logits, reference_decode
from cscore.decoders.learned.weights import load_model_file, save_model_file
from cscore.problem import ProblemSpec
from cscore.training.sequences import IGNORE, default_steps, training_sequences

from conftest import requires_torch


def _sparse(rng, P, N, L, k):
    return keep_largest(rng.standard_normal((P, N, L)).transpose(0, 2, 1), k).transpose(0, 2, 1)


def test_training_sequences_match_slow_lstsq(rng):
    M, N, L, P, T = 10, 20, 3, 4, 5
    A = gaussian_matrix(M, N, seed=1)
    S = _sparse(rng, P, N, L, 4)
    S[2, :, 1] = 0.0
    S[2, 7, 1] = 3.0  # a channel with a single non-zero
    S[3] = 0.0
    S[3, :3, :] = 1.0  # ties: lower index first
    Y, _ = measure(A, S, 0.01, seed=2)
    X, tg = training_sequences(A, S, n_steps=T, Y=Y, chunk=3)
    # slow reference: per problem, step, channel
    exp_X, exp_t = [], []
    for p in range(P):
        for t in range(T):
            xs, ts = [], []
            for j in range(L):
                s = S[p, :, j]
                order = np.argsort(-np.abs(s), kind="stable")
                supp = order[:t]
                if t:
                    coef, *_ = np.linalg.lstsq(A[:, supp], Y[p, :, j], rcond=None)
                    r = Y[p, :, j] - A[:, supp] @ coef
                else:
                    r = Y[p, :, j]
                xs.append(normalize_maxabs(r[None])[0])
                ts.append(order[t] if t < np.count_nonzero(s) else IGNORE)
            if any(v != IGNORE for v in ts):
                exp_X.append(xs)
                exp_t.append(ts)
    np.testing.assert_array_equal(tg, np.array(exp_t))
    np.testing.assert_allclose(X, np.array(exp_X), atol=2e-6)  # float32 output
    assert X.dtype == np.float32 and tg.dtype == np.int64
    # problem 3 (three equal entries per channel): ties go to the lower index first
    np.testing.assert_array_equal(tg[-3:], [[0, 0, 0], [1, 1, 1], [2, 2, 2]])
    assert np.abs(X).max() == pytest.approx(1.0)


def test_training_sequences_checks(rng):
    A = gaussian_matrix(8, 16, seed=0)
    S = _sparse(rng, 3, 16, 2, 3)
    assert default_steps(72) == 18
    X, tg = training_sequences(A, S, n_steps=None, sigma=0.0)
    assert X.shape[1:] == (2, 8) and tg.shape[0] == X.shape[0] <= 3 * default_steps(8)
    X2, _ = training_sequences(A, S, n_steps=None, sigma=0.0)
    np.testing.assert_array_equal(X, X2)
    with pytest.raises(ValueError):
        training_sequences(A, S[:, :10], n_steps=2)
    with pytest.raises(ValueError):
        training_sequences(A, S, n_steps=0)


def test_import_error_message(monkeypatch):
    from cscore._torch import import_torch

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r'pip install "cscore\[train\]"'):
        import_torch()


def _tiny_fit(seed=0, cell="paper", epochs=3, **kw):
    from cscore.training.lstm import fit_lstm_cs

    rng = np.random.default_rng(7)
    M, N, L = 12, 16, 2
    A = gaussian_matrix(M, N, seed=3)
    # structured supports: channel 1 repeats channel 0's support, shifted by one
    S = np.zeros((120, N, L))
    for p in range(120):
        base = rng.choice(N - 1, 2, replace=False)
        S[p, base, 0] = rng.choice([-1, 1], 2) * rng.uniform(1, 2, 2)
        S[p, base + 1, 1] = rng.choice([-1, 1], 2) * rng.uniform(1, 2, 2)
    settings = {"n_cells": 12, "cell": cell, "max_epochs": epochs, "batch_size": 8, "lr": 1e-2,
                "seed": seed, "patience": 10, "progress": False, "n_threads": 1, **kw}
    res = fit_lstm_cs(S[:100], S[100:], A, n_steps=2, sigma=0.01, **settings)
    return res, A, N


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch", reason="needs PyTorch (pip install cscore[train])")
    return _tiny_fit()


@requires_torch
def test_tiny_training_learns(tiny):
    res, _, N = tiny
    h = res.history
    assert h[-1]["train_loss"] < h[0]["train_loss"] - 0.05
    assert min(e["val_loss"] for e in h) < np.log(N) - 0.1
    assert res.best_epoch == int(np.argmin([e["val_loss"] for e in h])) + 1


@requires_torch
def test_training_is_deterministic():
    res, _, _ = _tiny_fit(epochs=1)
    res2, _, _ = _tiny_fit(epochs=1)
    for name in ("W", "R", "b", "U", "c_out"):
        np.testing.assert_array_equal(getattr(res.weights, name), getattr(res2.weights, name))
    res3, _, _ = _tiny_fit(seed=1, epochs=1)
    assert not np.array_equal(res.weights.W, res3.weights.W)


@requires_torch
def test_nesterov_paper_recipe_trains():
    res, _, _ = _tiny_fit(epochs=3, optimizer="nesterov", lr=3e-3)
    h = res.history
    assert all(np.isfinite([e["train_loss"] for e in h]))
    assert h[-1]["train_loss"] < h[0]["train_loss"]
    assert res.config.optimizer == "nesterov"


@requires_torch
@pytest.mark.parametrize("cell", ["paper", "lstm"])
def test_torch_forward_matches_reference(rng, tiny, cell):
    import torch

    from cscore.decoders.learned.weights import LSTMCSWeights
    from cscore.training.lstm import torch_logits

    if cell == "paper":
        w = tiny[0].weights  # trained and exported
    else:
        G, H, M, N = 4, 12, 12, 16
        w = LSTMCSWeights(W=rng.normal(size=(G * H, M)), R=rng.normal(size=(G * H, H)) * 0.3,
                          b=rng.normal(size=G * H), U=rng.normal(size=(N, H)),
                          c_out=rng.normal(size=N), cell="lstm")
    assert w.cell == cell and w.W.shape == (len(cell.replace("paper", "igo")) * 12, 12)
    X = rng.uniform(-1, 1, size=(9, 3, 12))
    params = {k: torch.from_numpy(np.asarray(getattr(w, k), dtype=np.float64))
              for k in ("W", "R", "b", "U", "c_out")}
    got = torch_logits(params, torch.from_numpy(X), cell).numpy()
    np.testing.assert_allclose(got, lstm_logits(w, X), atol=1e-5)


@requires_torch
def test_exported_file_loads_and_decodes(tmp_path, tiny):
    from cscore.training.lstm import training_info

    res, A, N = tiny
    spec = ProblemSpec(M=12, N=N, L=2, dataset="synthetic")
    path = tmp_path / "m.npz"
    save_model_file(path, res.weights, A, spec, training_info(res, {"note": "test"}))
    w, A2, spec2, info = load_model_file(path)
    assert spec2 == spec and info["note"] == "test"
    assert info["training"]["config"]["n_cells"] == 12
    np.testing.assert_array_equal(w.R, res.weights.R.astype(np.float32))
    np.testing.assert_array_equal(A2, A)
    Y = np.zeros((2, 12, 2))
    Y[:, 0, :] = 1.0
    S, n_iter = reference_decode(w, A2, Y, n_nonzero=2, tol=None)
    assert S.shape == (2, N, 2) and (n_iter == 2).all()


@requires_torch
def test_cli_train(tmp_path, capsys):
    from cscore.cli import main

    out = tmp_path / "cli.npz"
    rc = main(["train", "--data", "demo", "-M", "16", "--cells", "8", "--epochs", "1",
               "--problems-per-epoch", "40", "--k-max", "6", "--quiet", "--threads", "1",
               "--out", str(out)])
    assert rc == 0 and "wrote" in capsys.readouterr().out
    w, _, spec, info = load_model_file(out)
    assert (spec.M, spec.N, spec.L, spec.transform) == (16, 64, 4, "dct")
    assert w.n_cells == 8 and info["command"] == "cscore train"


@requires_torch
def test_train_lstm_cs_returns_decoder(tmp_path):
    pytest.importorskip("cscore.decoders.learned.lstm", reason="the compiled LSTMCS decoder")
    import cscore

    rng = np.random.default_rng(3)
    A = gaussian_matrix(12, 16, seed=3)
    S = _sparse(rng, 40, 16, 2, 2)
    path = tmp_path / "t.npz"
    model = cscore.train_lstm_cs(S[:30], S[30:], A, path=path, n_steps=2, n_cells=8,
                                 max_epochs=1, progress=False, info={"who": "test"})
    assert isinstance(model, cscore.LSTMCS)
    w, _, spec, info = load_model_file(path)
    assert (spec.M, spec.N, spec.L) == (12, 16, 2) and info["who"] == "test"
    assert w.n_cells == 8
