"""LSTM-CS tol="auto": each problem's path ends inside the compiled kernel (issue 23).

The kernel (``lstm::PathStop`` in cpp/include/cscore/lstm.hpp) ends a problem's
greedy path once the residual-ratio test has taken a step for signal and
``PATIENCE`` steps in a row were not signal-like; it reports the channel
residual norms after every step, which :func:`auto_decode_path_stop` cuts.
"""

from __future__ import annotations

import numpy as np
import pytest

import cscore
from cscore.decoders import stopping
from cscore.decoders._rrt import signal_steps
from cscore.decoders.path_stop import path_stop_rule
from cscore.decoders.stopping import path_length

OPTIONS = {"exclude_selected": True, "n_threads": 1, "weights_dtype": "float32"}


@pytest.fixture(scope="module")
def model():
    return cscore.pretrained("mnist-m72")


def _problems(model, rng, B=40, sigma=0.01):
    """Nonnegative sparse channels (MNIST-like), k = 8..24 per problem."""
    A = np.asarray(model.A)
    S = np.zeros((B, 144, 4))
    for b in range(B):
        k = int(rng.integers(8, 25))
        for c in range(4):
            S[b, rng.choice(144, k, replace=False), c] = rng.uniform(0.3, 1.0, k)
    return np.einsum("mn,bnl->bml", A, S) + sigma * rng.standard_normal((B, 72, 4))


def _ends(norms, gamma2, reset2, patience, check=0, check_last=0):
    """Where the rule of lstm::PathStop ends each full path (NumPy re-implementation)."""
    scale = norms[:, :, 0].max(axis=1)
    E = ((norms / scale[:, None, None]) ** 2).sum(axis=1)
    K = norms.shape[2] - 1
    out = np.full(len(E), K)
    for b in range(len(E)):
        signal, last, last_signal = False, 0, 0
        for s in range(1, K + 1):
            rr2 = E[b, s] / E[b, s - 1] if E[b, s - 1] > 0 else 1.0
            if rr2 < gamma2[s - 1]:
                signal, last_signal = True, s
            last = s if rr2 < reset2[s - 1] else last
            if check and s == check and signal and last_signal <= check_last:
                out[b] = s
                break
            if signal and s - last >= patience:
                out[b] = s
                break
    return out


def test_path_ends_where_the_rule_says_and_is_a_prefix_of_the_full_path(model, rng):
    Y = _problems(model, rng)
    K = path_length(72, 144)
    gamma2, reset2, patience, check, check_last = path_stop_rule(72, 144, 4, K)
    assert (check, check_last) == (36, 24)  # ceil(M/2) and its first two thirds
    never = (gamma2, reset2, K + 1)  # patience past the path, no check: the full path
    atoms_full, norms_full = model._run_path(Y, K, never, **OPTIONS)
    atoms, norms = model._run_path(Y, K, (gamma2, reset2, patience), **OPTIONS)
    ends = _ends(norms_full, gamma2, reset2, patience)
    assert 5 < ends.mean() < 40 and ends.max() <= K
    for b, end in enumerate(ends):
        np.testing.assert_array_equal(atoms[b, :, :end], atoms_full[b, :, :end])
        assert np.all(atoms[b, :, end:] == -1)
        np.testing.assert_array_equal(norms[b, :, : end + 1], norms_full[b, :, : end + 1])
        np.testing.assert_array_equal(norms[b, :, end:], np.repeat(norms_full[b, :, end:end + 1],
                                                                   K + 1 - end, axis=1))
    # with the check step: the same prefixes, ended where the NumPy rule says
    atoms_c, _ = model._run_path(Y, K, (gamma2, reset2, patience, check, check_last), **OPTIONS)
    ends_c = _ends(norms_full, gamma2, reset2, patience, check, check_last)
    assert np.all(ends_c <= np.maximum(ends, 0)) and np.any(ends_c <= check)
    np.testing.assert_array_equal((atoms_c[:, 0] >= 0).sum(axis=1), ends_c)
    # the norms are the residuals of the decoder's own least squares
    res = model.decode(Y[:3], n_nonzero=7, return_result=True)
    np.testing.assert_allclose(norms_full[:3, :, 7], res.residual_norm, rtol=1e-12)


def test_auto_cut_equals_the_test_on_the_full_path(model, rng):
    """Where no signal step lies past the path's end, the cut is the full path's."""
    Y = _problems(model, rng, sigma=0.02)
    K = path_length(72, 144)
    gamma2, reset2, patience, check, check_last = path_stop_rule(72, 144, 4, K)
    _, norms_full = model._run_path(Y, K, (gamma2, reset2, K + 1), **OPTIONS)
    ends = _ends(norms_full, gamma2, reset2, patience, check, check_last)
    scale = norms_full[:, :, 0].max(axis=1)
    E = ((norms_full / scale[:, None, None]) ** 2).sum(axis=1)
    n_sig_full = signal_steps(E, 72, 144, 4, K, stopping.ALPHA, False)
    res = model.decode(Y, tol="auto", return_result=True)
    inside = n_sig_full <= ends
    assert inside.mean() > 0.8
    np.testing.assert_array_equal(res.extra["n_signal"][inside], n_sig_full[inside])
    # the kept atoms are a prefix of the path, and the fit is the decoder's own
    for b in (0, 5, 17):
        n = int(res.n_iter[b])
        assert np.all((res.extra["atoms"][b] >= 0).sum(axis=1) == n)
        if n:
            np.testing.assert_allclose(res.x[b], model.decode(Y[b], n_nonzero=n),
                                       rtol=1e-7, atol=1e-9)  # fmt: skip


def test_auto_does_not_depend_on_batch_or_threads(model, rng):
    Y = _problems(model, rng, B=70)
    ref = model.decode(Y, tol="auto", return_result=True, n_threads=1)
    two = model.decode(Y, tol="auto", return_result=True, n_threads=2)
    np.testing.assert_array_equal(two.x, ref.x)
    np.testing.assert_array_equal(two.n_iter, ref.n_iter)
    np.testing.assert_array_equal(two.extra["sigma_hat"], ref.extra["sigma_hat"])
    part = model.decode(Y[30:33], tol="auto", return_result=True)
    np.testing.assert_array_equal(part.x, ref.x[30:33])
    for b in (0, 31, 69):
        one = model.decode(Y[b], tol="auto", return_result=True)
        np.testing.assert_array_equal(one.x, ref.x[b])
        assert one.extra["sigma_hat"] == ref.extra["sigma_hat"][b]
        assert one.n_iter == ref.n_iter[b]


def test_auto_runs_fewer_steps_than_the_old_half_path(model, rng):
    """The point of the kernel's path end: most problems stop well before ceil(M/2)."""
    Y = _problems(model, rng, B=20, sigma=0.005)
    K = path_length(72, 144)
    atoms, _ = model._run_path(Y, K, path_stop_rule(72, 144, 4, K), **OPTIONS)
    steps = (atoms[:, 0, :] >= 0).sum(axis=1)
    assert np.median(steps) < 30


def test_auto_edge_cases(model, rng):
    assert model.decode(np.zeros((0, 72, 4)), tol="auto").shape == (0, 144, 4)
    zero = model.decode(np.zeros((2, 72, 4)), tol="auto", return_result=True)
    assert not zero.x.any() and np.all(zero.n_iter == 0)
    Y = _problems(model, rng, B=4)
    capped = model.decode(Y, tol="auto", n_nonzero=3, return_result=True)
    assert np.all(capped.n_iter <= 3)
    f32 = model.decode(Y.astype(np.float32), tol="auto")
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32, model.decode(Y, tol="auto"), rtol=1e-4, atol=1e-5)


def test_rule_arguments_are_checked(model, rng):
    Y = _problems(model, rng, B=2)
    g, r, *_ = path_stop_rule(72, 144, 4, 71)
    with pytest.raises(ValueError, match="rrt gamma2"):
        model._run_path(Y, 71, (g[:5], r, 3), **OPTIONS)
    with pytest.raises(ValueError, match="patience"):
        model._run_path(Y, 71, (g, r, 0), **OPTIONS)
    with pytest.raises(ValueError, match="check"):
        model._run_path(Y, 71, (g, r, 3, -1, 0), **OPTIONS)
    with pytest.raises(ValueError, match="rrt must be"):
        model._run_path(Y, 71, (g, r, 3, 5), **OPTIONS)


def test_blstm_shares_the_kernel_path_end(rng):
    names = [n for n, _ in cscore.list_pretrained() if "blstm" in n]
    model = cscore.pretrained(names[0])
    M, N, L = model.M, model.N, model.L
    A = np.asarray(model.A)
    S = np.zeros((10, N, L))
    for b in range(10):
        for c in range(L):
            S[b, rng.choice(N, 4, replace=False), c] = rng.standard_normal(4)
    Y = np.einsum("mn,bnl->bml", A, S) + 0.005 * rng.standard_normal((10, M, L))
    res = model.decode(Y, tol="auto", return_result=True)
    for b in (0, 9):
        one = model.decode(Y[b], tol="auto")
        np.testing.assert_array_equal(one, res.x[b])
        n = int(res.n_iter[b])
        if n:
            np.testing.assert_allclose(res.x[b], model.decode(Y[b], n_nonzero=n),
                                       rtol=1e-7, atol=1e-9)  # fmt: skip
