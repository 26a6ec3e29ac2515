"""Set-up and bookkeeping steps of the LSTM-CS training loop (used by :mod:`.lstm`).

* :func:`checked_sequences` -- the checks on the training and validation data;
* :func:`starting_params` -- random initial parameters, or the weights to continue from;
* :func:`make_optimizer` and :func:`nesterov_momentum` -- the optimizer and the
  paper's momentum schedule;
* :class:`Clock` -- the wall-clock and CPU-time budgets;
* :class:`Progress` -- the optional tqdm bar.

The epoch, validation and early-stopping steps, which need the forward pass,
are in :mod:`.lstm` next to :func:`~cscore.training.lstm.fit_sequences`.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..decoders.learned.weights import CELL_GATES, BLSTMCSWeights, LSTMCSWeights
from .sequences import IGNORE

if TYPE_CHECKING:
    from .lstm_config import TrainConfig

__all__ = [
    "Clock",
    "Progress",
    "checked_sequences",
    "init_params",
    "make_optimizer",
    "nesterov_momentum",
    "starting_params",
]


def init_params(torch: Any, M: int, N: int, H: int, G: int, gen: Any, dtype: Any,
                output_bias: bool, arch: str = "lstm") -> dict[str, Any]:
    """Random LSTM-CS parameters in the contract layout of :mod:`~cscore.decoders.learned.weights`.

    Parameters
    ----------
    torch : module
        The imported :mod:`torch`.
    M, N, H, G : int
        Measurements, atoms, cells and gates per cell.
    gen : torch.Generator
        Draws the weights, uniform in ``[-1/sqrt(H), 1/sqrt(H)]`` (biases are zero).
    dtype : torch.dtype
    output_bias : bool
        Whether ``c_out`` is trained (``requires_grad``).
    arch : {"lstm", "blstm"}
        "blstm" adds the backward LSTM (``Wb``, ``Rb``, ``bb``) and a (N, 2H) ``U``.

    Returns
    -------
    dict of str to torch.Tensor
    """
    s = 1.0 / math.sqrt(H)

    def u(*shape: int) -> Any:
        return (torch.rand(*shape, generator=gen, dtype=dtype) * 2 - 1) * s

    params = {
        "W": u(G * H, M),
        "R": u(G * H, H),
        "b": torch.zeros(G * H, dtype=dtype),
        "U": u(N, H),
        "c_out": torch.zeros(N, dtype=dtype),
    }
    if arch == "blstm":
        params.update({"Wb": u(G * H, M), "Rb": u(G * H, H),
                       "bb": torch.zeros(G * H, dtype=dtype), "U": u(N, 2 * H)})
    for k, p in params.items():
        p.requires_grad_(k != "c_out" or output_bias)
    return params


def checked_sequences(
    X_train: np.ndarray, T_train: np.ndarray, X_val: np.ndarray, T_val: np.ndarray, N: int
) -> tuple[np.ndarray, np.ndarray]:
    """Check the data of :func:`~cscore.training.lstm.fit_sequences`.

    Parameters
    ----------
    X_train, T_train, X_val, T_val : ndarray
        Inputs (n, L, M) and targets (n, L) of training and validation.
    N : int
        Atoms: every target must be in ``[0, N)`` or :data:`IGNORE`.

    Returns
    -------
    X_train, X_val : ndarray float32

    Raises
    ------
    ValueError
        Mismatched shapes, no sequences, or targets out of range.
    """
    X_train = np.asarray(X_train, dtype=np.float32)
    X_val = np.asarray(X_val, dtype=np.float32)
    if X_train.ndim != 3 or X_val.ndim != 3 or X_train.shape[1:] != X_val.shape[1:]:
        raise ValueError(
            f"X_train and X_val must be (n, L, M) alike; got {X_train.shape}, {X_val.shape}"
        )
    if T_train.shape != X_train.shape[:2] or T_val.shape != X_val.shape[:2]:
        raise ValueError("targets must be (n, L) matching the inputs")
    if X_train.shape[0] == 0 or X_val.shape[0] == 0:
        raise ValueError("need at least one training and one validation sequence")
    for name, t in (("T_train", T_train), ("T_val", T_val)):
        if t.max() >= N or t.min() < IGNORE:
            raise ValueError(f"{name} holds atom indices outside [0, {N})")
    return X_train, X_val


def starting_params(torch: Any, cfg: TrainConfig, M: int, N: int, gen: Any,
                    init: LSTMCSWeights | BLSTMCSWeights | None) -> dict[str, Any]:
    """The parameters training starts from: :func:`init_params`, overwritten by ``init``.

    The random draw happens in both cases, so ``gen`` ends in the same state.

    Parameters
    ----------
    torch : module
    cfg : TrainConfig
        Architecture, cell type, cells and ``output_bias``.
    M, N : int
        Measurements and atoms.
    gen : torch.Generator
    init : LSTMCSWeights or BLSTMCSWeights, optional
        Weights to continue from.

    Returns
    -------
    dict of str to torch.Tensor (float32)

    Raises
    ------
    ValueError
        ``init`` is of another architecture, cell type or size than ``cfg``.
    """
    G = len(CELL_GATES[cfg.cell])
    params = init_params(torch, M, N, cfg.n_cells, G, gen, torch.float32, cfg.output_bias,
                         cfg.arch)
    if init is None:
        return params
    init_arch = "blstm" if isinstance(init, BLSTMCSWeights) else "lstm"
    if init.cell != cfg.cell or init.n_cells != cfg.n_cells or init_arch != cfg.arch:
        raise ValueError(
            f"init weights are arch={init_arch!r}, cell={init.cell!r}, H={init.n_cells}; "
            f"the config says arch={cfg.arch!r}, cell={cfg.cell!r}, H={cfg.n_cells}"
        )
    init.validate(M, N)
    with torch.no_grad():
        for k, p in params.items():
            p.copy_(torch.from_numpy(np.asarray(getattr(init, k), dtype=np.float32)))
    return params


def make_optimizer(torch: Any, cfg: TrainConfig, trainable: list[Any]) -> Any:
    """The optimizer of ``cfg``, at its step size ``cfg.step_size``.

    Parameters
    ----------
    torch : module
    cfg : TrainConfig
        ``optimizer`` "adam" (with ``weight_decay``) or "nesterov" (SGD with
        Nesterov momentum 0.9, changed during training by :func:`nesterov_momentum`).
    trainable : list of torch.Tensor

    Returns
    -------
    torch.optim.Optimizer
    """
    if cfg.optimizer == "adam":
        return torch.optim.Adam(trainable, lr=cfg.step_size, weight_decay=cfg.weight_decay)
    return torch.optim.SGD(trainable, lr=cfg.step_size, momentum=0.9, nesterov=True)


def nesterov_momentum(update: int, total_updates: int) -> float:
    """The paper's momentum schedule.

    Parameters
    ----------
    update : int
        Updates done so far.
    total_updates : int
        Updates of a run that uses all its epochs.

    Returns
    -------
    float
        0.9 during the first and last 10% of the updates, 0.995 in between.
    """
    frac = update / max(total_updates, 1)
    return 0.9 if (frac < 0.1 or frac >= 0.9) else 0.995


class Clock:
    """Wall-clock and CPU time since the start of training, against the budgets of a config.

    Parameters
    ----------
    cfg : TrainConfig
        Its ``max_seconds`` and ``max_cpu_seconds`` (None: no limit).
    """

    def __init__(self, cfg: TrainConfig) -> None:
        self.max_seconds = cfg.max_seconds
        self.max_cpu_seconds = cfg.max_cpu_seconds
        self.t0 = time.perf_counter()
        self.cpu0 = time.process_time()

    def seconds(self) -> float:
        """Wall-clock seconds since the clock started."""
        return time.perf_counter() - self.t0

    def cpu_seconds(self) -> float:
        """CPU seconds of this process since the clock started."""
        return time.process_time() - self.cpu0

    def out_of_time(self) -> bool:
        """Whether either budget is spent."""
        return (self.max_seconds is not None and self.seconds() > self.max_seconds) or (
            self.max_cpu_seconds is not None and self.cpu_seconds() > self.max_cpu_seconds)


class Progress:
    """The optional tqdm bar: one tick per minibatch, the losses in its postfix.

    Parameters
    ----------
    enabled : bool
        False: every method does nothing (and tqdm is not imported).
    total : int
        Minibatches of a run that uses all its epochs.
    """

    def __init__(self, enabled: bool, total: int) -> None:
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="LSTM-CS training", unit="batch")

    def batch(self, update: int, epoch: int, train_loss: float, val_loss: float) -> None:
        """Tick after update number ``update`` (the postfix every 20 updates).

        Parameters
        ----------
        update : int
            Updates done so far.
        epoch : int
            The current epoch, 0-based.
        train_loss, val_loss : float
            The epoch's running training loss and the last validation loss.
        """
        if self.bar is not None:
            self.bar.update(1)
            if update % 20 == 0:
                self.bar.set_postfix(epoch=epoch + 1, train=f"{train_loss:.3f}",
                                     val=f"{val_loss:.3f}")

    def epoch(self, entry: dict[str, Any]) -> None:
        """Show the end-of-epoch losses of a history entry.

        Parameters
        ----------
        entry : dict
            ``epoch`` (1-based), ``train_loss``, ``val_loss`` and ``val_acc``.
        """
        if self.bar is not None:
            self.bar.set_postfix(epoch=entry["epoch"], train=f"{entry['train_loss']:.3f}",
                                 val=f"{entry['val_loss']:.3f}", acc=f"{entry['val_acc']:.3f}")

    def close(self) -> None:
        """Close the bar."""
        if self.bar is not None:
            self.bar.close()
