"""The beam-search rescue in NumPy: the specification of the compiled search.

:mod:`cscore.decoders.learned.beam` runs the search in C++
(``cpp/include/cscore/lstm_beam.hpp``); this module is the same method in
plain float32/float64 NumPy, short enough to read against the description in
``beam.py``.  Tests compare the two (a test oracle, under ``tests/``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cscore.decoders.learned._greedy import normalize_maxabs
from cscore.decoders.learned.weights import LSTMCSWeights

from .reference import lstm_cell

__all__ = ["Contexts", "Net", "search", "search_channels"]


@dataclass(frozen=True)
class SearchOptions:
    """Partial supports kept per step (``width``) and children per support."""

    width: int
    candidates: int


class Net:
    """The LSTM's arrays (float32, as the compiled decoder runs them) for NumPy steps."""

    def __init__(self, w: LSTMCSWeights) -> None:
        self.WT = np.ascontiguousarray(np.asarray(w.W, dtype=np.float32).T)
        self.RT = np.ascontiguousarray(np.asarray(w.R, dtype=np.float32).T)
        self.b = np.asarray(w.b, dtype=np.float32)
        self.UT = np.ascontiguousarray(np.asarray(w.U, dtype=np.float32).T)
        self.c_out = np.asarray(w.c_out, dtype=np.float32)
        self.cell_type = w.cell
        self.H = int(self.RT.shape[0])

    def cell(self, gates: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gate pre-activations (n, G*H) and previous cells (n, H) -> (v, c)."""
        return lstm_cell(gates, c, self.cell_type)


def _trajectory(A: np.ndarray, y: np.ndarray, path: list[int]) -> np.ndarray:
    """Residuals of ``y`` after 0, 1, ..., len(path) atoms of ``path`` (least squares)."""
    out = np.empty((len(path) + 1, y.size))
    out[0] = r = y
    Q = np.zeros((y.size, 0))
    for t, a in enumerate(path):
        p = A[:, a] - Q @ (Q.T @ A[:, a])
        p -= Q @ (Q.T @ p)
        nrm = np.linalg.norm(p)
        if nrm > 0:
            q = p / nrm
            r = r - q * (q @ r)
            Q = np.column_stack([Q, q])
        out[t + 1] = r
    return out


class Contexts:
    """LSTM states entering each channel at each iteration, made in blocks on demand.

    Block ``k`` holds iterations ``k*BLOCK ..``: the chain over channels is
    extended only as far as a search asks, and shared by every channel of the
    problem (channel ``j``'s context is a prefix of channel ``j+1``'s).
    """

    BLOCK = 8

    def __init__(self, net: Net, A: np.ndarray, Y: np.ndarray, paths: list[list[int]]) -> None:
        self.net, self.A, self.Y, self.paths = net, A, Y, paths
        self.inputs: dict[int, np.ndarray] = {}
        #: block -> (gates entering channel j = R v_{j-1} + b, cells c_{j-1}), j = 0, 1, ...
        self.blocks: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}

    def _inputs(self, i: int) -> np.ndarray:
        if i not in self.inputs:
            traj = _trajectory(self.A, self.Y[:, i], self.paths[i])
            self.inputs[i] = normalize_maxabs(traj).astype(np.float32)
        return self.inputs[i]

    def at(self, j: int, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(R v + b, c) of the state entering channel ``j`` at iteration ``t``."""
        net = self.net
        blk, off = divmod(t, self.BLOCK)
        if blk not in self.blocks:
            zeros = np.zeros((self.BLOCK, net.H), dtype=np.float32)
            self.blocks[blk] = ([np.broadcast_to(net.b, (self.BLOCK, net.b.size))], [zeros])
        gates, cells = self.blocks[blk]
        while len(gates) <= j:
            inp = self._inputs(len(gates) - 1)
            rows = np.minimum(np.arange(blk * self.BLOCK, (blk + 1) * self.BLOCK), len(inp) - 1)
            v, c = net.cell(inp[rows] @ net.WT + gates[-1], cells[-1])
            gates.append(v @ net.RT + net.b)
            cells.append(c)
        return gates[j][off], cells[j][off]


def search(
    net: Net,
    A: np.ndarray,
    y: np.ndarray,
    ctx: Contexts,
    j: int,
    tol: float,
    limit: int,
    opts: SearchOptions,
) -> list[int] | None:
    """Beam search of channel ``j`` alone (see :func:`search_channels`)."""
    AT = np.ascontiguousarray(A.T)
    col2 = np.einsum("ij,ij->i", AT, AT)
    return search_channels(net, AT, col2, {j: y}, ctx, tol, {j: limit}, opts)[j]


@dataclass
class _Beam:
    """One channel's partial supports: the search state."""

    supp: np.ndarray  # (h, s) atoms in selection order
    masks: list[int]  # the same supports as sets (bit a = atom a), to skip duplicates
    Q: np.ndarray  # (h, M, s) orthonormal bases of the supports' columns
    R: np.ndarray  # (h, M) residuals


def search_channels(
    net: Net,
    AT: np.ndarray,
    col2: np.ndarray,
    ys: dict[int, np.ndarray],
    ctx: Contexts,
    tol: float,
    limits: dict[int, int],
    opts: SearchOptions,
) -> dict[int, list[int] | None]:
    """Beam searches of one problem's channels ``ys`` (channel -> y), stepped together.

    Every partial support of every channel has ``t`` atoms at step ``t``, so the
    channels' LSTM steps and candidate fits run as one stack of rows.  Returns,
    per channel, the first support whose residual norm is
    ``<= tol * sqrt((M - s) / M)`` (s atoms), or None.
    """
    M = AT.shape[1]
    C = opts.candidates
    beams = {j: _Beam(np.zeros((1, 0), dtype=np.int64), [0], np.zeros((1, M, 0)),
                      np.asarray(y, dtype=np.float64)[None].copy()) for j, y in ys.items()}
    out: dict[int, list[int] | None] = dict.fromkeys(ys)
    for t in range(max(limits.values(), default=0)):
        act = [j for j in beams if t < limits[j]]
        if not act:
            break
        sizes = [beams[j].R.shape[0] for j in act]
        R = np.concatenate([beams[j].R for j in act])
        Q = np.concatenate([beams[j].Q for j in act])
        supp = np.concatenate([beams[j].supp for j in act])
        states = [ctx.at(j, t) for j in act]
        g_ctx = np.repeat(np.stack([g for g, _ in states]), sizes, axis=0)
        c_ctx = np.repeat(np.stack([c for _, c in states]), sizes, axis=0)
        v, _ = net.cell(normalize_maxabs(R).astype(np.float32) @ net.WT + g_ctx, c_ctx)
        z = v @ net.UT + net.c_out
        np.put_along_axis(z, supp, -np.inf, axis=1)
        cand = np.argpartition(-z, C - 1, axis=1)[:, :C]
        Ac = AT[cand]  # (rows, C, M)
        for _ in range(2):  # project the basis out twice (stable Gram-Schmidt)
            Ac = Ac - np.einsum("hms,hcs->hcm", Q, np.einsum("hms,hcm->hcs", Q, Ac))
        pn2 = np.einsum("hcm,hcm->hc", Ac, Ac)
        ok = pn2 > 1e-10 * col2[cand]
        gain = np.divide(np.einsum("hcm,hm->hc", Ac, R) ** 2, pn2, out=np.zeros_like(pn2),
                         where=ok)
        e = np.where(ok, np.einsum("hm,hm->h", R, R)[:, None] - gain, np.inf)
        flat_cand = cand.ravel().tolist()
        # explained: noise alone after t + 1 atoms leaves about sigma sqrt(M - t - 1)
        thr = tol * np.sqrt((M - t - 1) / M)
        first = 0
        for j, h_j in zip(act, sizes):
            keep = _best_children(e[first : first + h_j], flat_cand[first * C : (first + h_j) * C],
                                  beams[j].masks, C, opts.width)
            if not keep:
                del beams[j]
                first += h_j
                continue
            hs = np.array([first + h for h, _ in keep])
            cs = np.array([c for _, c in keep])
            q = Ac[hs, cs] / np.sqrt(pn2[hs, cs])[:, None]
            b = beams[j]
            b.masks = [b.masks[h] | (1 << flat_cand[(first + h) * C + c]) for h, c in keep]
            b.R = R[hs] - q * np.einsum("hm,hm->h", q, R[hs])[:, None]
            b.Q = np.concatenate([Q[hs], q[:, :, None]], axis=2)
            b.supp = np.concatenate([supp[hs], cand[hs, cs][:, None]], axis=1)
            if np.linalg.norm(b.R[0]) <= thr:
                out[j] = [int(a) for a in b.supp[0]]
                del beams[j]
            first += h_j
    return out


def _best_children(
    e: np.ndarray, cand: list[int], masks: list[int], C: int, width: int
) -> list[tuple[int, int]]:
    """(parent, candidate) of the ``width`` distinct supports with the smallest ``e``."""
    keep: list[tuple[int, int]] = []
    seen: set[int] = set()
    finite = np.isfinite(e).ravel().tolist()
    for flat in np.argsort(e, axis=None, kind="stable").tolist():
        if not finite[flat]:
            break
        h, c = divmod(flat, C)
        key = masks[h] | (1 << cand[flat])
        if key not in seen:
            seen.add(key)
            keep.append((h, c))
            if len(keep) == width:
                break
    return keep
