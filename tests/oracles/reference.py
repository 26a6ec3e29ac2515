"""A plain NumPy LSTM-CS decoder (Algorithm 2), the specification for the C++ one.

Slow (a least-squares solve per atom), but short enough to read against the
paper.  Tests compare the compiled decoder with it (a test oracle: it lives under
``tests/``, not in the package; a benchmark imports it with ``tests/`` on
``sys.path``).
"""

from __future__ import annotations

import numpy as np

from cscore.decoders.learned._greedy import normalize_maxabs, sigmoid
from cscore.decoders.learned.weights import BLSTMCSWeights, LSTMCSWeights

__all__ = [
    "blstm_logits",
    "lstm_cell",
    "lstm_logits",
    "lstm_step",
    "normalize_maxabs",
    "reference_decode",
]


def lstm_cell(gates: np.ndarray, c: np.ndarray, cell: str) -> tuple[np.ndarray, np.ndarray]:
    """An LSTM-CS cell update from its gate pre-activations (weights.py's layout).

    Parameters
    ----------
    gates : ndarray (B, G*H)
        ``W x + R v' + b``, gates in the order of ``cell`` ("paper": i, g, o;
        "lstm": i, f, g, o).
    c : ndarray (B, H)
        The previous cell state.
    cell : {"paper", "lstm"}
        The cell type.

    Returns
    -------
    v, c : ndarray (B, H)
        The new output and cell state.
    """
    if cell == "paper":
        i, g, o = np.split(gates, 3, axis=1)
        c = c + sigmoid(i) * np.tanh(g)
    else:
        i, f, g, o = np.split(gates, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def lstm_logits(weights: LSTMCSWeights, X: np.ndarray) -> np.ndarray:
    """Run the LSTM over channels; return logits.

    Parameters
    ----------
    weights : LSTMCSWeights
    X : ndarray, shape (B, L, M)
        Inputs (already max-abs normalized residuals), channel-major sequences.

    Returns
    -------
    ndarray, shape (B, L, N)
    """
    B, L, _ = X.shape
    H = weights.n_cells
    v = np.zeros((B, H))
    c = np.zeros((B, H))
    out = np.empty((B, L, weights.U.shape[0]))
    for j in range(L):
        v, c, out[:, j, :] = lstm_step(weights, X[:, j, :], v, c)
    return out


def blstm_logits(weights: BLSTMCSWeights, X: np.ndarray) -> np.ndarray:
    """Run the bidirectional LSTM over channels; return logits.

    Parameters
    ----------
    weights : BLSTMCSWeights
    X : ndarray, shape (B, L, M)
        Inputs (already max-abs normalized residuals), channel-major sequences.

    Returns
    -------
    ndarray, shape (B, L, N)
        ``U [v_fwd(j); v_bwd(j)] + c_out`` at every channel j: the forward LSTM
        over channels 0..L-1 and the backward one over L-1..0.
    """
    fwd = lstm_logits(weights.direction(backward=False), X)
    bwd = lstm_logits(weights.direction(backward=True), X[:, ::-1])[:, ::-1]
    return fwd + bwd + weights.c_out.astype(np.float64)


def lstm_step(
    weights: LSTMCSWeights, x: np.ndarray, v: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One LSTM step in float64: inputs x (B, M), state (v, c) (B, H) -> (v, c, logits).

    Parameters
    ----------
    weights : LSTMCSWeights
        The model's weights.
    x : ndarray (B, M)
        Normalized residuals of one channel.
    v, c : ndarray (B, H)
        Output and cell state carried from the previous channel.

    Returns
    -------
    v, c : ndarray (B, H)
        The new state.
    logits : ndarray (B, N)
        Scores of the atoms.
    """
    W, R = weights.W.astype(np.float64), weights.R.astype(np.float64)
    v, c = lstm_cell(x @ W.T + v @ R.T + weights.b, c, weights.cell)
    return v, c, v @ weights.U.astype(np.float64).T + weights.c_out


def reference_decode(
    weights: LSTMCSWeights | BLSTMCSWeights,
    A: np.ndarray,
    Y: np.ndarray,
    *,
    n_nonzero: int | None,
    tol: float | None,
    exclude_selected: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Decode a batch with Algorithm 2.

    Parameters
    ----------
    weights : LSTMCSWeights or BLSTMCSWeights
        For BLSTM weights, each iteration first normalizes all L residuals,
        runs both directions over them, then picks and re-fits every channel.
    A : ndarray (M, N)
    Y : ndarray (B, M, L)
    n_nonzero : int or None
        Atoms per channel to select (at most ``min(M, N)``).
    tol : float or None
        Stop a problem once the sum over channels of residual l2 norms is <= tol.
    exclude_selected : bool
        Take the argmax over atoms not yet in the channel's support.

    Returns
    -------
    S : ndarray (B, N, L)
    n_iter : ndarray (B,) greedy iterations run per problem
    """
    A = np.asarray(A, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    B, M, L = Y.shape
    N = A.shape[1]
    cap = min(M, N)
    k_max = cap if n_nonzero is None else min(n_nonzero, cap)
    S = np.zeros((B, N, L))
    Rres = Y.copy()
    supports: list[list[list[int]]] = [[[] for _ in range(L)] for _ in range(B)]
    active = np.ones(B, dtype=bool)
    n_iter = np.zeros(B, dtype=np.int64)
    H = weights.n_cells
    for _ in range(k_max):
        if tol is not None:
            res = np.linalg.norm(Rres, axis=1).sum(axis=1)
            active &= res > tol
        if not active.any():
            break
        idx = np.flatnonzero(active)
        v = np.zeros((idx.size, H))
        c = np.zeros((idx.size, H))
        Z = None
        if isinstance(weights, BLSTMCSWeights):
            X = np.stack([normalize_maxabs(Rres[idx, :, j]) for j in range(L)], axis=1)
            Z = blstm_logits(weights, X)
        for j in range(L):
            if Z is not None:
                z = Z[:, j].copy()
            else:
                assert isinstance(weights, LSTMCSWeights)
                v, c, z = lstm_step(weights, normalize_maxabs(Rres[idx, :, j]), v, c)
            for row, p in enumerate(idx):
                supp = supports[p][j]
                if exclude_selected and supp:
                    z[row, supp] = -np.inf
                supp.append(int(np.argmax(z[row])))
                coef, *_ = np.linalg.lstsq(A[:, supp], Y[p, :, j], rcond=None)
                S[p, :, j] = 0.0
                S[p, supp, j] = coef
                Rres[p, :, j] = Y[p, :, j] - A[:, supp] @ coef
        n_iter[idx] += 1
    return S, n_iter
