"""The LSTM-CS network in PyTorch, in the weights' contract layout, and its loss.

:func:`torch_logits` is the forward pass (unidirectional, or bidirectional when
the parameters hold a backward LSTM) that :mod:`cscore.training.lstm` trains and
the tests compare with the compiled kernels; :func:`loss_and_accuracy` is the
validation pass.  torch is imported by the caller (:mod:`cscore._torch`).
"""

from __future__ import annotations

from typing import Any

from .sequences import IGNORE

__all__ = ["loss_and_accuracy", "torch_logits", "torch_lstm"]


def torch_lstm(W: Any, R: Any, b: Any, X: Any, cell: str, reverse: bool = False) -> Any:
    """LSTM outputs over channels, ``X`` (B, L, M) -> (B, L, H) (zero initial state)."""
    import torch

    B, L, _ = X.shape
    H = R.shape[1]
    xw = X @ W.T + b  # (B, L, G*H)
    v = X.new_zeros((B, H))
    c = X.new_zeros((B, H))
    outs: list[Any] = [None] * L
    for j in (range(L - 1, -1, -1) if reverse else range(L)):
        gates = xw[:, j] + v @ R.T
        if cell == "paper":
            gi, gg, go = gates.split(H, dim=1)
            c = c + torch.sigmoid(gi) * torch.tanh(gg)
        else:
            gi, gf, gg, go = gates.split(H, dim=1)
            c = torch.sigmoid(gf) * c + torch.sigmoid(gi) * torch.tanh(gg)
        v = torch.sigmoid(go) * torch.tanh(c)
        outs[j] = v
    return torch.stack(outs, dim=1)


def torch_logits(params: dict[str, Any], X: Any, cell: str) -> Any:
    """Torch forward pass in the contract layout; ``X`` (B, L, M) -> (B, L, N).

    Parameters
    ----------
    params : dict
        Torch tensors ``W`` (G*H, M), ``R`` (G*H, H), ``b`` (G*H,), ``U`` (N, H)
        and ``c_out`` (N,), laid out as :class:`LSTMCSWeights`; with ``Wb``,
        ``Rb``, ``bb`` too (and ``U`` (N, 2H)) the bidirectional model of
        :class:`BLSTMCSWeights`.
    X : torch.Tensor (B, L, M)
        Normalized residuals, channel j of every problem at ``X[:, j]``.
    cell : {"paper", "lstm"}
        Cell type (3 gates without forget gate, or the standard 4).

    Returns
    -------
    torch.Tensor (B, L, N)
        Logits over atoms for every channel (forward state carried from channel
        j-1; the backward state from channel j+1).
    """
    import torch

    V = torch_lstm(params["W"], params["R"], params["b"], X, cell)  # (B, L, H)
    if "Wb" in params:
        Vb = torch_lstm(params["Wb"], params["Rb"], params["bb"], X, cell, reverse=True)
        V = torch.cat([V, Vb], dim=2)
    return V @ params["U"].T + params["c_out"]


def loss_and_accuracy(torch: Any, params: dict[str, Any], X: Any, T: Any, cell: str,
                       batch: int = 4096) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``X``, ``T`` (targets ``IGNORE`` left
    out), in one forward pass per batch of ``batch`` rows, without gradients."""
    total, hit, count = 0.0, 0, 0
    with torch.no_grad():
        for i in range(0, X.shape[0], batch):
            z = torch_logits(params, X[i : i + batch], cell)
            t = T[i : i + batch]
            total += float(torch.nn.functional.cross_entropy(
                z.reshape(-1, z.shape[-1]), t.reshape(-1), ignore_index=IGNORE,
                reduction="sum"))
            ok = t != IGNORE
            hit += int(((z.argmax(-1) == t) & ok).sum())
            count += int(ok.sum())
    return total / max(count, 1), hit / max(count, 1)
