"""LSTM-CS training sequences generated with torch (on a GPU, or with the model in the loop).

The same sequences as :func:`cscore.training.sequences.sequences_for_epoch`
(max-abs normalized least-squares residuals, one per greedy step and channel;
target: the largest-magnitude true atom not yet selected, or ``IGNORE``), made
with torch tensors on the training device, so that a run on a GPU does not
wait for NumPy.  Random draws come from torch's generator: a run with this
generator does not reproduce the NumPy one's numbers, only its distribution.

**Rollouts** (``rollout > 0``): the paper trains on the teacher's path (step t
sees the residual after least squares on the t-1 largest true atoms).  When
decoding, the network sees the residual of *its own* earlier choices, and once
it picks a wrong atom it is in a state it never trained on.  With rollouts a
random fraction of the problems follow the model's own greedy choice (the
argmax over atoms not yet selected, as :meth:`cscore.LSTMCS.decode` does) while
the target stays the largest true atom not yet selected -- the imitation
learning remedy of Ross, Gordon and Bagnell (DAgger, AISTATS 2011) for this
train/test mismatch.
"""

from __future__ import annotations

from typing import Any, Callable

from .sequences import IGNORE

__all__ = ["torch_epoch_sequences"]


def _keep_largest(torch: Any, S: Any, k: Any) -> Any:
    """Zero all but the ``k[c]`` largest-magnitude entries of each row of ``S`` (C, N)."""
    order = torch.argsort(-S.abs(), dim=1, stable=True)
    ranks = torch.empty_like(order)
    ar = torch.arange(S.shape[1], device=S.device).expand_as(order)
    ranks.scatter_(1, order, ar)
    return torch.where(ranks < k[:, None], S, torch.zeros((), dtype=S.dtype, device=S.device))


def _normalize(torch: Any, r: Any) -> Any:
    scale = r.abs().amax(dim=1, keepdim=True)
    return torch.where(scale > 0, r / torch.where(scale > 0, scale, 1.0), 0.0)


def torch_epoch_sequences(
    torch: Any,
    A: Any,
    S: Any,
    n_steps: int,
    sigma: float,
    k_range: tuple[int, int] | None,
    n_problems: int | None,
    gen: Any,
    *,
    policy: Callable[[Any], Any] | None = None,
    rollout: float = 0.0,
) -> tuple[Any, Any]:
    """One epoch's training sequences, as torch tensors on ``A``'s device.

    Parameters
    ----------
    torch : module
    A : torch.Tensor (M, N) float64
        Sensing matrix, on the training device.
    S : torch.Tensor (P, N, L)
        Ground truths on the same device.
    n_steps : int
        Greedy steps T per problem (capped at ``min(M, N)``).
    sigma : float
        Noise standard deviation (fresh noise per problem).
    k_range : (int, int), optional
        Re-sparsify each problem to its own random k in this range (inclusive).
    n_problems : int, optional
        Random subset of this many problems (all when None).
    gen : torch.Generator
        On ``A``'s device; every draw comes from it.
    policy : callable, optional
        ``policy(X)`` with ``X`` (b, L, M) float32 returns logits (b, L, N);
        needed when ``rollout > 0``.
    rollout : float, default 0
        Fraction of the problems that follow the policy's own choices instead
        of the teacher's (see the module docstring).

    Returns
    -------
    X : torch.Tensor (n_seq, L, M) float32
    targets : torch.Tensor (n_seq, L) int64
        Sequences with no target in any channel are dropped.
    """
    dev = A.device
    M, N = A.shape
    P, _, L = S.shape
    if n_problems is not None and n_problems < P:
        S = S[torch.randperm(P, generator=gen, device=dev)[:n_problems]]
        P = S.shape[0]
    T = max(1, min(int(n_steps), M, N))
    S = S.to(torch.float64).transpose(1, 2).reshape(P * L, N)  # (C, N), problem-major
    if k_range is not None:
        ks = torch.randint(k_range[0], k_range[1] + 1, (P,), generator=gen, device=dev)
        S = _keep_largest(torch, S, ks.repeat_interleave(L))
    C = P * L
    r = S @ A.T + sigma * torch.randn((C, M), generator=gen, device=dev, dtype=torch.float64)
    own = torch.zeros(C, dtype=torch.bool, device=dev)
    if rollout > 0:
        if policy is None:
            raise ValueError("rollout > 0 needs a policy")
        own = (torch.rand((P,), generator=gen, device=dev) < rollout).repeat_interleave(L)
    absS = S.abs()
    selected = torch.zeros((C, N), dtype=torch.bool, device=dev)
    Q = torch.zeros((C, M, T), dtype=torch.float64, device=dev)
    X = torch.empty((C, T, M), dtype=torch.float32, device=dev)
    tg = torch.empty((C, T), dtype=torch.int64, device=dev)
    rows = torch.arange(C, device=dev)
    for t in range(T):
        x = _normalize(torch, r)
        X[:, t] = x.to(torch.float32)
        # the largest true atom not yet selected (lower index on ties), or none
        remaining = torch.where((absS > 0) & ~selected, absS, -1.0)
        best, target = remaining.max(dim=1)
        target = torch.where(best > 0, target, IGNORE)
        tg[:, t] = target
        if t == T - 1:
            break
        # the teacher's next atom: the target, or (no true atom left) the largest
        # remaining entry, as the NumPy generator's stable order does
        pick = torch.where(target >= 0, target, torch.where(~selected, absS, -1.0).argmax(dim=1))
        if own.any():
            assert policy is not None
            with torch.no_grad():
                z = policy(X[:, t].reshape(P, L, M)).reshape(C, N).to(torch.float64)
            z = z.masked_fill(selected, -torch.inf)
            pick = torch.where(own, z.argmax(dim=1), pick)
        selected[rows, pick] = True
        a = A[:, pick].T.clone()  # (C, M)
        if t:
            Qt = Q[:, :, :t]
            for _ in range(2):  # twice is enough (Kahan / Parlett)
                a -= torch.einsum("cmt,ct->cm", Qt, torch.einsum("cmt,cm->ct", Qt, a))
        nrm = a.norm(dim=1, keepdim=True)
        q = torch.where(nrm > 1e-12, a / torch.where(nrm > 1e-12, nrm, 1.0), 0.0)
        Q[:, :, t] = q
        r = r - q * (q * r).sum(dim=1, keepdim=True)
    X = X.reshape(P, L, T, M).transpose(1, 2).reshape(P * T, L, M)
    tg = tg.reshape(P, L, T).transpose(1, 2).reshape(P * T, L)
    keep = (tg != IGNORE).any(dim=1)
    return X[keep].contiguous(), tg[keep].contiguous()
