"""cscore.seq: closed-form ESN gradients, kernels, estimators, data, persistence."""

from __future__ import annotations

import numpy as np
import pytest

from cscore.seq import (
    ESN,
    RDSN,
    SeqModelFileError,
    _ops,
    frame_error,
    load_japanese_vowels,
    load_model,
    read_ts,
    utterance_error,
)
from cscore.seq._gradients import closed_form_gradients, thesis_A, thesis_rec_gradient

from conftest import requires_torch


def _toy(rng, n_seq=5, D=3, C=3, lo=2, hi=7):
    X, y = [], []
    for s in range(n_seq):
        T = int(rng.integers(lo, hi))
        c = s % C
        X.append(rng.standard_normal((T, D)) + 0.8 * c)
        y.append(np.full(T, c))
    return X, y


def _small_case(rng, N=7, D=4, C=3, lengths=(4, 1, 6, 3)):
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    F = int(offsets[-1])
    X = np.hstack([rng.standard_normal((F, D - 1)), np.ones((F, 1))])
    W = rng.standard_normal((D, N)) * 0.7
    rec = _ops.SparseRec.random(N, 3, rng)
    rec.data *= 1.5 / _ops.spectral_radius(rec)
    T = np.eye(C)[rng.integers(0, C, F)]
    return X, W, rec, offsets, T


# ----------------------------------------------------------------- kernels
@pytest.mark.parametrize("m", [0, 1, 3])
def test_kernels_match_numpy_reference(rng, m):
    X, W, rec, offsets, _T = _small_case(rng)
    A = X @ W
    H = _ops.forward(A, rec, offsets)
    np.testing.assert_allclose(H, _ops.forward_numpy(A, rec, offsets), rtol=1e-13, atol=1e-14)
    G = rng.standard_normal(H.shape)
    D = _ops.backward(H, G, rec, offsets, m)
    np.testing.assert_allclose(D, _ops.backward_numpy(H, G, rec, offsets, m), atol=1e-13)
    g = _ops.rec_grad(D, H, rec, offsets)
    np.testing.assert_allclose(g, _ops.rec_grad_numpy(D, H, rec, offsets), atol=1e-13)


def test_kernels_independent_of_thread_count(rng):
    X, W, rec, offsets, T = _small_case(rng, N=40, lengths=(5, 9, 2, 7, 3, 8))
    A = X @ W
    outs = []
    for nt in (1, 2, 3, 8):
        H = _ops.forward(A, rec, offsets, nt)
        D = _ops.backward(H, T @ rng.standard_normal((3, 40)) * 0 + H, rec, offsets, 2, nt)
        outs.append((H, D, _ops.rec_grad(D, H, rec, offsets, nt)))
    for o in outs[1:]:
        for a, b in zip(outs[0], o):
            assert np.array_equal(a, b)


def test_kernel_rejects_bad_csr(rng):
    from cscore import _core

    X, W, rec, offsets, _T = _small_case(rng)
    bad = rec.indices.copy()
    bad[0] = rec.n + 5
    with pytest.raises(ValueError, match="W_rec"):
        _core.esn_forward(X @ W, rec.indptr, bad, rec.data, offsets, 1)
    with pytest.raises(ValueError, match="offsets"):
        _core.esn_forward(X @ W, rec.indptr, rec.indices, rec.data, offsets[:-1], 1)


# ----------------------------------------------------------------- gradients
def test_eq_2_30_is_the_gradient_of_the_ridge_cost(rng):
    """A (eq. 2.30) with F = (H H^T + mu I)^-1 equals -dE/dHc of the ridge objective."""
    X, W, rec, offsets, T = _small_case(rng)
    H = _ops.forward(X @ W, rec, offsets)
    Hc = np.hstack([H, X])
    for mu in (0.0, 0.3):
        U = _ops.ridge_readout(Hc, T, mu) if mu > 0 else np.linalg.lstsq(Hc, T, rcond=None)[0]
        G = 2.0 * (Hc @ U - T) @ U.T
        np.testing.assert_allclose(thesis_A(Hc, T, mu), -G, atol=1e-8)


def _torch_cost(X, W, rec, offsets, T, mu, m):
    """The ridge cost with h_{t-m-1} detached for the error at frame t (truncation)."""
    import torch

    Xt = torch.tensor(X)
    Wt = torch.tensor(W, requires_grad=True)
    vals = torch.tensor(rec.data, requires_grad=True)
    rows = np.repeat(np.arange(rec.n), np.diff(rec.indptr))
    R = torch.zeros(rec.n, rec.n, dtype=torch.float64).index_put(
        (torch.tensor(rows), torch.tensor(rec.indices)), vals
    )
    A = Xt @ Wt
    H_rows = []
    for s in range(len(offsets) - 1):
        a, b = int(offsets[s]), int(offsets[s + 1])
        with torch.no_grad():  # values of every state
            hs, h = [], torch.zeros(rec.n, dtype=torch.float64)
            for f in range(a, b):
                h = torch.sigmoid(A[f] + (R @ h if f > a else 0.0))
                hs.append(h)
        for t in range(a, b):
            start = max(a, t - m)
            h = hs[start - 1 - a].detach() if start > a else None
            for f in range(start, t + 1):
                z = A[f] + (R @ h if h is not None else 0.0)
                h = torch.sigmoid(z)
            H_rows.append(h)
    Hc = torch.cat([torch.stack(H_rows), Xt], dim=1)
    Tt = torch.tensor(T)
    gram = Hc.T @ Hc + mu * torch.eye(Hc.shape[1], dtype=torch.float64)
    U = torch.linalg.solve(gram, Hc.T @ Tt)
    E = ((Hc @ U - Tt) ** 2).sum() + mu * (U**2).sum()
    E.backward()
    return float(E.detach()), Wt.grad.numpy(), vals.grad.numpy()


@requires_torch
@pytest.mark.torch
@pytest.mark.parametrize("m", [0, 1, 3, 5])
def test_closed_form_gradients_match_autograd(rng, m):
    X, W, rec, offsets, T = _small_case(rng)
    mu = 0.05
    E, gW, gR, _, _ = closed_form_gradients(X, W, rec, offsets, T, mu, m)
    E_t, gW_t, gR_t = _torch_cost(X, W, rec, offsets, T, mu, m)
    assert E == pytest.approx(E_t, rel=1e-10)
    np.testing.assert_allclose(gW, gW_t, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(gR, gR_t, rtol=1e-7, atol=1e-10)


@requires_torch
@pytest.mark.torch
def test_full_dependency_is_bptt(rng):
    """m >= longest sequence - 1 gives the untruncated gradient (full BPTT)."""
    X, W, rec, offsets, T = _small_case(rng)
    _, gW5, _gR5, _, _ = closed_form_gradients(X, W, rec, offsets, T, 0.05, 5)
    _, gW9, _gR9, _, _ = closed_form_gradients(X, W, rec, offsets, T, 0.05, 9)
    np.testing.assert_allclose(gW5, gW9, atol=1e-14)
    _, gW1, _, _, _ = closed_form_gradients(X, W, rec, offsets, T, 0.05, 1)
    assert np.abs(gW1 - gW5).max() > 1e-6


def test_literal_eq_2_41_only_agrees_without_recursion(rng):
    X, W, rec, offsets, T = _small_case(rng)
    mu = 0.05
    H = _ops.forward(X @ W, rec, offsets)
    A = thesis_A(np.hstack([H, X]), T, mu)
    rows = np.repeat(np.arange(rec.n), np.diff(rec.indptr))
    for m, agree in ((0, True), (1, False)):
        _, _, gR, _, _ = closed_form_gradients(X, W, rec, offsets, T, mu, m)
        lit = thesis_rec_gradient(H, A, rec, offsets, m)[rows, rec.indices]
        assert np.allclose(lit, gR, atol=1e-9) == agree


# ----------------------------------------------------------------- estimators
def test_fixed_esn_fits_separable_toy(rng):
    X, y = _toy(rng, n_seq=12)
    model = ESN(n_hidden=30, random_state=0, ridge=1e-3).fit(X, y)
    assert model.score(X, y) > 0.9
    pred = model.predict(X)
    assert [p.shape for p in pred] == [x.shape[:1] for x in X]
    S = model.decision_function(X)
    assert S[0].shape == (X[0].shape[0], 3)


def test_learning_lowers_training_cost(rng):
    X, y = _toy(rng, n_seq=10)
    model = ESN(n_hidden=20, learn=("W", "W_rec"), m=2, n_epochs=8, random_state=1).fit(X, y)
    hist = model.modules_[0].history
    assert min(hist) < hist[0]


def test_seed_reproducible_and_thread_independent(rng):
    X, y = _toy(rng, n_seq=8)
    kw = dict(n_hidden=25, learn=("W", "W_rec"), m=1, n_epochs=3, random_state=3)
    a = ESN(**kw, n_threads=1).fit(X, y).decision_function(X)
    b = ESN(**kw, n_threads=3).fit(X, y).decision_function(X)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_rdsn_stack_and_roundtrip(rng, tmp_path):
    X, y = _toy(rng, n_seq=9)
    model = RDSN(n_modules=2, n_hidden=15, m=1, n_epochs=2, random_state=0).fit(X, y)
    assert len(model.modules_) == 2
    D_in = model.modules_[0].W.shape[0]
    # section 2.5: upper module's data rows start from (and are tuned away from) W below
    assert model.modules_[1].W.shape[0] == D_in + 3
    path = tmp_path / "m.npz"
    model.save(path)
    back = load_model(path)
    assert isinstance(back, RDSN)
    assert back.get_params() == model.get_params()
    for mod, mod_back in zip(model.modules_, back.modules_):  # the file keeps every bit
        for name in ("W", "U"):
            np.testing.assert_array_equal(getattr(mod, name), getattr(mod_back, name))
    # The scores go through the BLAS (NumPy matmul), whose AVX-512 kernels may round
    # differently (by an ulp) for arrays at another memory alignment, as loaded ones
    # are: equal weights, scores equal to a few ulps.
    for u, v in zip(model.decision_function(X), back.decision_function(X)):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)
    with np.load(path, allow_pickle=False) as npz:  # no pickle needed
        assert "meta" in npz.files


def test_get_set_params(rng):
    m = ESN(n_hidden=10)
    assert m.get_params()["n_hidden"] == 10
    assert m.set_params(m=3, learn=("W",)) is m
    assert m.m == 3
    with pytest.raises(ValueError, match="invalid parameter 'bogus'"):
        m.set_params(bogus=1)


def test_bad_input_errors_name_the_argument(rng):
    X, y = _toy(rng, n_seq=4)
    model = ESN(n_hidden=10, random_state=0)
    with pytest.raises(ValueError, match="ragged dims"):
        model.fit([X[0], X[1][:, :2]], y[:2])
    Xn = [x.copy() for x in X]
    Xn[2][1, 0] = np.nan
    with pytest.raises(ValueError, match=r"X\[2\] contains NaN"):
        model.fit(Xn, y)
    with pytest.raises(ValueError, match=r"X\[1\] is an empty sequence"):
        model.fit([X[0], np.zeros((0, 3))], [y[0], np.zeros(0, int)])
    with pytest.raises(ValueError, match="at least one sequence"):
        model.fit([], [])
    with pytest.raises(ValueError, match=r"y\[0\] has a label out of range"):
        model.fit(X, [-np.ones_like(y[0]), *y[1:]])
    with pytest.raises(ValueError, match="spectral_radius must be < 4"):
        ESN(spectral_radius=4.0).fit(X, y)
    with pytest.raises(ValueError, match="learn: unknown"):
        ESN(learn=("U",)).fit(X, y)
    with pytest.raises(ValueError, match="context must be odd"):
        ESN(context=2).fit(X, y)
    with pytest.raises(ValueError, match=r"y\[1\] must be"):
        model.fit(X, [y[0], y[1][:-1], *y[2:]])
    with pytest.raises(TypeError, match="list of"):
        model.fit(X[0], y[0])
    model.fit(X, y)
    with pytest.raises(ValueError, match="features per frame"):
        model.predict([np.zeros((3, 5))])
    with pytest.raises(ValueError, match="labels out of range"):
        model.score(X, [np.full_like(v, 7) for v in y])
    with pytest.raises(RuntimeError, match="not fitted"):
        ESN().predict(X)


def test_bad_model_file(tmp_path):
    p = tmp_path / "x.npz"
    np.savez(p, a=np.zeros(2))
    with pytest.raises(SeqModelFileError):
        load_model(p)


def test_damaged_model_files_are_model_file_errors(rng, tmp_path):
    import io
    import os
    import zipfile

    from cscore.models.format import ModelFileError

    assert issubclass(SeqModelFileError, ModelFileError) and issubclass(SeqModelFileError,
                                                                        ValueError)
    X, y = _toy(rng)
    good = tmp_path / "good.npz"
    ESN(n_hidden=8, random_state=0).fit(X, y).save(good)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["good.npz"]  # no temporary left
    blob = good.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(blob[: len(blob) // 2])
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    for bad, what in ((cut, "not a model file"), (empty, "empty"), (tmp_path, "directory")):
        with pytest.raises(SeqModelFileError, match=what):
            load_model(bad)
    # an object (pickled) entry is refused before anything is unpickled
    pickled = tmp_path / "pickled.npz"
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(pickled, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, zin.read(name))
        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        zout.writestr("extra.npy", buf.getvalue())
    with pytest.raises(SeqModelFileError, match="extra"):
        load_model(pickled)
    with pytest.raises(FileNotFoundError, match="path"):
        load_model(tmp_path / "missing.npz")
    if hasattr(os, "mkfifo"):  # a FIFO is refused without blocking on it
        fifo = tmp_path / "fifo.npz"
        os.mkfifo(fifo)
        with pytest.raises(SeqModelFileError, match="not a regular file"):
            load_model(fifo)


def test_metrics():
    assert frame_error([np.array([0, 1, 1])], [np.array([0, 1, 0])]) == pytest.approx(1 / 3)
    s = [np.array([[1.0, 0.0], [0.0, 0.5]]), np.array([[0.0, 1.0]])]
    assert utterance_error([np.array([0, 0]), np.array([0])], s) == pytest.approx(0.5)


# ----------------------------------------------------------------- data
def test_shipped_japanese_vowels():
    tr = load_japanese_vowels("train")
    te = load_japanese_vowels("test")
    assert len(tr) == 270 and len(te) == 185
    assert all(x.shape[1] == 12 and 7 <= x.shape[0] <= 29 for x in tr.X + te.X)
    assert np.bincount(tr.labels).tolist() == [30] * 9
    assert tr.classes == tuple(str(i) for i in range(1, 10))


def test_reads_users_path_and_matches_shipped_copy():
    from conftest import shared_data

    folder = shared_data("japanese-vowels")
    a = load_japanese_vowels("test", path=folder)
    b = load_japanese_vowels("test")
    assert len(a) == len(b)
    assert all(np.array_equal(u, v) for u, v in zip(a.X, b.X))
    assert np.array_equal(a.labels, b.labels)


def test_read_ts_errors(tmp_path):
    p = tmp_path / "bad.ts"
    p.write_text("@problemName x\n@data\n1,2:3:1\n")
    with pytest.raises(ValueError, match="unequal length"):
        read_ts(p)
    with pytest.raises(FileNotFoundError, match="path"):
        load_japanese_vowels("train", path=tmp_path)
    with pytest.raises(ValueError, match="split"):
        load_japanese_vowels("dev")


# ----------------------------------------------------------------- bench CLI
def test_seq_bench_quick(tmp_path):
    from cscore.cli import main

    rc = main(["seq", "bench", "--quick", "--no-plot", "--out", str(tmp_path)])
    assert rc == 0
    rows = (tmp_path / "seq_runs.csv").read_text().splitlines()
    assert rows[0].startswith("size,model,seed,frame_error")
    models = {r.split(",")[1] for r in rows[1:]}
    assert {"ESN", "W m=1", "W+W_rec m=1", "R-DSN 2"} <= models
    assert "Frame error" in (tmp_path / "seq_table.md").read_text()


def _rewrite(src, dst, meta_edit=None, arrays_edit=None):
    """Copy the model file ``src`` to ``dst`` with its meta / arrays edited."""
    import json

    with np.load(src, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(str(arrays["meta"]))
    if meta_edit:
        meta_edit(meta)
    arrays["meta"] = np.array(json.dumps(meta))
    if arrays_edit:
        arrays_edit(arrays)
    np.savez(dst, **arrays)
    return dst


@pytest.mark.parametrize(
    ("setting", "value", "match"),
    [
        ("context", 1_000_000_001, "context"),
        ("n_hidden", "x", "n_hidden"),
        ("m", -1, "m must be"),
        ("spectral_radius", float("nan"), "spectral_radius"),
        ("learn", ["U"], "learn"),
    ],
)
def test_load_validates_settings(rng, tmp_path, setting, value, match):
    X, y = _toy(rng)
    good = tmp_path / "good.npz"
    ESN(n_hidden=8, random_state=0).fit(X, y).save(good)

    def edit(meta):
        meta["params"][setting] = value

    bad = _rewrite(good, tmp_path / "bad.npz", meta_edit=edit)
    with pytest.raises(SeqModelFileError, match=match):
        load_model(bad)


@pytest.mark.parametrize("entry", ["m0_W", "m0_U", "m0_data", "mean", "scale"])
def test_load_refuses_non_finite_weights(rng, tmp_path, entry):
    X, y = _toy(rng)
    good = tmp_path / "good.npz"
    ESN(n_hidden=8, random_state=0).fit(X, y).save(good)

    def edit(arrays):
        a = arrays[entry].copy()
        a.flat[0] = np.nan
        arrays[entry] = a

    bad = _rewrite(good, tmp_path / "bad.npz", arrays_edit=edit)
    with pytest.raises(SeqModelFileError, match=f"{entry} holds NaN"):
        load_model(bad)


def test_load_refuses_inconsistent_shapes(rng, tmp_path):
    X, y = _toy(rng)
    good = tmp_path / "good.npz"
    ESN(n_hidden=8, random_state=0).fit(X, y).save(good)
    cases = {
        "ctx": ({"context": 5}, None),
        "nmod": ({"n_modules": 0}, None),
        "scale": (None, lambda a: a.__setitem__("scale", -a["scale"])),
        "mean": (None, lambda a: a.__setitem__("mean", a["mean"][:1])),
    }
    for name, (mset, aedit) in cases.items():

        def medit(meta, mset=mset):
            for k, v in (mset or {}).items():
                (meta["params"] if k in meta["params"] else meta)[k] = v

        bad = _rewrite(good, tmp_path / f"{name}.npz", meta_edit=medit, arrays_edit=aedit)
        with pytest.raises(SeqModelFileError):
            load_model(bad)
    assert load_model(good).n_hidden == 8


def test_huge_m_is_capped_at_the_longest_sequence(rng):
    X, y = _toy(rng, lo=2, hi=7)
    t_max = max(x.shape[0] for x in X)
    kw = dict(n_hidden=12, learn=("W", "W_rec"), n_epochs=2, random_state=0)
    ref = ESN(m=t_max - 1, **kw).fit(X, y)
    for m in (t_max + 5, 10**9, 10**12):  # 10**9 ran for minutes, 10**12 overflowed
        model = ESN(m=m, **kw).fit(X, y)
        assert model.m == m  # the setting is kept as given
        assert model.modules_[0].history == ref.modules_[0].history
        for u, v in zip(model.decision_function(X), ref.decision_function(X)):
            np.testing.assert_array_equal(u, v)


def test_long_backward_passes_are_split_between_sequences(rng, monkeypatch):
    """A pass over the work budget is several compiled calls (Ctrl-C is seen between
    them), with the same result as one call."""
    from cscore import _core

    X, W, rec, offsets, _T = _small_case(rng, lengths=(4, 1, 6, 3, 5))
    H = _ops.forward(X @ W, rec, offsets)
    G = rng.standard_normal(H.shape)
    one = _ops.backward(H, G, rec, offsets, 3)
    calls = []
    real = _core.esn_backward

    def counting(*args):
        calls.append(args[5].copy())
        return real(*args)

    monkeypatch.setattr(_core, "esn_backward", counting)
    monkeypatch.setattr(_ops, "BACKWARD_WORK_PER_CALL", 1)
    split = _ops.backward(H, G, rec, offsets, 3)
    assert len(calls) == 5 and all(c[0] == 0 for c in calls)
    np.testing.assert_array_equal(split, one)
    calls.clear()
    monkeypatch.setattr(_ops, "BACKWARD_WORK_PER_CALL", 6 * 3 * rec.indices.size)
    np.testing.assert_array_equal(_ops.backward(H, G, rec, offsets, 3), one)
    assert 1 < len(calls) < 5


def test_random_state_true_is_not_a_seed():
    """Booleans are not integers (issue 26): random_state=True is refused."""
    X = [np.zeros((6, 2)), np.ones((6, 2))]
    y = [np.zeros(6, int), np.ones(6, int)]
    with pytest.raises(TypeError, match="random_state"):
        ESN(n_hidden=8, random_state=True).fit(X, y)
