"""Training two-tower text encoders with PyTorch (the optional ``train`` extra).

Only this module imports :mod:`torch`, and only when :func:`train_retrieval_model`
runs; the trained model is a NumPy :class:`~cscore.text.model.RetrievalModel`.

The recipe follows thesis section 3.4 (Algorithm 1):

* Separate query and document towers (one encoder each), fed by one letter-
  trigram embedding layer.
* The loss of eq. 3.5: for each (query, positive document) pair,
  ``-log softmax`` of ``gamma * cos`` over the positive and ``n`` negatives.
  Negatives are the other documents of the minibatch (drawn at random from the
  training pairs, as the chapter draws them), never a document known to be
  relevant to the query.  The loss is averaged over the minibatch (the
  chapter sums; the difference is a constant factor in the step size).
* ``optimizer="nesterov"``: Nesterov momentum with the chapter's schedule,
  ``mu = 0.9`` in the first and last 2% of updates and ``0.995`` in between,
  fixed step size; ``optimizer="adam"``: Adam.  Both renormalize each tower's
  gradient (and the embedding's) to norm ``clip`` when it is larger.
* Early stopping on a validation score (e.g. NDCG@10 of validation queries),
  keeping the best weights.

``init="lsa"`` starts from latent semantic analysis instead of small random
numbers: the trigram embedding is the truncated SVD of the tf-idf weighted
document x trigram matrix, and every encoder starts as (nearly) the sum of its
words' LSA vectors -- the LSTM's input gates open, forget gates near 1 and the
cell input reading the LSA coordinates; the RNN's recurrent matrix 0.99 times
the identity; the DSSM's first layer the LSA coordinates.  Training then learns
which words to let in (the input gates) and how to move the embedding.

The steps live in private modules: :mod:`cscore.text._train_init` (the LSA or
random start), :mod:`cscore.text._train_torch` (the towers in PyTorch and the
loss) and :mod:`cscore.text._train_loop` (epochs, minibatches, updates, early
stopping).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Union

import numpy as np

from .._torch import import_torch
from ._train_config import TextTrainConfig, TrainPair
from ._train_init import initial_embedding, lsa_embedding
from ._train_loop import Best, Trainer
from .hashing import TrigramHasher, check_texts
from .model import RetrievalModel

__all__ = [
    "TextTrainConfig",
    "TextTrainResult",
    "TrainPair",
    "lsa_embedding",
    "train_retrieval_model",
]

@dataclass
class TextTrainResult:
    """What :func:`train_retrieval_model` returns.

    ``best_epoch`` is the epoch whose weights ``model`` holds (the last one
    when ``config.patience`` is None); ``history`` has every epoch's
    validation score (epoch 0: before training).
    """

    model: RetrievalModel
    history: list[dict[str, Any]]
    best_epoch: int
    seconds: float
    config: TextTrainConfig
    extra: dict[str, Any] = field(default_factory=dict)


def train_retrieval_model(
    pairs: Union[Sequence[TrainPair], Callable[[int], Sequence[TrainPair]]],
    *,
    vocab_texts: Sequence[str],
    evaluate: Callable[[RetrievalModel], float],
    lsa_texts: Sequence[str] | None = None,
    config: TextTrainConfig | None = None,
    info: dict[str, Any] | None = None,
    **config_kwargs: Any,
) -> TextTrainResult:
    """Train a two-tower model with the chapter's loss; keep the best validation epoch.

    Parameters
    ----------
    pairs : list of TrainPair, or callable
        ``(query, document, query_key, document_key)`` pairs, optionally with a
        hard negative ``(..., negative_document, negative_key)`` (then every
        pair must have one), or ``pairs(epoch) -> list`` to draw fresh pairs
        every epoch.
    vocab_texts : sequence of str
        Texts the trigram vocabulary is built from.
    evaluate : callable
        ``evaluate(model) -> float``, higher is better (e.g. validation
        NDCG@10); called before training and after every epoch.
    lsa_texts : sequence of str, optional
        Texts for the LSA initialization (default ``vocab_texts``).
    config : TextTrainConfig, optional
        Or pass its fields as keyword arguments.
    info : dict, optional
        Provenance stored in the model (training settings are added).

    Returns
    -------
    TextTrainResult
    """
    if config is not None and config_kwargs:
        raise TypeError("give either config or keyword settings, not both")
    if config is not None and config_kwargs:
        raise TypeError("give either config or keyword settings, not both")
    cfg = config or TextTrainConfig(**config_kwargs)
    torch = import_torch("training text encoders")
    if cfg.n_threads is not None:
        torch.set_num_threads(int(cfg.n_threads))
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    vocab_texts = check_texts("vocab_texts", vocab_texts)
    hasher = TrigramHasher.fit(vocab_texts, max_size=cfg.max_trigrams)
    E0, lsa, scale = initial_embedding(cfg, hasher, vocab_texts, lsa_texts, rng)
    trainer = Trainer(torch, cfg, hasher, E0, lsa, scale, rng)
    history, best, seconds = trainer.fit(pairs, evaluate)
    model = best.model
    model.info = dict(info or {})
    model.info["training"] = _training_record(cfg, best, seconds, history)
    return TextTrainResult(model=model, history=history, best_epoch=best.epoch, seconds=seconds,
                           config=cfg)


def _training_record(cfg: TextTrainConfig, best: Best, seconds: float,
                     history: list[dict[str, Any]]) -> dict[str, Any]:
    """What a trained model's ``info["training"]`` holds (settings, best epoch, history)."""
    c = asdict(cfg)
    c.pop("progress", None)
    c["lr"] = cfg.step_size
    return {
        "config": c, "best_epoch": best.epoch, "best_val_score": round(best.score, 5),
        "seconds": round(seconds, 1),
        "history": [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in h.items()}
                    for h in history],
    }
