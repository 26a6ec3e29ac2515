"""The compiled LSTM-CS decoder (Algorithm 2) against the NumPy specification,
the LSTMCS model class, its files, the pretrained registry and `cscore models`."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

import cscore
from cscore.cli import main as cli_main
from cscore.decoders.learned import LSTMCS, LSTMCSWeights, lstm_logits_native
from cscore.models.format import ModelFileError
from cscore.problem import ProblemSpec
from oracles.reference import lstm_logits, reference_decode

# the module (the package attribute of the same name is the function)
pretrained_mod = importlib.import_module("cscore.models.registry")

M, N, L, H = 20, 40, 3, 16


def random_weights(
    rng: np.random.Generator, M: int, N: int, H: int, cell: str = "paper"
) -> LSTMCSWeights:
    """Random float32 weights scaled like a Glorot initialization (logits of order 1)."""
    G = 3 if cell == "paper" else 4

    def f32(scale: float, shape: tuple[int, ...]) -> np.ndarray:
        return rng.normal(scale=scale, size=shape).astype(np.float32)

    return LSTMCSWeights(
        W=f32(1 / np.sqrt(M), (G * H, M)),
        R=f32(1 / np.sqrt(H), (G * H, H)),
        b=f32(0.1, (G * H,)),
        U=f32(2 / np.sqrt(H), (N, H)),
        c_out=f32(0.1, (N,)),
        cell=cell,
    )


def random_A(rng: np.random.Generator, M: int, N: int) -> np.ndarray:
    A = rng.normal(size=(M, N))
    return A / np.linalg.norm(A, axis=0)


def make_model(rng: np.random.Generator, cell: str = "paper", **spec_kw: object) -> LSTMCS:
    w = random_weights(rng, M, N, H, cell)
    return LSTMCS(w, random_A(rng, M, N), ProblemSpec(M=M, N=N, L=L, **spec_kw))  # type: ignore[arg-type]


def sparse_Y(rng: np.random.Generator, A: np.ndarray, B: int, k: int = 4) -> np.ndarray:
    S = np.zeros((B, A.shape[1], L))
    for b in range(B):
        for j in range(L):
            S[b, rng.choice(A.shape[1], k, replace=False), j] = rng.normal(size=k)
    return np.einsum("mn,bnl->bml", A, S) + 0.01 * rng.normal(size=(B, A.shape[0], L))


# -- the LSTM forward --------------------------------------------------------


@pytest.mark.parametrize("cell", ["paper", "lstm"])
def test_native_logits_match_numpy(rng, cell):
    w = random_weights(rng, M, N, H, cell)
    X = rng.uniform(-1, 1, size=(140, L, M))  # three chunks of 64, the last partial
    ref = lstm_logits(w, X)
    out64 = lstm_logits_native(w, X, dtype=np.float64)
    np.testing.assert_allclose(out64, ref, rtol=0, atol=1e-12)
    out32 = lstm_logits_native(w, X)
    assert out32.dtype == np.float32 and out32.shape == (140, L, N)
    # float32 GEMMs and float32 exp/tanh: a few ulps of the logit scale
    np.testing.assert_allclose(out32, ref, rtol=0, atol=2e-5 * np.abs(ref).max())
    assert np.array_equal(lstm_logits_native(w, X, n_threads=2), out32)


@pytest.mark.parametrize("B", [1, 2, 3])
def test_native_logits_small_batches(rng, B):
    # one or two problems take the gemv path, three the gemm path
    w = random_weights(rng, M, N, H, "lstm")
    X = rng.uniform(-1, 1, size=(B, L, M))
    ref = lstm_logits(w, X)
    np.testing.assert_allclose(lstm_logits_native(w, X, dtype=np.float64), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lstm_logits_native(w, X), ref, rtol=0, atol=2e-5 * np.abs(ref).max())


def test_native_logits_state_is_carried(rng):
    w = random_weights(rng, M, N, H)
    X = rng.uniform(-1, 1, size=(4, L, M))
    out = lstm_logits_native(w, X, dtype=np.float64)
    # channel 1 alone (zero state) differs from channel 1 after channel 0
    alone = lstm_logits_native(w, X[:, 1:2], dtype=np.float64)
    assert not np.allclose(out[:, 1], alone[:, 0])
    np.testing.assert_allclose(out[:, :1], lstm_logits_native(w, X[:, :1], dtype=np.float64))


# -- decoding == reference_decode ---------------------------------------------


def _check_same(res, S_ref, n_ref, atol_rel=1e-9):
    assert np.array_equal(res.n_iter, n_ref)
    assert np.array_equal(res.x != 0, S_ref != 0), "supports differ"
    np.testing.assert_allclose(res.x, S_ref, rtol=0, atol=atol_rel * max(1.0, np.abs(S_ref).max()))


@pytest.mark.parametrize("cell", ["paper", "lstm"])
@pytest.mark.parametrize("lstm_dtype", [np.float32, np.float64])
def test_decode_matches_reference_n_nonzero(rng, cell, lstm_dtype):
    model = make_model(rng, cell)
    Y = sparse_Y(rng, model.A, 9)
    S_ref, n_ref = reference_decode(model.weights, model.A, Y, n_nonzero=6, tol=None)
    res = model._with_kernel_options(lstm_dtype=lstm_dtype).decode(
        Y, n_nonzero=6, return_result=True)
    _check_same(res, S_ref, n_ref)
    assert set(res.stop_reason) == {"n_nonzero"}
    # selection order per channel has n_nonzero distinct atoms, matching the support
    atoms = res.extra["atoms"]
    assert atoms.shape == (9, L, 6)
    for b in range(9):
        for j in range(L):
            assert len(set(atoms[b, j])) == 6
            assert set(atoms[b, j]) == set(np.flatnonzero(res.support[b, :, j]))


@pytest.mark.parametrize("cell", ["paper", "lstm"])
def test_decode_matches_reference_tol(rng, cell):
    model = make_model(rng, cell)
    Y = sparse_Y(rng, model.A, 12)
    start = np.linalg.norm(Y, axis=1).sum(axis=1)
    tol = float(np.median(start) * 0.5)
    S_ref, n_ref = reference_decode(model.weights, model.A, Y, n_nonzero=None, tol=tol)
    res = model.decode(Y, tol=tol, return_result=True)
    _check_same(res, S_ref, n_ref)
    assert "tol" in set(res.stop_reason)
    stopped = res.stop_reason == "tol"
    assert np.all(res.residual_norm[stopped].sum(axis=1) <= tol)
    # both rules at once
    S_ref, n_ref = reference_decode(model.weights, model.A, Y, n_nonzero=3, tol=tol)
    _check_same(model.decode(Y, n_nonzero=3, tol=tol, return_result=True), S_ref, n_ref)


def test_decode_up_to_the_cap(rng):
    model = make_model(rng)
    Y = sparse_Y(rng, model.A, 3)
    S_ref, n_ref = reference_decode(model.weights, model.A, Y, n_nonzero=M, tol=None)
    res = model._with_kernel_options(lstm_dtype=np.float64).decode(
        Y, n_nonzero=M, return_result=True)
    _check_same(res, S_ref, n_ref, atol_rel=1e-8)
    np.testing.assert_allclose(np.einsum("mn,bnl->bml", model.A, res.x), Y, atol=1e-9)


def test_result_fields(rng):
    model = make_model(rng)
    Y = sparse_Y(rng, model.A, 5)
    res = model.decode(Y, n_nonzero=4, return_result=True)
    R = Y - np.einsum("mn,bnl->bml", model.A, res.x)
    np.testing.assert_allclose(res.residual_norm, np.linalg.norm(R, axis=1), atol=1e-12)
    assert res.support.shape == res.x.shape and res.support.sum() == 5 * L * 4
    one = model.decode(Y[0], n_nonzero=4, return_result=True)
    assert one.x.shape == (N, L) and one.residual_norm.shape == (L,)
    assert one.n_iter == 4 and one.stop_reason == "n_nonzero"
    assert "DecodeResult" in str(res)


def test_default_n_nonzero_is_M_over_4(rng):
    model = make_model(rng)
    res = model.decode(sparse_Y(rng, model.A, 2), return_result=True)
    assert np.all(res.n_iter == M // 4)
    assert np.all(res.support.sum(axis=1) == M // 4)


# -- batching, threads, dtypes ---------------------------------------------------


def test_batch_equals_loop_and_threads(rng):
    model = make_model(rng, "lstm")
    Y = sparse_Y(rng, model.A, 150)  # three chunks of 64, the last partial
    S1 = model.decode(Y, n_nonzero=5, n_threads=1)
    S2 = model.decode(Y, n_nonzero=5, n_threads=2)
    S3 = model.decode(Y, n_nonzero=5, n_threads=3)
    assert np.array_equal(S1, S2) and np.array_equal(S1, S3)
    for b in (0, 70, 149):
        assert np.array_equal(model.decode(Y[b], n_nonzero=5), S1[b])
    tol = float(np.median(np.linalg.norm(Y, axis=1).sum(axis=1)) * 0.5)
    assert np.array_equal(
        model.decode(Y, tol=tol, n_threads=1), model.decode(Y, tol=tol, n_threads=2)
    )


def test_float32_in_float32_out(rng):
    model = make_model(rng)
    Y = sparse_Y(rng, model.A, 4)
    S64 = model.decode(Y, n_nonzero=4)
    S32 = model.decode(Y.astype(np.float32), n_nonzero=4)
    assert S32.dtype == np.float32 and S64.dtype == np.float64
    np.testing.assert_allclose(S32, S64, atol=1e-4 * np.abs(S64).max())
    res = model.decode(Y.astype(np.float32), n_nonzero=4, return_result=True)
    assert res.x.dtype == np.float32 and res.residual_norm.dtype == np.float32


# -- edge cases ----------------------------------------------------------------


def test_zero_signal(rng):
    model = make_model(rng)
    Y = np.zeros((2, M, L))
    res = model.decode(Y, tol=0.0, return_result=True)
    assert np.all(res.x == 0) and np.all(res.n_iter == 0)
    assert set(res.stop_reason) == {"tol"}
    # without tol the greedy loop still runs (the LSTM sees zero input); S stays 0
    res = model.decode(Y, n_nonzero=2, return_result=True)
    assert np.all(res.x == 0) and np.all(res.n_iter == 2)


def test_reselected_atom_stops_channel(rng):
    w = random_weights(rng, M, N, H)
    w.c_out[:] = -50.0
    w.c_out[7] = 50.0  # the model always prefers atom 7
    model = LSTMCS(w, random_A(rng, M, N), ProblemSpec(M=M, N=N, L=L))
    Y = sparse_Y(rng, model.A, 2)
    res = model.decode(Y, n_nonzero=5, exclude_selected=False, return_result=True)
    assert set(res.stop_reason) == {"dependent"}
    assert np.all(res.n_iter == 2)
    assert np.array_equal(np.flatnonzero(res.support.any(axis=(0, 2))), [7])
    a = model.A[:, 7]
    np.testing.assert_allclose(res.x[:, 7, :], (a @ Y) / (a @ a), atol=1e-12)
    # excluding selected atoms, the loop goes on with other atoms
    res = model.decode(Y, n_nonzero=5, return_result=True)
    assert np.all(res.n_iter == 5) and np.all(res.support[:, 7, :])


def test_dependent_atom_stops_channel(rng):
    w = random_weights(rng, M, N, H)
    w.c_out[:] = -50.0
    w.c_out[3], w.c_out[4] = 60.0, 55.0  # prefers 3, then 4
    A = random_A(rng, M, N)
    A[:, 4] = -A[:, 3]  # a duplicate (up to sign) of atom 3
    model = LSTMCS(w, A, ProblemSpec(M=M, N=N, L=L))
    res = model.decode(sparse_Y(rng, A, 2), n_nonzero=4, return_result=True)
    assert set(res.stop_reason) == {"dependent"}
    assert np.all(res.support[:, 3, :]) and not np.any(res.support[:, 4, :])


# -- argument checks --------------------------------------------------------------


def test_bad_Y_refused(rng):
    model = make_model(rng)
    with pytest.raises(ValueError, match=r"Y has 19 rows.*M = 20"):
        model.decode(np.ones((M - 1, L)))
    with pytest.raises(ValueError, match=r"Y has 2 columns.*L = 3"):
        model.decode(np.ones((5, M, 2)))
    bad = np.ones((M, L))
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="Y contains NaN"):
        model.decode(bad)
    with pytest.raises(ValueError, match="Y must be 2-D or 3-D"):
        model.decode(np.ones(M))
    with pytest.raises(ValueError, match="Y must not be empty"):
        model.decode(np.ones((M, 0)))
    assert model.decode(np.ones((0, M, L))).shape == (0, N, L)  # empty batch (issue 10)
    with pytest.raises(TypeError, match="Y must be real"):
        model.decode(np.ones((M, L), complex))
    with pytest.raises(ValueError, match=r"n_nonzero must be <= 20 \(min\(M, N\)"):
        model.decode(np.ones((M, L)), n_nonzero=M + 1)
    with pytest.raises(ValueError, match="n_nonzero must be >= 1"):
        model.decode(np.ones((M, L)), n_nonzero=0)
    with pytest.raises(ValueError, match="tol must be finite and >= 0"):
        model.decode(np.ones((M, L)), tol=-1.0)
    with pytest.raises(ValueError, match="n_threads"):
        model.decode(np.ones((M, L)), n_threads=0)


def test_bad_model_refused(rng):
    w = random_weights(rng, M, N, H)
    A = random_A(rng, M, N)
    with pytest.raises(ValueError, match=r"A has shape \(20, 41\)"):
        LSTMCS(w, np.ones((M, N + 1)), ProblemSpec(M=M, N=N, L=L))
    with pytest.raises(ModelFileError, match="weight W has shape"):
        LSTMCS(w, A[:10], ProblemSpec(M=10, N=N, L=L))
    A0 = A.copy()
    A0[:, 5] = 0
    with pytest.raises(ValueError, match="all-zero column"):
        LSTMCS(w, A0, ProblemSpec(M=M, N=N, L=L))


# -- files -------------------------------------------------------------------------


def test_save_load_roundtrip(rng, tmp_path):
    model = make_model(rng, "lstm", dataset="random", transform="dct")
    model.info["description"] = "round trip"
    path = tmp_path / "m.npz"
    model.save(path)
    back = LSTMCS.load(path)
    assert back.spec == model.spec and back.info == model.info and back.cell == "lstm"
    assert (back.M, back.N, back.L, back.n_cells) == (M, N, L, H)
    assert np.array_equal(back.A, model.A)
    Y = sparse_Y(rng, model.A, 3)
    assert np.array_equal(back.decode(Y, n_nonzero=3), model.decode(Y, n_nonzero=3))
    assert "LSTMCS(M=20" in repr(back)


def _rewrite(src, dst, *, meta=None, drop=(), replace=None):
    with np.load(src, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    if meta is not None:
        m = json.loads(arrays["meta"].tobytes().decode())
        meta(m)
        arrays["meta"] = np.frombuffer(json.dumps(m).encode(), dtype=np.uint8)
    for k in drop:
        del arrays[k]
    for k, v in (replace or {}).items():
        arrays[k] = v
    np.savez(dst, **arrays)


def test_malformed_files_refused(rng, tmp_path):
    model = make_model(rng)
    good = tmp_path / "good.npz"
    model.save(good)
    cases = {
        "format": (dict(meta=lambda m: m.update(format="other")), "is not a cscore.lstm_cs"),
        "version": (dict(meta=lambda m: m.update(version=99)), "format version 99"),
        "missing": (dict(drop=("U",)), r"lacks the arrays \['U'\]"),
        "shape": (
            dict(replace={"U": np.zeros((N, H + 1), np.float32)}),
            "entry 'U' has shape",
        ),
        "nan": (
            dict(replace={"b": np.full(3 * H, np.nan, np.float32)}),
            "entry 'b' contains NaN",
        ),
        "spec": (dict(meta=lambda m: m["spec"].update(M=-1)), "bad problem spec"),
        "A": (dict(replace={"A": np.ones((M, N + 1))}), "entry 'A' has shape"),
    }
    for name, (kw, msg) in cases.items():
        path = tmp_path / f"{name}.npz"
        _rewrite(good, path, **kw)
        with pytest.raises(ModelFileError, match=msg):
            LSTMCS.load(path)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ModelFileError):
        LSTMCS.load(truncated)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file at all")
    with pytest.raises(ModelFileError):
        LSTMCS.load(junk)
    with pytest.raises(FileNotFoundError):
        LSTMCS.load(tmp_path / "absent.npz")


# -- registry and CLI -----------------------------------------------------------------


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    """An empty model search path (the package's own models hidden)."""
    empty = tmp_path / "pkg_models"
    empty.mkdir()
    user = tmp_path / "user_models"
    user.mkdir()
    monkeypatch.setattr(pretrained_mod.STORE, "package_dir", empty)
    monkeypatch.setenv("CSCORE_MODEL_PATH", str(user))
    return user


def test_registry_empty(model_dir, capsys):
    assert cscore.list_pretrained() == []
    with pytest.raises(ValueError, match="unknown pretrained model 'nope'; known models: none"):
        cscore.pretrained("nope")
    assert cli_main(["models"]) == 0
    assert "no pretrained decoder models installed" in capsys.readouterr().out


def test_registry_lists_and_loads(rng, model_dir, capsys):
    model = make_model(rng, dataset="mnist")
    model.info["description"] = "test model one"
    model.save(model_dir / "alpha.npz")
    make_model(rng).save(model_dir / "beta.npz")
    (model_dir / "broken.npz").write_bytes(b"garbage")
    names = [n for n, _ in cscore.list_pretrained()]
    assert names == ["alpha", "beta", "broken"]
    assert dict(cscore.list_pretrained())["alpha"] == "test model one"
    with pytest.raises(ValueError, match="known models: alpha, beta, broken"):
        cscore.pretrained("gamma")
    loaded = cscore.pretrained("alpha")
    Y = sparse_Y(rng, model.A, 2)
    assert np.array_equal(loaded.decode(Y, n_nonzero=2), model.decode(Y, n_nonzero=2))
    with pytest.raises(ModelFileError):
        cscore.pretrained("broken")
    assert cli_main(["models"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("decoder models")  # then the table; text models after it
    assert lines[1].split() == ["name", "decoder", "M", "N", "L", "cells", "transform",
                                "dataset", "size"]
    alpha = next(line for line in lines if line.startswith("alpha"))
    assert alpha.split()[:9] == ["alpha", "lstm-cs", "20", "40", "3", "16", "(paper)", "none",
                                 "mnist"]
    assert "KiB" in alpha
    assert any(line.startswith("broken") and "unreadable" in line for line in lines)
