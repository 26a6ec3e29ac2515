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
   comes from the parent's orthonormal basis ``Q`` without a solve:
   ``||r'||^2 = ||r||^2 - (a^T r)^2 / (||a||^2 - ||Q^T a||^2)`` for the new
   column ``a`` (the parent's residual ``r`` is orthogonal to ``Q``).  The
   ``width`` distinct supports with the smallest residual norms are kept; only
   they extend their bases (Gram-Schmidt, twice).
4. **Stop.**  The first support whose residual norm is at most
   ``channel_tol * sqrt((M - s) / M)`` (``s`` atoms: the noise left after a fit
   on ``s`` atoms shrinks with them) is the channel's new support; its values
   are least squares on it.  If none does within ``k + EXTRA_ATOMS`` atoms
   (``k`` the decoded path's length; at most ``min(M, N) - 1``), the channel
   keeps its decoded estimate.

Channels within ``channel_tol`` are not touched, so the rescue never changes a
channel the greedy decode already explained.  The search is compiled
(``cpp/include/cscore/lstm_beam.hpp``): the searches of a few problems step
together, so every LSTM product runs over all their partial supports at once,
and the recurrent product of the context is computed once per iteration, not
once per partial support.  Each row of a product is an independent lane, so a
problem's result does not depend on its batch or the thread count.
``tests/oracles/reference_beam.py`` is the same search in NumPy (the
specification the tests compare with; a test oracle, not in the package).

This is the beam search over supports of tree-search sparse decoders (e.g. the
multipath matching pursuit of Kwon, Wang and Shim, IEEE TIT 2014) with the
network's scores choosing the branches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _core
from ..._blas import single_threaded_blas
from ..._limits import check_memory
from ...result import DecodeResult
from .greedy_model import support_from_atoms

__all__ = ["CHANNEL_TOL_FACTOR", "BeamOptions", "beam_memory", "beam_result",
           "channel_tolerances", "check_beam_memory", "rescue_channels", "search_supports"]


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


def search_supports(
    network: tuple[Any, ...],
    A: np.ndarray,
    Y: np.ndarray,
    atoms: np.ndarray,
    tol: np.ndarray,
    limits: np.ndarray,
    width: int,
    candidates: int,
    n_threads: int = 1,
) -> np.ndarray:
    """The compiled beam search of the channels with ``limits > 0``.

    Parameters
    ----------
    network : tuple
        The kernel arguments of the model's float32 weights,
        ``(WR, b, U, c_out, cell)`` (``LSTMCS._prep(np.float32).args()``).
    A : ndarray (M, N)
    Y : ndarray (B, M, L) float64
    atoms : ndarray (B, L, k) int
        The greedy decode's atoms in selection order, -1 padded (the context).
    tol : ndarray (B,)
        Residual norm counting as explained, per problem.
    limits : ndarray (B, L) int
        Atoms a channel's search may use (0: the channel is not searched).
    width, candidates : int
        Partial supports kept per step; children per partial support.
    n_threads : int, default 1
        Problems searched in parallel (results do not depend on it).

    Returns
    -------
    ndarray (B, L, max(limits)) int64
        The support each search found, in selection order, -1 padded; all -1
        where nothing was found or searched.
    """
    limits = np.ascontiguousarray(limits, dtype=np.int32)
    k_out = max(int(limits.max(initial=0)), 1)
    WR, b, U, c_out, cell = network
    return np.asarray(_core._lstm_beam_f32(
        WR, b, U, c_out, cell, np.ascontiguousarray(A.T, dtype=np.float64),
        np.ascontiguousarray(Y, dtype=np.float64), np.ascontiguousarray(atoms, dtype=np.int64),
        np.ascontiguousarray(tol, dtype=np.float64), limits, k_out, int(width),
        int(candidates), int(n_threads)))


def rescue_channels(
    network: tuple[Any, ...],
    A: np.ndarray,
    Y: np.ndarray,
    S: np.ndarray,
    atoms: np.ndarray,
    opts: BeamOptions,
    n_threads: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Re-decode, by beam search, every channel whose residual exceeds its tolerance.

    Parameters
    ----------
    network : tuple
        The kernel arguments of the unidirectional LSTM-CS network that decoded
        ``S`` (as :func:`search_supports`).
    A : ndarray (M, N)
    Y : ndarray (B, M, L) float64
    S : ndarray (B, N, L) float64
        The greedy decode; rescued channels are overwritten (a copy is returned).
    atoms : ndarray (B, L, k) int
        The decode's atoms in selection order, -1 padded.
    opts : BeamOptions
    n_threads : int, default 1
        Problems searched in parallel (results do not depend on it).

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
    resid = np.linalg.norm(Y - A @ S, axis=1)  # (B, L)
    path_len = (atoms >= 0).sum(axis=2)
    limits = np.where(resid > opts.channel_tol[:, None],
                      np.minimum(cap - 1, path_len + EXTRA_ATOMS), 0)
    found = search_supports(network, A, Y, atoms, opts.channel_tol, limits, opts.width,
                            opts.candidates, n_threads)
    rescued = found[:, :, 0] >= 0
    for b, j in zip(*np.nonzero(rescued)):
        supp = found[b, j][found[b, j] >= 0]
        S[b, :, j] = 0.0
        S[b, supp, j] = np.linalg.lstsq(A[:, supp], Y[b, :, j], rcond=None)[0]
    if not rescued.any():
        return S, atoms.copy(), rescued
    out = np.full((B, L, max(atoms.shape[2], found.shape[2])), -1, dtype=atoms.dtype)
    out[:, :, : atoms.shape[2]] = atoms
    out[rescued] = -1
    out[rescued, : found.shape[2]] = found[rescued]
    return S, out, rescued


#: The search may use this many atoms more than the greedy path it replaces.
EXTRA_ATOMS = 10

#: Problems one thread searches together (``lstm::beam::detail::kChunkProblems``).
_CHUNK_PROBLEMS = 8


def beam_memory(width: int, candidates: int, M: int, N: int, L: int, gate_rows: int,
                n_problems: int, n_threads: int) -> float:
    """Bytes the compiled search may hold at once, at most (``lstm_beam.hpp``).

    Every searched channel holds two beams of ``width`` partial supports (an
    ``M x limit`` float64 basis, a residual, the support and its bit set; ``limit
    <= min(M, N) - 1``) and ``width x N`` float32 scores; a thread searches up to
    8 problems' channels together and has rows of LSTM work (``gate_rows`` gates,
    float32) and ``width * candidates`` candidates.  A float, so that no width
    overflows it.

    Parameters
    ----------
    width, candidates : int
        ``beam_width`` and ``beam_candidates``.
    M, N, L : int
        Measurements, atoms, channels.
    gate_rows : int
        Rows of the LSTM's gate matrix (gates x cells).
    n_problems, n_threads : int
        Problems of the call and threads searching them.

    Returns
    -------
    float
        The estimate in bytes.
    """
    W, limit = float(width), float(max(min(M, N) - 1, 1))
    words = (N + 63) // 64
    per_channel = 2 * W * 8 * (limit * (M + 1) + words + M) + 4 * W * N
    chunks = min(max(n_problems, 1), _CHUNK_PROBLEMS * max(n_threads, 1))
    rows = max(256.0, W)
    per_thread = rows * 4 * (2 * gate_rows + N) + W * candidates * 32
    return chunks * L * per_channel + max(n_threads, 1) * per_thread


def check_beam_memory(width: int, candidates: int, M: int, N: int, L: int, gate_rows: int,
                      n_problems: int, n_threads: int) -> None:
    """Refuse a ``beam_width`` whose search would exceed the memory limit.

    Raises
    ------
    ValueError
        :func:`beam_memory` is over :func:`cscore._limits.memory_limit`.
    """
    est = beam_memory(width, candidates, M, N, L, gate_rows, n_problems, n_threads)
    check_memory(f"beam_width={width}", est,
                 f"the beam search of {n_problems} problem(s) with {L} channel(s)")

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
        given = np.asarray(channel_tol, dtype=np.float64)
        if not (given.ndim == 0 or (given.ndim == 1 and given.size in (1, B))):
            raise ValueError(
                f"channel_tol must be a number or an array of shape ({B},) (one per "
                f"problem); got shape {given.shape}"
            )
        out = np.broadcast_to(given, (B,)).copy()
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
    network: tuple[Any, ...],
    A: np.ndarray,
    Y: np.ndarray,
    result: DecodeResult,
    opts: BeamOptions,
    n_threads: int = 1,
) -> DecodeResult:
    """Apply :func:`rescue_channels` to a greedy decode's result.

    Parameters
    ----------
    network : tuple
        The kernel arguments of the LSTM-CS network that made ``result`` (as
        :func:`search_supports`).
    A : ndarray (M, N)
    Y : ndarray (M, L) or (B, M, L)
        The measurements the result decoded.
    result : DecodeResult
        The greedy decode, one problem or a batch (as ``Y``).
    opts : BeamOptions
    n_threads : int, default 1
        Problems searched in parallel (results do not depend on it).

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
        S, atoms, rescued = rescue_channels(network, A, Yb, S, atoms, opts, n_threads)
    resid = np.linalg.norm(Yb - A @ S, axis=1).sum(axis=1)
    support = support_from_atoms(atoms, S.shape)
    sel: Any = 0 if single else slice(None)
    extra = {**result.extra, "atoms": atoms[sel], "rescued": rescued[sel]}
    return DecodeResult(
        x=S.astype(out_dtype)[sel], support=support[sel],
        residual_norm=resid.astype(out_dtype)[sel], n_iter=result.n_iter,
        stop_reason=result.stop_reason, extra=extra,
    )
