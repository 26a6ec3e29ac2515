"""The training loop of :func:`cscore.text.train.train_retrieval_model`.

:class:`Trainer` holds the tensors of one run (the trigram embedding, the two
towers, their optimizer and, with ``avg_eta``, the averaged weights) and runs
it: :meth:`Trainer.fit` validates before training and after every epoch and
stops early, :meth:`Trainer.epoch` draws the minibatches of one epoch and
:meth:`Trainer.step` makes one update.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Union

import numpy as np

from ._train_init import init_encoder
from ._train_torch import Batch, export_model, gate_entries, retrieval_loss, torch_encode
from .encoders import Encoder
from .hashing import TrigramHasher
from .model import RetrievalModel

if TYPE_CHECKING:
    from ._train_config import TextTrainConfig, TrainPair

#: ``pairs`` of :func:`~cscore.text.train.train_retrieval_model`: a list, or one per epoch.
Pairs = Union[Sequence["TrainPair"], Callable[[int], Sequence["TrainPair"]]]

__all__ = ["Best", "Pairs", "Trainer", "set_progress_sink"]



#: Where a worker process of a parallel ensemble reports its batches (set by
#: :func:`set_progress_sink`; the parent process shows one bar for all members).
_PROGRESS_SINK: Callable[[int], None] | None = None


def set_progress_sink(sink: Callable[[int], None] | None) -> None:
    """Report every training batch of this process to ``sink(n)`` (None: stop).

    Parameters
    ----------
    sink : callable or None
        Called with the number of batches done since the last call.
    """
    global _PROGRESS_SINK
    _PROGRESS_SINK = sink


class _SinkBar:
    """The part of a tqdm bar the training loop uses, forwarding counts to a sink."""

    def __init__(self, sink: Callable[[int], None]) -> None:
        self.sink = sink

    def update(self, n: int = 1) -> None:
        self.sink(int(n))

    def set_postfix(self, **_: Any) -> None:
        pass

    def close(self) -> None:
        pass


class Best(NamedTuple):
    """The model training returns: its validation score, epoch and weights."""

    score: float
    epoch: int
    model: RetrievalModel


class _EpochStats(NamedTuple):
    """Summed minibatch loss, minibatches, and whether ``max_seconds`` cut the epoch."""

    loss: float
    n_batches: int
    out_of_time: bool


def _pair_source(pairs: Pairs) -> Callable[[int], list[TrainPair]]:
    """``epoch -> pairs`` (a fresh draw when ``pairs`` is callable); refuses none."""

    def get_pairs(epoch: int) -> list[TrainPair]:
        got = pairs(epoch) if callable(pairs) else pairs
        out = list(got)
        if not out:
            raise ValueError("no training pairs")
        return out

    return get_pairs


class Trainer:
    """The tensors, optimizer and averaged weights of one training run.

    Parameters
    ----------
    torch : module
    cfg : TextTrainConfig
    hasher : TrigramHasher
    E0 : ndarray (V, d) float32
        The starting trigram embedding.
    lsa, scale
        What :func:`~cscore.text._train_init.initial_embedding` returned.
    rng : numpy.random.Generator
        Draws the encoders' start, the minibatches and the sampled negatives.
    """

    def __init__(self, torch: Any, cfg: TextTrainConfig, hasher: TrigramHasher,
                 E0: np.ndarray, lsa: bool, scale: float, rng: np.random.Generator) -> None:
        self.torch, self.cfg, self.hasher, self.rng = torch, cfg, hasher, rng
        self.E = torch.from_numpy(E0).requires_grad_(True)
        self.towers: list[tuple[Encoder, dict[str, Any]]] = []
        for _ in range(2):
            enc = init_encoder(cfg, rng, lsa, reverse=cfg.reverse, input_scale=scale)
            P = {k: torch.from_numpy(np.array(v, dtype=np.float32)).requires_grad_(True)
                 for k, v in enc.params().items()}
            self.towers.append((enc, P))
        self.groups = [[self.E], list(self.towers[0][1].values()),
                       list(self.towers[1][1].values())]
        self._make_optimizer()
        self._make_average()
        self.update = 0
        self.total_updates = 0
        self._words: dict[str, list[str]] = {}

    def _make_optimizer(self) -> None:
        torch, cfg, groups = self.torch, self.cfg, self.groups
        lr = cfg.step_size
        # gate entries whose steps are rescaled (none when gate_lr is the tower's step)
        self.gate_gain = (cfg.gate_lr or lr) / lr
        self.gate_steps = gate_entries(torch, self.towers) if self.gate_gain != 1.0 else []
        params = [{"params": groups[0], "lr": lr if cfg.embed_lr is None else cfg.embed_lr},
                  {"params": groups[1] + groups[2]}]
        if cfg.optimizer == "adam":
            self.opt = torch.optim.Adam(params, lr=lr, weight_decay=cfg.weight_decay)
        else:
            self.opt = torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True,
                                       weight_decay=cfg.weight_decay)

    def _make_average(self) -> None:
        """The averaged weights (the raw ones themselves when ``avg_eta`` is 0), and
        (average, weight) pairs in the order of ``groups``."""
        self.avg_E, self.avg_towers = self.E, self.towers
        self.pairs_avg: list[tuple[Any, Any]] = []
        if self.cfg.avg_eta > 0:
            self.avg_E = self.E.detach().clone()
            self.avg_towers = [(enc, {k: v.detach().clone() for k, v in P.items()})
                               for enc, P in self.towers]
            self.pairs_avg = list(zip(
                [self.avg_E] + [v for _, P in self.avg_towers for v in P.values()],
                [p for g in self.groups for p in g]))

    def words(self, text: str) -> list[str]:
        """The words of ``text`` the towers read (cached)."""
        w = self._words.get(text)
        if w is None:
            w = self.hasher.words(text)[: self.cfg.max_words]
            if len(self._words) < 100_000:
                self._words[text] = w
        return w

    def export(self) -> RetrievalModel:
        """The (averaged) weights as a NumPy model."""
        return export_model(self.torch, self.hasher, self.avg_E, self.avg_towers, self.cfg)

    def fit(self, pairs: Pairs, evaluate: Callable[[RetrievalModel], float]
            ) -> tuple[list[dict[str, Any]], Best, float]:
        """Train up to ``max_epochs`` epochs, validating after each one.

        Returns
        -------
        history : list of dict
            Every epoch's validation score (epoch 0: before training).
        best : Best
            The best epoch (the last one when ``patience`` is None).
        seconds : float
            Wall time from the first validation on.
        """
        cfg = self.cfg
        get_pairs = _pair_source(pairs)
        first = get_pairs(0)
        self.total_updates = math.ceil(len(first) / cfg.batch_size) * cfg.max_epochs
        t0 = time.perf_counter()
        model = self.export()
        score = float(evaluate(model))
        history: list[dict[str, Any]] = [
            {"epoch": 0, "val_score": score, "seconds": time.perf_counter() - t0}]
        best = Best(score, 0, model)
        bad = 0
        bar: Any = None
        if cfg.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=self.total_updates, desc=f"{cfg.kind} training", unit="batch")
        elif _PROGRESS_SINK is not None:
            bar = _SinkBar(_PROGRESS_SINK)
        try:
            for epoch in range(cfg.max_epochs):
                ep_pairs = first if epoch == 0 else get_pairs(epoch)
                stats = self.epoch(ep_pairs, epoch, t0, bar, best.score)
                model = self.export()
                score = float(evaluate(model))
                loss = stats.loss / max(stats.n_batches, 1)
                history.append({"epoch": epoch + 1, "train_loss": loss, "val_score": score,
                                "updates": self.update, "seconds": time.perf_counter() - t0})
                if stats.out_of_time:
                    history[-1]["stopped"] = "max_seconds"
                if bar is not None:
                    bar.set_postfix(epoch=epoch + 1, loss=f"{loss:.3f}", val=f"{score:.3f}")
                if cfg.patience is None:
                    best = Best(score, epoch + 1, model)  # no early stopping: the last weights
                elif score > best.score + 1e-4:
                    best, bad = Best(score, epoch + 1, model), 0
                else:
                    bad += 1
                    if bad >= cfg.patience:
                        break
                if stats.out_of_time:
                    break
        finally:
            if bar is not None:
                bar.close()
        return history, best, time.perf_counter() - t0

    def epoch(self, ep_pairs: list[TrainPair], epoch: int, t0: float, bar: Any,
              best_score: float) -> _EpochStats:
        """One pass over ``ep_pairs`` in random minibatches (cut at ``max_seconds``)."""
        cfg = self.cfg
        pos: dict[int, set[int]] = {}
        for pr in ep_pairs:
            pos.setdefault(pr[2], set()).add(pr[3])
        perm = self.rng.permutation(len(ep_pairs))
        run, nb = 0.0, 0
        for s in range(0, len(perm), cfg.batch_size):
            if cfg.max_seconds is not None and time.perf_counter() - t0 > cfg.max_seconds:
                return _EpochStats(run, nb, True)
            bp = [ep_pairs[i] for i in perm[s : s + cfg.batch_size]]
            if len(bp) < 2:
                continue
            run += self.step(bp, pos)
            nb += 1
            if bar is not None:
                bar.update(1)
                if nb % 10 == 0:
                    bar.set_postfix(epoch=epoch + 1, loss=f"{run / nb:.3f}",
                                    val=f"{best_score:.3f}")
        return _EpochStats(run, nb, False)

    def step(self, bp: list[TrainPair], pos: dict[int, set[int]]) -> float:
        """One update on the minibatch ``bp``; returns its loss.

        ``pos``: query key -> the keys of its relevant documents (never a negative).
        """
        torch, cfg, towers = self.torch, self.cfg, self.towers
        qb = Batch(torch, [self.words(p[0]) for p in bp], self.hasher)
        dtexts = [p[1] for p in bp] + [p[4] for p in bp if len(p) > 4]  # type: ignore[misc]
        dkeys = [p[3] for p in bp] + [p[5] for p in bp if len(p) > 4]  # type: ignore[misc]
        db = Batch(torch, [self.words(t) for t in dtexts], self.hasher)
        invalid = np.array([[k in pos[p[2]] for k in dkeys] for p in bp])
        if cfg.optimizer == "nesterov":
            frac = self.update / max(self.total_updates, 1)
            mu = 0.9 if (frac < 0.02 or frac >= 0.98) else 0.995
            for g in self.opt.param_groups:
                g["momentum"] = mu
        Q = torch_encode(torch, cfg.kind, towers[0][0].config(), towers[0][1], self.E, qb,
                          cfg.dropout)
        D = torch_encode(torch, cfg.kind, towers[1][0].config(), towers[1][1], self.E, db,
                          cfg.dropout)
        loss = retrieval_loss(torch, Q, D, invalid, cfg.gamma, cfg.n_negatives, self.rng)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        for g in self.groups:
            torch.nn.utils.clip_grad_norm_(g, cfg.clip)
        before = [t.detach()[mask] for t, mask in self.gate_steps]  # a copy
        self.opt.step()
        if self.gate_steps:
            with torch.no_grad():
                for (t, mask), b0 in zip(self.gate_steps, before):
                    t[mask] = b0 + self.gate_gain * (t[mask] - b0)
        if self.pairs_avg:
            d = (self.update + 1) / (self.update + cfg.avg_eta + 2)
            with torch.no_grad():
                for a, w in self.pairs_avg:
                    a.mul_(d).add_(w.detach(), alpha=1.0 - d)
        self.update += 1
        return float(loss.detach())
