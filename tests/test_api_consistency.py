"""Uniform public-API behaviour: every decoder treats odd inputs the same way,
plus the metric, model-file, thread-count and dataset fixes of the API review."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import cscore
from cscore import _config
from cscore.datasets import measure
from cscore.decoders.learned import LSTMCS, LSTMCSWeights
from cscore.metrics import nmse, nmse_per_item, support_f1
from cscore.models.format import ModelFileError
from cscore.problem import ProblemSpec

M, N, L, K = 12, 24, 3, 2
H = 8


# -- the decoders under test --------------------------------------------------------


def _lstm_weights(seed: int = 3) -> LSTMCSWeights:
    g = np.random.default_rng(seed)

    def f32(scale: float, shape: tuple[int, ...]) -> np.ndarray:
        return g.normal(scale=scale, size=shape).astype(np.float32)

    return LSTMCSWeights(
        W=f32(1 / np.sqrt(M), (3 * H, M)),
        R=f32(1 / np.sqrt(H), (3 * H, H)),
        b=f32(0.1, (3 * H,)),
        U=f32(2 / np.sqrt(H), (N, H)),
        c_out=f32(0.1, (N,)),
    )


_WEIGHTS = _lstm_weights()


def _lstm(A: Any, Y: Any, **kw: Any) -> Any:
    return LSTMCS(_WEIGHTS, A, ProblemSpec(M=M, N=N, L=L)).decode(Y, n_nonzero=K, **kw)


@dataclass(frozen=True)
class Dec:
    """How to call one decoder: its Y argument's name and the shapes it takes."""

    fn: Callable[..., Any]
    yname: str
    batched: bool  # (B, M, L) batches (else 2-D y is B independent columns)
    lstm: bool = False


DECODERS: dict[str, Dec] = {
    "omp": Dec(lambda A, Y, **kw: cscore.omp(A, Y, n_nonzero=K, **kw), "y", False),
    "somp": Dec(lambda A, Y, **kw: cscore.somp(A, Y, n_nonzero=K, **kw), "Y", True),
    "bcs": Dec(lambda A, Y, **kw: cscore.bcs(A, Y, max_iter=20, **kw), "y", False),
    "mtbcs": Dec(lambda A, Y, **kw: cscore.mtbcs(A, Y, max_iter=20, **kw), "Y", True),
    "tsbl": Dec(lambda A, Y, **kw: cscore.tsbl(A, Y, max_iter=30, **kw), "Y", True),
    "tmsbl": Dec(lambda A, Y, **kw: cscore.tmsbl(A, Y, max_iter=30, **kw), "Y", True),
    "lstm": Dec(_lstm, "Y", True, lstm=True),
}

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(params=list(DECODERS))
def dec(request) -> Dec:
    return DECODERS[request.param]


@pytest.fixture(scope="module")
def prob() -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(11)
    A = g.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((N, L))
    S[g.choice(N, K, replace=False)] = g.standard_normal((K, L)) + 1.0
    return A, A @ S


def _one(dec: Dec, Y: np.ndarray) -> np.ndarray:
    """One problem in the decoder's native layout ((M, L); omp/bcs take (M,) per problem)."""
    return Y if dec.batched else Y[:, 0]


def test_nan_and_inf_in_Y(dec, prob):
    A, Y = prob
    for bad in (np.nan, np.inf, -np.inf):
        Yb = _one(dec, Y).copy()
        Yb[(0,) * Yb.ndim] = bad
        with pytest.raises(ValueError, match=rf"\b{dec.yname}\b.*(NaN|inf)"):
            dec.fn(A, Yb)


def test_inf_in_A(dec, prob):
    A, Y = prob
    Ab = A.copy()
    Ab[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"\bA\b.*(NaN|inf)"):
        dec.fn(Ab, _one(dec, Y))


def test_empty_Y(dec, prob):
    A, _ = prob
    empty = np.zeros((M, 0)) if dec.batched else np.zeros((0,))
    with pytest.raises(ValueError, match=rf"\b{dec.yname}\b"):
        dec.fn(A, empty)


def test_mismatched_M(dec, prob):
    A, Y = prob
    Y2 = _one(dec, Y).reshape(M, -1)
    Yb = np.vstack([Y2, np.ones((1, Y2.shape[1]))])
    if not dec.batched:
        Yb = Yb[:, 0]
    with pytest.raises(ValueError) as exc:
        dec.fn(A, Yb)
    msg = str(exc.value)
    assert re.search(rf"\b{dec.yname}\b", msg), msg
    assert str(M) in msg and str(M + 1) in msg, msg


def test_wrong_ndim(dec, prob):
    A, Y = prob
    too_many = np.ones((1, 1, M, L))
    with pytest.raises(ValueError, match=rf"\b{dec.yname}\b.*D"):
        dec.fn(A, too_many)
    with pytest.raises(ValueError, match=r"\bA\b"):
        dec.fn(A[None], _one(dec, Y))
    if dec.lstm:  # the model takes (M, L) or (B, M, L): a vector is refused too
        with pytest.raises(ValueError, match=r"\bY\b"):
            dec.fn(A, Y[:, 0])


def test_complex_and_bool_refused(dec, prob):
    A, Y = prob
    Y1 = _one(dec, Y)
    if dec in (DECODERS["omp"], DECODERS["somp"], DECODERS["tmsbl"]):  # complex data welcome
        assert np.iscomplexobj(dec.fn(A, Y1.astype(complex)))  # tests/test_complex.py
    else:
        with pytest.raises(TypeError, match=rf"\b{dec.yname}\b.*complex"):
            dec.fn(A, Y1.astype(complex))
        with pytest.raises(TypeError, match=r"\bA\b.*complex"):
            dec.fn(A.astype(complex), Y1)
    with pytest.raises(TypeError, match=rf"\b{dec.yname}\b.*boolean"):
        dec.fn(A, Y1 > 0)
    with pytest.raises(TypeError, match=r"\bA\b.*boolean"):
        dec.fn(A > 0, Y1)


def test_masked_refused(dec, prob):
    A, Y = prob
    Y1 = _one(dec, Y)
    masked = np.ma.masked_array(Y1, mask=np.zeros(Y1.shape, bool))
    with pytest.raises(TypeError, match=rf"\b{dec.yname}\b.*masked.*fill"):
        dec.fn(A, masked)


def test_integer_input_is_float64(dec, prob):
    A, Y = prob
    out = dec.fn(A, np.round(10 * _one(dec, Y)).astype(np.int32))
    assert out.dtype == np.float64


def test_layout_does_not_matter(dec, prob):
    A, Y = prob
    Y1 = _one(dec, Y)
    ref = dec.fn(A, Y1)
    A_f = np.asfortranarray(A)
    Y_f = np.asfortranarray(Y1)
    A_neg = np.ascontiguousarray(A[::-1])[::-1]  # negative row stride, same values
    Y_neg = np.ascontiguousarray(Y1[::-1])[::-1]
    assert A_neg.strides[0] < 0 and Y_neg.strides[0] < 0
    A_ro, Y_ro = A.copy(), Y1.copy()
    A_ro.setflags(write=False)
    Y_ro.setflags(write=False)
    for a, y in ((A_f, Y_f), (A_neg, Y_neg), (A_ro, Y_ro)):
        np.testing.assert_allclose(dec.fn(a, y), ref, rtol=1e-12, atol=1e-12)
    # inputs are never modified
    np.testing.assert_array_equal(Y_neg, Y1)


def test_float32_in_float32_out(dec, prob):
    A, Y = prob
    Y1 = _one(dec, Y)
    if dec.lstm:  # the model keeps its own A; the dtype follows Y
        out = dec.fn(A, Y1.astype(np.float32))
    else:
        out = dec.fn(A.astype(np.float32), Y1.astype(np.float32))
    assert out.dtype == np.float32
    assert dec.fn(A, Y1).dtype == np.float64


def test_output_shapes(dec, prob):
    A, Y = prob
    if dec.batched:
        assert dec.fn(A, Y).shape == (N, L)
        Yb = np.stack([Y, 2 * Y])
        out = dec.fn(A, Yb)
        assert out.shape == (2, N, L)
        np.testing.assert_allclose(out[0], dec.fn(A, Y), rtol=1e-10, atol=1e-12)
    else:
        assert dec.fn(A, Y[:, 0]).shape == (N,)
        out = dec.fn(A, Y)  # L columns = L independent problems
        assert out.shape == (N, L)
        np.testing.assert_allclose(out[:, 0], dec.fn(A, Y[:, 0]), rtol=1e-10, atol=1e-12)


def test_n_threads_numpy_int_and_cap(dec, prob):
    A, Y = prob
    Y1 = _one(dec, Y)
    np.testing.assert_array_equal(dec.fn(A, Y1, n_threads=np.int64(2)), dec.fn(A, Y1))
    with pytest.raises(ValueError, match="n_threads must be <= 1024"):
        dec.fn(A, Y1, n_threads=2**40)
    with pytest.raises(TypeError, match="n_threads"):
        dec.fn(A, Y1, n_threads=2.0)


# -- thread-count settings ------------------------------------------------------------


def test_set_num_threads_checks():
    old = cscore.get_num_threads()
    try:
        cscore.set_num_threads(np.int32(3))
        assert cscore.get_num_threads() == 3 and type(cscore.get_num_threads()) is int
        with pytest.raises(ValueError, match="<= 1024"):
            cscore.set_num_threads(10**6)
        with pytest.raises(ValueError):
            cscore.set_num_threads(0)
        with pytest.raises(TypeError):
            cscore.set_num_threads(True)
        assert cscore.get_num_threads() == 3
    finally:
        cscore.set_num_threads(old)


@pytest.mark.parametrize("value", ["abc", "0", "-2", "100000", "2.5"])
def test_invalid_env_var_warns(monkeypatch, value):
    monkeypatch.setenv("CSCORE_NUM_THREADS", value)
    with pytest.warns(RuntimeWarning, match="CSCORE_NUM_THREADS"):
        n = _config._default_threads()
    assert 1 <= n <= _config.MAX_THREADS


def test_valid_env_var(monkeypatch):
    monkeypatch.setenv("CSCORE_NUM_THREADS", "5")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _config._default_threads() == 5


# -- metrics --------------------------------------------------------------------------


def test_nmse_one_problem_is_one_ratio():
    g = np.random.default_rng(0)
    S = np.zeros((144, 4))
    S[:10] = g.standard_normal((10, 4))
    assert nmse(S * 1.01, S) == pytest.approx(0.01, rel=1e-9)
    E = g.standard_normal(S.shape)
    assert nmse(S + E, S) == pytest.approx(np.linalg.norm(E) / np.linalg.norm(S))


def test_nmse_batch_is_mean_of_problems():
    g = np.random.default_rng(1)
    S = g.standard_normal((3, 6, 2))
    S_hat = S + g.standard_normal(S.shape) * np.array([0.1, 0.2, 0.3])[:, None, None]
    per = [nmse(S_hat[p], S[p]) for p in range(3)]
    assert nmse(S_hat, S) == pytest.approx(np.mean(per))
    np.testing.assert_allclose(nmse_per_item(S_hat, S), per)


def test_nmse_zero_truth_and_shapes():
    S = np.zeros((5, 2))
    with pytest.raises(ValueError, match="all zero"):
        nmse(np.ones((5, 2)), S)
    batch = np.ones((3, 5, 2))
    batch[1] = 0
    with pytest.raises(ValueError, match=r"zero norm.*item 1"):
        nmse(batch, batch)
    per = nmse_per_item(2 * batch, batch, zero="nan")
    assert np.isnan(per[1]) and per[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="shape"):
        nmse(np.ones((5, 2)), np.ones((5, 3)))
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        nmse(np.ones(5), np.ones(5))
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        nmse(np.ones((2, 2, 2, 2)), np.ones((2, 2, 2, 2)))
    S2 = np.eye(4)
    assert support_f1(S2, S2) == 1.0
    assert support_f1(S2 > 0, S2 > 0) == 1.0  # boolean support masks are fine here


# -- datasets.measure -----------------------------------------------------------------


def test_measure_keeps_float32():
    g = np.random.default_rng(2)
    A = g.standard_normal((5, 8)).astype(np.float32)
    S = g.standard_normal((8, 2)).astype(np.float32)
    Y, noise = measure(A, S, 0.1, seed=1)
    assert Y.dtype == np.float32 and noise.dtype == np.float32 and Y.shape == (5, 2)
    Yb, _ = measure(A, np.stack([S, S]), 0.0)
    assert Yb.dtype == np.float32 and Yb.shape == (2, 5, 2)
    Y64, _ = measure(A.astype(np.float64), S, 0.1, seed=1)
    assert Y64.dtype == np.float64
    np.testing.assert_allclose(Y, Y64, rtol=1e-5, atol=1e-6)


def test_measure_error_reports_input_shape():
    A = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"got shape \(5, 2\)") as exc:
        measure(A, np.ones((5, 2)))
    assert "(1, 5, 2)" not in str(exc.value)
    with pytest.raises(ValueError, match="sigma"):
        measure(A, np.ones((4, 2)), -1.0)
    with pytest.raises(TypeError, match=r"S .*boolean"):
        measure(A, np.ones((4, 2)) > 0)


# -- model files ----------------------------------------------------------------------


def _good_model(tmp_path) -> Any:
    g = np.random.default_rng(5)
    A = g.standard_normal((M, N))
    model = LSTMCS(_WEIGHTS, A / np.linalg.norm(A, axis=0), ProblemSpec(M=M, N=N, L=L))
    path = tmp_path / "good.npz"
    model.save(path)
    return path


def _rewrite_A(src, dst, A) -> None:
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["A"] = A
    np.savez(dst, **arrays)


def test_model_file_garbage_and_wrong_kinds(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x00garbage that is not a zip archive" * 10)
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    npy = tmp_path / "x.npy"
    np.save(npy, np.ones(3))
    truncated = tmp_path / "truncated.npz"
    good = _good_model(tmp_path)
    truncated.write_bytes(good.read_bytes()[:200])
    for path, msg in (
        (junk, "not an .npz"),
        (empty, "empty"),
        (npy, "not an .npz"),
        (truncated, "not"),
        (tmp_path, "directory"),
    ):
        with pytest.raises(ModelFileError, match=msg):
            LSTMCS.load(path)


def test_model_file_bad_A_messages(tmp_path):
    good = _good_model(tmp_path)
    with np.load(good) as z:
        A = z["A"]
    cases = {
        "nan": (np.where(np.arange(N) == 3, np.nan, A), "entry 'A' contains NaN"),
        "int": (np.ones((M, N), dtype=np.int64), "entry 'A' has dtype int64"),
        "zero": (np.where(np.arange(N) == 0, 0.0, A), "all-zero column"),
        "shape": (np.ones((M, N + 1)), rf"entry 'A' has shape \({M}, {N + 1}\), expected"),
    }
    for name, (bad, msg) in cases.items():
        path = tmp_path / f"{name}.npz"
        _rewrite_A(good, path, bad)
        with pytest.raises(ModelFileError, match=msg) as exc:
            LSTMCS.load(path)
        # never the self-contradicting "has shape X, expected X"
        assert f"shape ({M}, {N}), expected ({M}, {N})" not in str(exc.value)
    assert LSTMCS.load(good).A.shape == (M, N)


def test_model_file_bad_meta(tmp_path):
    good = _good_model(tmp_path)
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["meta"] = np.frombuffer(json.dumps([1, 2]).encode(), dtype=np.uint8)
    path = tmp_path / "meta.npz"
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError):
        LSTMCS.load(path)


# -- command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["bench", "sparsity", "--k", "0"], "--k must be between 1 and N = 144"),
        (["bench", "sparsity", "--k", "200"], "(atoms per problem), got 200"),
        (["bench", "sparsity", "--k", "a,b"], "--k must be integers"),
        (["bench", "noise", "--sigma", "-1"], "--sigma must be finite and >= 0"),
        (["bench", "sparsity", "--problems", "0"], "--problems must be >= 1"),
        (["bench", "sparsity", "--M", "200"], "--M (200) must not exceed --N (144)"),
        (["bench", "sparsity", "--stop", "never"], "--stop"),
        (["bench", "sparsity", "--data", "demo", "--model", "mnist-m72"],
         "--data demo has N = 64 atoms per problem but model mnist-m72 has N = 144"),
        (["bench", "sparsity", "--model", "/nonexistent/m.npz"], "no model file"),
        (["bench", "sparsity", "--model", "no-such-model"], "unknown pretrained model"),
        (["demo", "--plot", "/nonexistent/dir/x.png"], "folder /nonexistent/dir does not exist"),
        (["demo", "--k", "0"], "--k must be between 1 and 64"),
        (["demo", "--sigma", "-1"], "--sigma must be finite"),
        (["demo", "--model", "mnist-m72"], "N = 64"),
        (["train", "--out", "/nonexistent/dir/m.npz", "--data", "demo"], "does not exist"),
        (["train", "--out", "m.npz", "-L", "0"], "-L must be >= 1"),
        (["train", "--out", "m.npz", "--k-min", "9", "--k-max", "3"], "--k-min (9)"),
        (["train", "--out", "m.npz", "--data", "mnist"], "--data mnist needs --mnist-dir"),
    ],
)
def test_cli_bad_arguments_exit_2_without_traceback(argv, msg, capsys, tmp_path, monkeypatch):
    from cscore.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    if argv[0] == "bench":
        argv = [*argv, "--out", str(tmp_path / "out"), "--no-plot", "--no-progress"]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert f"cscore {argv[0]}: error:" in err and msg in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()  # refused before doing anything


def test_cli_train_without_torch(capsys, tmp_path, monkeypatch):
    import sys

    from cscore.cli import main as cli_main

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert cli_main(["train", "--out", str(tmp_path / "m.npz"), "--data", "demo"]) == 2
    err = capsys.readouterr().err
    assert "cscore train: error:" in err and "PyTorch" in err and "Traceback" not in err
    assert not (tmp_path / "m.npz").exists()


def test_cli_genuine_bugs_keep_their_traceback(monkeypatch):
    from cscore import cli

    def boom(_args):
        raise RuntimeError("a bug")

    monkeypatch.setattr("cscore.cli.version.run", boom)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["version"])


def test_synthetic_problems_checks_k():
    from cscore.bench import synthetic_problems

    with pytest.raises(ValueError, match=r"k must be <= 10 \(the number of atoms N\)"):
        synthetic_problems(5, 10, 2, 11)
    with pytest.raises(ValueError, match="k must be >= 1"):
        synthetic_problems(5, 10, 2, 0)
    with pytest.raises(ValueError, match="n_problems"):
        synthetic_problems(5, 10, 2, 2, n_problems=0)
    ps = synthetic_problems(5, 10, 2, 10, n_problems=1)
    assert ps.S.shape == (1, 10, 2)


# -- documentation --------------------------------------------------------------------

_DOC_MODULES = [
    "cscore",
    "cscore.decoders",
    "cscore.decoders.registry",
    "cscore.decoders.learned",
    "cscore.decoders.learned.cdsn",
    "cscore.decoders.learned.weights",
    "cscore.models",
    "cscore.models.format",
    "cscore.models.registry",
    "cscore.training",
    "cscore.training.cdsn",
    "cscore.training.nwsomp",
    "cscore.training.lstm",
    "cscore.training.sequences",
    "cscore.training.data",
    "cscore.training.recipes",
    "cscore.pipelines",
    "cscore.metrics",
    "cscore.datasets",
    "cscore.bench",
    "cscore.bench.plots",
    "cscore.text.recipes",
]


def _public_functions():
    import importlib
    import inspect

    seen = set()
    for modname in _DOC_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isfunction(obj) and obj not in seen:
                seen.add(obj)
                yield f"{modname}.{name}", obj


def test_public_functions_document_parameters_and_returns():
    import inspect

    missing = []
    for qual, fn in _public_functions():
        doc = inspect.getdoc(fn) or ""
        sig = inspect.signature(fn)
        if sig.parameters and "Parameters\n----------" not in doc:
            missing.append(f"{qual}: Parameters")
        returns = sig.return_annotation not in (None, "None", inspect.Signature.empty)
        if returns and "Returns\n-------" not in doc and "Yields" not in doc:
            missing.append(f"{qual}: Returns")
    assert not missing, missing


def test_reference_exports_normalize_maxabs():
    from oracles import reference

    assert "normalize_maxabs" in reference.__all__


def test_image_problem_sets_check_k():
    from cscore.bench import demo_problems, mnist_problems

    A = cscore.pretrained("demo-dct-m32").A
    with pytest.raises(ValueError, match=r"k must be <= 64"):
        demo_problems(A, 65)
    with pytest.raises(ValueError, match=r"k must be <= 144"):
        mnist_problems("/nonexistent", np.ones((72, 144)), 145)
    with pytest.raises(ValueError, match=r"\(M, 144\)"):
        mnist_problems("/nonexistent", A, 5)
