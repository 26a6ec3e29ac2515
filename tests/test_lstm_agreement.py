"""The PyTorch training forward and the C++ decoder's forward compute the same model.

Weights go through the model file (as a trained model would), then the torch
forward used in training and the compiled forward used in decoding run on the
same inputs; the greedy decode driven by torch logits picks the same atoms as
the C++ decoder.
"""

from __future__ import annotations

import numpy as np
import pytest

from cscore.decoders.learned import LSTMCSWeights
from cscore.decoders.learned._greedy import normalize_maxabs
from cscore.decoders.learned.lstm import LSTMCS, lstm_logits_native
from cscore.problem import ProblemSpec

from conftest import requires_torch


def _weights(rng: np.random.Generator, cell: str, M: int, N: int, H: int) -> LSTMCSWeights:
    G = 3 if cell == "paper" else 4
    return LSTMCSWeights(
        W=rng.normal(size=(G * H, M)) / np.sqrt(M),
        R=rng.normal(size=(G * H, H)) / np.sqrt(H),
        b=rng.normal(size=G * H) * 0.1,
        U=rng.normal(size=(N, H)),
        c_out=rng.normal(size=N) * 0.1,
        cell=cell,
    )


@requires_torch
@pytest.mark.parametrize("cell", ["paper", "lstm"])
def test_torch_forward_equals_cpp_forward(tmp_path, rng, cell):
    import torch

    from cscore.training.lstm import torch_logits

    M, N, L, H = 10, 24, 3, 16
    A = rng.normal(size=(M, N))
    LSTMCS(_weights(rng, cell, M, N, H), A, ProblemSpec(M=M, N=N, L=L)).save(tmp_path / "m.npz")
    w = LSTMCS.load(tmp_path / "m.npz").weights
    X = normalize_maxabs(rng.normal(size=(7 * L, M))).reshape(7, L, M)
    params = {
        k: torch.from_numpy(np.asarray(getattr(w, k), np.float64))
        for k in ("W", "R", "b", "U", "c_out")
    }
    ref = torch_logits(params, torch.from_numpy(X), cell).numpy()
    got64 = lstm_logits_native(w, X, dtype=np.float64)
    got32 = lstm_logits_native(w, X, dtype=np.float32)
    np.testing.assert_allclose(got64, ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got32, ref, atol=2e-5 * np.abs(ref).max())


@requires_torch
def test_torch_driven_greedy_decode_picks_cpp_atoms(rng):
    """Algorithm 2 with torch logits and numpy least squares == LSTMCS.decode."""
    import torch

    from cscore.training.lstm import torch_logits

    M, N, L, H, k = 12, 30, 3, 20, 4
    A = rng.normal(size=(M, N))
    w = _weights(rng, "paper", M, N, H)
    model = LSTMCS(w, A, ProblemSpec(M=M, N=N, L=L))
    Y = rng.normal(size=(M, L))
    params = {
        k_: torch.from_numpy(np.asarray(getattr(model.weights, k_), np.float64))
        for k_ in ("W", "R", "b", "U", "c_out")
    }
    supports: list[list[int]] = [[] for _ in range(L)]
    R = Y.copy()
    for _ in range(k):
        # Channel j's input is its own residual, which only channel j's refit
        # changes; so one forward over the residuals at the start of the
        # iteration is the step-by-step recurrence of Algorithm 2.
        X = normalize_maxabs(R.T)[None]
        z = torch_logits(params, torch.from_numpy(X), "paper").numpy()[0]
        for j in range(L):
            z[j, supports[j]] = -np.inf
            supports[j].append(int(np.argmax(z[j])))
            coef, *_ = np.linalg.lstsq(A[:, supports[j]], Y[:, j], rcond=None)
            R[:, j] = Y[:, j] - A[:, supports[j]] @ coef
    res = model._with_kernel_options(lstm_dtype=np.float64).decode(
        Y, n_nonzero=k, return_result=True)
    for j in range(L):
        assert set(np.flatnonzero(res.support[:, j])) == set(supports[j])
