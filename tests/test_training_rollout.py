"""Training sequences made with torch (GPU path) and rollouts on the model's own path."""

from __future__ import annotations

import numpy as np
import pytest

from cscore.datasets import gaussian_matrix
from cscore.training.sequences import IGNORE, training_sequences

from conftest import requires_torch

pytestmark = [pytest.mark.slow, requires_torch]


def _problems(P: int = 40, N: int = 40, L: int = 3, kmax: int = 7, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    S = np.zeros((P, N, L))
    for p in range(P):
        for j in range(L):
            k = int(rng.integers(1, kmax + 1))
            S[p, rng.choice(N, k, replace=False), j] = rng.standard_normal(k)
    return S


def test_torch_sequences_equal_the_numpy_ones_where_there_is_a_target():
    import torch

    from cscore.training._sequences_torch import torch_epoch_sequences

    A = gaussian_matrix(20, 40, 1)
    S = _problems()
    X1, T1 = training_sequences(A, S, n_steps=10, sigma=0.0)
    X2, T2 = torch_epoch_sequences(torch, torch.tensor(A), torch.tensor(S), 10, 0.0, None, None,
                                   torch.Generator().manual_seed(0))
    assert np.array_equal(T1, T2.numpy())
    valid = T1 != IGNORE  # a channel with no atom left has a ~0 residual: roundoff only
    np.testing.assert_allclose(X2.numpy()[valid], X1[valid], atol=1e-6)


def test_rollouts_follow_the_policy_and_target_the_remaining_true_atoms():
    import torch

    from cscore.training._sequences_torch import torch_epoch_sequences

    M, N, L, T = 20, 40, 3, 8
    A = gaussian_matrix(M, N, 2)
    S = _problems(P=30, N=N, L=L, kmax=6, seed=3)
    At, St = torch.tensor(A), torch.tensor(S)

    def lowest_index(X):  # a poor policy: always the lowest free index
        return -torch.arange(N, dtype=torch.float32).expand(X.shape[0], X.shape[1], N)

    Xt, _ = torch_epoch_sequences(torch, At, St, T, 0.0, None, None,
                                   torch.Generator().manual_seed(1))
    Xr, _ = torch_epoch_sequences(torch, At, St, T, 0.0, None, None,
                                   torch.Generator().manual_seed(1), policy=lowest_index,
                                   rollout=1.0)
    assert Xr.shape != Xt.shape or not np.allclose(Xr.numpy(), Xt.numpy())
    for p in range(S.shape[0]):  # one problem at a time: its rows are its steps
        _, Tp = torch_epoch_sequences(torch, At, St[p:p + 1], T, 0.0, None, None,
                                      torch.Generator().manual_seed(1), policy=lowest_index,
                                      rollout=1.0)
        for t in range(Tp.shape[0]):
            for j in range(L):
                # the policy took atoms 0..t-1; the target is the largest true atom left
                left = [i for i in np.flatnonzero(S[p, :, j]) if i >= t]
                want = max(left, key=lambda i: (abs(S[p, i, j]), -i)) if left else IGNORE
                assert Tp[t, j] == want


def test_rollout_training_learns_and_checks_its_settings():
    from cscore.training.lstm import TrainConfig, fit_lstm_cs

    A = gaussian_matrix(16, 32, 4)
    rng = np.random.default_rng(5)
    S = np.zeros((300, 32, 2))
    for p in range(300):  # every channel's atoms come from a small pool: learnable
        for j in range(2):
            S[p, rng.choice(6, 3, replace=False) + 6 * j, j] = 1.0 + rng.random(3)
    cfg = TrainConfig(n_cells=16, max_epochs=6, batch_size=64, progress=False, n_threads=1,
                      lr=1e-2)
    res = fit_lstm_cs(S[:250], S[250:], A, n_steps=4, sigma=0.01, config=cfg, rollout=0.5)
    assert res.extra["rollout"] == 0.5
    assert min(h["val_loss"] for h in res.history) < 0.7 * res.extra["initial_val_loss"]
    with pytest.raises(ValueError, match="rollout"):
        fit_lstm_cs(S[:250], S[250:], A, n_steps=4, config=cfg, rollout=1.5)
    with pytest.raises(ValueError, match="device"):
        TrainConfig(device="")
