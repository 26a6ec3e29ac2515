"""Training NWSOMP's network with PyTorch (imported only when called).

The network (see :mod:`cscore.decoders.learned.nwsomp`) is trained per channel with the
cross-entropy against the next true atom, on the LSTM-CS training sequences
(:mod:`cscore.training.sequences`), with Adam, fresh sequences every epoch
(random sparsity in ``k_range``, fresh noise) and early stopping on the
validation loss.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._torch import import_torch
from .interrupt import TrainingInterrupted
from .sequences import flat_steps, sequences_for_epoch

__all__ = ["NWSOMPTrainResult", "fit_nwsomp"]


@dataclass
class NWSOMPTrainResult:
    """Weights (float32 dict W1, b1, W2, b2), per-epoch log and settings."""

    weights: dict[str, np.ndarray]
    history: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)


def _progress(epochs: int, show: bool) -> Any:
    """A tqdm bar over the epochs (train/validation loss and accuracy as its postfix)."""
    from tqdm.auto import tqdm

    return tqdm(total=epochs, desc="NWSOMP", unit="epoch", disable=not show, leave=True)


def fit_nwsomp(
    S_train: np.ndarray,
    S_val: np.ndarray,
    A: np.ndarray,
    *,
    n_hidden: int = 512,
    n_steps: int | None = None,
    k_range: tuple[int, int] | None = None,
    sigma: float = 0.005,
    problems_per_epoch: int | None = None,
    epochs: int = 25,
    lr: float = 1e-3,
    batch_size: int = 256,
    patience: int = 3,
    seed: int = 0,
    n_threads: int | None = None,
    max_seconds: float | None = None,
    verbose: bool = False,
) -> NWSOMPTrainResult:
    """Train NWSOMP's one-hidden-layer network.

    Parameters
    ----------
    S_train, S_val : ndarray (P, N, L)
        Ground truths (dense when ``k_range`` re-sparsifies them).
    A : ndarray (M, N)
    n_hidden : int, default 512
        Hidden units (the paper: 512).
    n_steps : int, optional
        Greedy steps per training problem (default ``k_range[1]`` or ``M // 4``).
    k_range : (int, int), optional
        Random sparsity per problem and epoch.
    sigma : float, default 0.005
    problems_per_epoch : int, optional
        Random subset of training problems per epoch.
    epochs : int, default 25
        Maximum epochs (the paper: 25).
    lr : float, default 1e-3
        Adam step (halved when the validation loss does not improve).
    batch_size : int, default 256
    patience : int, default 3
        Epochs without validation improvement before stopping.
    seed : int, default 0
    n_threads : int, optional
        torch threads.
    max_seconds : float, optional
        Wall-clock budget.
    verbose : bool, default False
        Show a progress bar over the epochs (train and validation loss, accuracy).

    Returns
    -------
    NWSOMPTrainResult
        The best (validation loss) weights.
    """
    torch = import_torch()
    if n_threads is not None:
        torch.set_num_threads(int(n_threads))
    for name, v in (("n_hidden", n_hidden), ("epochs", epochs), ("batch_size", batch_size)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    t0 = time.perf_counter()
    A = np.asarray(A, dtype=np.float64)
    M, N = A.shape
    T = n_steps if n_steps is not None else (k_range[1] if k_range else max(1, M // 4))
    S_train = np.asarray(S_train, dtype=np.float64)
    S_val = np.asarray(S_val, dtype=np.float64)
    Xv, tv = flat_steps(*sequences_for_epoch(A, S_val, T, sigma, k_range, None, seed * 1000 + 999))
    Xv_t, tv_t = torch.from_numpy(Xv), torch.from_numpy(tv)
    gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(M, n_hidden), torch.nn.Sigmoid(),
                              torch.nn.Linear(n_hidden, N))
    with torch.no_grad():
        for layer in (net[0], net[2]):
            bound = 1.0 / np.sqrt(layer.in_features)
            layer.weight.uniform_(-bound, bound, generator=gen)
            layer.bias.zero_()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    lossf = torch.nn.CrossEntropyLoss()

    def val() -> tuple[float, float]:
        with torch.no_grad():
            z = net(Xv_t)
            return float(lossf(z, tv_t)), float((z.argmax(1) == tv_t).float().mean())

    def snapshot() -> dict[str, np.ndarray]:
        return {"W1": net[0].weight.detach().numpy().copy(),
                "b1": net[0].bias.detach().numpy().copy(),
                "W2": net[2].weight.detach().numpy().copy(),
                "b2": net[2].bias.detach().numpy().copy()}

    best = (val()[0], 0, snapshot())
    history: list[dict[str, float]] = []
    bad = 0
    bar = _progress(epochs, verbose)
    settings: dict[str, Any] = {
        "n_hidden": n_hidden, "n_steps": T, "k_range": list(k_range) if k_range else None,
        "sigma": sigma, "problems_per_epoch": problems_per_epoch, "epochs": epochs,
        "lr": lr, "batch_size": batch_size, "patience": patience, "seed": seed,
        "optimizer": "adam", "loss": "cross-entropy"}
    try:
        for ep in range(1, epochs + 1):
            X, tg = flat_steps(*sequences_for_epoch(A, S_train, T, sigma, k_range,
                                                    problems_per_epoch, seed * 1000 + ep))
            Xt, tt = torch.from_numpy(X), torch.from_numpy(tg)
            perm = torch.randperm(Xt.shape[0], generator=gen)
            total = 0.0
            for b0 in range(0, Xt.shape[0], batch_size):
                idx = perm[b0 : b0 + batch_size]
                opt.zero_grad()
                loss = lossf(net(Xt[idx]), tt[idx])
                loss.backward()
                opt.step()
                total += float(loss.detach()) * idx.numel()
            vl, va = val()
            history.append({"epoch": ep, "train_loss": total / Xt.shape[0], "val_loss": vl,
                            "val_acc": va, "seconds": time.perf_counter() - t0})
            bar.update(1)
            bar.set_postfix(train=f"{total / Xt.shape[0]:.3f}", val=f"{vl:.3f}",
                            acc=f"{va:.3f}")
            if vl < best[0]:
                best = (vl, ep, snapshot())
                bad = 0
            else:
                bad += 1
                for g in opt.param_groups:
                    g["lr"] *= 0.5
                if bad > patience:
                    break
            if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
                break
    except KeyboardInterrupt as exc:  # Ctrl-C: hand back the best epoch so far
        if best[1] == 0:
            raise TrainingInterrupted() from exc
        settings["interrupted"] = True
        raise TrainingInterrupted(
            NWSOMPTrainResult(weights=best[2], history=history, best_epoch=best[1],
                              seconds=time.perf_counter() - t0, settings=settings),
            best[1]) from exc
    finally:
        bar.close()
    return NWSOMPTrainResult(weights=best[2], history=history, best_epoch=best[1],
                             seconds=time.perf_counter() - t0, settings=settings)
