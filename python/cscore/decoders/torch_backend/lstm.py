"""LSTM-CS and BLSTM-CS greedy decoding (Algorithm 2) in PyTorch, on any device.

The same algorithm as the compiled kernel (``cpp/include/cscore/lstm.hpp``,
``greedy_decode``), from the same float32 weights:

1. every channel's residual divided by its largest absolute entry (in float64,
   then rounded to float32; zero stays zero);
2. the LSTM (float32) over the channels -- for BLSTM-CS both directions -- and
   the logits ``U v`` plus ``c_out``;
3. per channel the largest logit over the atoms not yet selected (ties: the
   lowest index), and the least-squares refit in float64 on a thin QR of the
   support grown by one column per atom (Gram--Schmidt, twice); an atom that is
   dependent on the support (relative size ``1e-10``) stops the channel.

Stopping as in the kernel: ``k_max`` steps, ``tol`` on the sum over channels of
residual norms (before each step), every channel stopped ("dependent"), and
under ``tol="auto"`` the path end of :mod:`cscore.decoders.path_stop`
(``lstm::PathStop``).  Problems are decoded in chunks of a fixed number of
rows padded with idle problems, all advancing together, and every product
that feeds a decision has per-row results (:func:`._common.row_matmul`), so a
problem's result does not depend on its batch or on the chunking.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import check_device, chunk_rows, get_torch, row_matmul, to_numpy

__all__ = ["lstm_greedy"]

#: stop codes (cscore.result.STOP_REASONS)
_N_NONZERO, _TOL, _DEPENDENT, _MAX_ITER = 0, 1, 2, 3
#: relative size below which a new atom's orthogonal part counts as zero (kDependentTol)
_DEP_TOL = 1e-10

#: Least squares in the compiled kernel's order of operations (modified
#: Gram-Schmidt, every dot product summed left to right, ``q * (1 / rho)``), so
#: the float64 residuals -- and so the LSTM's inputs -- are the kernel's bit for
#: bit.  It matters: once a channel is explained exactly, its residual is
#: rounding noise, scaled to max-abs 1 it still drives the LSTM's state and so
#: the atoms of the later channels.  False: batched reductions (faster on a GPU,
#: same maths, other rounding).
SEQUENTIAL_SUMS = True


def _dot(a: Any, b: Any) -> Any:
    """``sum(a * b)`` over the last axis, added left to right (as the kernel does)."""
    if not SEQUENTIAL_SUMS:
        return (a * b).sum(dim=-1)
    p = a * b
    s = p[..., 0].clone()
    for m in range(1, p.shape[-1]):
        s = s + p[..., m]
    return s


class _Net:
    """The LSTM's float32 weights on the device and its forward over the channels."""

    def __init__(self, weights: Any, dev: Any) -> None:
        torch = get_torch()
        self.torch = torch

        def t(a: np.ndarray) -> Any:
            return torch.as_tensor(np.ascontiguousarray(a, dtype=np.float32), device=dev)

        self.cell = weights.cell
        self.bi = hasattr(weights, "Wb")
        self.WRt = t(np.hstack([weights.W, weights.R]).T)  # (M + H, G H)
        self.b = t(weights.b)
        if self.bi:
            self.WRbt = t(np.hstack([weights.Wb, weights.Rb]).T)
            self.bb = t(weights.bb)
        self.Ut = t(weights.U.T)  # (H or 2H, N)
        self.c_out = t(weights.c_out)
        self.H = weights.R.shape[1]

    def _cell(self, gates: Any, c: Any) -> tuple[Any, Any]:
        torch = self.torch
        if self.cell == "paper":
            i, g, o = gates.chunk(3, dim=1)
            c = c + torch.sigmoid(i) * torch.tanh(g)
        else:
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def _direction(self, X: Any, WRt: Any, b: Any, order: range) -> list[Any]:
        torch = self.torch
        n = X.shape[0]
        v = X.new_zeros((n, self.H))
        c = X.new_zeros((n, self.H))
        outs: list[Any] = [None] * X.shape[1]
        for j in order:
            v, c = self._cell(row_matmul(torch.cat([X[:, j], v], dim=1), WRt) + b, c)
            outs[j] = v
        return outs

    def logits(self, X: Any) -> Any:
        """Logits (n, L, N) float32 of the inputs ``X`` (n, L, M) float32."""
        torch = self.torch
        L = X.shape[1]
        v = self._direction(X, self.WRt, self.b, range(L))
        if self.bi:
            vb = self._direction(X, self.WRbt, self.bb, range(L - 1, -1, -1))
            v = [torch.cat([f, g], dim=1) for f, g in zip(v, vb)]
        z = torch.stack([row_matmul(vj, self.Ut) for vj in v], dim=1)
        return z + self.c_out


def lstm_greedy(
    weights: Any,
    A: np.ndarray,
    col_norms: np.ndarray,
    Y: np.ndarray,
    k_max: int,
    tol: float,
    exclude_selected: bool,
    k_from_user: bool,
    device: Any,
    rule: tuple[np.ndarray, np.ndarray, int, int, int] | None = None,
    chunk: int | None = None,
) -> tuple[np.ndarray, ...]:
    """The greedy LSTM-CS / BLSTM-CS decode of a checked batch on ``device``.

    Parameters
    ----------
    weights : LSTMCSWeights or BLSTMCSWeights
        float32 weights (a BLSTM when they have ``Wb``).
    A : ndarray (M, N) float64
    col_norms : ndarray (N,)
    Y : ndarray (B, M, L) float64
    k_max : int
    tol : float
        Negative: none.
    exclude_selected : bool
    k_from_user : bool
    device : str or torch.device
    rule : tuple, optional
        ``tol="auto"``'s path end (:func:`cscore.decoders.path_stop.path_stop_rule`).
    chunk : int, optional
        Problems per chunk (default: :func:`._common.chunk_rows`).

    Returns
    -------
    tuple
        As the compiled kernel: ``S`` (B, N, L), ``atoms`` (B, L, k_max),
        ``resid`` (B, L), ``n_iter`` (B,), ``stop`` (B,) and, with ``rule``,
        the channel residual norms after every step (B, L, k_max + 1).
    """
    torch = get_torch()
    dev = check_device(device)
    B, M, L = Y.shape
    N = A.shape[1]
    net = _Net(weights, dev)
    per = 8 * L * (k_max * M + k_max * k_max + 4 * M + 2 * k_max + N) + 4 * L * (
        2 * M + 8 * net.H + 2 * N)
    C = chunk_rows(dev, per, chunk, B)
    At = torch.as_tensor(np.array(A.T, order="C"), dtype=torch.float64, device=dev)
    norms = torch.as_tensor(np.array(col_norms), dtype=torch.float64, device=dev)
    S = np.zeros((B, N, L))
    atoms = np.full((B, L, k_max), -1, dtype=np.int64)
    resid = np.zeros((B, L))
    n_iter = np.zeros(B, dtype=np.int64)
    stop = np.zeros(B, dtype=np.int32)
    paths = np.zeros((B, L, k_max + 1)) if rule is not None else None
    tables = None
    if rule is not None:
        tables = (torch.as_tensor(rule[0], dtype=torch.float64, device=dev),
                  torch.as_tensor(rule[1], dtype=torch.float64, device=dev), *rule[2:])
    with torch.no_grad():
        for p0 in range(0, B, C):
            p1 = min(B, p0 + C)
            Yc = np.zeros((C, M, L))
            Yc[: p1 - p0] = Y[p0:p1]
            out = _chunk(net, At, norms, torch.as_tensor(Yc, device=dev), p1 - p0, k_max, tol,
                         exclude_selected, k_from_user, tables)
            n = p1 - p0
            S[p0:p1], atoms[p0:p1], resid[p0:p1] = out[0][:n], out[1][:n], out[2][:n]
            n_iter[p0:p1], stop[p0:p1] = out[3][:n], out[4][:n]
            if paths is not None:
                paths[p0:p1] = out[5][:n]
    res = (S, atoms, resid, n_iter, stop)
    return res if paths is None else (*res, paths)


def _chunk(
    net: _Net, At: Any, norms: Any, Y: Any, n_real: int, k_max: int, tol: float,
    exclude: bool, k_from_user: bool, tables: Any,
) -> tuple[np.ndarray, ...]:
    """One chunk of C problems ``Y`` (C, M, L), the first ``n_real`` of them real."""
    torch = get_torch()
    dev = Y.device
    C, M, L = Y.shape
    N = At.shape[0]
    f64 = torch.float64
    r = Y.permute(0, 2, 1).contiguous()  # (C, L, M) residuals
    Q = torch.zeros((C, L, k_max, M), dtype=f64, device=dev)  # basis, one row per atom
    Rt = torch.zeros((C, L, k_max, k_max), dtype=f64, device=dev)  # support = Q^T Rt
    z = torch.zeros((C, L, k_max), dtype=f64, device=dev)  # Q y
    atoms = torch.full((C, L, k_max), -1, dtype=torch.int64, device=dev)
    chosen = torch.zeros((C, L, N), dtype=torch.bool, device=dev)
    count = torch.zeros((C, L), dtype=torch.int64, device=dev)
    stopped = torch.zeros((C, L), dtype=torch.bool, device=dev)
    active = torch.arange(C, device=dev) < n_real
    n_iter = torch.zeros(C, dtype=torch.int64, device=dev)
    stop = torch.full((C,), _N_NONZERO if k_from_user else _MAX_ITER, dtype=torch.int32,
                      device=dev)
    slots = torch.arange(k_max, device=dev)
    path = None
    if tables is not None:
        path = _PathStop(C, L, k_max, dev)
    for it in range(k_max):
        nrm = torch.linalg.vector_norm(r, dim=2)  # (C, L)
        path_end = torch.zeros_like(active)
        if path is not None:
            path_end = path.update(nrm, active, it, tables)
        hit = active & (nrm.sum(dim=1) <= tol) if tol >= 0 else torch.zeros_like(active)
        dead = active & ~hit & stopped.all(dim=1)
        stop = torch.where(hit, _TOL, torch.where(dead, _DEPENDENT, stop)).to(torch.int32)
        active = active & ~hit & ~dead & ~path_end
        if not bool(active.any()):
            break
        # 1. inputs: r / max|r| (float64), rounded to float32
        mx = r.abs().amax(dim=2, keepdim=True)
        X = torch.where(mx > 0, r / torch.where(mx > 0, mx, 1.0), 0.0).to(torch.float32)
        # 2. logits of every channel
        Z = net.logits(X)  # (C, L, N)
        # 3. each channel's atom, then its least-squares refit
        if exclude:
            Z = Z.masked_fill(chosen, float("-inf"))
        best = torch.argmax(Z, dim=2)  # first of equal maxima: the lowest index
        live = active[:, None] & ~stopped
        again = chosen.gather(2, best[..., None])[..., 0]
        a = At[best]  # (C, L, M)
        q = a.clone()
        kk = it  # slots in use are < it (one atom per channel and step at most)
        rc = torch.zeros((C, L, kk + 1), dtype=f64, device=dev)
        for _pass in range(2):
            if SEQUENTIAL_SUMS:  # modified Gram-Schmidt, column after column
                for i in range(kk):
                    h = _dot(Q[:, :, i], q)
                    rc[:, :, i] += h
                    q = q - h[..., None] * Q[:, :, i]
            else:
                Qk = Q[:, :, :kk]
                h = torch.einsum("clkm,clm->clk", Qk, q)
                rc[:, :, :kk] += h
                q -= torch.einsum("clk,clkm->clm", h, Qk)
        rho = torch.sqrt(_dot(q, q))
        ok = live & ~again & (rho > _DEP_TOL * norms[best])
        stopped = stopped | (live & ~ok)
        ci, li = torch.nonzero(ok, as_tuple=True)
        if ci.numel():
            t = count[ci, li]
            qn = q[ci, li] * (1.0 / rho[ci, li, None])
            zk = _dot(qn, r[ci, li])
            r[ci, li] = r[ci, li] - zk[:, None] * qn
            Q[ci, li, t] = qn
            colv = rc[ci, li]  # (c, kk + 1): rows 0..kk of column t
            colv[torch.arange(ci.numel(), device=dev), t] = rho[ci, li]
            Rt[ci, li, : kk + 1, t] = colv
            z[ci, li, t] = zk
            atoms[ci, li, t] = best[ci, li]
            chosen[ci, li, best[ci, li]] = True
            count[ci, li] += 1
        n_iter = n_iter + active.to(torch.int64)
    # coefficients: Rt c = z on each support (identity on the unused slots)
    used = slots < count[..., None]
    both = used[..., :, None] & used[..., None, :]
    eye = torch.eye(k_max, dtype=f64, device=dev)
    Rfull = torch.where(both, Rt, 0.0) + eye * (~used)[..., None].to(f64)
    coef = torch.linalg.solve_triangular(Rfull, torch.where(used, z, 0.0)[..., None],
                                         upper=True)[..., 0]
    # (an unused slot adds 0.0 to atom 0)
    S = torch.zeros((C, L, N), dtype=f64, device=dev).scatter_add_(
        2, torch.where(used, atoms, 0), torch.where(used, coef, 0.0))
    resid = torch.linalg.vector_norm(r, dim=2)
    out = [to_numpy(S.permute(0, 2, 1)), to_numpy(atoms), to_numpy(resid), to_numpy(n_iter),
           to_numpy(stop)]
    if path is not None:
        pn = path.norms
        steps = torch.arange(k_max + 1, device=dev)
        pn = torch.where(steps >= n_iter[:, None, None], resid[..., None], pn)
        out.append(to_numpy(pn))
    return tuple(out)


class _PathStop:
    """``lstm::PathStop`` for a chunk: where each problem's ``tol="auto"`` path ends."""

    def __init__(self, C: int, L: int, k_max: int, dev: Any) -> None:
        torch = get_torch()
        f64 = torch.float64
        self.norms = torch.zeros((C, L, k_max + 1), dtype=f64, device=dev)
        self.scale = torch.zeros(C, dtype=f64, device=dev)
        self.prev = torch.zeros(C, dtype=f64, device=dev)
        self.last_like = torch.zeros(C, dtype=torch.int64, device=dev)
        self.last_signal = torch.zeros(C, dtype=torch.int64, device=dev)
        self.signal = torch.zeros(C, dtype=torch.bool, device=dev)

    def update(self, nrm: Any, active: Any, it: int, tables: Any) -> Any:
        """Record the norms ``nrm`` (C, L) of step ``it``; True where a path ends."""
        torch = get_torch()
        gamma2, reset2, patience, check, check_last = tables
        self.norms[:, :, it] = torch.where(active[:, None], nrm, self.norms[:, :, it])
        if it == 0:
            self.scale = torch.where(active, nrm.amax(dim=1), self.scale)
        sc = self.scale
        t = nrm / torch.where(sc > 0, sc, 1.0)[:, None]
        e = torch.where(sc > 0, (t * t).sum(dim=1), 0.0)
        if it == 0:
            self.prev = torch.where(active, e, self.prev)
            return active & ~(sc > 0)
        rr2 = torch.where(self.prev > 0, e / torch.where(self.prev > 0, self.prev, 1.0), 1.0)
        self.prev = torch.where(active, e, self.prev)
        sig = active & (rr2 < gamma2[it - 1])
        self.signal = self.signal | sig
        self.last_signal = torch.where(sig, it, self.last_signal)
        self.last_like = torch.where(active & (rr2 < reset2[it - 1]), it, self.last_like)
        end = (it - self.last_like) >= patience
        if check > 0 and it == check:
            end = end | (self.last_signal <= check_last)
        return active & self.signal & end
