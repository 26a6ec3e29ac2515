"""AMP on linear operators and sparse matrices (never forming ``A``).

:func:`cscore.amp` sends here every ``A`` that :func:`is_operator` accepts (a
:class:`scipy.sparse.linalg.LinearOperator`, a scipy sparse matrix/array, or any
object with ``shape``, ``matvec`` and ``rmatvec``, such as PyLops operators);
dense arrays keep the compiled kernel (``cpp/include/cscore/amp.hpp``).

The iteration is the kernel's (uniform-variance GAMP form of AMP, the EM-BG or
l1 denoiser, the same initialization, damping, divergence guard and stopping
rule; see :mod:`cscore.decoders.amp`), written in NumPy over a block of runs at
once: every run keeps its own scalars (``tau``, the EM parameters, its damping
and guard state, its stop), and only the two products of an iteration are done
for the block, as ``A X`` (``matmat``) and ``A^T S`` (``rmatmat``) on the
columns of the runs still active.  The memory is ``O(N)`` per vector of a block
(about a dozen vectors of length ``N`` or ``M``), plus what the operator itself
needs; a partial Fourier or DCT operator of ``N = 2^16`` never holds an ``M x N``
array.

Differences from the dense path: the products come from the operator (so the
results agree with the kernel's to rounding, not bit for bit), ``A`` is scaled
to ``||A||_F^2 = N`` with ``||A||_F^2`` estimated as the sum of the squared
norms of ``A^T`` applied to the ``M`` unit vectors when ``frob2`` is not given
(exact for sparse matrices from their entries; ``M`` operator applications, done
in blocks).  Partial orthogonal transforms scaled as usual have ``||A||_F^2 =
M``: pass ``frob2=M`` to skip the estimate.  Real data only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import check_finite
from ._operator_products import is_operator

__all__ = ["OperatorProducts", "amp_operator_kernel", "is_operator"]

#: Entries of a block of runs' (N, runs) state arrays: 2**21 float64 = 16 MiB each.
_BLOCK_ENTRIES = 1 << 21
_VAR_FLOOR = 1e-24
_EXACT_FROB = 1 << 24
_PROBES = 32
_LAMBDA_MIN = 1e-8
_MAX_ESCALATIONS = 5
_DIVERGE_FACTOR = 2.0


class _Products:
    """``A X`` and ``A^T Z`` in float64 for blocks of columns."""

    def __init__(self, A: Any) -> None:
        if len(A.shape) != 2:
            raise ValueError(f"A must be 2-D; got shape {A.shape}")
        self.M, self.N = (int(s) for s in A.shape)
        if self.M == 0 or self.N == 0:
            raise ValueError(f"A must not be empty; got shape {A.shape}")
        dt = getattr(A, "dtype", None)
        if dt is not None and np.dtype(dt).kind not in "fiu":
            raise TypeError(f"amp on an operator needs a real A; got dtype {np.dtype(dt)}")
        self.sparse = sp.issparse(A)
        if self.sparse:
            self.S = sp.csr_matrix(A, dtype=np.float64)
            check_finite("A", np.asarray(self.S.data))
            self.ST = self.S.T.tocsr()
            self.L: Any = None
        else:
            self.L = A
            self.S = self.ST = None

    def frob2(self) -> float:
        """``||A||_F^2``: exact for sparse matrices and small operators, else estimated.

        An operator with ``M N <= 2^24`` is applied (``A^T``) to the ``M`` unit
        vectors in blocks; a larger one gets the fixed-seed estimate
        ``sum ||A g_i||^2 / n`` over ``n = 32`` Gaussian probes ``g_i`` (relative
        error about ``(16 M)^(-1/2)`` for a flat spectrum), which only sets the
        internal units and the EM initialization.
        """
        if self.sparse:
            return float(np.sum(np.asarray(self.S.data) ** 2))
        if self.M * self.N <= _EXACT_FROB:
            total = 0.0
            step = max(1, _BLOCK_ENTRIES // self.N)
            for i0 in range(0, self.M, step):
                w = min(step, self.M - i0)
                E = np.zeros((self.M, w))
                E[np.arange(i0, i0 + w), np.arange(w)] = 1.0
                total += float(np.sum(self.rmatmat(E) ** 2))
            return total
        rng = np.random.default_rng(0)
        total = 0.0
        for _ in range(_PROBES // 8):  # 8 probes at a time: O(N) memory
            total += float(np.sum(self.matmat(rng.standard_normal((self.N, 8))) ** 2))
        return total / _PROBES

    def matmat(self, X: np.ndarray) -> np.ndarray:
        if self.sparse:
            out = self.S @ X
        elif hasattr(self.L, "matmat"):
            out = self.L.matmat(X)
        else:
            out = np.stack([np.ravel(self.L.matvec(c)) for c in X.T], axis=1)
        return self._real(out, (self.M, X.shape[1]))

    def rmatmat(self, Z: np.ndarray) -> np.ndarray:
        if self.sparse:
            out = self.ST @ Z
        elif hasattr(self.L, "rmatmat"):
            out = self.L.rmatmat(Z)
        else:
            out = np.stack([np.ravel(self.L.rmatvec(c)) for c in Z.T], axis=1)
        return self._real(out, (self.N, Z.shape[1]))

    @staticmethod
    def _real(out: Any, shape: tuple[int, int]) -> np.ndarray:
        out = np.asarray(out)
        if np.iscomplexobj(out):
            raise TypeError("amp on an operator needs real products; the operator returned "
                            f"{out.dtype} values")
        return np.asarray(out, dtype=np.float64).reshape(shape)


def _sigmoid(t: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(t))
    return np.where(t >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class _Block:
    """State of ``Q`` runs of ``Lt`` channels each; arrays (length, Q, Lt)."""

    def __init__(self, ops: _Products, Y: np.ndarray, c: float, opts: dict[str, Any]) -> None:
        self.ops, self.o = ops, opts
        M, N = ops.M, ops.N
        self.c = c  # the kernel works with c A (||c A||_F^2 = N)
        Q, Lt = Y.shape[1], Y.shape[2]
        self.Q, self.Lt = Q, Lt
        ML = M * Lt
        ny2 = np.sum(Y * Y, axis=(0, 2))
        self.zero = ~(ny2 > 0.0)
        scale2 = np.where(self.zero, 1.0, ny2 / ML)
        self.scale2, self.scale = scale2, np.sqrt(scale2)
        self.y = Y / self.scale[None, :, None]
        self.bg = opts["denoiser"] == "bg"
        frob2 = float(N)
        # init_params
        lam = np.full(Q, opts["lam0"])
        e = np.sum(self.y * self.y, axis=0)  # (Q, Lt)
        if opts["noise_var"] > 0.0:
            psi = np.broadcast_to(opts["noise_var"] / scale2[:, None], (Q, Lt)).copy()
        else:
            psi = e / ((opts["snr0"] + 1.0) * M)
        psi = np.maximum(psi, _VAR_FLOOR)
        if opts["slab_var"] > 0.0:
            phi = opts["slab_var"] / scale2
        else:
            ny2s = np.sum(e, axis=1)
            phi = (ny2s - M * np.sum(psi, axis=1)) / (frob2 * lam * Lt)
            bad = ~(phi > _VAR_FLOOR)
            phi = np.where(bad, ny2s / (frob2 * lam * Lt), phi)
            phi = np.maximum(phi, _VAR_FLOOR)
        self.lam, self.phi, self.psi = lam, phi, psi
        self.learn_noise = self.bg and not opts["noise_var"] > 0.0
        self.vbar = np.where(self.bg, N * lam * phi, 0.0)[:, None] * np.ones((1, Lt))
        self.X = np.zeros((N, Q, Lt))
        self.act = np.zeros((N, Q))
        self.S = np.zeros((M, Q, Lt))
        self.AX = np.zeros((M, Q, Lt))
        self.beta = np.full(Q, float(opts["damping"]))
        self.best2 = np.full(Q, float(ML))
        self.ynorm = np.full(Q, math.sqrt(ML))
        self.esc = np.zeros(Q, dtype=np.int64)
        self.n_iter = np.zeros(Q, dtype=np.int64)
        self.stop = np.where(self.zero, 0, 1).astype(np.int8)  # tol for zero runs
        self.active = ~self.zero
        self._snapshot(np.ones(Q, dtype=bool))

    def _snapshot(self, m: np.ndarray) -> None:
        if not hasattr(self, "b"):
            self.b: dict[str, np.ndarray] = {}
        for k in ("X", "S", "AX", "act", "lam", "phi", "psi", "vbar"):
            cur = getattr(self, k)
            if k not in self.b:
                self.b[k] = cur.copy()
            else:
                ax = 1 if k in ("X", "S", "AX", "act") else 0
                idx = (slice(None), m) if ax == 1 else (m,)
                self.b[k][idx] = cur[idx]

    def _restore(self, m: np.ndarray) -> None:
        for k in ("X", "S", "AX", "act", "lam", "phi", "psi", "vbar"):
            ax = 1 if k in ("X", "S", "AX", "act") else 0
            idx = (slice(None), m) if ax == 1 else (m,)
            getattr(self, k)[idx] = self.b[k][idx]

    def _denoise(self, R: np.ndarray, tau: np.ndarray, q: np.ndarray) -> tuple[Any, ...]:
        """Denoiser on R (N, q, Lt) at tau (q, Lt) for the runs q."""
        if self.bg:
            lam, phi = self.lam[q][:, None], self.phi[q][:, None]
            g = phi / (phi + tau)
            k = g / tau
            nu = tau * g
            c0 = np.log(self.lam[q] / (1.0 - self.lam[q])) + np.sum(
                0.5 * np.log(tau / (phi + tau)), axis=1
            )
            llr = c0[None, :] + np.sum(0.5 * R * R * k[None], axis=2)
            pi = _sigmoid(llr)  # (N, q)
            gr = g[None] * R
            m2 = np.sum(gr * gr + nu[None], axis=2)
            Xh = pi[:, :, None] * gr
            vsum = np.sum(pi[:, :, None] * nu[None] + (pi * (1 - pi))[:, :, None] * gr * gr,
                          axis=0)
            spi = np.sum(pi, axis=0)
            spm2 = np.sum(pi * m2, axis=0)
            del lam
            return Xh, pi, vsum, spi, spm2
        alpha = self.o["alpha"]
        U = R / np.sqrt(tau)[None]
        n2 = np.sum(U * U, axis=2)
        n = np.sqrt(n2)
        on = n > alpha
        with np.errstate(divide="ignore", invalid="ignore"):
            shrink = np.where(on, 1.0 - alpha / n, 0.0)
            a_n3 = np.where(on, alpha / (n2 * n), 0.0)
        Xh = R * shrink[:, :, None]
        vsum = np.sum(np.where(on[:, :, None], tau[None] * (shrink[:, :, None] + a_n3[:, :, None]
                                                             * U * U), 0.0), axis=0)
        return Xh, on.astype(np.float64), vsum, None, None

    def step(self) -> None:
        """One iteration of every active run."""
        q = np.flatnonzero(self.active)
        ops, o = self.ops, self.o
        M, N, Lt = ops.M, ops.N, self.Lt
        nq = q.size
        beta = self.beta[q]
        self.n_iter[q] += 1
        mup = self.vbar[q] / M
        y, AX, S = self.y[:, q], self.AX[:, q], self.S[:, q]
        Z = y - AX + mup[None] * S
        zz = np.sum(Z * Z, axis=0)
        tau = np.maximum(zz / M, _VAR_FLOOR)
        if self.learn_noise:
            psi = self.psi[q]
            f = psi / (mup + psi)
            self.psi[q] = np.maximum(zz / M * f * f + mup * f, _VAR_FLOOR)
        S = (1.0 - beta)[None, :, None] * (Z / tau[None]) + beta[None, :, None] * S
        self.S[:, q] = S
        T = ops.rmatmat(S.reshape(M, nq * Lt)).reshape(N, nq, Lt) * self.c
        X = self.X[:, q]
        R = X + tau[None] * T
        Xh, act, vsum, spi, spm2 = self._denoise(R, tau, q)
        self.act[:, q] = act
        if self.bg:
            if o["learn_sparsity"]:
                self.lam[q] = np.clip(spi / N, _LAMBDA_MIN, 1.0 - _LAMBDA_MIN)
            if not o["slab_var"] > 0.0:
                ok = spi > 0.0
                self.phi[q] = np.where(
                    ok, np.maximum(spm2 / (Lt * np.where(ok, spi, 1.0)), _VAR_FLOOR), self.phi[q]
                )
        Xn = (1.0 - beta)[None, :, None] * Xh + beta[None, :, None] * X
        dx2 = np.sum((Xn - X) ** 2, axis=(0, 2))
        x2 = np.sum(Xn * Xn, axis=(0, 2))
        self.X[:, q] = Xn
        self.vbar[q] = (1.0 - beta)[:, None] * vsum + beta[:, None] * self.vbar[q]
        AXn = ops.matmat(Xn.reshape(N, nq * Lt)).reshape(M, nq, Lt) * self.c
        self.AX[:, q] = AXn
        rho2 = np.sum((y - AXn) ** 2, axis=(0, 2))
        finite = (np.isfinite(x2) & np.isfinite(self.phi[q]) & np.isfinite(self.lam[q])
                  & np.all(np.isfinite(self.vbar[q]), axis=1)
                  & np.all(np.isfinite(self.psi[q]), axis=1) & np.isfinite(rho2))
        lim = np.maximum(_DIVERGE_FACTOR * np.sqrt(self.best2[q]), self.ynorm[q])
        with np.errstate(invalid="ignore"):
            bad = ~finite | (np.sqrt(np.where(finite, rho2, 0.0)) > lim)
        better = ~bad & (rho2 < self.best2[q])
        if np.any(bad):
            qb = q[bad]
            mb = np.zeros(self.Q, dtype=bool)
            mb[qb] = True
            self._restore(mb)
            self.esc[qb] += 1
            gone = qb[self.esc[qb] > _MAX_ESCALATIONS]
            self.stop[gone] = 2
            self.active[gone] = False
            esc = qb[self.esc[qb] <= _MAX_ESCALATIONS]
            self.beta[esc] = 1.0 - 0.5 * (1.0 - self.beta[esc])
        if np.any(better):
            qg = q[better]
            self.best2[qg] = rho2[better]
            mg = np.zeros(self.Q, dtype=bool)
            mg[qg] = True
            self._snapshot(mg)
        conv = ~bad & (dx2 <= o["tol"] * o["tol"] * x2)
        self.stop[q[conv]] = 0
        self.active[q[conv]] = False
        done = q[self.active[q] & (self.n_iter[q] >= o["max_iter"])]
        self.active[done] = False


class OperatorProducts:
    """What :func:`cscore.amp` keeps of an operator ``A``: its products, scaled.

    Parameters
    ----------
    A : LinearOperator, scipy sparse matrix or operator-like
        ``M x N``, real.

    Attributes
    ----------
    shape : tuple of int
        ``(M, N)``.
    c : float
        ``sqrt(N / ||A||_F^2)``: the iteration runs on ``c A`` (as the kernel).
    """

    def __init__(self, A: Any) -> None:
        self.ops = _Products(A)
        self.shape = (self.ops.M, self.ops.N)
        f2 = self.ops.frob2()
        if not (np.isfinite(f2) and f2 > 0.0):
            raise ValueError("A is too large or too small to scale (||A||_F^2 not finite or 0)")
        self.c = math.sqrt(self.ops.N / f2)

    def __matmul__(self, X: np.ndarray) -> np.ndarray:
        """``A X`` for ``X`` of shape (P, N, L), as (P, M, L) (the residual norms)."""
        P, N, L = X.shape
        flat = np.ascontiguousarray(X.transpose(1, 0, 2)).reshape(N, P * L)
        return self.ops.matmat(flat).reshape(self.ops.M, P, L).transpose(1, 0, 2)


def amp_operator_kernel(
    prod: OperatorProducts, Y3: np.ndarray, X: np.ndarray, activity: np.ndarray,
    params: np.ndarray, n_iter: np.ndarray, stop: np.ndarray, damping_out: np.ndarray,
    denoiser: int, joint: bool, max_iter: int, tol: float, damping: float, alpha: float,
    sparsity: float, learn_sparsity: bool, slab_var: float, noise_var: float, snr0: float,
    n_threads: int,
) -> None:
    """The operator path with the compiled kernel's calling convention.

    Fills the outputs (as ``cscore._core._amp_decode`` does, in the units of
    ``c A``) for the problems ``Y3`` (P, M, L).  ``n_threads`` is unused (the
    operator's own products decide their threading).
    """
    del n_threads
    o = {"denoiser": "bg" if denoiser == 1 else "l1", "joint": joint, "max_iter": max_iter,
         "tol": tol, "damping": damping, "alpha": alpha, "lam0": sparsity,
         "learn_sparsity": learn_sparsity, "slab_var": slab_var, "noise_var": noise_var,
         "snr0": snr0}
    ops, c = prod.ops, prod.c
    M, N = ops.M, ops.N
    P, _, L = Y3.shape
    Lt = L if joint else 1
    # runs: (P,) with Lt = L, or (P * L,) with Lt = 1; Yr (M, runs, Lt)
    Yr = Y3.transpose(1, 0, 2) if joint else Y3.transpose(1, 0, 2).reshape(M, P * L, 1)
    runs = Yr.shape[1]
    Xr = np.zeros((N, runs, Lt))
    act = np.zeros((N, runs))
    prm = np.zeros((runs, Lt, 3))
    it = np.zeros(runs, dtype=np.int64)
    st = np.zeros(runs, dtype=np.int8)
    dm = np.zeros(runs)
    step = max(1, _BLOCK_ENTRIES // (N * Lt))
    for q0 in range(0, runs, step):
        sl = slice(q0, min(runs, q0 + step))
        blk = _Block(ops, np.ascontiguousarray(Yr[:, sl]), c, o)
        while np.any(blk.active):
            blk.step()
        z = blk.zero
        Xr[:, sl] = blk.X * np.where(z, 0.0, blk.scale)[None, :, None]
        act[:, sl] = blk.act
        prm[sl, :, 0] = np.where(z, o["lam0"], blk.lam)[:, None]
        prm[sl, :, 1] = np.where(z, 0.0, blk.phi * blk.scale2)[:, None]
        prm[sl, :, 2] = np.where(z[:, None], 0.0, blk.psi * blk.scale2[:, None])
        it[sl] = blk.n_iter
        st[sl] = blk.stop
        dm[sl] = np.where(z, o["damping"], blk.beta)
    if joint:
        X[...] = Xr.transpose(1, 0, 2)
        activity[...] = act.T[:, :, None]
        params[...] = prm
        n_iter[...] = it[:, None]
        stop[...] = st[:, None]
        damping_out[...] = dm[:, None]
    else:
        X[...] = Xr[:, :, 0].reshape(N, P, L).transpose(1, 0, 2)
        activity[...] = act.reshape(N, P, L).transpose(1, 0, 2)
        params[...] = prm[:, 0, :].reshape(P, L, 3)
        n_iter[...] = it.reshape(P, L)
        stop[...] = st.reshape(P, L)
        damping_out[...] = dm.reshape(P, L)
