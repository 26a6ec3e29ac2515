"""OMP/SOMP ``tol="auto"``: the compiled path ends early (cpp/include/cscore/path_end.hpp)."""

from __future__ import annotations

import numpy as np
import pytest

import cscore
import cscore.decoders._greedy_dense as greedy_mod  # the dense driver reads greedy_path_end
from cscore.decoders.path_stop import greedy_path_end


def _full_path(M, N, L, K, n_nonzero=None):
    """A rule that never ends the path early (patience past its end, no check step)."""
    reset2, _, _, _ = greedy_path_end(M, N, L, K, n_nonzero)
    return reset2, K + 1, 0, 0


def _mmv(rng, B, M, N, L, k, sigma):
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    X = np.zeros((B, N, L))
    for b in range(B):
        X[b, rng.choice(N, k, replace=False)] = rng.standard_normal((k, L))
    return A, X, np.einsum("mn,bnl->bml", A, X) + sigma * rng.standard_normal((B, M, L))


@pytest.mark.parametrize("M,N,L,k,sigma", [(64, 256, 4, 10, 0.05), (48, 96, 2, 6, 0.01),
                                           (64, 256, 1, 12, 0.02), (128, 512, 1, 5, 0.1)])
def test_early_end_keeps_the_full_paths_answer(monkeypatch, M, N, L, k, sigma):
    rng = np.random.default_rng(M + N + L + k)
    A, X, Y = _mmv(rng, 120, M, N, L, k, sigma)

    def run():
        if L == 1:  # OMP: one column per problem
            return np.asarray(cscore.omp(A, Y[:, :, 0].T, tol="auto")).T[:, :, None]
        return np.asarray(cscore.somp(A, Y, tol="auto"))

    early = run()
    monkeypatch.setattr(greedy_mod, "greedy_path_end", _full_path)
    full = run()
    same = np.all(early == full, axis=(1, 2))
    assert same.mean() >= 0.9, same.mean()
    err = lambda Z: np.mean(np.sum((Z - X) ** 2, (1, 2)) / np.sum(X**2, (1, 2)))  # noqa: E731
    assert err(early) <= 1.05 * err(full) + 1e-12


def test_early_end_is_batch_and_thread_independent():
    rng = np.random.default_rng(3)
    A, _, Y = _mmv(rng, 40, 64, 256, 4, 10, 0.05)
    ref = cscore.somp(A, Y, tol="auto", n_threads=1, return_result=True)
    two = cscore.somp(A, Y, tol="auto", n_threads=2, return_result=True)
    np.testing.assert_array_equal(two.x, ref.x)
    np.testing.assert_array_equal(two.extra["sigma_hat"], ref.extra["sigma_hat"])
    for b in (0, 17, 39):
        np.testing.assert_array_equal(cscore.somp(A, Y[b], tol="auto"), ref.x[b])
    cols = Y[:, :, 0].T
    X1 = np.asarray(cscore.omp(A, cols, tol="auto"))
    np.testing.assert_array_equal(np.asarray(cscore.omp(A, cols[:, 5:9], tol="auto")), X1[:, 5:9])


def test_rule_shapes_and_check_step():
    reset2, patience, check, last = greedy_path_end(72, 144, 1, 71)
    assert reset2.shape == (71,) and np.all((reset2 > 0) & (reset2 < 1))
    assert patience >= 1 and (check, last) == (36, 24)
    # MMV: no check step (the joint support's late atoms serve single channels)
    assert greedy_path_end(72, 144, 4, 71)[2:] == (0, 0)
    # a caller's atom cap beyond ceil(M/2) moves the check step
    assert greedy_path_end(72, 144, 1, 71, n_nonzero=50)[2] == 50


def test_bad_path_end_is_refused():
    from cscore import _core

    A = np.eye(4, 8)
    Y = np.ones((1, 4, 1))
    X = np.zeros((1, 8, 1))
    outs = (X, np.zeros((1, 1)), np.zeros(1, np.int64), np.zeros(1, np.int8),
            np.zeros(1, np.uint8), np.zeros((1, 3), np.int64))
    t = cscore.decoders.stopping.rrt_tables(4, 8, 1, 3)
    est = (np.zeros(1), np.zeros(1), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="path_end"):
        _core._greedy_decode_auto(A, Y, *outs, *est, 3, 3, t["gamma2"], t["a"], t["lnbeta"],
                                  t["logu"], t["b"], 1, 1 << 20, path_end=(np.zeros(2), 3, 0, 0))
