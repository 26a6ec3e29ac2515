"""LSTM-CS with the beam-search rescue (``beam_width``, decoders/learned/beam.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore.datasets import expected_noise_tol
from cscore.decoders.learned.beam import BeamOptions, _Contexts, _Net, _search

SIGMA = 0.005
MNIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"


@pytest.fixture(scope="module")
def model() -> cscore.LSTMCS:
    return cscore.pretrained("mnist-m36-v2")


def _problems(A: np.ndarray, B: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative k-sparse channels (digit-like values), noisy measurements."""
    rng = np.random.default_rng(seed)
    M, N = A.shape
    S = np.zeros((B, N, 4))
    for b in range(B):
        for j in range(4):
            S[b, rng.choice(N, k, replace=False), j] = rng.uniform(0.5, 1.0, k)
    Y = np.einsum("mn,bnl->bml", A, S) + SIGMA * rng.standard_normal((B, M, 4))
    return S, Y


def test_explained_channels_are_untouched_and_rescued_ones_explained(model):
    A = model.A
    _, Y = _problems(A, 12, 11, seed=1)
    tol = expected_noise_tol(36, 4, SIGMA)
    g = model.decode(Y, tol=tol, return_result=True)
    r = model.decode(Y, tol=tol, beam_width=8, return_result=True)
    ctol = 1.5 * SIGMA * np.sqrt(36)  # the documented default
    res_g = np.linalg.norm(Y - np.einsum("mn,bnl->bml", A, g.x), axis=1)
    res_r = np.linalg.norm(Y - np.einsum("mn,bnl->bml", A, r.x), axis=1)
    rescued = r.extra["rescued"]
    assert rescued.any(), "this batch has channels the greedy decode leaves unexplained"
    # only channels above the tolerance are searched; a replaced one is explained
    assert not (rescued & (res_g <= ctol)).any()
    assert np.all(res_r[rescued] <= ctol * (1 + 1e-9))
    np.testing.assert_array_equal(r.x[:, :, ~rescued.any(axis=0)],
                                  g.x[:, :, ~rescued.any(axis=0)])
    for b, j in zip(*np.nonzero(~rescued)):
        np.testing.assert_array_equal(r.x[b, :, j], g.x[b, :, j])
    # atoms, support and residual norms describe the returned estimate
    for b, j in zip(*np.nonzero(rescued)):
        path = r.extra["atoms"][b, j]
        path = path[path >= 0]
        np.testing.assert_array_equal(np.sort(path), np.flatnonzero(r.x[b, :, j]))
        assert r.support[b, :, j].sum() == path.size
    np.testing.assert_allclose(r.residual_norm, res_r.sum(axis=1), rtol=1e-12)


def test_result_does_not_depend_on_the_batch(model):
    _, Y = _problems(model.A, 6, 12, seed=2)
    tol = expected_noise_tol(36, 4, SIGMA)
    X = model.decode(Y, tol=tol, beam_width=4, beam_candidates=3)
    for b in (0, 3, 5):
        np.testing.assert_array_equal(model.decode(Y[b], tol=tol, beam_width=4,
                                                   beam_candidates=3), X[b])
    np.testing.assert_array_equal(model.decode(Y[2:5], tol=tol, beam_width=4,
                                               beam_candidates=3, n_threads=2), X[2:5])


def test_width_one_search_retraces_the_greedy_path(model):
    """With one partial support and one candidate, the search is LSTM-CS itself."""
    A = model.A
    _, Y = _problems(A, 4, 9, seed=3)
    res = model.decode(Y, n_nonzero=9, return_result=True)
    net = _Net(model.weights)
    agree = []
    for b in range(4):
        paths = [[int(a) for a in res.extra["atoms"][b, j] if a >= 0] for j in range(4)]
        ctx = _Contexts(net, A, Y[b], paths)
        for j in range(4):
            found = _search(net, A, Y[b, :, j], ctx, j, -1.0, len(paths[j]),
                            BeamOptions(1, 1, np.zeros(1)))
            assert found is None  # tol -1: never explained, the search runs to its limit
            # rerun with the final residual as tolerance (the search scales it by
            # sqrt((M - s) / M) at support size s) to get the path back
            n = len(paths[j])
            last = np.linalg.norm(Y[b, :, j] - A @ res.x[b, :, j])
            found = _search(net, A, Y[b, :, j], ctx, j, last * (1 + 1e-9) / np.sqrt((36 - n) / 36),
                            n, BeamOptions(1, 1, np.zeros(1)))
            agree.append(found == paths[j])
    # the NumPy float32 LSTM rounds differently from the compiled kernel: a near-tie
    # may flip, but nearly every path must come back atom for atom
    assert np.mean(agree) >= 0.85, agree


def test_auto_and_explicit_channel_tol(model):
    _, Y = _problems(model.A, 5, 11, seed=4)
    r = model.decode(Y, tol="auto", beam_width=4, return_result=True)
    assert r.extra["rescued"].shape == (5, 4)
    assert "sigma_hat" in r.extra
    # an explicit tolerance of 0 can never be met: nothing is replaced
    g = model.decode(Y, n_nonzero=10)
    z = model.decode(Y, n_nonzero=10, beam_width=2, channel_tol=0.0, return_result=True)
    assert not z.extra["rescued"].any()
    np.testing.assert_array_equal(z.x, g)


def test_bad_arguments(model):
    Y = np.zeros((36, 4))
    with pytest.raises(ValueError, match="noise level"):
        model.decode(Y, n_nonzero=3, beam_width=4)
    with pytest.raises(ValueError, match="beam_width"):
        model.decode(Y, tol=0.1, beam_width=-1)
    with pytest.raises(TypeError, match="beam_width"):
        model.decode(Y, tol=0.1, beam_width=True)
    with pytest.raises(ValueError, match="beam_candidates"):
        model.decode(Y, tol=0.1, beam_width=2, beam_candidates=0)
    with pytest.raises(ValueError, match="channel_tol"):
        model.decode(Y, tol=0.1, beam_width=2, channel_tol=-1.0)
    blstm = cscore.pretrained("msrc-buildings-haar-m32-blstm-v2")
    with pytest.raises(ValueError, match="unidirectional"):
        blstm.decode(np.zeros((32, 4)), tol=0.1, beam_width=2)


@pytest.mark.skipif(not (MNIST / "images-idx3-ubyte.gz").exists(), reason="needs MNIST")
def test_beam_lowers_the_error_on_validation_digits(model):
    """Held-out-style digits (the models' validation images) at M = 36, k = 12."""
    from cscore.datasets import load_mnist, measure, mnist_mmv_problems, mnist_tuples

    images, labels = load_mnist(MNIST / "images-idx3-ubyte.gz", MNIST / "labels-idx1-ubyte.gz")
    tuples = mnist_tuples(labels, np.arange(5400, 6000))[:40]
    S = mnist_mmv_problems(images, tuples, 12)
    Y, _ = measure(model.A, S, SIGMA, seed=7)
    tol = expected_noise_tol(36, 4, SIGMA)
    err = lambda X: np.linalg.norm(X - S) / np.linalg.norm(S)  # noqa: E731
    greedy = err(model.decode(Y, tol=tol))
    beam = err(model.decode(Y, tol=tol, beam_width=8))
    assert beam < 0.8 * greedy, (beam, greedy)
