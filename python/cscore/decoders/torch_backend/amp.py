"""AMP and VAMP (EM-BG or l1 denoiser, joint or per channel) in PyTorch, on any device.

The algorithm of the compiled kernel (``cpp/include/cscore/amp.hpp``,
``amp_run``), in float64, every run (a problem, or one channel with
``joint=False``) advancing together with its own state: the scaling to unit
mean-square measurements, EM-BG-AMP's initial parameters, the uniform-variance
GAMP recursion with damping, the EM updates, and the divergence guard (the best
iterate restored and the damping raised, "diverged" after five raises).  A
finished run's state is frozen while the others go on.  The products are one
per run (batched products of equal matrices), so a run's result does not
depend on its batch or the chunking.  VAMP (SVD form, ``vamp_run``) likewise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import check_device, chunk_rows, get_torch, to_numpy

__all__ = ["amp_decode", "vamp_decode"]

_VAR_FLOOR = 1e-24
_LAMBDA_MIN = 1e-8
_MAX_ESCALATIONS = 5
_DIVERGE = 2.0
_TOL, _MAX_ITER, _DIVERGED = 0, 1, 2
_ALPHA_MIN = 1e-10


def amp_decode(
    A: np.ndarray, frob2: float, Y: np.ndarray, X: np.ndarray, act: np.ndarray,
    params: np.ndarray, n_iter: np.ndarray, stop: np.ndarray, damp: np.ndarray,
    denoiser: int, joint: bool, max_iter: int, tol: float, damping: float, alpha: float,
    lam0: float, learn_sparsity: bool, slab: float, noise: float, snr0: float,
    _threads: int = 1, *, device: Any, chunk: int | None = None,
) -> None:
    """``_core._amp_decode``'s arguments and outputs, decoded on ``device``.

    ``A`` (M, N) with ``||A||_F^2 = frob2``; ``Y`` (P, M, L); the outputs ``X``,
    ``act`` (P, N, L), ``params`` (P, L, 3), ``n_iter``, ``stop``, ``damp``
    (P, L) are filled in place; ``denoiser`` 0 is l1, 1 is bg.
    """
    torch = get_torch()
    dev = check_device(device)
    mats = (torch.as_tensor(np.array(A), dtype=torch.float64, device=dev),)
    o = _options(denoiser, max_iter, tol, damping, alpha, lam0, learn_sparsity, slab, noise,
                 snr0, frob2)
    _drive(_runs, mats, A.shape[1], Y, (X, act, params, n_iter, stop, damp), joint, o, dev,
           chunk)


def vamp_decode(
    U: np.ndarray, s: np.ndarray, Vt: np.ndarray, Y: np.ndarray, X: np.ndarray,
    act: np.ndarray, params: np.ndarray, n_iter: np.ndarray, stop: np.ndarray,
    damp: np.ndarray, denoiser: int, joint: bool, max_iter: int, tol: float, damping: float,
    alpha: float, lam0: float, learn_sparsity: bool, slab: float, noise: float, snr0: float,
    _threads: int = 1, *, device: Any, chunk: int | None = None,
) -> None:
    """``_core._vamp_decode``'s arguments and outputs (the economy SVD ``A = U diag(s)
    Vt``), decoded on ``device``; as :func:`amp_decode` otherwise."""
    torch = get_torch()
    dev = check_device(device)
    mats = tuple(torch.as_tensor(np.array(a), dtype=torch.float64, device=dev)
                 for a in (U, s, Vt))
    o = _options(denoiser, max_iter, tol, damping, alpha, lam0, learn_sparsity, slab, noise,
                 snr0, float(np.sum(np.asarray(s) ** 2)))
    _drive(_vamp_runs, mats, Vt.shape[1], Y, (X, act, params, n_iter, stop, damp), joint, o,
           dev, chunk)


def _options(denoiser: int, max_iter: int, tol: float, damping: float, alpha: float,
             lam0: float, learn: bool, slab: float, noise: float, snr0: float,
             frob2: float) -> dict[str, Any]:
    return {"bg": denoiser == 1, "max_iter": max_iter, "tol": tol, "damping": damping,
            "alpha": alpha, "lam0": lam0, "learn": learn, "slab": slab, "noise": noise,
            "snr0": snr0, "frob2": frob2}


def _drive(run: Any, mats: tuple[Any, ...], N: int, Y: np.ndarray, outs: tuple[np.ndarray, ...],
           joint: bool, o: dict[str, Any], dev: Any, chunk: int | None) -> None:
    """Cut ``Y`` (P, M, L) into runs (problems, or channels), decode them in chunks
    with ``run``, and write the outputs ``outs`` as the kernels do."""
    torch = get_torch()
    X, act, params, n_iter, stop, damp = outs
    P, M, L = Y.shape
    Lt = L if joint else 1
    runs = Y if joint else Y.transpose(0, 2, 1).reshape(P * L, M, 1)
    Rn = runs.shape[0]
    C = chunk_rows(dev, 8 * Lt * (14 * N + 8 * M), chunk, Rn)
    Xr = np.zeros((Rn, N, Lt))
    actr = np.zeros((Rn, N))
    prm = np.zeros((Rn, Lt, 3))
    nit = np.zeros(Rn, dtype=np.int64)
    st = np.zeros(Rn, dtype=np.int8)
    dm = np.zeros(Rn)
    with torch.no_grad():
        for r0 in range(0, Rn, C):
            r1 = min(Rn, r0 + C)
            y = torch.as_tensor(np.array(runs[r0:r1], dtype=np.float64), device=dev)
            out = run(mats, y, o)
            Xr[r0:r1], actr[r0:r1], prm[r0:r1] = out[0], out[1], out[2]
            nit[r0:r1], st[r0:r1], dm[r0:r1] = out[3], out[4], out[5]
    if joint:
        X[...] = Xr
        act[...] = actr[:, :, None]
        params[...] = prm
        n_iter[...] = nit[:, None]
        stop[...] = st[:, None]
        damp[...] = dm[:, None]
    else:
        X[...] = Xr[:, :, 0].reshape(P, L, N).transpose(0, 2, 1)
        act[...] = actr.reshape(P, L, N).transpose(0, 2, 1)
        params[...] = prm[:, 0, :].reshape(P, L, 3)
        n_iter[...] = nit.reshape(P, L)
        stop[...] = st.reshape(P, L)
        damp[...] = dm.reshape(P, L)


def _denoise(o: dict[str, Any], R: Any, tau: Any, lam: Any, phi: Any) -> tuple[Any, ...]:
    """Estimate, activity, sum_j var_jl (R, Lt), sum_j pi_j, sum_j pi_j m2_j."""
    torch = get_torch()
    if o["bg"]:
        ph = phi[:, None]
        g = ph / (ph + tau)
        k = g / tau
        nu = tau * g
        c0 = torch.log(lam / (1.0 - lam)) + 0.5 * torch.log(tau / (ph + tau)).sum(dim=1)
        llr = c0[:, None] + 0.5 * (R * R * k[:, None, :]).sum(dim=2)
        gr = g[:, None, :] * R
        m2 = (gr * gr + nu[:, None, :]).sum(dim=2)
        pi = torch.sigmoid(llr)
        q = pi * (1.0 - pi)
        X = pi[:, :, None] * gr
        vsum = (pi[:, :, None] * nu[:, None, :] + q[:, :, None] * gr * gr).sum(dim=1)
        return X, pi, vsum, pi.sum(dim=1), (pi * m2).sum(dim=1)
    alpha = o["alpha"]
    u = R / torch.sqrt(tau)[:, None, :]
    n2 = (u * u).sum(dim=2)
    n = torch.sqrt(n2)
    on = n > alpha
    ns = torch.where(on, n, 1.0)
    shrink = torch.where(on, 1.0 - alpha / ns, 0.0)
    a_n3 = torch.where(on, alpha / (ns * ns * ns), 0.0)
    X = R * shrink[:, :, None]
    vsum = torch.where(on[:, :, None], tau[:, None, :] * (shrink[:, :, None]
                                                          + a_n3[:, :, None] * u * u), 0.0)
    zero = R.new_zeros(R.shape[0])
    return X, on.to(R.dtype), vsum.sum(dim=1), zero, zero


def _em_prior(
    o: dict[str, Any], keep: Any, spi: Any, spm2: Any, N: int, Lt: int, lam: Any, phi: Any
) -> tuple[Any, Any]:
    """EM-BG's update of the prior ``(lam, phi)`` after a denoiser (``"bg"`` only).

    ``spi`` and ``spm2`` are the sums of the posterior activities and of their
    second moments; ``keep(new, old)`` keeps the old value for finished runs.
    """
    if not o["bg"]:
        return lam, phi
    torch = get_torch()
    if o["learn"]:
        lam = keep((spi / N).clamp(_LAMBDA_MIN, 1.0 - _LAMBDA_MIN), lam)
    if not (o["slab"] > 0):
        phi_n = (spm2 / (Lt * torch.where(spi > 0, spi, 1.0))).clamp_min(_VAR_FLOOR)
        phi = keep(torch.where(spi > 0, phi_n, phi), phi)
    return lam, phi


def _runs(mats: tuple[Any, ...], y: Any, o: dict[str, Any]) -> tuple[np.ndarray, ...]:
    """``amp_run`` for a chunk of runs ``y`` (R, M, Lt)."""
    torch = get_torch()
    (At,) = mats
    dev, f64 = y.device, y.dtype
    R, M, Lt = y.shape
    N = At.shape[1]
    ML = M * Lt
    A_b = At.expand(R, M, N)
    AT_b = At.T.expand(R, N, M)
    y, nonzero, scale2, lam, phi, psi, _ = _scaled(y, o, o["frob2"])
    scale = torch.sqrt(scale2)
    bg = o["bg"]
    learn_noise = bg and not (o["noise"] > 0)
    vbar = (N * lam * phi)[:, None].expand(R, Lt).clone() if bg else y.new_zeros((R, Lt))
    X = y.new_zeros((R, N, Lt))
    act = y.new_zeros((R, N))
    S = torch.zeros_like(y)
    AX = torch.zeros_like(y)
    beta = torch.full((R,), float(o["damping"]), dtype=f64, device=dev)
    best2 = torch.full((R,), float(ML), dtype=f64, device=dev)
    ynorm = float(np.sqrt(ML))
    esc = torch.zeros(R, dtype=torch.int64, device=dev)
    snap = [X, S, AX, act, lam, phi, psi, vbar]
    running = nonzero.clone()
    n_iter = torch.zeros(R, dtype=torch.int64, device=dev)
    stop = torch.full((R,), _MAX_ITER, dtype=torch.int8, device=dev)
    stop = torch.where(nonzero, stop, torch.full_like(stop, _TOL))

    def keep(new: Any, old: Any) -> Any:  # runs that go on take the new value
        m = running.reshape(-1, *([1] * (new.dim() - 1)))
        return torch.where(m, new, old)

    for it in range(int(o["max_iter"])):
        if not bool(running.any()):
            break
        n_iter = torch.where(running, it + 1, n_iter)
        b = beta[:, None, None]
        mup = vbar / M
        Z = y - AX + mup[:, None, :] * S
        zz = (Z * Z).sum(dim=1)
        tau = (zz / M).clamp_min(_VAR_FLOOR)
        if learn_noise:
            f = psi / (mup + psi)
            psi = keep((zz / M * f * f + mup * f).clamp_min(_VAR_FLOOR), psi)
        S = keep((1.0 - b) * (Z / tau[:, None, :]) + b * S, S)
        T = torch.bmm(AT_b, S)
        Rr = X + tau[:, None, :] * T
        Xh, act_n, vsum, spi, spm2 = _denoise(o, Rr, tau, lam, phi)
        act = keep(act_n, act)
        lam, phi = _em_prior(o, keep, spi, spm2, N, Lt, lam, phi)
        xn = (1.0 - b) * Xh + b * X
        dx = xn - X
        dx2 = (dx * dx).sum(dim=(1, 2))
        x2 = (xn * xn).sum(dim=(1, 2))
        X = keep(xn, X)
        vbar = keep((1.0 - beta[:, None]) * vsum + beta[:, None] * vbar, vbar)
        AX = keep(torch.bmm(A_b, X), AX)
        res = y - AX
        rho2 = (res * res).sum(dim=(1, 2))
        finite = (torch.isfinite(x2) & torch.isfinite(phi) & torch.isfinite(lam)
                  & torch.isfinite(vbar).all(dim=1) & torch.isfinite(psi).all(dim=1))
        lim = torch.maximum(_DIVERGE * torch.sqrt(best2), torch.full_like(best2, ynorm))
        bad = running & (~finite | ~torch.isfinite(rho2) | (torch.sqrt(rho2) > lim))
        better = running & ~bad & (rho2 < best2)
        # diverging runs: back to the best iterate, more damping (or give up)
        cur = [X, S, AX, act, lam, phi, psi, vbar]
        restored = []
        for c, s in zip(cur, snap):
            m = bad.reshape(-1, *([1] * (c.dim() - 1)))
            restored.append(torch.where(m, s, c))
        X, S, AX, act, lam, phi, psi, vbar = restored
        esc = esc + bad.to(torch.int64)
        gave_up = bad & (esc > _MAX_ESCALATIONS)
        beta = torch.where(bad & ~gave_up, 1.0 - 0.5 * (1.0 - beta), beta)
        stop = torch.where(gave_up, _DIVERGED, stop).to(torch.int8)
        # improving runs: a new best iterate
        best2 = torch.where(better, rho2, best2)
        cur = [X, S, AX, act, lam, phi, psi, vbar]
        snap = [torch.where(better.reshape(-1, *([1] * (c.dim() - 1))), c, s)
                for c, s in zip(cur, snap)]
        conv = running & ~bad & (dx2 <= o["tol"] * o["tol"] * x2)
        stop = torch.where(conv, _TOL, stop).to(torch.int8)
        running = running & ~gave_up & ~conv
    X = X * scale[:, None, None]
    phi = torch.where(nonzero, phi * scale2, 0.0)
    psi = torch.where(nonzero[:, None], psi * scale2[:, None], 0.0)
    lam = torch.where(nonzero, lam, float(o["lam0"]))
    prm = torch.stack([lam[:, None].expand(R, Lt), phi[:, None].expand(R, Lt), psi], dim=2)
    X = torch.where(nonzero[:, None, None], X, 0.0)
    act = torch.where(nonzero[:, None], act, 0.0)
    return (to_numpy(X), to_numpy(act), to_numpy(prm), to_numpy(n_iter), to_numpy(stop),
            to_numpy(beta))


def _scaled(y: Any, o: dict[str, Any], frob2: float) -> tuple[Any, ...]:
    """The scaling of each run to unit mean-square and EM-BG-AMP's initial values."""
    torch = get_torch()
    R, M, Lt = y.shape
    ny2 = (y * y).sum(dim=(1, 2))
    nonzero = ny2 > 0
    scale2 = torch.where(nonzero, ny2 / (M * Lt), 1.0)
    y = y / torch.sqrt(scale2)[:, None, None]
    lam = torch.full((R,), float(o["lam0"]), dtype=y.dtype, device=y.device)
    e = (y * y).sum(dim=1)
    if o["noise"] > 0:
        psi = (o["noise"] / scale2)[:, None].expand(R, Lt).clone()
    else:
        psi = e / ((o["snr0"] + 1.0) * M)
    psi = psi.clamp_min(_VAR_FLOOR)
    if o["slab"] > 0:
        phi = o["slab"] / scale2
    else:
        ny2s = e.sum(dim=1)
        phi = (ny2s - M * psi.sum(dim=1)) / (frob2 * lam * Lt)
        phi = torch.where(phi > _VAR_FLOOR, phi, ny2s / (frob2 * lam * Lt))
        phi = phi.clamp_min(_VAR_FLOOR)
    return y, nonzero, scale2, lam, phi, psi, e


def _vamp_runs(mats: tuple[Any, ...], y: Any, o: dict[str, Any]) -> tuple[np.ndarray, ...]:
    """``vamp_run`` for a chunk of runs ``y`` (R, M, Lt)."""
    torch = get_torch()
    U, s, Vt = mats
    dev, f64 = y.device, y.dtype
    R, M, Lt = y.shape
    Rk, N = Vt.shape
    ML = M * Lt
    frob2 = float((s * s).sum())
    y, nonzero, scale2, lam, phi, psi, e = _scaled(y, o, frob2)
    bg = o["bg"]
    learn_noise = not (o["noise"] > 0)
    Vt_b = Vt.expand(R, Rk, N)
    V_b = Vt.T.expand(R, N, Rk)
    yt = torch.bmm(U.T.expand(R, Rk, M), y)  # (R, Rk, Lt)
    yperp = (e - (yt * yt).sum(dim=1)).clamp_min(0.0)
    v0 = (lam * phi)[:, None].expand(R, Lt) if bg else e / frob2
    g2 = 1.0 / v0.clamp_min(_VAR_FLOOR)
    r2 = y.new_zeros((R, N, Lt))
    x1 = y.new_zeros((R, N, Lt))
    act = y.new_zeros((R, N))
    beta = torch.full((R,), float(o["damping"]), dtype=f64, device=dev)
    best2 = torch.full((R,), float(ML), dtype=f64, device=dev)
    ynorm = float(np.sqrt(ML))
    esc = torch.zeros(R, dtype=torch.int64, device=dev)
    snap = [r2, x1, act, lam, phi, psi, g2]
    running = nonzero.clone()
    n_iter = torch.zeros(R, dtype=torch.int64, device=dev)
    stop = torch.where(nonzero, _MAX_ITER, _TOL).to(torch.int8)
    sk = s[None, :, None]
    s2 = sk * sk

    def keep(new: Any, old: Any) -> Any:
        return torch.where(running.reshape(-1, *([1] * (new.dim() - 1))), new, old)

    for it in range(int(o["max_iter"])):
        if not bool(running.any()):
            break
        n_iter = torch.where(running, it + 1, n_iter)
        Vr = torch.bmm(Vt_b, r2)
        gw = (1.0 / psi)[:, None, :]
        den = gw * s2 + g2[:, None, :]
        wk = gw * sk / den * (yt - sk * Vr)
        dsum = (gw * s2 / den).sum(dim=1)
        trace = (s2 / den).sum(dim=1)
        err = yt - sk * (Vr + wk)
        res2 = (err * err).sum(dim=1)
        a2 = (1.0 - dsum / N).clamp(_ALPHA_MIN, 1.0 - _ALPHA_MIN)
        if learn_noise:
            psi = keep(((yperp + res2 + trace) / M).clamp_min(_VAR_FLOOR), psi)
        g1 = g2 * (1.0 - a2) / a2
        tau = 1.0 / g1
        T = torch.bmm(V_b, wk)
        r1 = r2 + (1.0 / (1.0 - a2))[:, None, :] * T
        Xn, act_n, vsum, spi, spm2 = _denoise(o, r1, tau, lam, phi)
        act = keep(act_n, act)
        lam, phi = _em_prior(o, keep, spi, spm2, N, Lt, lam, phi)
        dx = Xn - x1
        dx2 = (dx * dx).sum(dim=(1, 2))
        x2 = (Xn * Xn).sum(dim=(1, 2))
        x1 = keep(Xn, x1)
        a1 = (vsum / (N * tau)).clamp(_ALPHA_MIN, 1.0 - _ALPHA_MIN)
        g2n = g1 * (1.0 - a1) / a1
        c = 1.0 / (1.0 - a1)
        r2n = c[:, None, :] * (x1 - a1[:, None, :] * r1)
        b = beta[:, None]
        r2 = keep((1.0 - b[:, :, None]) * r2n + b[:, :, None] * r2, r2)
        sd = (1.0 - b) / torch.sqrt(g2n) + b / torch.sqrt(g2)
        g2 = keep(1.0 / (sd * sd), g2)
        Vx = torch.bmm(Vt_b, x1)
        ex = yt - sk * Vx
        rho2 = yperp.sum(dim=1) + (ex * ex).sum(dim=(1, 2))
        finite = (torch.isfinite(x2) & torch.isfinite(phi) & torch.isfinite(lam)
                  & torch.isfinite(r2).all(dim=2).all(dim=1)
                  & (torch.isfinite(g2) & (g2 > 0) & torch.isfinite(psi)).all(dim=1))
        lim = torch.maximum(_DIVERGE * torch.sqrt(best2), torch.full_like(best2, ynorm))
        bad = running & (~finite | ~torch.isfinite(rho2) | (torch.sqrt(rho2) > lim))
        better = running & ~bad & (rho2 < best2)
        cur = [r2, x1, act, lam, phi, psi, g2]
        cur = [torch.where(bad.reshape(-1, *([1] * (c_.dim() - 1))), s_, c_)
               for c_, s_ in zip(cur, snap)]
        r2, x1, act, lam, phi, psi, g2 = cur
        esc = esc + bad.to(torch.int64)
        gave_up = bad & (esc > _MAX_ESCALATIONS)
        beta = torch.where(bad & ~gave_up, 1.0 - 0.5 * (1.0 - beta), beta)
        stop = torch.where(gave_up, _DIVERGED, stop).to(torch.int8)
        best2 = torch.where(better, rho2, best2)
        snap = [torch.where(better.reshape(-1, *([1] * (c_.dim() - 1))), c_, s_)
                for c_, s_ in zip(cur, snap)]
        conv = running & ~bad & (dx2 <= o["tol"] * o["tol"] * x2)
        stop = torch.where(conv, _TOL, stop).to(torch.int8)
        running = running & ~gave_up & ~conv
    scale = torch.sqrt(scale2)
    X = torch.where(nonzero[:, None, None], x1 * scale[:, None, None], 0.0)
    phi = torch.where(nonzero, phi * scale2, 0.0)
    psi = torch.where(nonzero[:, None], psi * scale2[:, None], 0.0)
    lam = torch.where(nonzero, lam, float(o["lam0"]))
    prm = torch.stack([lam[:, None].expand(R, Lt), phi[:, None].expand(R, Lt), psi], dim=2)
    act = torch.where(nonzero[:, None], act, 0.0)
    return (to_numpy(X), to_numpy(act), to_numpy(prm), to_numpy(n_iter), to_numpy(stop),
            to_numpy(beta))
