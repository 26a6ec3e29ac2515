"""Closed-form gradients of the ESN cost through the ridge readout (thesis 2.3-2.4).

The cost of one module is the ridge objective at its optimal readout,

    E(W, W_rec) = min_U ||Hc U - T||_F^2 + mu ||U||_F^2
                = tr(T^T T) - tr(T^T Hc (Hc^T Hc + mu I)^{-1} Hc^T T),

with ``Hc = [H, X]`` (eq. 2.7) and ``H`` the reservoir states, a function of
``W`` and ``W_rec``.  Because ``U`` is optimal, ``dE/dHc = 2 (Hc U - T) U^T``
(the envelope theorem).  Written with ``F = (Hc^T Hc + mu I)^{-1}`` this is
exactly ``-A^T`` of eq. 2.30 (with ``mu = 0`` the thesis's expression; with
``mu > 0`` the same expression is the gradient of the ridge objective), so the
"Case 2" dependence of ``U`` on ``W`` is taken into account without forming
``A`` from the inverse; :func:`thesis_A` evaluates eq. 2.30 literally for the
tests.

Where the chapter's formulas are approximations, and what cscore ships
----------------------------------------------------------------------
* Case 1 (eqs. 2.13-2.16) holds ``U`` fixed; it is not the gradient of ``E``.
  cscore uses Case 2 (eqs. 2.20-2.30), exact as said above.
* ``m`` steps of dependency (eqs. 2.31-2.35, 2.39-2.42) truncate the recursion:
  the error at frame ``t`` reaches ``h_t, h_{t-1}, ..., h_{t-m}``; ``h_{t-m-1}``
  is held fixed.  cscore computes this truncated gradient exactly; with ``m`` at
  least the longest sequence minus one it is the full gradient (``test_seq.py``
  checks both against torch autograd).
* Eqs. 2.35 and 2.41-2.42 place ``W_rec`` outside the element-wise products
  (``[H_i^T o (1-H_i^T) W_rec^T] o C_{i+1}`` and ``W_rec^{n-i} H_{i-1} C_i``).
  The chain rule puts it inside: ``C_i = H_i^T o (1 - H_i^T) o (C_{i+1} W_rec)``
  (row-major frames), and the ``W_rec`` gradient is ``sum_i C_i^T H_{i-1}`` on
  the nonzero pattern.  The two agree for the ``i = n`` term only; cscore ships
  the chain-rule form (:func:`thesis_rec_gradient` keeps the literal one, for
  comparison).
"""

from __future__ import annotations

import numpy as np

from ._ops import SparseRec, backward, forward, rec_grad, ridge_readout

__all__ = ["closed_form_gradients", "thesis_A", "thesis_rec_gradient"]


def closed_form_gradients(
    X: np.ndarray,
    W: np.ndarray,
    rec: SparseRec,
    offsets: np.ndarray,
    T: np.ndarray,
    mu: float,
    m: int,
    *,
    learn_rec: bool = True,
    n_threads: int | None = None,
) -> tuple[float, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """Cost and closed-form gradients with respect to ``W`` and the nonzeros of ``W_rec``.

    Parameters
    ----------
    X : ndarray, shape (F, D)
        Module inputs (with bias column) of all frames, sequences concatenated.
    W : ndarray, shape (D, N)
        Input weights.
    rec : SparseRec
        Recurrent weights (N, N), CSR.
    offsets : ndarray, shape (S + 1,)
        Sequence boundaries in the frame axis.
    T : ndarray, shape (F, C)
        Targets (one-hot).
    mu : float
        Ridge parameter of eq. 2.9.
    m : int
        Steps of dependency (0 = none).
    learn_rec : bool, default True
        Also compute the ``W_rec`` gradient.
    n_threads : int, optional
        Threads of the compiled kernels.

    Returns
    -------
    E : float
        The ridge objective at the optimal readout.
    gW : ndarray, shape (D, N)
        ``dE/dW``.
    grec : ndarray, shape (nnz,) or None
        ``dE/dW_rec`` on the nonzeros (None unless ``learn_rec``).
    H : ndarray, shape (F, N)
        Reservoir states.
    U : ndarray, shape (N + D, C)
        The ridge readout.
    """
    N = W.shape[1]
    H = forward(X @ W, rec, offsets, n_threads)
    Hc = np.hstack([H, X])
    U = ridge_readout(Hc, T, mu)
    Rs = Hc @ U - T
    E = float(np.sum(Rs * Rs) + mu * np.sum(U * U))
    G = 2.0 * Rs @ U[:N].T  # dE/dH = -A^T (eq. 2.30)
    D = backward(H, G, rec, offsets, m, n_threads)
    gW = X.T @ D  # eq. 2.34 (chain-rule form)
    grec = rec_grad(D, H, rec, offsets, n_threads) if learn_rec else None
    return E, gW, grec, H, U


def thesis_A(Hc: np.ndarray, T: np.ndarray, mu: float = 0.0) -> np.ndarray:
    """Eq. 2.30 evaluated literally (row-major frames: returns an (F, N+D) array).

    ``A = 2 T^T T H^T F - 2 H^T F H T^T T H^T F`` with ``H`` = features x frames,
    ``T`` = classes x frames and ``F = (H H^T + mu I)^{-1}``.
    """
    Hm = Hc.T  # features x frames
    Tm = T.T  # classes x frames
    Fi = np.linalg.inv(Hm @ Hm.T + mu * np.eye(Hm.shape[0]))
    M = Tm.T @ Tm
    return np.asarray(2.0 * M @ Hm.T @ Fi - 2.0 * Hm.T @ Fi @ Hm @ M @ Hm.T @ Fi)


def thesis_rec_gradient(
    H: np.ndarray, A: np.ndarray, rec: SparseRec, offsets: np.ndarray, m: int
) -> np.ndarray:
    """Eqs. 2.41-2.42 as printed, mapped to per-frame lags; dense (N, N), our sign.

    For the error at frame ``t`` and lag ``k = n - i`` (``k = 0..m``):
    ``C(k) = sigma'_{t-k} o ... o sigma'_t o A_t`` and the term is
    ``W_rec^k H_{t-k-1} C(k)``; returned transposed and negated so that it is
    comparable with ``dE/dW_rec`` (row ``i`` = unit receiving the weight).
    Only the ``k = 0`` term equals the chain rule.
    """
    F, N = H.shape
    Wd = rec.dense()
    sp = H * (1.0 - H)
    Ah = A[:, :N]
    out = np.zeros((N, N))
    first = np.zeros(F, dtype=bool)
    first[offsets[:-1]] = True
    seq_start = np.repeat(offsets[:-1], np.diff(offsets))
    for k in range(m + 1):
        C = np.zeros((F, N))
        Hprev = np.zeros((F, N))
        for t in range(F):
            if t - k < seq_start[t]:
                continue
            c = Ah[t].copy()
            for j in range(k + 1):
                c *= sp[t - j]
            C[t] = c
            if t - k - 1 >= seq_start[t]:
                Hprev[t] = H[t - k - 1]
        term = np.linalg.matrix_power(Wd, k) @ Hprev.T @ C  # (N, N), [j, i]
        out += term
    return np.asarray(-out.T)
