"""LSTM-CS training data, the PyTorch trainer and the exported weights."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from cscore.datasets import gaussian_matrix, keep_largest, measure
from cscore.decoders.learned import LSTMCS
from cscore.decoders.learned._greedy import normalize_maxabs
from cscore.problem import ProblemSpec
from cscore.training.sequences import IGNORE, default_steps, training_sequences
from oracles.reference import lstm_logits, reference_decode

from conftest import requires_torch

#: Python and PyTorch only (no C++ kernels): left out of the sanitizer run (scripts/sanitize.sh).
pytestmark = pytest.mark.slow


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
    with pytest.raises(ImportError, match=r'pip install "cscore-decoders\[train\]"'):
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
    pytest.importorskip("torch", reason="needs PyTorch (pip install cscore-decoders[train])")
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


def test_prefetch_returns_what_make_returns_once_per_epoch():
    from cscore.training._epoch_data import Prefetch

    calls: list[int] = []

    def make(epoch):
        calls.append(epoch)
        return np.full((2, 1, 1), float(epoch)), np.full((2, 1), epoch)

    with Prefetch(make, 3) as ahead:
        got = [ahead(e) for e in range(4)]
    assert [int(x[0, 0, 0]) for x, _ in got] == [0, 1, 2, 3]
    assert sorted(calls) == [0, 1, 2, 3]  # epoch e + 1 made (once) while e is used
    calls.clear()
    with Prefetch(make, 0) as ahead:  # last = 0: nothing made ahead
        ahead(0)
    assert calls == [0]


@requires_torch
def test_prefetched_run_equals_sequential_run(monkeypatch):
    from cscore.training import lstm

    res, _, _ = _tiny_fit(epochs=3)

    class Sequential(lstm.Prefetch):
        def __call__(self, epoch):
            return self.make(epoch)

    monkeypatch.setattr(lstm, "Prefetch", Sequential)
    res2, _, _ = _tiny_fit(epochs=3)
    assert len(res.history) == len(res2.history) == 3
    for a, b in zip(res.history, res2.history):
        assert (a["train_loss"], a["val_loss"], a["val_acc"]) == (
            b["train_loss"], b["val_loss"], b["val_acc"])
    for name in ("W", "R", "b", "U", "c_out"):
        np.testing.assert_array_equal(getattr(res.weights, name), getattr(res2.weights, name))


@requires_torch
def test_one_validation_pass_gives_loss_and_accuracy(rng):
    import torch

    from cscore.training._lstm_steps import init_params
    from cscore.training._lstm_torch import loss_and_accuracy
    from cscore.training.lstm import torch_logits

    params = init_params(torch, 6, 9, 5, 3, torch.Generator().manual_seed(0), torch.float32,
                         True)
    X = torch.as_tensor(rng.standard_normal((23, 3, 6)), dtype=torch.float32)
    T = torch.as_tensor(rng.integers(-1, 9, (23, 3)))
    loss, acc = loss_and_accuracy(torch, params, X, T, "paper", batch=10)
    with torch.no_grad():
        z = torch_logits(params, X, "paper")
        pred = z.argmax(-1)
    ok = T != IGNORE
    whole = torch.nn.functional.cross_entropy(z.reshape(-1, 9), T.reshape(-1),
                                              ignore_index=IGNORE)  # one batch, mean
    assert loss == pytest.approx(float(whole), rel=1e-6)  # float32 sums in another order
    assert acc == pytest.approx(float(((pred == T) & ok).sum()) / float(ok.sum()))


def test_train_pretrained_makes_omp_threads_wait_passively():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "train_pretrained.py"
    spec = importlib.util.spec_from_file_location("train_pretrained_under_test", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    env: dict[str, str] = {"PATH": "/bin"}
    assert mod.passive_omp_threads(env) is True
    assert env == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE"}
    for chosen in ({"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "1000"}):
        env = dict(chosen)  # the caller's choice stays, nothing added
        assert mod.passive_omp_threads(env) is False and env == chosen


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
    LSTMCS(res.weights, A, spec, training_info(res, {"note": "test"})).save(path)
    loaded = LSTMCS.load(path)
    w, A2, spec2, info = loaded.weights, loaded.A, loaded.spec, loaded.info
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
    loaded = LSTMCS.load(out)
    w, spec, info = loaded.weights, loaded.spec, loaded.info
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
    loaded = LSTMCS.load(path)
    w, spec, info = loaded.weights, loaded.spec, loaded.info
    assert (spec.M, spec.N, spec.L) == (12, 16, 2) and info["who"] == "test"
    assert w.n_cells == 8


# -- the training loop's steps ---------------------------------------------------------


def test_nesterov_momentum_schedule():
    from cscore.training._lstm_steps import nesterov_momentum

    got = [nesterov_momentum(u, 100) for u in (0, 9, 10, 50, 89, 90, 99)]
    assert got == [0.9, 0.9, 0.995, 0.995, 0.995, 0.9, 0.9]
    assert nesterov_momentum(0, 0) == 0.9  # no division by zero


@requires_torch
def test_time_budget_stops_before_the_first_update():
    """A spent budget: one validated epoch without updates, marked as stopped."""
    res, _, _ = _tiny_fit(epochs=3, max_seconds=0.0)
    assert len(res.history) == 1 and res.history[0]["stopped"] == "max_seconds"
    assert res.history[0]["train_loss"] == 0.0  # no minibatch ran
    assert res.history[0]["val_loss"] == pytest.approx(res.extra["initial_val_loss"])


@requires_torch
@pytest.mark.parametrize("patience", [1, 2])
def test_early_stopping_keeps_the_best_epoch_and_halves_adam_step(patience):
    res, _, _ = _tiny_fit(epochs=10, lr=0.5, patience=patience)  # a step that overshoots
    h = res.history
    losses = [e["val_loss"] for e in h]
    assert res.best_epoch == int(np.argmin(losses)) + 1
    # stopped after `patience` epochs in a row without improvement
    assert len(h) == res.best_epoch + patience < 10
    assert all(v >= losses[res.best_epoch - 1] for v in losses[res.best_epoch :])
    # Adam's step halves after every epoch without improvement (history: the step used)
    best = np.inf
    for a, b in zip(h, h[1:]):
        improved = a["val_loss"] < best - 1e-4
        best = min(best, a["val_loss"]) if improved else best
        assert b["lr"] == (a["lr"] if improved else a["lr"] / 2)


# -- data sources (cscore.training.data) -------------------------------------------------


def _write_mnist(folder, n=84, seed=0):
    import gzip
    import struct

    rng = np.random.default_rng(seed)
    labels = (np.arange(n) % 10).astype(np.uint8)
    images = np.zeros((n, 28, 28), dtype=np.uint8)
    images[:, 4:24, 4:24] = rng.integers(1, 256, (n, 20, 20), dtype=np.uint8)
    folder.mkdir()
    with gzip.open(folder / "images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
    (folder / "labels-idx1-ubyte").write_bytes(struct.pack(">II", 2049, n) + labels.tobytes())
    return folder


def _rows(S):
    return {p.tobytes() for p in np.ascontiguousarray(S)}


def test_mnist_training_data_split_shapes_and_seed(tmp_path):
    from cscore.training.data import mnist_training_data

    d = _write_mnist(tmp_path / "mnist")
    S_tr, S_va, spec = mnist_training_data(d, 36, L=3, n_images=63, n_tuples=7, seed=4)
    # 7 tuples x 4 blocks; validation: digits 57..62 (labels 7,8,9,0,1,2: one tuple)
    assert S_tr.shape == (28, 144, 3) and S_va.shape == (4, 144, 3)
    assert (spec.M, spec.N, spec.L, spec.block_size, spec.transform) == (36, 144, 3, 12, "none")
    assert "first 63 images; last 6" in spec.dataset
    assert not _rows(S_tr) & _rows(S_va)
    again = mnist_training_data(d, 36, L=3, n_images=63, n_tuples=7, seed=4)
    np.testing.assert_array_equal(again[0], S_tr)
    other = mnist_training_data(d, 36, L=3, n_images=63, n_tuples=7, seed=5)
    assert not np.array_equal(other[0], S_tr)
    np.testing.assert_array_equal(other[1], S_va)  # validation does not depend on the seed
    spec = mnist_training_data(d, L=3)[2]  # defaults: M = N/2, the first 75% of the digits
    assert spec.M == 72 and "first 63 images" in spec.dataset


@pytest.mark.parametrize(("kw", "name"), [
    ({"M": 145}, "M"), ({"M": 0}, "M"), ({"L": 11}, "L"), ({"L": 0}, "L"),
    ({"n_images": 85}, "n_images"), ({"n_images": 1}, "n_images"), ({"n_tuples": 0}, "n_tuples"),
])
def test_mnist_training_data_bad_arguments(tmp_path, kw, name):
    from cscore.training.data import mnist_training_data

    d = _write_mnist(tmp_path / "mnist")
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        mnist_training_data(d, **kw)
    with pytest.raises(FileNotFoundError, match="images-idx3-ubyte"):
        mnist_training_data(tmp_path)


def _write_images(folder, names, size=16, seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    for nm in names:
        Image.fromarray(rng.integers(0, 256, (size, size), dtype=np.uint8)).save(folder / nm)
    return folder


@pytest.mark.parametrize("transform", ["dct", "haar"])
def test_folder_training_data(tmp_path, transform):
    from cscore.datasets import image_mmv_problems, load_image_folder
    from cscore.training.data import folder_training_data

    d = _write_images(tmp_path / "img", [f"{i:02d}.png" for i in range(12)])
    S_tr, S_va, spec = folder_training_data(d, 20, L=2, image_size=16, transform=transform)
    # 16x16 images: 4 blocks = 2 problems each; the last of 12 images validates
    assert S_tr.shape == (22, 64, 2) and S_va.shape == (2, 64, 2)
    assert (spec.M, spec.N, spec.transform, spec.image_size) == (20, 64, transform, 16)
    assert spec.levels == (3 if transform == "haar" else 0)
    imgs, _ = load_image_folder(d, 16)
    np.testing.assert_array_equal(
        S_va, image_mmv_problems(imgs[-1:], block_size=8, transform=transform, k=None, L=2))
    assert not _rows(S_tr) & _rows(S_va)


def test_folder_training_data_bad_arguments(tmp_path):
    from cscore.training.data import folder_training_data

    d = _write_images(tmp_path / "img", ["a.png", "b.png"])
    with pytest.raises(ValueError, match=r"^transform"):
        folder_training_data(d, transform="wavelet")
    with pytest.raises(ValueError, match=r"^image_size"):
        folder_training_data(d, image_size=4)
    with pytest.raises(ValueError, match=r"^M "):
        folder_training_data(d, 65)
    one = _write_images(tmp_path / "one", ["a.png"])
    with pytest.raises(ValueError, match="at least 2 images"):
        folder_training_data(one, image_size=16)
    with pytest.raises(FileNotFoundError):
        folder_training_data(tmp_path / "missing")


def test_dihedral_copies_are_the_eight_symmetries(rng):
    from cscore.training.data import dihedral_copies

    img = rng.normal(size=(5, 5))
    out = dihedral_copies(img)
    assert len(out) == 8 and len(_rows(np.stack(out))) == 8
    np.testing.assert_array_equal(out[0], img)
    np.testing.assert_array_equal(out[4], img.T)
    assert all(np.isclose(np.sort(o, axis=None), np.sort(img, axis=None)).all() for o in out)


def test_demo_training_data_split_and_augmentation():
    from cscore.training.data import demo_training_data

    S_tr, S_va, spec = demo_training_data(L=4)
    # camera + ascent at 256x256: 2 x 1024 blocks = 512 problems; the last 51 validate
    assert S_tr.shape == (461, 64, 4) and S_va.shape == (51, 64, 4)
    assert (spec.M, spec.N, spec.transform, spec.image_size) == (32, 64, "dct", 256)
    A_tr, A_va, _ = demo_training_data(L=4, augment=True)
    np.testing.assert_array_equal(A_va, S_va)  # the same validation problems
    # camera in 8 symmetries (8 x 256 problems) + ascent's training part (256 - 51)
    assert A_tr.shape[0] == 8 * 256 + 205
    np.testing.assert_array_equal(A_tr[:256], S_tr[:256])  # the camera as is comes first
    assert not _rows(A_tr) & _rows(S_va)
    with pytest.raises(ValueError, match=r"^M "):
        demo_training_data(65)
    with pytest.raises(ValueError, match=r"^L "):
        demo_training_data(L=0)


def test_cdsn_msrc_training_data_holds_out_the_test_buildings(tmp_path):
    from cscore.datasets import image_mmv_problems, load_image_folder
    from cscore.training.data import (
        CDSN_MSRC_TEST_BUILDINGS,
        CDSN_MSRC_VAL_BUILDINGS,
        cdsn_msrc_training_data,
    )

    root = tmp_path / "msrc"
    _write_images(root / "buildings", [f"{i:02d}.png" for i in range(1, 23)], seed=1)
    _write_images(root / "cows", ["01.png", "02.png"], seed=2)
    S_tr, S_va, spec = cdsn_msrc_training_data(root, L=4, image_size=16)
    assert S_tr.shape == (12 + 2, 64, 4) and S_va.shape == (5, 64, 4)
    assert (spec.M, spec.L, spec.transform) == (25, 4, "dct")
    imgs, names = load_image_folder(root / "buildings", 16)

    def problems(keep):
        sel = np.stack([im for im, nm in zip(imgs, names) if nm in keep])
        return image_mmv_problems(sel, block_size=8, transform="dct", k=None, L=4)

    np.testing.assert_array_equal(S_va, problems(CDSN_MSRC_VAL_BUILDINGS))
    test = _rows(problems(CDSN_MSRC_TEST_BUILDINGS))
    assert not test & _rows(S_tr) and not test & _rows(S_va) and not _rows(S_tr) & _rows(S_va)
    with pytest.raises(FileNotFoundError, match="no class folders"):
        cdsn_msrc_training_data(tmp_path / "empty")
    with pytest.raises(ValueError, match=r"^L "):
        cdsn_msrc_training_data(root, L=-1)


# -- recipes and the command line ----------------------------------------------------------


@requires_torch
def test_train_lstm_model_equals_fit_lstm_cs(tmp_path):
    from cscore.training.lstm import TrainConfig, fit_lstm_cs
    from cscore.training.recipes import train_lstm_model

    rng = np.random.default_rng(3)
    A = gaussian_matrix(12, 16, seed=3)
    S = _sparse(rng, 40, 16, 2, 2)
    spec = ProblemSpec(M=12, N=16, L=2, dataset="synthetic")
    cfg = TrainConfig(n_cells=6, arch="blstm", max_epochs=2, batch_size=16, progress=False,
                      n_threads=1, seed=2)
    model, res = train_lstm_model(S[:30], S[30:], A, spec, config=cfg, n_steps=2,
                                  info={"who": "test"})
    ref = fit_lstm_cs(S[:30], S[30:], A, config=cfg, n_steps=2)
    assert type(model).__name__ == "BLSTMCS" and model.spec == spec
    for k in ("W", "Wb", "U"):
        np.testing.assert_array_equal(getattr(res.weights, k), getattr(ref.weights, k))
        np.testing.assert_array_equal(getattr(model.weights, k),
                                      getattr(ref.weights, k).astype(np.float32))
    assert model.info["who"] == "test" and model.info["training"]["best_epoch"] == res.best_epoch
    model.save(tmp_path / "m.npz")
    loaded = LSTMCS.load(tmp_path / "m.npz")
    w, spec2, info = loaded.weights, loaded.spec, loaded.info
    assert spec2 == spec and info["who"] == "test"
    np.testing.assert_array_equal(w.Wb, model.weights.Wb)
    with pytest.raises(ValueError, match=r"^A has shape"):
        train_lstm_model(S[:30], S[30:], A[:, :15], spec, config=cfg)
    with pytest.raises(ValueError, match=r"^S_train"):
        train_lstm_model(S[:30, :, :1], S[30:], A, spec, config=cfg)


def test_cli_train_help_names_every_option():
    import argparse

    from cscore.cli.train import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    options = {o for a in p._actions for o in a.option_strings}
    for o in ("--seed", "--cell", "--optimizer", "--lr", "--batch-size", "--patience",
              "--problems-per-epoch", "--threads", "--window", "--modules", "--hidden",
              "--rbm-epochs", "--fista-iters", "--data", "--arch", "--cells", "-M", "-L"):
        assert o in options
    undocumented = [a.option_strings for a in p._actions
                    if a.option_strings and a.dest != "help" and not (a.help or "").strip()]
    assert not undocumented


@pytest.mark.parametrize(("argv", "msg"), [
    (["-M", "65"], "-M (65) must not exceed N = 64"),
    (["--arch", "cdsn", "--window", "4"], "--window must be a positive odd int"),
    (["--arch", "cdsn", "--modules", "0"], "--modules must be >= 1"),
    (["--arch", "cdsn", "--rbm-epochs", "-1"], "--rbm-epochs must be >= 0"),
    (["--data", "folder"], "--data folder needs --images-dir"),
])
def test_cli_train_refuses_bad_options(tmp_path, capsys, argv, msg):
    from cscore.cli import main

    out = tmp_path / "m.npz"
    assert main(["train", "--data", "demo", *argv, "--out", str(out)]) == 2
    assert msg in capsys.readouterr().err
    assert not out.exists()
