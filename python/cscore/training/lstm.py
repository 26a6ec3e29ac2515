"""Training LSTM-CS models with PyTorch (the optional ``train`` extra).

This is the only cscore module that imports :mod:`torch`, and only when a
function here is called (``pip install "cscore-decoders[train]"``).

The model is the paper's: one LSTM layer unrolled over the L channels (no
peepholes; no forget gate for ``cell="paper"``), zero state at channel 0,
``z = U v + c_out`` and a softmax over the N atoms, trained with the
cross-entropy against the true next atom (section 4.3.2, see
:mod:`cscore.training.sequences`).  The torch parameters are stored directly
in the contract layout of :mod:`cscore.decoders.learned.weights` (``W`` (G*H, M), ``R``
(G*H, H), ``b``, ``U`` (N, H), ``c_out``), so export is a plain copy.

``TrainConfig(arch="blstm")`` trains the bidirectional model of section 4.6
instead: a second LSTM (``Wb``, ``Rb``, ``bb``) runs over the channels in
reverse and ``U`` is (N, 2H), applied to ``[v_fwd; v_bwd]`` at every channel
(:class:`~cscore.decoders.learned.weights.BLSTMCSWeights`).  Same data, loss and optimizers.

Optimizers
----------
* ``"adam"`` (default): Adam on the mean cross-entropy, learning rate halved
  whenever the validation loss does not improve.  Trains faster and better
  than the paper's recipe in our runs.
* ``"nesterov"``: the paper's recipe -- Nesterov momentum on minibatch-SUMMED
  gradients with a fixed step (3e-4), mu = 0.9 for the first and last 10% of
  updates and 0.995 in between.

Both clip every gradient entry to ``[-clip, clip]`` (the paper's elementwise
clipping) and stop early when the validation loss has not improved for
``patience`` epochs, returning the best weights seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._torch import import_torch
from ..decoders.learned.weights import (
    BLSTMCSWeights,
    LSTMCSWeights,
)
from ._epoch_data import Prefetch, torch_sampler
from ._lstm_steps import (
    Clock,
    Progress,
    checked_sequences,
    make_optimizer,
    nesterov_momentum,
    starting_params,
)
from ._lstm_torch import loss_and_accuracy, torch_logits
from .interrupt import TrainingInterrupted
from .lstm_config import TrainConfig, TrainResult
from .sequences import IGNORE, sequences_for_epoch

__all__ = [
    "TrainConfig",
    "TrainResult",
    "fit_lstm_cs",
    "fit_sequences",
    "torch_logits",
    "training_info",
]


@dataclass
class _Run:
    """The state of one training run that the epoch and stopping steps update."""

    torch: Any
    cfg: TrainConfig
    N: int
    params: dict[str, Any]
    trainable: list[Any]
    opt: Any
    total_updates: int
    clock: Clock
    progress: Progress
    lr: float
    update: int = 0
    bad_epochs: int = 0
    best_loss: float = math.inf
    best_epoch: int = 0
    best_params: dict[str, Any] = field(default_factory=dict)

    def keep_best(self, val_loss: float, epoch: int) -> None:
        """Remember the current parameters as the best, reached at ``epoch``."""
        self.best_loss, self.best_epoch = val_loss, epoch
        self.best_params = {k: p.detach().clone() for k, p in self.params.items()}


def _train_step(run: _Run, xb: Any, tb: Any) -> tuple[float, int]:
    """One optimizer update on a minibatch; return its summed loss and its number of targets."""
    torch, cfg = run.torch, run.cfg
    if cfg.optimizer == "nesterov":
        mu = nesterov_momentum(run.update, run.total_updates)
        for g in run.opt.param_groups:
            g["momentum"] = mu
    z = torch_logits(run.params, xb, cfg.cell)
    red = "sum" if cfg.optimizer == "nesterov" else "mean"
    loss = torch.nn.functional.cross_entropy(
        z.reshape(-1, run.N), tb.reshape(-1), ignore_index=IGNORE, reduction=red)
    run.opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_value_(run.trainable, cfg.clip)
    run.opt.step()
    run.update += 1
    nvalid = int((tb != IGNORE).sum())
    return float(loss.detach()) * (1 if red == "sum" else nvalid), nvalid


def _train_epoch(run: _Run, X: Any, T: Any, perm: np.ndarray, epoch: int,
                 val_loss: float) -> tuple[float, bool]:
    """One pass over ``X``, ``T`` in the order ``perm``.

    Returns the mean training loss and whether the time budget cut the epoch
    short (checked before every minibatch).
    """
    torch, bs, dev = run.torch, run.cfg.batch_size, run.cfg.device
    Xt = torch.as_tensor(X, device=dev)
    Tt = torch.as_tensor(T, dtype=torch.int64, device=dev)
    order = torch.as_tensor(perm, device=dev)
    run_loss, run_n = 0.0, 0
    for i in range(0, X.shape[0], bs):
        if run.clock.out_of_time():
            return run_loss / max(run_n, 1), True
        idx = order[i : i + bs]
        lv, nvalid = _train_step(run, Xt[idx], Tt[idx])
        run_loss += lv
        run_n += nvalid
        run.progress.batch(run.update, epoch, run_loss / max(run_n, 1), val_loss)
    return run_loss / max(run_n, 1), False


def _validate(run: _Run, Xv: Any, Tv: Any, epoch: int, train_loss: float) -> dict[str, Any]:
    """The history entry of ``epoch`` (0-based): losses, accuracy, step size and times."""
    val_loss, val_acc = loss_and_accuracy(run.torch, run.params, Xv, Tv, run.cfg.cell)
    entry = {"epoch": epoch + 1, "train_loss": train_loss, "val_loss": val_loss,
             "val_acc": val_acc, "lr": run.lr, "seconds": run.clock.seconds(),
             "cpu_seconds": run.clock.cpu_seconds()}
    run.progress.epoch(entry)
    return entry


def _should_stop(run: _Run, val_loss: float, epoch: int) -> bool:
    """Early stopping after ``epoch`` (1-based): keep improved weights, else halve Adam's step.

    Returns True once the validation loss has not improved (by 1e-4) for
    ``patience`` epochs in a row.
    """
    if val_loss < run.best_loss - 1e-4:
        run.keep_best(val_loss, epoch)
        run.bad_epochs = 0
        return False
    run.bad_epochs += 1
    if run.cfg.optimizer == "adam":
        run.lr *= 0.5
        for g in run.opt.param_groups:
            g["lr"] = run.lr
    return run.bad_epochs >= run.cfg.patience


def fit_sequences(
    X_train: np.ndarray,
    T_train: np.ndarray,
    X_val: np.ndarray,
    T_val: np.ndarray,
    N: int,
    config: TrainConfig | None = None,
    *,
    resample: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None,
    init: LSTMCSWeights | BLSTMCSWeights | None = None,
    policy_resample: Callable[[int, Callable[[Any], Any]], tuple[Any, Any]] | None = None,
) -> TrainResult:
    """Train an LSTM-CS model on prepared sequences.

    Parameters
    ----------
    X_train, X_val : ndarray (n, L, M)
        Normalized residual sequences (:func:`~cscore.training.sequences.training_sequences`).
    T_train, T_val : ndarray int (n, L)
        Target atoms (or ``IGNORE``).
    N : int
        Number of atoms (softmax size).
    config : TrainConfig, optional
    resample : callable, optional
        ``resample(epoch) -> (X, T)`` gives fresh training sequences for epochs
        after the first (new noise, new pairings); None reuses ``X_train``.
    init : LSTMCSWeights or BLSTMCSWeights, optional
        Start from these weights (fine-tuning / continuing a run); their
        architecture, cell type and size must match the config.
    policy_resample : callable, optional
        Instead of ``resample``: ``policy_resample(epoch, logits)`` where
        ``logits(X)`` is the current model's forward pass (``X`` (b, L, M) ->
        (b, L, N), torch tensors on the training device), for sequences that
        follow the model's own choices (rollouts).  It may return torch tensors
        on the device.

    Returns
    -------
    TrainResult
        The best weights by validation loss, and per-epoch history.
    """
    torch = import_torch()
    cfg = config or TrainConfig()
    if resample is not None and policy_resample is not None:
        raise ValueError("give resample or policy_resample, not both")
    X_train, X_val = checked_sequences(X_train, T_train, X_val, T_val, N)
    if cfg.n_threads is not None:
        torch.set_num_threads(int(cfg.n_threads))
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    params = {k: p.detach().to(cfg.device).requires_grad_(p.requires_grad)
              for k, p in starting_params(torch, cfg, X_train.shape[2], N, gen, init).items()}
    trainable = [p for p in params.values() if p.requires_grad]
    opt = make_optimizer(torch, cfg, trainable)
    Xv = torch.as_tensor(X_val, device=cfg.device)
    Tv = torch.as_tensor(T_val, dtype=torch.int64, device=cfg.device)
    total_updates = math.ceil(X_train.shape[0] / cfg.batch_size) * cfg.max_epochs
    run = _Run(torch, cfg, N, params, trainable, opt, total_updates, Clock(cfg),
               Progress(cfg.progress, total_updates), cfg.step_size)
    run.keep_best(math.inf, 0)
    val_loss = initial_val_loss = loss_and_accuracy(torch, params, Xv, Tv, cfg.cell)[0]
    if init is not None:  # continuing: the starting point counts as epoch 0
        run.keep_best(val_loss, 0)
    history: list[dict[str, Any]] = []
    try:
        for epoch in range(cfg.max_epochs):
            if epoch and (resample is not None or policy_resample is not None):
                if policy_resample is not None:
                    X_new, T_new = policy_resample(
                        epoch, lambda X: torch_logits(run.params, X, cfg.cell))
                else:
                    assert resample is not None
                    X_new, T_new = resample(epoch)
                X_train, T_train = _as_train_arrays(torch, X_new, T_new)
            perm = rng.permutation(X_train.shape[0])
            train_loss, out_of_time = _train_epoch(run, X_train, T_train, perm, epoch, val_loss)
            history.append(_validate(run, Xv, Tv, epoch, train_loss))
            val_loss = history[-1]["val_loss"]
            if out_of_time:
                history[-1]["stopped"] = "max_seconds"
            if _should_stop(run, val_loss, epoch + 1) or out_of_time:
                break
    except KeyboardInterrupt as exc:  # Ctrl-C: hand back the best epoch so far
        if run.best_epoch == 0:
            raise TrainingInterrupted() from exc
        extra = {"initial_val_loss": initial_val_loss, "interrupted": True}
        raise TrainingInterrupted(_result(run, history, extra), run.best_epoch) from exc
    finally:
        run.progress.close()
    return _result(run, history, {"initial_val_loss": initial_val_loss})


def _as_train_arrays(torch: Any, X: Any, T: Any) -> tuple[Any, Any]:
    """Resampled sequences as float32 / int64: torch tensors stay where they are."""
    if isinstance(X, torch.Tensor):
        return X.to(torch.float32), T.to(torch.int64)
    return np.asarray(X, dtype=np.float32), np.asarray(T)


def _result(run: _Run, history: list[dict[str, Any]], extra: dict[str, Any]) -> TrainResult:
    """The :class:`TrainResult` of a finished run: its best weights as numpy arrays."""
    p = {k: v.detach().cpu().numpy().copy() for k, v in run.best_params.items()}
    weights: LSTMCSWeights | BLSTMCSWeights
    if run.cfg.arch == "blstm":
        weights = BLSTMCSWeights(**p, cell=run.cfg.cell)
    else:
        weights = LSTMCSWeights(**p, cell=run.cfg.cell)
    return TrainResult(weights=weights, history=history, best_epoch=run.best_epoch,
                       seconds=run.clock.seconds(), config=run.cfg, extra=extra)


def fit_lstm_cs(
    S_train: np.ndarray,
    S_val: np.ndarray,
    A: np.ndarray,
    *,
    n_steps: int | None = None,
    k_range: tuple[int, int] | None = None,
    sigma: float = 0.005,
    problems_per_epoch: int | None = None,
    config: TrainConfig | None = None,
    init: LSTMCSWeights | BLSTMCSWeights | None = None,
    rollout: float = 0.0,
    **config_kwargs: Any,
) -> TrainResult:
    """Make training sequences from sparse ground truths and train (no wrapping).

    Parameters
    ----------
    S_train, S_val : ndarray (P, N, L)
        Training and validation ground truths (sparse, or dense when
        ``k_range`` is given).
    A : ndarray (M, N)
        The sensing matrix the model is trained for.
    n_steps : int, optional
        Greedy steps per problem (default ``floor(M/4)``, the paper's; with
        ``k_range``, default ``k_range[1]``).
    k_range : (int, int), optional
        Re-sparsify every problem to its own random k in ``[k_min, k_max]``
        (fresh draws every epoch; validation draws are fixed).  None uses the
        ground truths as given.
    sigma : float
        Noise standard deviation (fresh noise per problem and epoch).
    problems_per_epoch : int, optional
        Random subset of the training problems per epoch (default: all).
    config : TrainConfig, optional
        Or pass its fields as keyword arguments.
    init : LSTMCSWeights or BLSTMCSWeights, optional
        Initial weights (continue a previous run).
    rollout : float, default 0
        From the second epoch on, this fraction of each epoch's problems
        follows the model's own greedy choices instead of the teacher's (the
        target stays the largest true atom not yet selected), so the network
        also learns from the states its own mistakes lead to (see
        :mod:`cscore.training._sequences_torch`).  0 is the paper's training.
        A rollout run, and any run off the CPU, makes its sequences with torch.

    Returns
    -------
    TrainResult
    """
    cfg = config or TrainConfig(**config_kwargs)
    if config is not None and config_kwargs:
        raise TypeError("give either config or keyword settings, not both")
    A = np.asarray(A, dtype=np.float64)
    S_train = np.asarray(S_train, dtype=np.float64)
    S_val = np.asarray(S_val, dtype=np.float64)
    if k_range is not None:
        k0, k1 = int(k_range[0]), int(k_range[1])
        if not 1 <= k0 <= k1:
            raise ValueError(f"k_range must satisfy 1 <= k_min <= k_max, got {k_range}")
        k_range = (k0, k1)
    T = n_steps if n_steps is not None else (k_range[1] if k_range else max(1, A.shape[0] // 4))

    if not 0.0 <= rollout <= 1.0:
        raise ValueError(f"rollout must be in [0, 1], got {rollout}")
    X_val, T_val = sequences_for_epoch(A, S_val, T, sigma, k_range, None, cfg.seed * 1000 + 999)
    fresh = k_range is not None or sigma > 0 or bool(problems_per_epoch)
    settings = {"n_steps": T, "k_range": list(k_range) if k_range else None,
                "rollout": rollout,
                "sigma": sigma, "problems_per_epoch": problems_per_epoch,
                "n_train_problems": int(S_train.shape[0]),
                "n_val_problems": int(S_val.shape[0]),
                "n_val_sequences": int(X_val.shape[0])}
    try:
        if cfg.device != "cpu" or rollout > 0:
            X_tr, T_tr, policy_resample = torch_sampler(A, S_train, T, sigma, k_range,
                                                         problems_per_epoch, cfg, rollout)
            settings["n_train_sequences_epoch0"] = int(X_tr.shape[0])
            res = fit_sequences(X_tr, T_tr, X_val, T_val, A.shape[1], cfg, init=init,
                                policy_resample=policy_resample if fresh or rollout else None)
        else:
            def make(epoch: int) -> tuple[np.ndarray, np.ndarray]:
                return sequences_for_epoch(A, S_train, T, sigma, k_range, problems_per_epoch,
                                           cfg.seed * 1000 + epoch)

            # each epoch's sequences depend on the epoch alone: make the next ones
            # while this one trains (the same arrays, sooner)
            with Prefetch(make, cfg.max_epochs - 1 if fresh else 0) as ahead:
                X_tr, T_tr = ahead(0)
                settings["n_train_sequences_epoch0"] = int(X_tr.shape[0])
                res = fit_sequences(X_tr, T_tr, X_val, T_val, A.shape[1], cfg,
                                    resample=ahead if fresh else None, init=init)
    except TrainingInterrupted as stop:  # the best weights so far keep their settings
        if stop.result is not None:
            stop.result.extra.update(settings)
        raise
    res.extra.update(settings)
    return res


def training_info(result: TrainResult, info: dict[str, Any] | None = None) -> dict[str, Any]:
    """``info`` plus the training settings, data settings and history of ``result``.

    Parameters
    ----------
    result : TrainResult
        What :func:`fit_lstm_cs` (or :func:`train_lstm_cs`) returned.
    info : dict, optional
        Provenance to keep (copied, not modified).

    Returns
    -------
    dict
        JSON-serializable metadata for :func:`save_model_file`: ``info`` plus a
        ``"training"`` entry (config, data settings, best epoch, seconds,
        rounded per-epoch history).
    """
    from dataclasses import asdict

    meta = dict(info or {})
    cfg = asdict(result.config)
    cfg.pop("progress", None)
    cfg["lr"] = result.config.step_size
    meta["training"] = {
        "config": cfg,
        "data": dict(result.extra),
        "best_epoch": result.best_epoch,
        "seconds": round(result.seconds, 1),
        "history": [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in h.items()}
                    for h in result.history],
    }
    return meta
