"""Where each epoch's LSTM-CS training sequences come from while a run trains.

:class:`Prefetch` makes the next epoch's NumPy sequences in a thread while the
current one trains; :func:`torch_sampler` makes them with torch on the training
device instead (and with the model in the loop for rollouts,
:mod:`cscore.training._sequences_torch`).  Used by :func:`cscore.training.lstm.fit_lstm_cs`.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from .._torch import import_torch
from .lstm_config import TrainConfig

__all__ = ["Prefetch", "torch_sampler"]


class Prefetch:
    """``make(epoch)`` for epochs 0..``last``, each made in a thread while the one before trains.

    ``make`` must depend on ``epoch`` alone (as :func:`sequences_for_epoch`
    with a per-epoch seed does): calling ``self(epoch)`` returns what
    ``make(epoch)`` returns, and starts ``make(epoch + 1)`` in the background.
    NumPy releases the GIL in its array loops, so the next epoch's sequences are
    made while torch trains on this one.  Use as a context manager: leaving it
    drops a prefetch that early stopping left unused.
    """

    def __init__(self, make: Callable[[int], tuple[np.ndarray, np.ndarray]], last: int) -> None:
        self.make = make
        self.last = last
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cscore-sequences")
        self.pending: dict[int, Future[tuple[np.ndarray, np.ndarray]]] = {}

    def __call__(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        fut = self.pending.pop(epoch, None)
        out = fut.result() if fut is not None else self.make(epoch)
        if epoch < self.last and epoch + 1 not in self.pending:
            self.pending[epoch + 1] = self.pool.submit(self.make, epoch + 1)
        return out

    def __enter__(self) -> Prefetch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pending.clear()
        self.pool.shutdown(wait=False, cancel_futures=True)


def torch_sampler(
    A: np.ndarray, S_train: np.ndarray, T: int, sigma: float, k_range: tuple[int, int] | None,
    problems_per_epoch: int | None, cfg: TrainConfig, rollout: float,
) -> tuple[np.ndarray, np.ndarray, Callable[[int, Callable[[Any], Any]], tuple[Any, Any]]]:
    """The first epoch's sequences (NumPy) and the torch sampler of the later ones."""
    torch = import_torch()
    from ._sequences_torch import torch_epoch_sequences

    gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed * 1000 + 7)
    At = torch.as_tensor(A, dtype=torch.float64, device=cfg.device)
    St = torch.as_tensor(S_train, dtype=torch.float32, device=cfg.device)

    def sample(epoch: int, logits: Callable[[Any], Any] | None) -> tuple[Any, Any]:
        frac = rollout if (epoch and logits is not None) else 0.0
        return torch_epoch_sequences(torch, At, St, T, sigma, k_range, problems_per_epoch, gen,
                                     policy=logits, rollout=frac)

    X0, T0 = sample(0, None)
    return X0.cpu().numpy(), T0.cpu().numpy(), sample
