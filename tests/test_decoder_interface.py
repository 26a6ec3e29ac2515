"""cscore.decoder / cscore.Decoder: equality with the wrapped functions, configs, registry."""

from __future__ import annotations

import json

import numpy as np
import pytest

import cscore
from cscore.decoders.learned import LSTMCS, LSTMCSWeights
from cscore.problem import ProblemSpec

M, N, L, B = 12, 24, 3, 5


def tiny_model(seed: int = 0) -> LSTMCS:
    rng = np.random.default_rng(seed)
    H = 6
    w = LSTMCSWeights(
        W=rng.normal(size=(3 * H, M)) / np.sqrt(M),
        R=rng.normal(size=(3 * H, H)) / np.sqrt(H),
        b=np.zeros(3 * H),
        U=rng.normal(size=(N, H)),
        c_out=np.zeros(N),
    )
    A = rng.normal(size=(M, N))
    A /= np.linalg.norm(A, axis=0)
    return LSTMCS(w, A, ProblemSpec(M=M, N=N, L=L))


@pytest.fixture
def problem(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((B, N, L))
    for b in range(B):
        S[b, rng.choice(N, 3, replace=False)] = rng.standard_normal((3, L)) + 1.0
    Y = A @ S + 1e-3 * rng.standard_normal((B, M, L))
    return A, Y


def _columns(fn, A, Y, **kw):
    return np.stack([np.asarray(fn(A, Y[b], **kw)) for b in range(Y.shape[0])])


@pytest.mark.parametrize(
    ("name", "settings"),
    [
        ("omp", {"n_nonzero": 3}),
        ("somp", {"tol": 1e-2}),
        ("bcs", {}),
        ("mtbcs", {}),
        ("tsbl", {"snr": "high"}),
        ("tmsbl", {"noise": "small"}),
    ],
)
def test_matrix_decoders_equal_functions(problem, name, settings) -> None:
    A, Y = problem
    fn = getattr(cscore, name)
    dec = cscore.decoder(name, A, **settings)
    assert isinstance(dec, cscore.Decoder)
    one = dec(Y[0])
    assert one.shape == (N, L)
    np.testing.assert_array_equal(one, fn(A, Y[0], **settings))
    batch = dec(Y)
    assert batch.shape == (B, N, L)
    if name in ("omp", "bcs"):  # single-vector functions: every channel is a column
        np.testing.assert_array_equal(batch, _columns(fn, A, Y, **settings))
    else:
        np.testing.assert_array_equal(batch, fn(A, Y, **settings))
    # empty batch -> (0, N, L)
    assert dec(np.zeros((0, M, L))).shape == (0, N, L)
    # the output dtype is announced correctly (float32 only when A and Y are)
    assert dec(Y[:2].astype(np.float32)).dtype == dec.output_dtype(np.float32) == np.float64
    dec32 = cscore.decoder(name, A.astype(np.float32), **settings)
    assert dec32(Y[:2].astype(np.float32)).dtype == dec32.output_dtype(np.float32)


def test_lstm_decoder_equals_model(tmp_path, rng) -> None:
    model = tiny_model()
    Y = rng.standard_normal((7, M, L))
    path = tmp_path / "m.npz"
    model.save(path)
    for src in (model, path, str(path)):
        dec = cscore.decoder("lstm-cs", model=src, n_nonzero=4)
        np.testing.assert_array_equal(dec(Y), model.decode(Y, n_nonzero=4))
        np.testing.assert_array_equal(dec(Y[1]), model.decode(Y[1], n_nonzero=4))
    assert dec.L == L and dec.N == N


def test_pretrained_lstm_decoder_and_config() -> None:
    dec = cscore.decoder("lstm-cs", model="mnist-m72", tol=0.34)
    model = cscore.pretrained("mnist-m72")
    rng = np.random.default_rng(1)
    Y = rng.standard_normal((3, dec.M, dec.L)) * 0.1
    np.testing.assert_array_equal(dec(Y), model.decode(Y, tol=0.34))
    cfg = json.loads(json.dumps(dec.config))
    assert cfg["model"] == "mnist-m72"
    dec2 = cscore.Decoder.from_config(cfg)
    assert dec2 == dec
    np.testing.assert_array_equal(dec2(Y), dec(Y))


@pytest.mark.parametrize("name", ["omp", "somp", "bcs", "mtbcs", "tsbl", "tmsbl"])
def test_config_round_trip_inline(problem, name) -> None:
    A, Y = problem
    settings = {"n_nonzero": 2} if name in ("omp", "somp") else {"rtol": 1e-6}
    dec = cscore.decoder(name, A, **settings)
    text = json.dumps(dec.config)  # JSON-serializable
    dec2 = cscore.Decoder.from_config(json.loads(text))
    assert dec2 == dec and dec2.settings == settings
    np.testing.assert_array_equal(dec2.A, A)  # float64 exactly through JSON
    np.testing.assert_array_equal(dec2(Y), dec(Y))


def test_config_file_reference_and_fingerprint(problem, tmp_path) -> None:
    A, Y = problem
    dec = cscore.decoder("somp", A, n_nonzero=3)
    cfg_path = dec.save(tmp_path / "dec.json", inline=False)
    cfg = json.loads(cfg_path.read_text())
    assert cfg["A"]["file"] == "dec.A.npy" and len(cfg["A"]["sha256"]) == 64
    dec2 = cscore.Decoder.from_config(cfg_path)
    np.testing.assert_array_equal(dec2(Y), dec(Y))
    # a changed matrix file is refused
    np.save(tmp_path / "dec.A.npy", A * 2)
    with pytest.raises(ValueError, match="changed"):
        cscore.Decoder.from_config(cfg_path)


def test_model_object_saved_with_side_file(tmp_path, rng) -> None:
    model = tiny_model(3)
    dec = cscore.decoder("lstm-cs", model=model, n_nonzero=2)
    with pytest.raises(ValueError, match="save"):
        dec.config
    p = dec.save(tmp_path / "lstm.json")
    dec2 = cscore.Decoder.from_config(p)
    Y = rng.standard_normal((4, M, L))
    np.testing.assert_array_equal(dec2(Y), dec(Y))


def test_bad_arguments(problem) -> None:
    A, _ = problem
    with pytest.raises(ValueError, match="unknown decoder 'nope'"):
        cscore.decoder("nope", A)
    with pytest.raises(ValueError, match="unknown setting 'k'"):
        cscore.decoder("somp", A, k=3)
    with pytest.raises(ValueError, match="needs a sensing matrix"):
        cscore.decoder("somp")
    with pytest.raises(ValueError, match="needs model"):
        cscore.decoder("lstm-cs")
    with pytest.raises(ValueError, match="A"):
        cscore.decoder("somp", np.full((M, N), np.nan))
    dec = cscore.decoder("somp", A, n_nonzero=2)
    with pytest.raises(ValueError, match="Y"):
        dec(np.zeros((M,)))
    with pytest.raises(ValueError, match="cscore decoder config"):
        cscore.Decoder.from_config({"name": "somp"})


def test_register_model_decoder_one_line(tmp_path, rng) -> None:
    """A learned decoder plugs in with one register_decoder line."""

    class Wrapped(LSTMCS):
        def decode(self, Y, *, n_nonzero=None, **kw):
            return 2.0 * np.asarray(super().decode(Y, n_nonzero=n_nonzero, **kw))

    try:
        cscore.register_decoder("wrapped-test", load=Wrapped.load, model_type=Wrapped)
        assert "wrapped-test" in cscore.decoder_names()
        base = tiny_model(5)
        path = tmp_path / "w.npz"
        base.save(path)
        dec = cscore.decoder("wrapped-test", model=path, n_nonzero=2)
        Y = rng.standard_normal((3, M, L))
        np.testing.assert_array_equal(dec(Y), 2.0 * base.decode(Y, n_nonzero=2))
        dec2 = cscore.Decoder.from_config(dec.config)
        np.testing.assert_array_equal(dec2(Y), dec(Y))
        with pytest.raises(ValueError, match="already registered"):
            cscore.register_decoder("wrapped-test", load=Wrapped.load)
    finally:
        cscore.decoders.unregister_decoder("wrapped-test")


@pytest.mark.parametrize(
    "name, model",
    [("blstm-cs", "msrc-buildings-dct-m32-blstm"), ("nwsomp", "nwsomp-mnist-m72"),
     ("cdsn-cs", "cdsn-msrc-dct-m25")],
)
def test_learned_decoders_registered(name, model):
    rng = np.random.default_rng(3)
    mod = cscore.pretrained(model)
    dec = cscore.decoder(name, model=model, tol=0.05)
    Y = rng.standard_normal((3, mod.M, mod.L))
    np.testing.assert_array_equal(dec(Y), mod.decode(Y, tol=0.05))
    again = cscore.Decoder.from_config(json.loads(json.dumps(dec.config)))
    np.testing.assert_array_equal(again(Y), dec(Y))
    assert name in cscore.decoder_names()


def test_a_pretrained_model_of_another_architecture_is_refused():
    # "nwsomp" must not silently run an LSTM-CS model (issue 26, item 7)
    with pytest.raises(ValueError, match="is a LSTMCS model; decoder 'nwsomp' needs a NWSOMP"):
        cscore.decoder("nwsomp", model="mnist-m72")
    with pytest.raises(ValueError, match="needs a BLSTMCS"):
        cscore.decoder("blstm-cs", model="mnist-m72")
    # a bidirectional model is an LSTMCS too (a subclass), so lstm-cs accepts it
    assert cscore.decoder("lstm-cs", model="msrc-buildings-dct-m32-blstm").L == 4
