"""OMP and SOMP in PyTorch, on any device: Batch-OMP with progressive Cholesky.

The algorithm of the compiled kernel (``cpp/include/cscore/greedy.hpp``), in
the precision of the data (float32 or float64): the columns are normalized,
``An = A D^{-1}``; the Gram matrix ``G = An^T An`` is formed once (one per
problem when each problem has its own ``A``), the correlations ``alpha = An^T
Y`` once per problem; adding atom ``k`` to a support of ``n`` atoms takes
``w = Q[k]``, the pivot ``d = G_kk - w^T w`` (not above ``64 eps G_kk``: a
dependent atom, the problem stops), ``q = (G_k - Q^T w) / sqrt(d)``, ``z =
alpha_k / sqrt(d)`` and ``alpha -= q z``.  The atom is the one maximizing
``sum_c alpha[j, c]^2`` (ties: the lowest index); a best score at or below
rounding noise, ``(32 eps)^2 ||Y||^2``, stops the problem ("dependent").

``tol`` is tested on the residual energies tracked by the updates (``||y_c||^2
- ||z_c||^2``, clamped at zero) -- the kernel recomputes the residual
explicitly near the threshold; the two can differ only for a residual within
rounding of ``tol``.  ``tol="auto"`` and complex data stay on the compiled path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import BLOCK, check_device, chunk_rows, get_torch, to_numpy

__all__ = ["greedy_decode"]

#: stop codes (cscore.result.STOP_REASONS)
_N_NONZERO, _TOL, _DEPENDENT, _EXHAUSTED = 0, 1, 2, 4


def greedy_decode(
    A: np.ndarray,
    Y: np.ndarray,
    max_atoms: int,
    cap_is_n_nonzero: bool,
    tol: float,
    device: Any,
    chunk: int | None = None,
) -> tuple[np.ndarray, ...]:
    """(S)OMP of a checked batch ``Y`` (P, M, L) on ``device``.

    Parameters
    ----------
    A : ndarray (M, N), or (P, M, N): one sensing matrix per problem
        Real, of ``Y``'s dtype (float32 or float64: the arithmetic's precision).
    Y : ndarray (P, M, L)
    max_atoms : int
    cap_is_n_nonzero : bool
        Reaching ``max_atoms`` reports "n_nonzero" (True) or "exhausted".
    tol : float
        Stop once the sum over channels of residual norms is ``<= tol`` (< 0: none).
    device : str or torch.device
    chunk : int, optional
        Problems per chunk (default :func:`._common.chunk_rows`).

    Returns
    -------
    X (P, N, L), residual (P, L), n_iter (P,), stop (P,), warn (P,), atoms (P, max_atoms)
        As ``_core._greedy_decode`` fills them.
    """
    torch = get_torch()
    dev = check_device(device)
    P, M, L = Y.shape
    N = A.shape[-1]
    per_A = A.ndim == 3
    dt = torch.float32 if Y.dtype == np.float32 else torch.float64
    size = Y.dtype.itemsize
    per = size * (N * L + max_atoms * (N + max_atoms + L) + 4 * N + M * L)
    if per_A:
        per += size * (N * N + M * N)
    C = chunk_rows(dev, per, chunk, P)
    if not per_A:
        At = torch.as_tensor(np.array(A), dtype=dt, device=dev)
        G, An, inv = _gram(At)
    X = np.zeros((P, N, L), dtype=Y.dtype)
    res = np.zeros((P, L), dtype=Y.dtype)
    n_iter = np.zeros(P, dtype=np.int64)
    stop = np.zeros(P, dtype=np.int8)
    warn = np.zeros(P, dtype=np.uint8)
    atoms = np.full((P, max_atoms), -1, dtype=np.int64)
    with torch.no_grad():
        for p0 in range(0, P, C):
            p1 = min(P, p0 + C)
            n = p1 - p0
            c = -(-n // BLOCK) * BLOCK  # rows padded to whole blocks
            Yc = torch.zeros((c, M, L), dtype=dt, device=dev)
            Yc[:n] = torch.as_tensor(Y[p0:p1], device=dev)
            if per_A:
                Ac = torch.zeros((c, M, N), dtype=dt, device=dev)
                Ac[:n] = torch.as_tensor(A[p0:p1], device=dev)
                Ac[n:] = torch.eye(M, N, dtype=dt, device=dev) + (
                    torch.arange(N, device=dev) >= M).to(dt)  # padding: no zero column
                G, An, inv = _gram(Ac)
            out = _chunk(At if not per_A else Ac, G, An, inv, Yc, max_atoms,
                         cap_is_n_nonzero, tol)
            X[p0:p1], res[p0:p1], n_iter[p0:p1] = out[0][:n], out[1][:n], out[2][:n]
            stop[p0:p1], warn[p0:p1], atoms[p0:p1] = out[3][:n], out[4][:n], out[5][:n]
    return X, res, n_iter, stop, warn, atoms


def _gram(A: Any) -> tuple[Any, Any, Any]:
    """``G = An^T An``, ``An`` and ``1 / ||a_j||`` for ``A`` (M, N) or (c, M, N)."""
    inv = 1.0 / get_torch().linalg.vector_norm(A, dim=-2)
    An = A * inv[..., None, :]
    return An.transpose(-1, -2) @ An, An, inv


def _chunk(A: Any, G: Any, An: Any, inv: Any, Y: Any, K: int, cap_is_n_nonzero: bool,
           tol: float) -> tuple[np.ndarray, ...]:
    """One chunk of c problems ``Y`` (c, M, L) (c a multiple of BLOCK), ``A`` (M, N)
    or (c, M, N) and its :func:`_gram`."""
    torch = get_torch()
    dev, dt = Y.device, Y.dtype
    c, M, L = Y.shape
    N = G.shape[-1]
    eps = torch.finfo(dt).eps
    shared = G.ndim == 2
    rows = torch.arange(c, device=dev)
    # alpha = An^T Y, one product per problem (per-row results: see _common)
    AnT = An.transpose(-1, -2)
    alpha = torch.bmm(AnT.expand(c, N, M) if shared else AnT, Y)  # (c, N, L)
    energy = (Y * Y).sum(dim=1)  # (c, L)
    ytot2 = energy.sum(dim=1)
    vanish = (32 * eps) ** 2 * ytot2
    Q = torch.zeros((c, K, N), dtype=dt, device=dev)
    Lf = torch.zeros((c, K, K), dtype=dt, device=dev)  # Cholesky factor, row by row
    z = torch.zeros((c, K, L), dtype=dt, device=dev)
    selected = torch.zeros((c, N), dtype=torch.bool, device=dev)
    atoms = torch.full((c, K), -1, dtype=torch.int64, device=dev)
    live = torch.ones(c, dtype=torch.bool, device=dev)
    stop = torch.full((c,), _N_NONZERO if cap_is_n_nonzero else _EXHAUSTED, dtype=torch.int8,
                      device=dev)
    dep = torch.zeros(c, dtype=torch.bool, device=dev)
    for n in range(K):
        if tol >= 0:
            hit = live & (energy.clamp_min(0).sqrt().sum(dim=1) <= tol)
            stop = torch.where(hit, _TOL, stop).to(torch.int8)
            live = live & ~hit
        score = (alpha * alpha).sum(dim=2)  # (c, N)
        k = torch.argmax(score, dim=1)  # first of equal maxima
        best = score[rows, k]
        w = Q[rows, :n, k]  # (c, n)
        gk = G[k] if shared else G[rows, k]  # (c, N) (G symmetric)
        gkk = gk[rows, k]
        d = gkk - (w * w).sum(dim=1)
        bad = live & (~(best > vanish) | selected[rows, k] | ~(d > 64 * eps * gkk))
        stop = torch.where(bad, _DEPENDENT, stop).to(torch.int8)
        dep = dep | bad
        live = live & ~bad
        if not bool(live.any()):
            break
        lnn = torch.where(live, d, 1.0).sqrt()
        qn = (gk - torch.bmm(w[:, None, :], Q[:, :n]).squeeze(1)) / lnn[:, None]
        zn = alpha[rows, k] / lnn[:, None]  # (c, L)
        lv = live[:, None]
        qn = torch.where(lv, qn, 0.0)
        zn = torch.where(lv, zn, 0.0)
        energy = energy - zn * zn
        alpha = alpha - qn[:, :, None] * zn[:, None, :]
        Q[:, n] = qn
        Lf[:, n, :n] = torch.where(lv, w, 0.0)
        Lf[:, n, n] = torch.where(live, lnn, 1.0)
        z[:, n] = zn
        atoms[:, n] = torch.where(live, k, -1)
        selected[rows, k] |= live
    if tol >= 0:  # the test after the last atom
        hit = live & (energy.clamp_min(0).sqrt().sum(dim=1) <= tol)
        stop = torch.where(hit, _TOL, stop).to(torch.int8)
    count = (atoms >= 0).sum(dim=1)
    used = torch.arange(K, device=dev) < count[:, None]
    both = used[:, :, None] & used[:, None, :]
    Lfull = torch.where(both, Lf, 0.0) + torch.eye(K, dtype=dt, device=dev) * (~used)[
        :, :, None].to(dt)
    gamma = torch.linalg.solve_triangular(Lfull.transpose(1, 2), torch.where(
        used[..., None], z, 0.0), upper=True)  # (c, K, L)
    idx = torch.where(used, atoms, 0)
    scale = inv[idx] if shared else torch.gather(inv, 1, idx)
    gamma = torch.where(used[..., None], gamma * scale[..., None], 0.0)
    X = torch.zeros((c, N, L), dtype=dt, device=dev).scatter_add_(
        1, idx[:, :, None].expand(c, K, L), gamma)
    R = Y - torch.bmm(A.expand(c, M, N) if shared else A, X)
    res = torch.linalg.vector_norm(R, dim=1)  # (c, L)
    warn = dep & (res.sum(dim=1) > np.sqrt(eps) * ytot2.sqrt())
    return (to_numpy(X), to_numpy(res), to_numpy(count), to_numpy(stop),
            to_numpy(warn.to(torch.uint8)), to_numpy(atoms))
