"""Training CDSN-CS (Palangi's thesis, section 4.7; NumPy, no torch needed).

The LSTM-CS training sequences (:mod:`cscore.training.sequences`) give, per
channel, the window input and the one-hot target of the next true atom.  Module
by module, the output weights are the ridge solution
``W2 = (mu I + H H^T)^{-1} H T^T`` (eq. 4.62, mu = 0.01) and the input weights
follow the gradient of the squared error with W2 at its closed form,
accelerated by FISTA momentum (eq. 4.64).  The first module starts from a
Gaussian-Bernoulli RBM trained by CD-1 on the inputs (eq. 4.65); module l+1
starts from module l's input weights (plus small random weights for the new
inputs).  The network itself is :class:`cscore.CDSNCS`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..decoders.learned._greedy import sigmoid as _sigmoid
from ..decoders.learned.cdsn import window_inputs, with_one
from .sequences import flat_steps, sequences_for_epoch

__all__ = [
    "CDSNTrainResult",
    "closed_form_output_weights",
    "fit_cdsn",
    "rbm_cd1_step",
    "rbm_reconstruction_error",
]


def closed_form_output_weights(H: np.ndarray, T: np.ndarray, mu: float = 0.01) -> np.ndarray:
    """Ridge output weights ``(mu I + H^T H)^{-1} H^T T`` (eq. 4.62, samples in rows).

    Parameters
    ----------
    H : ndarray (n, h)
        Hidden activations (with the constant column), one sample per row.
    T : ndarray (n, N)
        Targets.
    mu : float
        Ridge weight.

    Returns
    -------
    ndarray (h, N)
        ``W2`` minimizing ``||H W2 - T||^2 + mu ||W2||^2``.
    """
    G = H.T @ H
    G[np.diag_indices_from(G)] += mu
    return np.linalg.solve(G, H.T @ T)


def rbm_cd1_step(
    W: np.ndarray, bv: np.ndarray, bh: np.ndarray, V: np.ndarray, lr: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One contrastive-divergence (CD-1) step of a Gaussian-Bernoulli RBM.

    Energy ``E(v, h) = ||v - bv||^2 / 2 - bh^T h - v^T W h`` (eq. 4.65, unit
    variance visible units).

    Parameters
    ----------
    W : ndarray (d, H)
    bv : ndarray (d,)
    bh : ndarray (H,)
    V : ndarray (n, d)
        A minibatch of visible vectors.
    lr : float
        Step size (on the minibatch-mean gradient).
    rng : numpy.random.Generator
        Draws the hidden samples.

    Returns
    -------
    W, bv, bh : ndarray
        Updated parameters (new arrays).
    """
    ph = _sigmoid(V @ W + bh)
    hs = (rng.random(ph.shape) < ph).astype(V.dtype)
    V1 = hs @ W.T + bv  # mean of the Gaussian visible units
    ph1 = _sigmoid(V1 @ W + bh)
    n = V.shape[0]
    W = W + lr * (V.T @ ph - V1.T @ ph1) / n
    bv = bv + lr * (V - V1).mean(axis=0)
    bh = bh + lr * (ph - ph1).mean(axis=0)
    return W, bv, bh


def rbm_reconstruction_error(W: np.ndarray, bv: np.ndarray, bh: np.ndarray,
                             V: np.ndarray) -> float:
    """Mean squared error of the mean-field reconstruction ``bv + W sigmoid(W^T v + bh)``.

    Parameters
    ----------
    W, bv, bh : ndarray
        RBM parameters (see :func:`rbm_cd1_step`).
    V : ndarray (n, d)

    Returns
    -------
    float
    """
    rec = _sigmoid(V @ W + bh) @ W.T + bv
    return float(np.mean((V - rec) ** 2))



@dataclass
class CDSNTrainResult:
    """What :func:`fit_cdsn` returns: the modules and a training log."""

    modules: list[tuple[np.ndarray, np.ndarray]]
    window: int
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)


def _samples(A: np.ndarray, S: np.ndarray, window: int, n_steps: int, sigma: float,
             k_range: tuple[int, int] | None, n_problems: int | None,
             seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Window inputs (n, w*M) float32 and target atoms (n,) from ground truths."""
    X, tg = sequences_for_epoch(A, S, n_steps, sigma, k_range, n_problems, seed)
    return flat_steps(window_inputs(X.astype(np.float32), window), tg)


def _one_hot(t: np.ndarray, N: int) -> np.ndarray:
    out = np.zeros((t.size, N), dtype=np.float32)
    out[np.arange(t.size), t] = 1.0
    return out


class _Log:
    """The training log of :func:`fit_cdsn`: entries kept in ``history``, printed when verbose."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.history: list[dict[str, float]] = []

    def __call__(self, **kw: float) -> None:
        self.history.append({k: float(v) for k, v in kw.items()})
        if self.verbose:
            print(" ".join(f"{k}={v:.4g}" for k, v in kw.items()), flush=True)


def _check_settings(window: int, counts: dict[str, int], rbm_epochs: int, mu: float, lr: float,
                    rbm_lr: float) -> None:
    """Raise ``ValueError`` naming the first unusable setting of :func:`fit_cdsn`."""
    if window < 1 or window % 2 == 0:
        raise ValueError(f"window must be a positive odd int, got {window}")
    for name, v in counts.items():
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if rbm_epochs < 0:
        raise ValueError(f"rbm_epochs must be >= 0, got {rbm_epochs}")
    if not (mu > 0 and lr > 0 and rbm_lr > 0):
        raise ValueError("mu, lr and rbm_lr must be > 0")


def _first_module_weights(R: np.ndarray, n_hidden: int, rng: np.random.Generator,
                          rbm_epochs: int, rbm_lr: float, rbm_batch: int,
                          log: _Log) -> np.ndarray:
    """Module 1's starting input weights (H, d + 1), hidden biases in the last column.

    A Gaussian-Bernoulli RBM trained by CD-1 for ``rbm_epochs`` epochs on up to
    20000 rows of ``R`` (eq. 4.65); with ``rbm_epochs = 0``, its random start
    (small Gaussian weights, zero biases).
    """
    n = R.shape[0]
    W = 0.01 * rng.standard_normal((R.shape[1], n_hidden)).astype(np.float32)
    bv = R.mean(axis=0)
    bh = np.zeros(n_hidden, dtype=np.float32)
    if rbm_epochs:
        sub = R[rng.choice(n, min(n, 20000), replace=False)]
        for ep in range(rbm_epochs):
            perm = rng.permutation(sub.shape[0])
            for b0 in range(0, sub.shape[0], rbm_batch):
                W, bv, bh = rbm_cd1_step(W, bv, bh, sub[perm[b0 : b0 + rbm_batch]], rbm_lr, rng)
            log(module=0, rbm_epoch=ep + 1, rbm_recon=rbm_reconstruction_error(W, bv, bh, sub))
    return np.concatenate([W.T, bh[:, None]], axis=1).astype(np.float32)


def _next_module_weights(prev: np.ndarray, m: int, N: int,
                         rng: np.random.Generator) -> np.ndarray:
    """Module ``m``'s (m >= 1) starting input weights, from module ``m - 1``'s ``prev``.

    Small random weights are inserted for the new inputs (module ``m - 1``'s
    output), which come after the earlier modules' outputs and before the windows.
    """
    new = 0.01 * rng.standard_normal((prev.shape[0], N)).astype(np.float32)
    return np.concatenate([prev[:, : (m - 1) * N], new, prev[:, (m - 1) * N :]], axis=1)


def _fista_input_weights(Z: np.ndarray, T: np.ndarray, W1: np.ndarray, rng: np.random.Generator,
                         *, n_iter: int, batch_size: int, lr: float, mu: float,
                         deadline: float | None, log: _Log | None,
                         module: int) -> tuple[np.ndarray, int]:
    """Fit one module's input weights by FISTA on minibatches (eq. 4.64).

    Each iteration draws ``batch_size`` rows of ``Z`` (inputs with the constant
    column) and ``T`` (one-hot targets), puts the output weights at their ridge
    solution for the batch and steps along the gradient of the squared error;
    the momentum restarts when the batch loss exceeds the best by 2%.  Stops
    after ``n_iter`` iterations or at ``deadline`` (``time.perf_counter()``).
    ``log`` (when given) gets the batch loss every 20 iterations.

    Returns the input weights and the number of iterations run.
    """
    n = Z.shape[0]
    iters = 0
    W_prev = W1.copy()
    W_hat = W1.copy()
    mk = 1.0
    best_loss = np.inf
    for it in range(n_iter):
        if deadline is not None and time.perf_counter() > deadline:
            break
        iters = it + 1
        idx = rng.choice(n, min(n, batch_size), replace=False)
        Zb, Tb = Z[idx], T[idx]
        Hb = _sigmoid(Zb @ W_hat.T)
        Hb1 = with_one(Hb)
        W2 = closed_form_output_weights(Hb1.astype(np.float64), Tb.astype(np.float64), mu)
        E = Hb1 @ W2 - Tb
        loss = 0.5 * float(np.mean(np.sum(E * E, axis=1)))
        G = ((E @ W2[:-1].T) * Hb * (1.0 - Hb)).T @ Zb / Zb.shape[0]
        W_k = (W_hat - lr * G).astype(np.float32)
        m_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * mk * mk))
        if loss > best_loss * 1.02:  # adaptive restart of the momentum
            m_next, mk = 1.0, 1.0
            W_hat = W_k
        else:
            W_hat = (W_k + ((mk - 1.0) / m_next) * (W_k - W_prev)).astype(np.float32)
        best_loss = min(best_loss, loss)
        W_prev, mk = W_k, m_next
        if log is not None and it % 20 == 0:
            log(module=module, iter=it, batch_loss=loss)
    return W_prev, iters


def _module_deadline(max_seconds: float | None, t0: float, modules_left: int) -> float | None:
    """When the next module must stop: 90% of its share of the remaining budget."""
    if max_seconds is None:
        return None
    left = max_seconds - (time.perf_counter() - t0)
    return time.perf_counter() + 0.9 * left / modules_left


def _module_outputs(Z: np.ndarray, Zv: np.ndarray, W1: np.ndarray, T: np.ndarray,
                    mu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Output weights of a module by ridge on all training samples (eq. 4.62).

    Returns ``W2`` and the module's outputs on the training and validation inputs.
    """
    H_all = with_one(_sigmoid(Z @ W1.T)).astype(np.float64)
    W2 = closed_form_output_weights(H_all, T.astype(np.float64), mu).astype(np.float32)
    out_tr = (H_all @ W2).astype(np.float32)
    out_va = (with_one(_sigmoid(Zv @ W1.T)) @ W2).astype(np.float32)
    return W2, out_tr, out_va


def fit_cdsn(

    S_train: np.ndarray,
    S_val: np.ndarray,
    A: np.ndarray,
    *,
    window: int = 5,
    n_modules: int = 3,
    n_hidden: int = 64,
    n_steps: int | None = None,
    k_range: tuple[int, int] | None = None,
    sigma: float = 0.005,
    n_problems: int | None = None,
    mu: float = 0.01,
    rbm_epochs: int = 10,
    rbm_lr: float = 0.01,
    rbm_batch: int = 100,
    rbm_init: bool = True,
    n_iter: int = 400,
    lr: float = 200.0,
    batch_size: int = 4096,
    seed: int = 0,
    max_seconds: float | None = None,
    verbose: bool = False,
) -> CDSNTrainResult:
    """Train a CDSN for CDSN-CS (NumPy; see the module docstring).

    Parameters
    ----------
    S_train, S_val : ndarray (P, N, L)
        Ground truths (dense when ``k_range`` re-sparsifies them).
    A : ndarray (M, N)
        The sensing matrix.
    window : int, default 5
        Odd convolution window w.
    n_modules : int, default 3
        Stacked modules.
    n_hidden : int, default 64
        Hidden units per module (the thesis: 64).
    n_steps : int, optional
        Greedy steps per training problem (default ``k_range[1]`` or ``M // 4``).
    k_range : (int, int), optional
        Re-sparsify each problem to its own random k in this range.
    sigma : float, default 0.005
        Noise standard deviation.
    n_problems : int, optional
        Random subset of training problems (bounds memory).
    mu : float, default 0.01
        Ridge weight of the closed-form output weights.
    rbm_epochs, rbm_lr, rbm_batch : int, float, int
        CD-1 pretraining of module 1's input weights.
    rbm_init : bool, default True
        False: random initialization of module 1 instead.
    n_iter : int, default 400
        FISTA iterations per module (one minibatch each).
    lr : float, default 200
        Step on the minibatch-mean gradient (the gradient of the mean squared error
        against one-hot targets is small; steps below ~10 barely move).
    batch_size : int, default 4096
        Samples per FISTA iteration.
    seed : int, default 0
    max_seconds : float, optional
        Wall-clock budget (the remaining modules get fewer iterations).
    verbose : bool, default False
        Print progress.

    Returns
    -------
    CDSNTrainResult
    """
    t0 = time.perf_counter()
    A = np.asarray(A, dtype=np.float64)
    M, N = A.shape
    _check_settings(window, {"n_modules": n_modules, "n_hidden": n_hidden, "n_iter": n_iter,
                             "batch_size": batch_size, "rbm_batch": rbm_batch},
                    rbm_epochs, mu, lr, rbm_lr)
    T = n_steps if n_steps is not None else (k_range[1] if k_range else max(1, M // 4))
    rng = np.random.default_rng(seed)
    R_tr, t_tr = _samples(A, np.asarray(S_train, dtype=np.float64), window, T, sigma, k_range,
                          n_problems, seed * 1000 + 1)
    R_va, t_va = _samples(A, np.asarray(S_val, dtype=np.float64), window, T, sigma, k_range,
                          None, seed * 1000 + 999)
    T_tr = _one_hot(t_tr, N)
    log = _Log(verbose)
    W1 = _first_module_weights(R_tr, n_hidden, rng, rbm_epochs if rbm_init else 0, rbm_lr,
                               rbm_batch, log)
    modules: list[tuple[np.ndarray, np.ndarray]] = []
    outs_tr: list[np.ndarray] = []
    outs_va: list[np.ndarray] = []
    for m in range(n_modules):
        if m:
            W1 = _next_module_weights(modules[-1][0], m, N, rng)
        Z = with_one(np.concatenate([*outs_tr, R_tr], axis=1)).astype(np.float32)
        Zv = with_one(np.concatenate([*outs_va, R_va], axis=1)).astype(np.float32)
        W1, iters = _fista_input_weights(
            Z, T_tr, W1, rng, n_iter=n_iter, batch_size=batch_size, lr=lr, mu=mu,
            deadline=_module_deadline(max_seconds, t0, n_modules - m),
            log=log if verbose else None, module=m)
        W2, out_tr, out_va = _module_outputs(Z, Zv, W1, T_tr, mu)
        modules.append((W1.astype(np.float32), W2))
        outs_tr.append(out_tr)
        outs_va.append(out_va)
        log(module=m, iters=iters, train_acc=float(np.mean(out_tr.argmax(1) == t_tr)),
            val_acc=float(np.mean(out_va.argmax(1) == t_va)),
            seconds=time.perf_counter() - t0)
    settings = {"window": window, "n_modules": n_modules, "n_hidden": n_hidden, "n_steps": T,
                "k_range": list(k_range) if k_range else None, "sigma": sigma,
                "n_problems": n_problems, "mu": mu, "rbm_epochs": rbm_epochs if rbm_init else 0,
                "rbm_lr": rbm_lr, "n_iter": n_iter, "lr": lr, "batch_size": batch_size,
                "seed": seed, "n_train_samples": int(R_tr.shape[0]),
                "n_val_samples": int(t_va.size)}
    return CDSNTrainResult(modules=modules, window=window, history=log.history,
                           seconds=time.perf_counter() - t0, settings=settings)
