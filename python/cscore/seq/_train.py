"""Training one ESN module (thesis sections 2.3-2.4): gradient descent on the ridge cost.

The gradients come in closed form through the ridge readout
(:func:`cscore.seq._gradients.closed_form_gradients`, ``m`` steps of
dependency); each epoch renormalizes the gradient to ``grad_clip``, applies
FISTA momentum (eqs. 2.36-2.37) and rescales ``W_rec`` to its spectral radius;
the epoch with the lowest training cost is kept.  :class:`cscore.seq._base.SeqBase`
calls :func:`train_module` once per module (one for the ESN, ``n_modules`` for the
R-DSN).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._gradients import closed_form_gradients
from ._ops import Module, SparseRec, forward, ridge_readout, spectral_radius

__all__ = ["new_rec", "train_module"]


def train_module(
    Xb: np.ndarray,
    offsets: np.ndarray,
    T: np.ndarray,
    W0: np.ndarray,
    rec: SparseRec,
    v: dict[str, Any],
    n_threads: int,
) -> Module:
    """Train one module: gradient descent on the ridge cost through the readout.

    Parameters
    ----------
    Xb : ndarray
        (F, D_in) frames of every sequence (context window and bias column added).
    offsets : ndarray
        (n_sequences + 1,) frame offsets of the sequences.
    T : ndarray
        (F, C) one-hot targets.
    W0 : ndarray
        (D_in, N) initial input weights.
    rec : SparseRec
        Initial sparse recurrent weights (scaled to the spectral radius).
    v : dict
        The checked hyper-parameters (:meth:`SeqBase.validated`).
    n_threads : int
        Threads of the compiled kernels.

    Returns
    -------
    Module
        The weights of the epoch with the lowest training cost, its readout and the
        cost history (``learn=()`` or ``n_epochs=0``: the readout of ``W0``, ``rec``).
    """
    learn = v["learn"]
    mu, lam = v["ridge"], v["spectral_radius"]
    n_frames = Xb.shape[0]
    W = W0.copy()
    history: list[float] = []
    if learn and v["n_epochs"] > 0:
        learn_rec = "W_rec" in learn
        W_prev, r_prev = W.copy(), rec.data.copy()
        t_old = 1.0
        best: tuple[float, np.ndarray, np.ndarray] | None = None
        for _ in range(v["n_epochs"]):
            E, gW, gR, _, _ = closed_form_gradients(
                Xb, W, rec, offsets, T, mu, v["m"], learn_rec=learn_rec, n_threads=n_threads
            )
            E /= n_frames
            history.append(E)
            if best is None or E < best[0]:
                best = (E, W.copy(), rec.data.copy())
            # mean cost per frame: gradient scaled by 1/F; renormalized when large
            gW = gW / n_frames
            gR = gR / n_frames if gR is not None else None
            norm = float(np.sqrt(np.sum(gW * gW) + (np.sum(gR * gR) if gR is not None else 0)))
            if norm > v["grad_clip"]:
                gW *= v["grad_clip"] / norm
                if gR is not None:
                    gR *= v["grad_clip"] / norm
            # FISTA momentum as written in eqs. 2.36-2.37: beta = m_old / m_new
            t_new = (1.0 + np.sqrt(1.0 + 4.0 * t_old * t_old)) / 2.0
            beta = t_old / t_new if v["momentum"] else 0.0
            t_old = t_new
            W_new = W - v["step_size"] * gW + beta * (W - W_prev)
            W_prev, W = W, W_new
            if gR is not None:
                r_new = rec.data - v["step_size"] * gR + beta * (rec.data - r_prev)
                r_prev = rec.data
                rec = SparseRec(rec.indptr, rec.indices, r_new)
                rec.data = rec.data * (lam / max(spectral_radius(rec), 1e-12))
        # the last update's cost, then keep the best epoch (training cost)
        H = forward(Xb @ W, rec, offsets, n_threads)
        Hc = np.hstack([H, Xb])
        U = ridge_readout(Hc, T, mu)
        Rs = Hc @ U - T
        E = float((np.sum(Rs * Rs) + mu * np.sum(U * U)) / n_frames)
        history.append(E)
        assert best is not None
        if best[0] < E:
            W = best[1]
            rec = SparseRec(rec.indptr, rec.indices, best[2])
            H = forward(Xb @ W, rec, offsets, n_threads)
            Hc = np.hstack([H, Xb])
            U = ridge_readout(Hc, T, mu)
        return Module(W=W, rec=rec, U=U, history=history)
    H = forward(Xb @ W, rec, offsets, n_threads)
    U = ridge_readout(np.hstack([H, Xb]), T, mu)
    return Module(W=W, rec=rec, U=U, history=history)

def new_rec(v: dict[str, Any], rng: np.random.Generator) -> SparseRec:
    """A random sparse recurrent matrix scaled to ``v["spectral_radius"]``.

    Parameters
    ----------
    v : dict
        The checked hyper-parameters (``n_hidden``, ``n_connections``,
        ``spectral_radius``).
    rng : numpy.random.Generator
        The source of the random weights and pattern.

    Returns
    -------
    SparseRec
        N x N with ``n_connections`` nonzeros per row.
    """
    rec = SparseRec.random(v["n_hidden"], v["n_connections"], rng)
    rho = spectral_radius(rec)
    rec.data = rec.data * (v["spectral_radius"] / max(rho, 1e-12))
    return rec
