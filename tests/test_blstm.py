"""Bidirectional LSTM-CS: compiled decoder vs the NumPy reference and torch, model files."""

from __future__ import annotations

import json

import numpy as np
import pytest

import cscore
from cscore.datasets import gaussian_matrix, keep_largest, measure
from cscore.decoders.learned import (
    BLSTMCS,
    LSTMCS,
    BLSTMCSWeights,
    LSTMCSWeights,
    blstm_logits_native,
)
from cscore.models.format import ModelFileError
from cscore.problem import ProblemSpec
from oracles.reference import blstm_logits, lstm_logits, reference_decode

from conftest import requires_torch, shared_data

M, N, L, H = 10, 20, 4, 6


def _weights(rng, cell="paper", H=H, M=M, N=N, scale=1.0):
    G = 3 if cell == "paper" else 4

    def g(*s):
        return (scale * rng.standard_normal(s)).astype(np.float32)

    return BLSTMCSWeights(W=g(G * H, M), R=g(G * H, H), b=g(G * H), Wb=g(G * H, M),
                          Rb=g(G * H, H), bb=g(G * H), U=g(N, 2 * H), c_out=g(N), cell=cell)


def _problems(rng, A, B, k=3, sigma=0.01, seed=1):
    S = keep_largest(rng.standard_normal((B, L, A.shape[1])), k).transpose(0, 2, 1)
    Y, _ = measure(A, S, sigma, seed=seed)
    return S, Y


@pytest.fixture
def model(rng):
    A = gaussian_matrix(M, N, seed=2)
    return BLSTMCS(_weights(rng), A, ProblemSpec(M=M, N=N, L=L))


@pytest.mark.parametrize("cell", ["paper", "lstm"])
def test_logits_native_match_reference(rng, cell):
    w = _weights(rng, cell)
    X = rng.uniform(-1, 1, size=(70, L, M))  # 70 > one chunk of 64
    ref = blstm_logits(w, X)
    np.testing.assert_allclose(blstm_logits_native(w, X, dtype=np.float64), ref, atol=1e-12)
    np.testing.assert_allclose(blstm_logits_native(w, X), ref, atol=2e-4)
    # the backward direction matters: reversing the channels is not the same model
    fwd_only = lstm_logits(w.direction(backward=False), X) + w.c_out
    assert np.abs(ref - fwd_only).max() > 1e-3
    # channel j's backward state depends on the channels after j, not before
    X2 = X.copy()
    X2[:, -1] += 0.5
    d = np.abs(blstm_logits(w, X2) - ref).max(axis=(0, 2))
    assert (d > 1e-6).all()
    X3 = X.copy()
    X3[:, 0] += 0.5
    d3 = np.abs(blstm_logits(w, X3) - ref).max(axis=(0, 2))
    assert (d3 > 1e-6).all()


@pytest.mark.parametrize("cell", ["paper", "lstm"])
@pytest.mark.parametrize("stop", [{"n_nonzero": 5, "tol": None}, {"n_nonzero": None, "tol": 0.3}])
def test_decode_matches_reference(rng, cell, stop):
    A = gaussian_matrix(M, N, seed=3)
    w = _weights(rng, cell)
    model = BLSTMCS(w, A, ProblemSpec(M=M, N=N, L=L))
    _, Y = _problems(rng, A, 75)
    ref, n_ref = reference_decode(w, A, Y, **stop)
    res = model._with_kernel_options(lstm_dtype=np.float64).decode(
        Y, **stop, return_result=True)
    np.testing.assert_array_equal(res.x != 0, ref != 0)
    np.testing.assert_allclose(res.x, ref, atol=1e-9)
    np.testing.assert_array_equal(res.n_iter, n_ref)
    # float32 LSTM (the default): same supports on these problems, same values
    S32 = model.decode(Y, **stop)
    assert (S32 != 0).sum() == (ref != 0).sum()
    agree = ((S32 != 0) == (ref != 0)).all(axis=(1, 2)).mean()
    assert agree > 0.9


def test_atoms_per_channel_and_result(model, rng):
    _, Y = _problems(rng, model.A, 5)
    res = model.decode(Y, n_nonzero=3, return_result=True)
    assert res.x.shape == (5, N, L) and (res.n_iter == 3).all()
    assert ((res.x != 0).sum(axis=1) == 3).all()  # per-channel supports of 3 atoms
    assert res.extra["atoms"].shape == (5, L, 3)
    single = model.decode(Y[0], n_nonzero=3)
    np.testing.assert_array_equal(single, res.x[0])
    assert model.decode(Y.astype(np.float32), n_nonzero=2).dtype == np.float32
    with pytest.raises(ValueError, match="channels"):
        model.decode(Y[:, :, :3])
    with pytest.raises(ValueError, match="n_nonzero"):
        model.decode(Y, n_nonzero=M + 1)


def test_threads_give_identical_results(model, rng):
    _, Y = _problems(rng, model.A, 50)
    chunked = model._with_kernel_options(chunk=7)
    base = chunked.decode(Y, tol=0.2, n_threads=1)
    for t in (2, 4):
        np.testing.assert_array_equal(chunked.decode(Y, tol=0.2, n_threads=t), base)


def test_file_round_trip(tmp_path, model, rng, monkeypatch):
    path = tmp_path / "b.npz"
    model.save(path)
    loaded = LSTMCS.load(path)  # the base class's load gives the file's class
    assert type(loaded) is BLSTMCS and isinstance(loaded.weights, BLSTMCSWeights)
    assert BLSTMCS.load(path).spec == model.spec
    for k in BLSTMCSWeights._ARRAYS:
        np.testing.assert_array_equal(getattr(loaded.weights, k), getattr(model.weights, k))
    _, Y = _problems(rng, model.A, 4)
    np.testing.assert_array_equal(loaded.decode(Y, n_nonzero=2), model.decode(Y, n_nonzero=2))
    with np.load(path) as z:
        assert json.loads(z["meta"].tobytes())["arch"] == "blstm"
    monkeypatch.setenv("CSCORE_MODEL_PATH", str(tmp_path))
    assert type(cscore.pretrained("b")) is BLSTMCS


def _rewrite(src, dst, **changes):
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    for k, v in changes.items():
        if v is None:
            arrays.pop(k)
        else:
            arrays[k] = v
    np.savez(dst, **arrays)
    return dst


def _meta(path, **changes):
    with np.load(path) as z:
        meta = json.loads(z["meta"].tobytes())
    meta.update(changes)
    for k, v in list(meta.items()):
        if v is None:
            meta.pop(k)
    return np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)


def test_malformed_files_raise_model_file_error(tmp_path, model):
    path = tmp_path / "b.npz"
    model.save(path)
    w = model.weights
    cases = {
        "flat_R": {"R": w.R.ravel()},
        "flat_Rb": {"Rb": w.Rb.ravel()},
        "flat_U": {"U": w.U.ravel()},
        "U_one_direction": {"U": w.U[:, :H].copy()},
        "Wb_wrong": {"Wb": w.Wb[:, :-1].copy()},
        "bb_int": {"bb": w.bb.astype(np.int32)},
        "missing_Wb": {"Wb": None},
        "unknown_arch": {"meta": _meta(path, arch="gru")},
        "lstm_meta": {"meta": _meta(path, arch="lstm")},  # U is (N, 2H): not an LSTM
    }
    for name, change in cases.items():
        bad = _rewrite(path, tmp_path / f"{name}.npz", **change)
        with pytest.raises(ModelFileError):
            BLSTMCS.load(bad)
        with pytest.raises(ModelFileError):
            LSTMCS.load(bad)
    # an LSTM file (arch "lstm") is not a BLSTMCS, whatever else it holds
    lstm_file = _rewrite(path, tmp_path / "as_lstm.npz", meta=_meta(path, arch="lstm"),
                         U=w.U[:, :H].copy(), Wb=None, Rb=None, bb=None)
    assert type(LSTMCS.load(lstm_file)) is LSTMCS
    with pytest.raises(ModelFileError, match="not a BLSTMCS"):
        BLSTMCS.load(lstm_file)


def test_lstm_files_keep_loading(tmp_path, rng):
    G = 3
    lw = LSTMCSWeights(W=rng.normal(size=(G * H, M)), R=rng.normal(size=(G * H, H)),
                       b=np.zeros(G * H), U=rng.normal(size=(N, H)), c_out=np.zeros(N))
    A = gaussian_matrix(M, N, seed=0)
    path = tmp_path / "l.npz"
    LSTMCS(lw, A, ProblemSpec(M=M, N=N, L=L)).save(path)
    old = _rewrite(path, tmp_path / "old.npz", meta=_meta(path, arch=None))  # no arch field
    for p in (path, old):
        loaded = LSTMCS.load(p)
        assert type(loaded) is LSTMCS and type(loaded.weights) is LSTMCSWeights
        with pytest.raises(ModelFileError, match="not a BLSTMCS"):
            BLSTMCS.load(p)


@requires_torch
@pytest.mark.parametrize("cell", ["paper", "lstm"])
def test_torch_forward_matches(rng, cell):
    import torch

    from cscore.training.lstm import torch_logits

    w = _weights(rng, cell, scale=0.5)
    X = rng.uniform(-1, 1, size=(9, L, M))
    params = {k: torch.from_numpy(getattr(w, k).astype(np.float64)) for k in w._ARRAYS}
    got = torch_logits(params, torch.from_numpy(X), cell).numpy()
    np.testing.assert_allclose(got, blstm_logits(w, X), atol=1e-10)
    np.testing.assert_allclose(blstm_logits_native(w, X, dtype=np.float64), got, atol=1e-10)


@requires_torch
def test_train_blstm_returns_decoder(tmp_path, rng):
    A = gaussian_matrix(12, 16, seed=3)
    S = keep_largest(rng.standard_normal((40, 3, 16)), 2).transpose(0, 2, 1)
    path = tmp_path / "t.npz"
    model = cscore.train_lstm_cs(S[:30], S[30:], A, path=path, n_steps=2, n_cells=5,
                                 arch="blstm", max_epochs=1, progress=False)
    assert type(model) is BLSTMCS and model.weights.U.shape == (16, 10)
    assert model.info["training"]["config"]["arch"] == "blstm"
    loaded = LSTMCS.load(path)
    assert type(loaded) is BLSTMCS
    Y, _ = measure(A, S[30:], 0.01, seed=0)
    np.testing.assert_array_equal(loaded.decode(Y, n_nonzero=2), model.decode(Y, n_nonzero=2))
    # the exported weights reproduce the training forward (float32 file weights)
    import torch

    from cscore.training.lstm import torch_logits

    X = rng.uniform(-1, 1, size=(5, 3, 12)).astype(np.float32)
    params = {k: torch.from_numpy(getattr(model.weights, k)) for k in BLSTMCSWeights._ARRAYS}
    z_torch = torch_logits(params, torch.from_numpy(X), "paper").numpy()
    np.testing.assert_allclose(blstm_logits_native(model.weights, X), z_torch, atol=1e-5)


@requires_torch
def test_cli_train_blstm(tmp_path, capsys):
    from cscore.cli import main

    out = tmp_path / "cli.npz"
    rc = main(["train", "--data", "demo", "--arch", "blstm", "-M", "16", "--cells", "4",
               "--epochs", "1", "--problems-per-epoch", "30", "--k-max", "4", "--quiet",
               "--threads", "1", "--out", str(out)])
    assert rc == 0 and "wrote" in capsys.readouterr().out
    loaded = LSTMCS.load(out)
    w, spec = loaded.weights, loaded.spec
    assert isinstance(w, BLSTMCSWeights) and w.U.shape == (64, 8)
    assert spec.transform == "dct" and spec.L == 4


def test_msrc_split_is_disjoint_and_fixed():
    from cscore.datasets.msrc import held_out_names, load_msrc_split

    root = shared_data("msrc-v2")
    train, val, test, names = load_msrc_split(root, 16)
    assert set(test) == {"buildings", "cows", "flowers"}
    assert all(t.shape == (5, 16, 16) for t in test.values())
    assert train.shape[0] == len(names["train"]) and val.shape[0] == len(names["val"])
    sets = [set(names[k]) for k in ("train", "val", "test")]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    files = sorted(p.name for p in (root / "buildings").iterdir())
    assert held_out_names("buildings", files) == held_out_names("buildings", files)
    assert [f"buildings/{f}" for f in held_out_names("buildings", files)] == [
        n for n in names["test"] if n.startswith("buildings/")]


@pytest.mark.parametrize("transform", ["dct", "haar"])
def test_shipped_msrc_models(transform):
    lstm = cscore.pretrained(f"msrc-buildings-{transform}-m32-lstm")
    blstm = cscore.pretrained(f"msrc-buildings-{transform}-m32-blstm")
    assert type(lstm) is LSTMCS and type(blstm) is BLSTMCS
    for m in (lstm, blstm):
        s = m.spec
        assert (s.M, s.N, s.L, s.block_size, s.image_size) == (32, 64, 4, 8, 64)
        assert s.transform == transform and s.levels == (3 if transform == "haar" else 0)
        assert len(m.info["data"]["test"]) == 15
    np.testing.assert_array_equal(lstm.A, blstm.A)
