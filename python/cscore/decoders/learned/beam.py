"""Beam-search rescue of the channels a greedy LSTM-CS decode leaves unexplained.

Greedy LSTM-CS commits to the network's best atom at every step.  At the
frontier (few measurements, dense signals) a wrong early atom sends a channel
down a path that never explains its measurements: its residual stays well above
the noise however many atoms follow (on held-out MNIST at M = 36, a few percent
of the channels hold almost all of the error, see
``benchmarks/results/frontier.md``).  Such a channel is easy to recognise after
the decode: its residual norm is above ``channel_tol``, a multiple of the
expected noise norm ``sigma * sqrt(M)``.

For every such channel, this module searches again from an empty support, with
the same network, keeping ``width`` partial supports instead of one:

1. **Context.**  LSTM-CS runs the LSTM over the channels at every greedy
   iteration, so channel ``j``'s scores depend on the state carried from
   channels ``0..j-1``.  The rescue keeps the other channels as the decode left
   them: the state at iteration ``t`` is the LSTM run over channels ``0..j-1``
   on their residuals after ``t`` atoms of their decoded paths (their final
   residual once a path has ended).
2. **Expansion.**  Each partial support's residual (max-abs normalised) goes
   through one LSTM step from that state; its ``candidates`` best-scored atoms
   not yet in it are the children.
3. **Ranking.**  A child's residual norm after least squares on its support
   comes from the parent's orthonormal basis without a solve:
   ``||r'||^2 = ||r||^2 - (p^T r)^2 / ||p||^2`` with ``p`` the new column with
   the basis projected out.  The ``width`` distinct supports with the smallest
   residual norms are kept.
4. **Stop.**  The first support whose residual norm is ``<= channel_tol`` is
   the channel's new support (the smallest one the search found that explains
   the measurements down to the noise); its values are least squares on it.
   If none does within ``max(2 k, k + 5)`` atoms (``k`` the decoded path's
   length, at most ``min(M, N) - 1``), the channel keeps its decoded estimate.

Channels within ``channel_tol`` are not touched, so the rescue never changes a
channel the greedy decode already explained.  Each channel's search depends
only on its own problem, so a problem's result does not depend on its batch or
the thread count.  The search runs in float64 NumPy (one small matrix product
per step for all partial supports), so its cost is that of a few greedy decodes
of the rescued channels only.

This is the beam search over supports of tree-search sparse decoders (e.g. the
multipath matching pursuit of Kwon, Wang and Shim, IEEE TIT 2014) with the
network's scores choosing the branches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._blas import single_threaded_blas
from ...result import DecodeResult
from ._greedy import lstm_cell, normalize_maxabs
from .base import support_from_atoms
from .weights import LSTMCSWeights

__all__ = ["CHANNEL_TOL_FACTOR", "BeamOptions", "beam_result", "channel_tolerances",
           "rescue_channels"]


@dataclass(frozen=True)
class BeamOptions:
    """Settings of the rescue.

    Attributes
    ----------
    width : int
        Partial supports kept per step.
    candidates : int
        Children per partial support (its best-scored atoms).
    channel_tol : ndarray (B,)
        Residual norm below which a channel counts as explained, per problem.
    """

    width: int
    candidates: int
    channel_tol: np.ndarray


class _Net:
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


class _Contexts:
    """LSTM states entering each channel at each iteration, made in blocks on demand.

    Block ``k`` holds iterations ``k*BLOCK ..``: the chain over channels is
    extended only as far as a search asks, and shared by every channel of the
    problem (channel ``j``'s context is a prefix of channel ``j+1``'s).
    """

    BLOCK = 8

    def __init__(self, net: _Net, A: np.ndarray, Y: np.ndarray, paths: list[list[int]]) -> None:
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


def _search(
    net: _Net,
    A: np.ndarray,
    y: np.ndarray,
    ctx: _Contexts,
    j: int,
    tol: float,
    limit: int,
    opts: BeamOptions,
) -> list[int] | None:
    """Beam search of channel ``j`` alone (see :func:`_search_channels`)."""
    AT = np.ascontiguousarray(A.T)
    col2 = np.einsum("ij,ij->i", AT, AT)
    return _search_channels(net, AT, col2, {j: y}, ctx, tol, {j: limit}, opts)[j]


@dataclass
class _Beam:
    """One channel's partial supports: the search state."""

    supp: np.ndarray  # (h, s) atoms in selection order
    masks: list[int]  # the same supports as sets (bit a = atom a), to skip duplicates
    Q: np.ndarray  # (h, M, s) orthonormal bases of the supports' columns
    R: np.ndarray  # (h, M) residuals


def _search_channels(
    net: _Net,
    AT: np.ndarray,
    col2: np.ndarray,
    ys: dict[int, np.ndarray],
    ctx: _Contexts,
    tol: float,
    limits: dict[int, int],
    opts: BeamOptions,
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


def rescue_channels(
    weights: LSTMCSWeights,
    A: np.ndarray,
    Y: np.ndarray,
    S: np.ndarray,
    atoms: np.ndarray,
    opts: BeamOptions,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Re-decode, by beam search, every channel whose residual exceeds its tolerance.

    Parameters
    ----------
    weights : LSTMCSWeights
        The unidirectional LSTM-CS network that decoded ``S``.
    A : ndarray (M, N)
    Y : ndarray (B, M, L) float64
    S : ndarray (B, N, L) float64
        The greedy decode; rescued channels are overwritten (a copy is returned).
    atoms : ndarray (B, L, k) int
        The decode's atoms in selection order, -1 padded.
    opts : BeamOptions

    Returns
    -------
    S : ndarray (B, N, L)
    atoms : ndarray (B, L, k') int
        Selection orders, the rescued channels' from the search.
    rescued : ndarray (B, L) bool
        Channels whose estimate the search replaced.
    """
    B, M, L = Y.shape
    cap = min(M, A.shape[1])
    S = S.copy()
    net = _Net(weights)
    resid = np.linalg.norm(Y - np.einsum("mn,bnl->bml", A, S), axis=1)  # (B, L)
    rescued = np.zeros((B, L), dtype=bool)
    found: dict[tuple[int, int], list[int]] = {}
    AT = np.ascontiguousarray(A.T)
    col2 = np.einsum("ij,ij->i", AT, AT)
    for b in np.flatnonzero((resid > opts.channel_tol[:, None]).any(axis=1)):
        tol = float(opts.channel_tol[b])
        paths = [[int(a) for a in atoms[b, j] if a >= 0] for j in range(L)]
        bad = [int(j) for j in np.flatnonzero(resid[b] > tol)]
        limits = {j: min(cap - 1, len(paths[j]) + EXTRA_ATOMS) for j in bad}
        found_b = _search_channels(net, AT, col2, {j: Y[b, :, j] for j in bad},
                                   _Contexts(net, A, Y[b], paths), tol, limits, opts)
        for j, supp in found_b.items():
            if supp is None:
                continue
            coef = np.linalg.lstsq(A[:, supp], Y[b, :, j], rcond=None)[0]
            S[b, :, j] = 0.0
            S[b, supp, j] = coef
            rescued[b, j] = True
            found[(int(b), int(j))] = supp
    k = max([atoms.shape[2], *(len(s) for s in found.values())])
    out = np.full((B, L, k), -1, dtype=atoms.dtype)
    out[:, :, : atoms.shape[2]] = atoms
    for (pb, pj), supp in found.items():
        out[pb, pj] = -1
        out[pb, pj, : len(supp)] = supp
    return S, out, rescued


#: The search may use this many atoms more than the greedy path it replaces.
EXTRA_ATOMS = 10

#: Default ``channel_tol`` in units of the expected noise norm ``sigma * sqrt(M)``
#: (chosen on validation digits, benchmarks/results/frontier.md).
CHANNEL_TOL_FACTOR = 1.5


def channel_tolerances(
    tol: Any, channel_tol: Any, result: DecodeResult, M: int, L: int, B: int
) -> np.ndarray:
    """Per-problem residual norm under which a channel counts as explained.

    Parameters
    ----------
    tol : float, "auto" or None
        The decode's stopping tolerance.  A number is read as the paper's rule
        ``L * sigma * sqrt(M L)`` (:func:`cscore.datasets.expected_noise_tol`),
        so ``sigma * sqrt(M) = tol / L**1.5``; with ``"auto"`` each problem's
        ``sigma_hat`` is used.
    channel_tol : float, array_like (B,) or None
        Given explicitly (overrides the above).
    result : DecodeResult
        The greedy decode (for ``extra["sigma_hat"]``).
    M, L, B : int
        Measurements, channels, problems.

    Returns
    -------
    ndarray (B,)

    Raises
    ------
    ValueError
        Neither a tolerance nor ``channel_tol`` to derive it from, or a
        negative / non-finite value.
    """
    if channel_tol is not None:
        out = np.broadcast_to(np.asarray(channel_tol, dtype=np.float64), (B,)).copy()
    elif isinstance(tol, str):  # "auto": the problems' own noise estimates
        sigma = np.asarray(result.extra["sigma_hat"], dtype=np.float64).reshape(B)
        out = CHANNEL_TOL_FACTOR * sigma * np.sqrt(M)
    elif tol is not None:
        out = np.full(B, CHANNEL_TOL_FACTOR * float(tol) / L**1.5)
    else:
        raise ValueError(
            "beam_width needs a noise level: give tol (the paper's rule, "
            "cscore.datasets.expected_noise_tol), tol='auto', or channel_tol"
        )
    if not np.all(np.isfinite(out)) or np.any(out < 0):
        raise ValueError(f"channel_tol must be finite and >= 0, got {channel_tol!r}")
    return out


def beam_result(
    weights: LSTMCSWeights,
    A: np.ndarray,
    Y: np.ndarray,
    result: DecodeResult,
    opts: BeamOptions,
) -> DecodeResult:
    """Apply :func:`rescue_channels` to a greedy decode's result.

    Parameters
    ----------
    weights : LSTMCSWeights
    A : ndarray (M, N)
    Y : ndarray (M, L) or (B, M, L)
        The measurements the result decoded.
    result : DecodeResult
        The greedy decode, one problem or a batch (as ``Y``).
    opts : BeamOptions

    Returns
    -------
    DecodeResult
        ``x``, ``support``, ``residual_norm`` (sum of channel residual norms) and
        ``extra["atoms"]`` updated; ``extra["rescued"]`` (..., L) marks the
        channels the search replaced.
    """
    single = np.ndim(Y) == 2
    Yb = np.asarray(Y, dtype=np.float64)
    Yb = Yb[None] if single else Yb
    x = np.asarray(result.x)
    out_dtype = x.dtype
    S = (x[None] if single else x).astype(np.float64)
    atoms = np.asarray(result.extra["atoms"])
    atoms = atoms[None] if single else atoms
    with single_threaded_blas():
        S, atoms, rescued = rescue_channels(weights, A, Yb, S, atoms, opts)
    resid = np.linalg.norm(Yb - np.einsum("mn,bnl->bml", A, S), axis=1).sum(axis=1)
    support = support_from_atoms(atoms, S.shape)
    sel: Any = 0 if single else slice(None)
    extra = {**result.extra, "atoms": atoms[sel], "rescued": rescued[sel]}
    return DecodeResult(
        x=S.astype(out_dtype)[sel], support=support[sel],
        residual_norm=resid.astype(out_dtype)[sel], n_iter=result.n_iter,
        stop_reason=result.stop_reason, extra=extra,
    )
