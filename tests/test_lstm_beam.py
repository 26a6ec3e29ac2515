"""LSTM-CS with the beam-search rescue (``beam_width``, decoders/learned/beam.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore.datasets import expected_noise_tol
from cscore.decoders.learned.beam import search_supports
from oracles import reference_beam as ref

SIGMA = 0.005
MNIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"


def _network(model: cscore.LSTMCS) -> tuple:
    """The kernel arguments of the model's float32 weights (what decode passes)."""
    return model._prep(np.float32).args()


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
    atoms = res.extra["atoms"]
    lens = (atoms >= 0).sum(axis=2).astype(np.int32)
    net = _network(model)
    # tol -1 is never met: the search runs to its limit and returns nothing
    none = search_supports(net, A, Y, atoms, np.full(4, -1.0), lens, 1, 1)
    assert np.all(none == -1)
    # each channel's final residual as its tolerance (scaled as the search scales
    # it, by sqrt((M - s) / M) at s atoms) gives the path back, atom for atom
    agree = []
    for j in range(4):
        last = np.linalg.norm(Y[:, :, j] - res.x[:, :, j] @ A.T, axis=1)
        tol = last * (1 + 1e-9) / np.sqrt((36 - lens[:, j]) / 36)
        limits = np.zeros_like(lens)
        limits[:, j] = lens[:, j]
        found = search_supports(net, A, Y, atoms, tol, limits, 1, 1)
        for b in range(4):
            agree.append(np.array_equal(found[b, j, : lens[b, j]], atoms[b, j, : lens[b, j]]))
            assert np.all(found[b, np.arange(4) != j] == -1)  # only channel j is searched
    # the search's inputs are the greedy decode's bits; its LSTM sums R v + b before
    # x W^T (the greedy kernel the other way round), so a near-tie may flip
    assert np.mean(agree) >= 0.9, agree


def test_compiled_search_matches_the_numpy_specification(model):
    """The C++ search and reference_beam.py find the same supports."""
    A = model.A
    _, Y = _problems(A, 6, 12, seed=5)
    tol = expected_noise_tol(36, 4, SIGMA)
    res = model.decode(Y, tol=tol, return_result=True)
    atoms = res.extra["atoms"]
    ctol = 1.5 * SIGMA * np.sqrt(36)
    resid = np.linalg.norm(Y - np.einsum("mn,bnl->bml", A, res.x), axis=1)
    lens = (atoms >= 0).sum(axis=2)
    limits = np.where(resid > ctol, np.minimum(35, lens + 10), 0).astype(np.int32)
    assert (limits > 0).sum() >= 4, "this batch has channels to search"
    found = search_supports(_network(model), A, Y, atoms, np.full(6, ctol),
                            limits, 4, 3)
    two = search_supports(_network(model), A, Y, atoms, np.full(6, ctol),
                          limits, 4, 3, n_threads=2)
    np.testing.assert_array_equal(two, found)  # threads do not change a bit
    net = ref.Net(model.weights)
    AT = np.ascontiguousarray(A.T)
    col2 = np.einsum("ij,ij->i", AT, AT)
    same, n = 0, 0
    for b in range(6):
        paths = [[int(a) for a in atoms[b, j] if a >= 0] for j in range(4)]
        bad = {int(j): Y[b, :, j] for j in np.flatnonzero(limits[b])}
        want = ref.search_channels(net, AT, col2, bad, ref.Contexts(net, A, Y[b], paths), ctol,
                                   {j: int(limits[b, j]) for j in bad}, ref.SearchOptions(4, 3))
        for j, supp in want.items():
            got = [int(a) for a in found[b, j] if a >= 0]
            same += sorted(got) == sorted(supp or [])  # one set, reached in either order
            n += 1
            if got:  # whatever was found explains the channel
                x = np.linalg.lstsq(A[:, got], Y[b, :, j], rcond=None)[0]
                r = np.linalg.norm(Y[b, :, j] - A[:, got] @ x)
                assert r <= ctol * np.sqrt((36 - len(got)) / 36) * (1 + 1e-6)
    # float32 products in another order may flip a near-tie in a long search
    assert same >= 0.75 * n, (same, n)


def test_search_arguments_are_checked(model):
    A, net = model.A, _network(model)
    Y = np.zeros((2, 36, 4))
    atoms = np.full((2, 4, 3), -1)
    ok = np.zeros((2, 4), dtype=np.int32)
    assert np.all(search_supports(net, A, Y, atoms, np.ones(2), ok, 2, 2) == -1)
    with pytest.raises(ValueError, match="limits"):
        search_supports(net, A, Y, atoms, np.ones(2), ok - 1, 2, 2)
    with pytest.raises(ValueError, match="tol"):
        search_supports(net, A, Y, atoms, np.ones(3), ok, 2, 2)
    with pytest.raises(ValueError, match="width"):
        search_supports(net, A, Y, atoms, np.ones(2), ok, 0, 2)
    with pytest.raises(ValueError, match="At"):
        search_supports(net, A[:, :100], Y, atoms, np.ones(2), ok, 2, 2)


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


@pytest.mark.parametrize("width,candidates", [(1, 144), (3, 1), (40, 7), (300, 2)])
def test_search_odd_settings(model, width, candidates):
    """Extreme widths and candidate counts: valid supports, thread-independent."""
    A = model.A
    rng = np.random.default_rng(width)
    Y = rng.standard_normal((3, 36, 4))
    Y[1] = 0.0  # nothing to explain: the search finds the empty residual at once
    atoms = np.full((3, 4, 2), -1)
    atoms[0, :, 0] = [3, 5, 7, 11]
    limits = np.array([[4, 0, 9, 35], [3, 3, 0, 0], [1, 2, 3, 4]], dtype=np.int32)
    tol = np.array([0.5, 0.5, 1e-9])
    net = _network(model)
    found = search_supports(net, A, Y, atoms, tol, limits, width, candidates)
    assert found.shape == (3, 4, 35)
    np.testing.assert_array_equal(
        search_supports(net, A, Y, atoms, tol, limits, width, candidates, n_threads=2), found)
    for b in range(3):
        for j in range(4):
            supp = found[b, j][found[b, j] >= 0]
            assert supp.size <= limits[b, j]
            assert np.all(found[b, j][supp.size:] == -1)  # -1 padded after the support
            assert len(set(supp.tolist())) == supp.size and np.all(supp < 144)
            if supp.size:
                x = np.linalg.lstsq(A[:, supp], Y[b, :, j], rcond=None)[0]
                r = np.linalg.norm(Y[b, :, j] - A[:, supp] @ x)
                assert r <= tol[b] * np.sqrt((36 - supp.size) / 36) * (1 + 1e-6)
    # an all-zero channel is explained by its first atom (residual 0)
    assert np.all(found[1, :2, 0] >= 0) and np.all(found[1, :2, 1:] == -1)
