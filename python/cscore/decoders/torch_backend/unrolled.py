"""LISTA and LAMP (unrolled networks) in PyTorch, on any device.

The forward passes of :mod:`cscore.decoders.learned.unrolled` and the
shrinkages of :mod:`cscore.decoders.learned.shrinkage`, in the precision of the
measurements (float32 or float64), on the same weights.  Every matrix product
is one per problem's channels through :func:`._common.row_matmul` (per-row
results), and the shrinkage acts on one group (a problem's channels, or one
channel) at a time, so a problem's output does not depend on its batch or on
the chunking.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._common import check_device, chunk_rows, get_torch, row_matmul, to_numpy

__all__ = ["unrolled_decode"]

#: floor of the residual variance (shrinkage._VAR_FLOOR)
_VAR_FLOOR = 1e-30


def unrolled_decode(model: Any, Yb: np.ndarray, T: int, keep: bool, device: Any,
                    chunk: int | None = None) -> list[np.ndarray]:
    """The first ``T`` layers of a LISTA or LAMP ``model`` on ``Yb`` (B, M, L).

    Parameters
    ----------
    model : LISTA or LAMP
    Yb : ndarray (B, M, L), float32 or float64 (the arithmetic's precision)
    T : int
    keep : bool
        Return every layer's output (else the last only).
    device : str or torch.device
    chunk : int, optional
        Problems per chunk.

    Returns
    -------
    list of ndarray (B, N, L)
    """
    torch = get_torch()
    dev = check_device(device)
    B, M, L = Yb.shape
    N = model.N
    w = {k: torch.as_tensor(np.array(v), device=dev) for k, v in model._weights(Yb.dtype).items()}
    per = Yb.dtype.itemsize * L * (8 * N + 4 * M) * (T if keep else 1)
    C = chunk_rows(dev, per, chunk, B)
    outs = [np.zeros((B, N, L), dtype=Yb.dtype) for _ in range(T if keep else 1)]
    with torch.no_grad():
        for p0 in range(0, B, C):
            p1 = min(B, p0 + C)
            Yt = torch.as_tensor(np.ascontiguousarray(Yb[p0:p1].transpose(0, 2, 1)), device=dev)
            if model.ARCH == "lista":
                res = _lista(Yt, T, w, bool(model._params["untied"]), model.joint, keep)
            else:
                res = _lamp(Yt, T, w, model.shrinkage, model.joint, keep)
            for dst, X in zip(outs, res):
                dst[p0:p1] = to_numpy(X.permute(0, 2, 1))
    return outs


def _mm(X: Any, W: Any) -> Any:
    """``X @ W.T`` for ``X`` (B, L, K): per-row results (see _common)."""
    B, L, K = X.shape
    return row_matmul(X.reshape(B * L, K), W.T).reshape(B, L, -1)


def _lista(Yt: Any, T: int, w: dict[str, Any], untied: bool, joint: bool,
           keep: bool) -> list[Any]:
    B, L, _ = Yt.shape
    G = L if joint else 1
    By = None if untied else _mm(Yt, w["B"])
    X = Yt.new_zeros((B, L, w["S"].shape[-1]))
    outs = []
    for t in range(T):
        if untied:
            R = _mm(Yt, w["B"][t]) + _mm(X, w["S"][t])
        else:
            R = By + _mm(X, w["S"])
        Xg, _ = shrink("lista", R.reshape(-1, G, R.shape[-1]), None, w["theta"][t])
        X = Xg.reshape(B, L, -1)
        if keep or t == T - 1:
            outs.append(X)
    return outs


def _lamp(Yt: Any, T: int, w: dict[str, Any], kind: str, joint: bool, keep: bool) -> list[Any]:
    torch = get_torch()
    B, L, M = Yt.shape
    G = L if joint else 1
    A = w["A"]
    X = Yt.new_zeros((B, L, A.shape[1]))
    V = Yt
    outs = []
    for t in range(T):
        Vg = V.reshape(-1, G, M)
        sigma2 = (Vg * Vg).sum(dim=(1, 2)) / (M * G)
        R = X + _mm(V, w["B"][t])
        Xg, J = shrink(kind, R.reshape(-1, G, R.shape[-1]), sigma2, w["theta"][t],
                       onsager=True)
        X = Xg.reshape(B, L, -1)
        if keep or t == T - 1:
            outs.append(X)
        if t < T - 1:
            V = Yt - _mm(X, A) + torch.bmm(J, Vg).reshape(B, L, M) / M
    return outs


def _radial(kind: str, rho: Any, sigma: Any, theta: Any, G: int) -> tuple[Any, Any]:
    """``g`` and ``g'(rho)/rho`` of the radial shrinkage (shrinkage._radial)."""
    torch = get_torch()
    th = [float(v) for v in theta]
    rs = torch.where(rho > 0, rho, 1.0)
    if kind == "lista":
        lam = max(th[0], 0.0)
        on = rho > lam
        return torch.where(on, 1.0 - lam / rs, 0.0), torch.where(on, lam / rs**3, 0.0)
    if kind == "soft":
        thr = max(th[0], 0.0) * sigma * math.sqrt(G)
        on = rho > thr
        beta = th[1]
        return (torch.where(on, beta * (1.0 - thr / rs), 0.0),
                torch.where(on, beta * thr / rs**3, 0.0))
    if kind == "bg":
        psi = math.exp(th[0])
        s2 = sigma * sigma
        c = psi / (s2 * (psi + s2))
        u = th[1] - 0.5 * G * torch.log1p(psi / s2) + 0.5 * c * rho * rho
        pi = 0.5 * (1.0 + torch.tanh(0.5 * u))
        gam = psi / (psi + s2)
        return gam * pi, gam * c * pi * (1.0 - pi)
    if kind == "pwlin":
        scale = sigma * math.sqrt(G)
        t1 = abs(th[0]) * scale
        t2 = torch.maximum(abs(th[1]) * scale, t1)
        s3, s4, s5 = th[2:5]
        f = torch.where(rho <= t1, s3 * rho,
                        torch.where(rho <= t2, s3 * t1 + s4 * (rho - t1),
                                    s3 * t1 + s4 * (t2 - t1) + s5 * (rho - t2)))
        fp = torch.where(rho <= t1, s3, torch.where(rho <= t2, s4, s5))
        g = torch.where(rho > 0, f / rs, s3)
        return g, torch.where(rho > 0, (fp - g) / rs**2, 0.0)
    raise ValueError(f"unknown shrinkage {kind!r}")


def shrink(kind: str, R: Any, sigma2: Any, theta: Any, *,
           onsager: bool = False) -> tuple[Any, Any]:
    """:func:`cscore.decoders.learned.shrinkage.shrink` on tensors ``R`` (P, G, N).

    ``sigma2`` (P,) (None for ``"lista"``); returns ``X`` and, with ``onsager``,
    the summed Jacobians (P, G, G).
    """
    torch = get_torch()
    G = R.shape[1]
    rho = torch.sqrt((R * R).sum(dim=1)) if G > 1 else R[:, 0, :].abs()
    sigma = None
    if sigma2 is not None:
        sigma = torch.sqrt(torch.clamp(sigma2, min=_VAR_FLOOR))[:, None].to(R.dtype)
    g, d = _radial(kind, rho, sigma, theta.detach().cpu().numpy(), G)
    g = g.to(R.dtype)
    X = R * g[:, None, :]
    if not onsager:
        return X, None
    d = d.to(R.dtype)
    if G == 1:
        return X, (g + d * rho * rho).sum(dim=1)[:, None, None]
    J = torch.bmm(R * d[:, None, :], R.transpose(1, 2))
    J = J + g.sum(dim=1)[:, None, None] * torch.eye(G, dtype=R.dtype, device=R.device)
    return X, J
