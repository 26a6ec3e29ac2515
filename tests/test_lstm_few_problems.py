"""The few-problems path of the LSTM-CS / BLSTM-CS decoders (issue 23).

Up to ``_core._lstm_small_max`` problems per call are decoded with a kernel
vectorized over the LSTM's output rows, on a second (panel) layout of the
weights.  Each output must be the batch kernel's chain of operations, so a
problem's result may not depend on the batch it is in, the thread count, or
which kernel ran.  ``weights_dtype="float16"`` rounds the matrices for every
path alike, so the same holds there.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import cscore
from cscore import _core
from cscore.decoders.learned import BLSTMCS, LSTMCS, BLSTMCSWeights, LSTMCSWeights
from cscore.problem import ProblemSpec

SMALL = int(_core._lstm_small_max)

# Odd sizes: G*H and N are not whole panels of 64 rows (last panels of 16, 32
# and 48 rows: G*H = 69 or 92, N = 110), M is odd.
M, N, L, H = 9, 110, 3, 23


def _model(rng: np.random.Generator, kind: str, cell: str = "paper") -> LSTMCS:
    G = 3 if cell == "paper" else 4

    def g(scale: float, *shape: int) -> np.ndarray:
        return rng.normal(scale=scale, size=shape)

    A = rng.normal(size=(M, N))
    A /= np.linalg.norm(A, axis=0)
    spec = ProblemSpec(M=M, N=N, L=L)
    common = {"b": g(0.1, G * H), "c_out": g(0.1, N), "cell": cell}
    if kind == "blstm":
        wb = BLSTMCSWeights(
            W=g(0.5, G * H, M), R=g(0.3, G * H, H), Wb=g(0.5, G * H, M), Rb=g(0.3, G * H, H),
            bb=g(0.1, G * H), U=g(0.4, N, 2 * H), **common,
        )  # fmt: skip
        return BLSTMCS(wb, A, spec)
    w = LSTMCSWeights(W=g(0.5, G * H, M), R=g(0.3, G * H, H), U=g(0.4, N, H), **common)
    return LSTMCS(w, A, spec)


def _problems(rng: np.random.Generator, A: np.ndarray, B: int, k: int = 3) -> np.ndarray:
    S = np.zeros((B, A.shape[1], L))
    for b in range(B):
        S[b, rng.choice(A.shape[1], k, replace=False)] = rng.standard_normal((k, L))
    Y = np.einsum("mn,bnl->bml", A, S) + 0.01 * rng.standard_normal((B, A.shape[0], L))
    # scales over two decades, so that a tolerance stops problems at different iterations
    return Y * rng.permutation(np.geomspace(1.0, 0.01, B))[:, None, None]


MODELS = [("lstm", "paper"), ("lstm", "lstm"), ("blstm", "paper"), ("blstm", "lstm")]


def test_small_max_is_below_the_simd_width():
    assert 1 <= SMALL < 8


@pytest.mark.parametrize("kind,cell", MODELS)
@pytest.mark.parametrize("weights_dtype", ["float32", "float16"])
def test_alone_equals_every_batch_size(kind, cell, weights_dtype):
    rng = np.random.default_rng(23)
    model = _model(rng, kind, cell)
    Y = _problems(rng, model.A, 65)
    for kw in ({"n_nonzero": 5}, {"tol": 0.05}):
        kw = {**kw, "weights_dtype": weights_dtype}
        res = model.decode(Y, return_result=True, **kw)
        full = res.x
        if "tol" in kw:  # problems stop at different iterations: the active set shrinks
            assert len(set(res.n_iter.tolist())) > 1
        for size in range(1, 66):
            parts = [model.decode(Y[i : i + size], **kw) for i in range(0, 65, size)]
            assert np.array_equal(np.concatenate(parts), full), (kw, size)
        alone = np.stack([model.decode(Y[b], **kw) for b in range(65)])
        assert np.array_equal(alone, full), kw
        assert np.array_equal(model.decode(Y, n_threads=2, **kw), full), kw


@pytest.mark.parametrize("kind,cell", MODELS)
def test_panel_kernel_equals_batch_kernel(kind, cell):
    """The compiled decode with and without the panel layout: every output equal."""
    rng = np.random.default_rng(7)
    model = _model(rng, kind, cell)
    prep = model._prep(np.float32)
    assert prep.panels  # float32 decodes get the layout
    fn = getattr(_core, f"_{model._kernel}_decode_f32")
    for B in range(1, SMALL + 2):
        Y = np.ascontiguousarray(_problems(rng, model.A, B))
        for tol, k in ((-1.0, 6), (0.05, 6)):
            args = (*prep.args(), model._At, model._norms, Y, k, tol, True, True, 1, 64)
            fast = fn(*args, **prep.panels)
            batch = fn(*args)
            for a, b in zip(fast, batch):
                assert np.array_equal(a, b), (B, tol)
            # the panels are what the path reads (zeroed ones change the result),
            # when at most SMALL problems are active (with tol, a batch's active
            # problems drop below SMALL at some iteration)
            zeroed = {k: tuple(np.zeros_like(a) for a in v) for k, v in prep.panels.items()}
            used = not np.array_equal(fn(*args, **zeroed)[0], batch[0])
            assert used == (B <= SMALL) or (tol > 0 and used), (B, tol)


def test_float16_equals_rounded_weights():
    """weights_dtype="float16" decodes as float32 weights rounded to float16 would."""
    rng = np.random.default_rng(3)
    for kind in ("lstm", "blstm"):
        model = _model(rng, kind)
        w = model.weights
        rounded = type(w)(
            **{
                k: getattr(w, k).astype(np.float16).astype(np.float32)
                if k in ("W", "R", "Wb", "Rb", "U") else getattr(w, k)
                for k in w._ARRAYS
            },
            cell=w.cell,
        )  # fmt: skip
        other = type(model)(rounded, model.A, model.spec)
        Y = _problems(rng, model.A, 6)
        half = model.decode(Y, n_nonzero=5, weights_dtype="float16")
        assert np.array_equal(half, other.decode(Y, n_nonzero=5))
        assert np.array_equal(model.decode(Y[0], n_nonzero=5, weights_dtype="float16"), half[0])
        # the model's own weights are unchanged by the option
        assert np.array_equal(model.decode(Y, n_nonzero=5), model.decode(Y, n_nonzero=5))
        assert model.weights.W.dtype == np.float32


def test_weights_dtype_refused():
    rng = np.random.default_rng(4)
    model = _model(rng, "lstm")
    Y = _problems(rng, model.A, 2)
    with pytest.raises(ValueError, match="weights_dtype"):
        model.decode(Y, n_nonzero=2, weights_dtype="bfloat16")
    w = model.weights
    big = LSTMCSWeights(W=w.W * 0 + 7e4, R=w.R, b=w.b, U=w.U, c_out=w.c_out)
    with pytest.raises(ValueError, match="float16 range"):
        LSTMCS(big, model.A, model.spec).decode(Y, n_nonzero=2, weights_dtype="float16")


def test_float64_lstm_takes_no_panels():
    rng = np.random.default_rng(5)
    model = _model(rng, "lstm")
    assert model._prep(np.float64).panels == {}
    Y = _problems(rng, model.A, 3)
    exact = model._with_kernel_options(lstm_dtype=np.float64)
    a = exact.decode(Y, n_nonzero=4)
    alone = [exact.decode(y, n_nonzero=4) for y in Y]
    assert np.array_equal(np.stack(alone), a)


def test_pretrained_alone_equals_batches():
    model = cscore.pretrained("mnist-m72")
    rng = np.random.default_rng(11)
    B = 65
    S = np.zeros((B, model.N, model.L))
    for b in range(B):
        S[b, rng.choice(model.N, 10, replace=False)] = rng.standard_normal((10, model.L))
    Y = np.einsum("mn,bnl->bml", model.A, S) + 0.01 * rng.standard_normal((B, model.M, model.L))
    for kw in ({"tol": 0.05}, {"n_nonzero": 8}):
        full = model.decode(Y, **kw)
        for size in (1, 2, 3, 4, 5, 7, 13, 64):
            parts = [model.decode(Y[i : i + size], **kw) for i in range(0, B, size)]
            assert np.array_equal(np.concatenate(parts), full), (kw, size)


# The two checks above in a process whose kernels use the generic path.
_GENERIC = r"""
import numpy as np, cscore, sys
sys.path.insert(0, sys.argv[1])
import test_lstm_few_problems as t
assert cscore.instruction_set() == "generic"
for kind, cell in t.MODELS:
    t.test_panel_kernel_equals_batch_kernel(kind, cell)
rng = np.random.default_rng(9)
for kind in ("lstm", "blstm"):
    model = t._model(rng, kind)
    Y = t._problems(rng, model.A, 13)
    for wd in ("float32", "float16"):
        full = model.decode(Y, tol=0.05, weights_dtype=wd)
        for size in (1, 2, 3, 4, 5):
            parts = [
                model.decode(Y[i : i + size], tol=0.05, weights_dtype=wd)
                for i in range(0, 13, size)
            ]
            assert np.array_equal(np.concatenate(parts), full), (kind, wd, size)
print("ok")
"""


def test_generic_path_in_a_subprocess():
    env = {k: v for k, v in os.environ.items() if k not in ("CSCORE_ISA", "CSCORE_DISABLE_AVX2")}
    env["CSCORE_ISA"] = "generic"
    pkg_parent = os.path.dirname(os.path.dirname(cscore.__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run(
        [sys.executable, "-c", _GENERIC, here], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
