"""The two towers in PyTorch (training only; :mod:`cscore.text.train`).

:func:`torch_encode` computes what the NumPy encoders of
:mod:`cscore.text.encoders` compute, differentiably, on a :class:`Batch` of
word sequences; :func:`retrieval_loss` is eq. 3.5; :func:`export_model` turns the trained
tensors back into a NumPy :class:`~cscore.text.model.RetrievalModel`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .encoders import Encoder, encoder_from_arrays
from .hashing import TrigramHasher
from .model import RetrievalModel

if TYPE_CHECKING:
    from ._train_config import TextTrainConfig

__all__ = ["Batch", "export_model", "gate_entries", "retrieval_loss", "torch_encode"]


class Batch:
    """Word sequences of a list of texts, sorted longest first, as tensors."""

    def __init__(self, torch: Any, seqs: list[list[str]], hasher: TrigramHasher) -> None:
        vocab: dict[str, int] = {}
        rows = [[vocab.setdefault(w, len(vocab)) for w in s] for s in seqs]
        flat: list[np.ndarray] = []
        offsets = []
        pos = 0
        for w in vocab:
            ids = hasher.word_ids(w)
            offsets.append(pos)
            flat.append(ids)
            pos += len(ids)
        self.flat = torch.from_numpy(np.concatenate(flat).astype(np.int64)) if flat else \
            torch.zeros(0, dtype=torch.int64)
        self.offsets = torch.tensor(offsets, dtype=torch.int64)
        self.n_words = len(vocab)
        lens = np.array([len(r) for r in rows], dtype=np.int64)
        order = np.argsort(-lens, kind="stable")
        T = max(int(lens.max()) if len(lens) else 0, 1)
        ids = np.zeros((len(rows), T), dtype=np.int64)
        ids_rev = np.zeros((len(rows), T), dtype=np.int64)
        for r, k in enumerate(order):
            row = rows[k]
            ids[r, : len(row)] = row
            ids_rev[r, : len(row)] = row[::-1]
        self.ids = torch.from_numpy(ids)
        self.ids_rev = torch.from_numpy(ids_rev)
        self.lens = lens[order]
        self.order = torch.from_numpy(order)
        self.n = len(rows)

    def active(self, t: int) -> int:
        return int(np.count_nonzero(self.lens > t))


def _torch_lstm(torch: Any, P: dict[str, Any], cfg: dict[str, Any], X: Any,
                batch: Batch) -> Any:
    H = P["R"].shape[1]
    # per-step inputs via unbind: slicing a (B, T, 4H) tensor per step would make
    # every step's backward allocate the whole tensor (quadratic in T)
    xw = (X @ P["W"].T + P["b"]).transpose(0, 1).unbind(0)
    RT = P["R"].T
    pi, pf, po = P["p"][0], P["p"][1], P["p"][2]
    peep = bool(cfg.get("peepholes", True))
    fg = bool(cfg.get("forget_gate", True))
    y = X.new_zeros((batch.n, H))
    c = X.new_zeros((batch.n, H))
    mean = cfg.get("pool", "last") == "mean"
    acc = X.new_zeros((batch.n, H))
    for t in range(X.shape[1]):
        na = batch.active(t)
        if na == 0:
            break
        yt, ct = y[:na], c[:na]
        a = xw[t][:na] + yt @ RT
        ai, af, ag, ao = a.split(H, dim=1)
        i = torch.sigmoid(ai + pi * ct) if peep else torch.sigmoid(ai)
        g = torch.tanh(ag)
        if fg:
            f = torch.sigmoid(af + pf * ct) if peep else torch.sigmoid(af)
            cn = f * ct + i * g
        else:
            cn = ct + i * g
        o = torch.sigmoid(ao + po * cn) if peep else torch.sigmoid(ao)
        yn = o * torch.tanh(cn)
        if na < batch.n:
            y = torch.cat([yn, y[na:]])
            c = torch.cat([cn, c[na:]])
        else:
            y, c = yn, cn
        if mean:
            acc = acc + (torch.cat([yn, yn.new_zeros((batch.n - na, H))]) if na < batch.n
                         else yn)
    if mean:
        n = torch.from_numpy(np.maximum(batch.lens, 1).astype(np.float32))
        return acc / n[:, None]
    if cfg.get("pool", "last") == "last+bag":
        mask = torch.from_numpy(
            (np.arange(X.shape[1])[None, :] < batch.lens[:, None]).astype(np.float32))
        n = torch.from_numpy(np.maximum(batch.lens, 1).astype(np.float32))
        bag = (X[:, :, :H] * mask[:, :, None]).sum(1) / n[:, None]
        if bag.shape[1] < H:
            bag = torch.cat([bag, bag.new_zeros((batch.n, H - bag.shape[1]))], 1)
        return y + bag
    return y


def _torch_rnn(torch: Any, P: dict[str, Any], X: Any, batch: Batch) -> Any:
    H = P["R"].shape[0]
    xw = (X @ P["W"].T + P["b"]).transpose(0, 1).unbind(0)
    RT = P["R"].T
    y = X.new_zeros((batch.n, H))
    for t in range(X.shape[1]):
        na = batch.active(t)
        if na == 0:
            break
        yn = torch.tanh(xw[t][:na] + y[:na] @ RT)
        y = torch.cat([yn, y[na:]]) if na < batch.n else yn
    return y


def torch_encode(torch: Any, kind: str, cfg: dict[str, Any], P: dict[str, Any], E: Any,
                 batch: Batch, dropout: float = 0.0) -> Any:
    """Embeddings (n, out) in the batch's original order (``dropout``: on word vectors)."""
    if batch.n_words:
        table = torch.nn.functional.embedding_bag(batch.flat, E, batch.offsets, mode="sum")
    else:
        table = E.new_zeros((1, E.shape[1]))
    if dropout > 0:
        table = torch.nn.functional.dropout(table, dropout, training=True)
    X = table[batch.ids]
    if kind == "dssm":
        mask = torch.from_numpy(
            (np.arange(X.shape[1])[None, :] < batch.lens[:, None]).astype(np.float32))
        S = (X * mask[:, :, None]).sum(1)
        Y = torch.tanh(torch.tanh(S @ P["W1"].T + P["b1"]) @ P["W2"].T + P["b2"])
        Y = Y * torch.from_numpy((batch.lens > 0).astype(np.float32))[:, None]
    elif kind == "rnn":
        Y = _torch_rnn(torch, P, X, batch)
    elif kind == "lstm":
        if cfg.get("reverse"):
            X = table[batch.ids_rev]
        Y = _torch_lstm(torch, P, cfg, X, batch)
    else:  # bilstm
        pf = {k[4:]: v for k, v in P.items() if k.startswith("fwd.")}
        pb = {k[4:]: v for k, v in P.items() if k.startswith("bwd.")}
        Y = torch.cat([_torch_lstm(torch, pf, cfg["fwd"], X, batch),
                       _torch_lstm(torch, pb, cfg["bwd"], table[batch.ids_rev], batch)], 1)
    out = torch.empty_like(Y)
    out[batch.order] = Y
    return out


def retrieval_loss(torch: Any, Q: Any, D: Any, invalid: np.ndarray, gamma: float,
                   n_neg: int | None, gen: np.random.Generator) -> Any:
    """The loss of eq. 3.5: ``-log softmax`` of ``gamma * cos`` over the positive and negatives.

    Row ``i`` of ``Q`` is paired with row ``i`` of ``D``; the other documents of the
    minibatch are the negatives, except where ``invalid`` (B, B) is True (also
    relevant to that query); with ``n_neg`` a random subset of ``n_neg`` of them,
    drawn from ``gen``.
    """
    F = torch.nn.functional
    S = F.normalize(Q, dim=1, eps=1e-8) @ F.normalize(D, dim=1, eps=1e-8).T
    B = S.shape[0]
    inv = torch.from_numpy(invalid)
    if n_neg is None or n_neg >= B - 1:
        logits = (gamma * S).masked_fill(inv, -1e9)
        idx = torch.arange(B)
        logits[idx, idx] = gamma * S[idx, idx]
        return F.cross_entropy(logits, idx)
    r = gen.random(S.shape)
    r[invalid] = np.inf
    pick = np.argsort(r, axis=1)[:, :n_neg]
    bad = np.take_along_axis(invalid, pick, axis=1)
    neg = S.gather(1, torch.from_numpy(pick)).masked_fill(torch.from_numpy(bad), -1e9 / gamma)
    logits = gamma * torch.cat([S.diagonal()[:, None], neg], 1)
    return F.cross_entropy(logits, torch.zeros(B, dtype=torch.int64))


def gate_entries(torch: Any, towers: list[tuple[Encoder, dict]]) -> list[tuple[Any, Any]]:
    """(parameter, boolean mask of its gate entries) of every LSTM in ``towers``."""
    out = []
    for _, P in towers:
        for key, t in P.items():
            name = key.rsplit(".", 1)[-1]  # a BiLSTM's keys are "fwd.W", "bwd.W", ...
            if name == "p":
                out.append((t, torch.ones_like(t, dtype=torch.bool)))
            elif name in ("W", "R", "b"):
                H = t.shape[0] // 4
                rows = torch.ones(t.shape[0], dtype=torch.bool)
                rows[2 * H : 3 * H] = False  # the cell input is not a gate
                out.append((t, rows[:, None].expand_as(t) if t.dim() == 2 else rows))
    return out


def export_model(torch: Any, hasher: TrigramHasher, E: Any, towers: list[tuple[Encoder, dict]],
                 cfg: TextTrainConfig, info: dict[str, Any] | None = None) -> RetrievalModel:
    """The trained tensors as a NumPy :class:`~cscore.text.model.RetrievalModel` (float32)."""
    encs = []
    for enc0, P in towers:
        arrays = {k: v.detach().numpy().astype(np.float32, copy=True) for k, v in P.items()}
        encs.append(encoder_from_arrays(enc0.config(), arrays))
    return RetrievalModel(hasher, E.detach().numpy().astype(np.float32, copy=True), encs[0],
                          encs[1], max_words=cfg.max_words, info=info)
