"""The torch twin of LISTA and LAMP's forward pass (what :mod:`cscore.training.unrolled` trains).

It mirrors :mod:`cscore.decoders.learned.unrolled` and
:mod:`cscore.decoders.learned.shrinkage` operation for operation, on grouped
data (P, G, K) (G = L channels for a joint model, else 1); ``tests/test_unrolled.py``
checks that both give the same layers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._torch import import_torch
from ..decoders.learned import LISTA, UnrolledModel

__all__ = ["grouped", "torch_layers", "torch_net"]

def _t_shrink(torch: Any, kind: str, R: Any, sigma2: Any, th: Any,
              onsager: bool) -> tuple[Any, Any]:
    """The torch twin of :func:`cscore.decoders.learned.shrinkage.shrink`."""
    G = R.shape[1]
    rho = torch.sqrt((R * R).sum(1).clamp_min(1e-30)) if G > 1 else R[:, 0, :].abs()
    sigma = torch.sqrt(sigma2.clamp_min(1e-30))[:, None]
    pos = rho > 0
    rs = torch.where(pos, rho, torch.ones_like(rho))
    if kind in ("lista", "soft"):
        lam = torch.relu(th[0]) * (1.0 if kind == "lista" else sigma * math.sqrt(G))
        beta = th[1] if kind == "soft" else 1.0
        on = rho > lam
        g = torch.where(on, beta * (1.0 - lam / rs), torch.zeros_like(rho))
        d = torch.where(on, beta * lam / rs**3, torch.zeros_like(rho))
    elif kind == "bg":
        psi, s2 = torch.exp(th[0]), sigma * sigma
        c = psi / (s2 * (psi + s2))
        u = th[1] - 0.5 * G * torch.log1p(psi / s2) + 0.5 * c * rho * rho
        pi = 0.5 * (1.0 + torch.tanh(0.5 * u))
        gam = psi / (psi + s2)
        g, d = gam * pi, gam * c * pi * (1.0 - pi)
    else:  # pwlin
        scale = sigma * math.sqrt(G)
        t1 = th[0].abs() * scale
        t2 = torch.maximum(th[1].abs() * scale, t1)
        low, mid = rho <= t1, rho <= t2
        f = torch.where(low, th[2] * rho, torch.where(
            mid, th[2] * t1 + th[3] * (rho - t1), th[2] * t1 + th[3] * (t2 - t1)
            + th[4] * (rho - t2)))
        fp = torch.where(low, th[2], torch.where(mid, th[3], th[4]))
        g = torch.where(pos, f / rs, th[2] * torch.ones_like(rho))
        d = torch.where(pos, (fp - g) / rs**2, torch.zeros_like(rho))
    X = R * g[:, None, :]
    if not onsager:
        return X, None
    if G == 1:
        return X, (g + d * rho * rho).sum(1)[:, None, None]
    J = (R * d[:, None, :]) @ R.transpose(1, 2)
    return X, J + g.sum(1)[:, None, None] * torch.eye(G, dtype=R.dtype, device=R.device)


def torch_net(torch: Any, model: UnrolledModel, dtype: Any) -> Any:
    """A torch module with ``model``'s parameters (per-layer lists, shared tensors)."""

    class Net(torch.nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            w = model.arrays()
            P = torch.nn.Parameter
            T = model.n_layers
            self.kind = "lista" if isinstance(model, LISTA) else model.shrinkage  # type: ignore[attr-defined]
            self.register_buffer("A", torch.tensor(model.A, dtype=dtype))
            self.theta = torch.nn.ParameterList(
                [P(torch.tensor(w["theta"][t], dtype=dtype)) for t in range(T)])
            per_layer = w["B"].ndim == 3
            self.B = torch.nn.ParameterList(
                [P(torch.tensor(b, dtype=dtype)) for b in (w["B"] if per_layer else [w["B"]])])
            self.S = torch.nn.ParameterList(
                [P(torch.tensor(s, dtype=dtype)) for s in
                 (w["S"] if per_layer else [w["S"]])] if "S" in w else [])
            self.per_layer = per_layer

        def layer_params(self, t: int) -> list[Any]:
            own = [self.theta[t]]
            if self.per_layer:
                own += [self.B[t]] + ([self.S[t]] if len(self.S) else [])
            return own

        def shared_params(self) -> list[Any]:
            return [] if self.per_layer else [*self.B, *self.S]

        def _mat(self, plist: Any, t: int) -> Any:
            return plist[t] if self.per_layer else plist[0]

        def forward(self, Yg: Any, n_layers: int) -> list[Any]:
            P_, G, M = Yg.shape
            N = self.A.shape[1]
            X = Yg.new_zeros((P_, G, N))
            V, outs = Yg, []
            for t in range(n_layers):
                B = self._mat(self.B, t)
                if self.kind == "lista":
                    R = (Yg.reshape(-1, M) @ B.T + X.reshape(-1, N) @ self._mat(self.S, t).T)
                    X, _ = _t_shrink(torch, "lista", R.reshape(P_, G, N), Yg.new_zeros(P_),
                                     self.theta[t], False)
                else:
                    sigma2 = (V * V).sum((1, 2)) / (M * G)
                    R = X + (V.reshape(-1, M) @ B.T).reshape(P_, G, N)
                    X, J = _t_shrink(torch, self.kind, R, sigma2, self.theta[t], True)
                    V = Yg - (X.reshape(-1, N) @ self.A.T).reshape(P_, G, M) + J @ V / M
                outs.append(X)
            return outs

        def arrays(self) -> dict[str, np.ndarray]:
            def np_(ps: Any) -> np.ndarray:
                a = np.stack([p.detach().cpu().numpy() for p in ps])
                return a if self.per_layer else a[0]

            out = {"theta": np.stack([p.detach().cpu().numpy() for p in self.theta]),
                   "B": np_(self.B)}
            if len(self.S):
                out["S"] = np_(self.S)
            return out

    return Net()


def grouped(X: np.ndarray, joint: bool) -> np.ndarray:
    """(n, K, L) -> (P, G, K) the way the models group channels."""
    Xt = np.ascontiguousarray(np.asarray(X).transpose(0, 2, 1))
    return Xt if joint else Xt.reshape(-1, 1, Xt.shape[2])


def torch_layers(model: UnrolledModel, Y: np.ndarray, *, dtype: str = "float64") -> np.ndarray:
    """The torch forward pass of ``model`` (the one training differentiates).

    Parameters
    ----------
    model : LISTA or LAMP
    Y : ndarray (B, M, L)
    dtype : {"float64", "float32"}, default "float64"

    Returns
    -------
    ndarray (T, B, N, L)
        Every layer's output (compare with ``model.decode_layers(Y)``).
    """
    torch = import_torch()
    tdt = getattr(torch, dtype)
    net = torch_net(torch, model, tdt)
    Y = np.asarray(Y, dtype=np.float64)
    with torch.no_grad():
        outs = net(torch.tensor(grouped(Y, model.joint), dtype=tdt), model.n_layers)
    B, _, L = Y.shape
    return np.stack([o.numpy().reshape(B, L, -1).transpose(0, 2, 1) for o in outs])
