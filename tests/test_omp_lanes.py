"""Batch- and thread-independence of the OMP kernel, problem by problem.

The AVX2 kernel handles the problems of a chunk in groups (two at a time at the
end of plain OMP, and the final step of a capped path is skipped); a problem's
result must never depend on its neighbours, its place in the batch or the thread
count.  These tests decode batches whose sizes are not multiples of 2, 4 or the
chunk size and compare every problem with its solo decode, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import cscore
from cscore.result import DecodeResult


def _mixed_batch(rng: np.random.Generator, M: int, N: int, B: int) -> tuple[np.ndarray, np.ndarray]:
    """A (M, N) with two duplicated columns and B measurement vectors of mixed kinds.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the random draws.
    M, N : int
        Dictionary shape.
    B : int
        Number of problems.

    Returns
    -------
    A : numpy.ndarray, shape (M, N)
        The dictionary; column 7 repeats column 3, column N - 1 repeats column 11.
    Y : numpy.ndarray, shape (M, B)
        Sparse (k = 2..9) with and without noise, pure noise, zero vectors, vectors
        on duplicated atoms (dependent atoms stop the path early) and one huge and
        one tiny (rescaled) vector.
    """
    A = rng.standard_normal((M, N))
    A[:, 7] = A[:, 3]
    A[:, N - 1] = A[:, 11]
    Y = np.empty((M, B))
    for b in range(B):
        kind = b % 6
        if kind == 0:
            Y[:, b] = 0.0
        elif kind == 1:
            Y[:, b] = rng.standard_normal(M)
        elif kind == 2:
            Y[:, b] = 2.0 * A[:, 3] - A[:, N - 1]
        else:
            k = 2 + b % 8
            atoms = rng.choice(N, size=k, replace=False)
            Y[:, b] = A[:, atoms] @ rng.standard_normal(k)
            if kind == 4:
                Y[:, b] += 1e-3 * rng.standard_normal(M)
    Y[:, 5] *= 1e200
    Y[:, 10] *= 1e-200
    return A, Y


def _assert_problem_equal(batch: DecodeResult, b: int, solo: DecodeResult) -> None:
    """Problem b of a batch result equals a one-problem result, bit for bit."""
    np.testing.assert_array_equal(batch.x[:, b], solo.x[:, 0])
    np.testing.assert_array_equal(batch.residual_norm[b], solo.residual_norm[0])
    np.testing.assert_array_equal(batch.n_iter[b], solo.n_iter[0])
    assert batch.stop_reason[b] == solo.stop_reason[0]
    np.testing.assert_array_equal(batch.extra["atoms"][b], solo.extra["atoms"][0])


@pytest.mark.parametrize(
    ("B", "settings"),
    [
        (71, {"n_nonzero": 12}),  # two chunks of 32 and 7: 7 = 4 + 2 + 1
        (39, {"n_nonzero": 20}),  # n_nonzero = M: paths that reach min(M, N)
        (37, {"tol": 1e-2}),
        (37, {"tol": 1e-2, "n_nonzero": 5}),
    ],
)
def test_every_problem_of_a_batch_equals_its_solo_decode(rng, B, settings):
    A, Y = _mixed_batch(rng, 20, 64, B)
    assert B % 4 != 0
    batch = cscore.omp(A, Y, return_result=True, n_threads=1, **settings)
    for b in range(B):
        solo = cscore.omp(A, Y[:, b : b + 1], return_result=True, n_threads=1, **settings)
        _assert_problem_equal(batch, b, solo)
    # the stops are mixed: some paths end early on a dependent atom or a zero vector
    assert len(set(batch.n_iter.tolist())) > 1
    # and neither the thread count nor a cut of the batch changes a bit
    threaded = cscore.omp(A, Y, return_result=True, n_threads=2, **settings)
    np.testing.assert_array_equal(threaded.x, batch.x)
    np.testing.assert_array_equal(threaded.residual_norm, batch.residual_norm)
    cut = B // 2 + 1
    for part, offset in ((Y[:, :cut], 0), (Y[:, cut:], cut)):
        res = cscore.omp(A, part, return_result=True, n_threads=1, **settings)
        span = slice(offset, offset + part.shape[1])
        np.testing.assert_array_equal(res.x, batch.x[:, span])
        np.testing.assert_array_equal(res.extra["atoms"], batch.extra["atoms"][span])


def test_batch_of_the_benchmark_shape_equals_solo_decodes(rng):
    # The benchmark's shape (72 x 144, k = 20) on an odd batch, 20 atoms each.
    A = rng.standard_normal((72, 144))
    A /= np.linalg.norm(A, axis=0)
    B = 67
    Y = np.zeros((72, B))
    for b in range(B):
        atoms = rng.choice(144, size=20, replace=False)
        Y[:, b] = A[:, atoms] @ rng.standard_normal(20)
    batch = cscore.omp(A, Y, n_nonzero=20, return_result=True, n_threads=1)
    for b in range(B):
        solo = cscore.omp(A, Y[:, b : b + 1], n_nonzero=20, return_result=True, n_threads=1)
        _assert_problem_equal(batch, b, solo)
