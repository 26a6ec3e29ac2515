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
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Union

import numpy as np

from .._torch import import_torch
from .encoders import (
    BiLSTMEncoder,
    DSSMEncoder,
    Encoder,
    LSTMEncoder,
    RNNEncoder,
    encoder_from_arrays,
)
from .hashing import TrigramHasher, check_texts
from .model import RetrievalModel, _one_blas_thread

__all__ = [
    "TextTrainConfig",
    "TextTrainResult",
    "TrainPair",
    "import_torch",
    "lsa_embedding",
    "train_retrieval_model",
]

#: (query text, document text, query key, document key), optionally followed by
#: (negative document text, negative document key): a hard negative that is
#: added to the minibatch's documents.  Pairs with the same query key share
#: their set of relevant documents (by document key); a document in that set is
#: never used as the query's negative.
TrainPair = Union[tuple[str, str, int, int], tuple[str, str, int, int, str, int]]

KINDS = ("lstm", "rnn", "bilstm", "dssm")


@dataclass
class TextTrainConfig:
    """Training settings (defaults: what trained the shipped Cranfield models).

    The chapter's own settings are ``optimizer="nesterov"`` (its momentum
    schedule) and ``n_negatives=4``; on Cranfield both trained worse than the
    defaults (``benchmarks/results/text.md``).

    Attributes
    ----------
    kind : {"lstm", "rnn", "bilstm", "dssm"}
    n_cells : int
        LSTM cells / RNN units / DSSM output size (the embedding size; a
        BiLSTM has ``n_cells // 2`` per direction).
    embed_dim : int
        Trigram embedding size d.
    dssm_hidden : int
        DSSM hidden layer size.
    peepholes, forget_gate : bool
        LSTM cell options (the chapter's cell has both).
    pool : {"last", "mean", "last+bag"}
        LSTM embedding: the last output (the chapter's) or the mean output.
    reverse : bool
        LSTM only: read every text from its last word (of the first
        ``max_words``) to its first, so that the last output, the embedding,
        is the one that has just read the opening words (a document's title).
    max_words : int or None
        Words read per text, in training and in the saved model.
    max_trigrams : int or None
        Trigram vocabulary size (the most frequent in the vocabulary texts).
    init : {"lsa", "lsa-rotated", "random"}
        Start from LSA (see the module notes) or small random weights.
        ``"lsa-rotated"``: LSA with the leading directions the towers read
        (as many as they have cells) in a random orthonormal basis drawn from
        ``seed``, so that members of an ensemble start from different,
        equally good points.
    input_gain : float
        LSA start only: multiplies the towers' input weights (default 1: each
        word adds about 0.5 per coordinate to a cell's input).  With a larger
        gain a long document's summed input reaches the saturating range of
        the LSTM's cell ``tanh`` (a sublinear term frequency), where with the
        default the cell stays in its linear range.
    gamma : float
        Softmax scale of eq. 3.5.
    n_negatives : int or None
        Negatives per pair (chapter: 4); None (default) uses every other
        document of the minibatch.
    optimizer : {"adam", "nesterov"}
    lr : float or None
        Step size (default 1e-4 for Adam, 1e-3 for Nesterov).
    embed_lr : float or None
        Step size of the trigram embedding (default: ``lr``).
    gate_lr : float or None
        LSTM and BiLSTM: step size of the gates' weights (the input, forget
        and output gate rows of ``W``, ``R`` and ``b``, and the peepholes;
        default: ``lr``).  Each optimizer step of those entries is scaled by
        ``gate_lr / lr``.
    batch_size : int
    max_epochs : int
    patience : int or None
        Stop when the validation score has not improved for ``patience``
        epochs and return the best epoch's weights (early stopping).  None:
        train ``max_epochs`` epochs and return the last weights (the
        validation score is still recorded after every epoch).
    clip : float
        Gradient renormalization threshold (per tower).
    weight_decay : float
    dropout : float
        Dropout rate on the word vectors in training (0: none).
    avg_eta : int
        Polynomial-decay averaging of all weights (Shamir & Zhang, ICML 2013):
        after update ``u`` (counted from 0), ``avg = d * avg + (1 - d) * w``
        with ``d = (u + 1) / (u + avg_eta + 2)``, so the average weighs
        roughly the last ``u / (avg_eta + 1)`` updates.  The averaged weights
        are validated and exported.  0 (default): the raw weights.
    seed : int
    n_threads : int or None
        torch CPU threads (default 1).
    max_seconds : float or None
        Wall-clock budget (the epoch in progress is cut and validated).
    progress : bool
        tqdm progress bar.
    """

    kind: str = "lstm"
    n_cells: int = 112
    embed_dim: int = 128
    dssm_hidden: int = 256
    peepholes: bool = True
    forget_gate: bool = True
    pool: str = "last"
    reverse: bool = False
    max_words: int | None = 200
    max_trigrams: int | None = 2000
    init: str = "lsa"
    input_gain: float = 1.0
    gamma: float = 10.0
    n_negatives: int | None = None
    optimizer: str = "adam"
    lr: float | None = None
    embed_lr: float | None = None
    gate_lr: float | None = None
    batch_size: int = 128
    max_epochs: int = 6
    patience: int | None = 2
    clip: float = 1.0
    weight_decay: float = 0.0
    dropout: float = 0.0
    avg_eta: int = 0
    seed: int = 0
    n_threads: int | None = 1
    max_seconds: float | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.optimizer not in ("nesterov", "adam"):
            raise ValueError(f"optimizer must be 'nesterov' or 'adam', got {self.optimizer!r}")
        if not isinstance(self.avg_eta, int) or self.avg_eta < 0:
            raise ValueError(f"avg_eta must be an int >= 0, got {self.avg_eta!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if self.pool not in ("last", "mean", "last+bag"):
            raise ValueError(
                f"pool must be 'last', 'mean' or 'last+bag', got {self.pool!r}")
        if self.init not in ("lsa", "lsa-rotated", "random"):
            raise ValueError(
                f"init must be 'lsa', 'lsa-rotated' or 'random', got {self.init!r}")
        for name in ("n_cells", "embed_dim", "dssm_hidden", "batch_size", "max_epochs",
                     "patience"):
            v = getattr(self, name)
            if name == "patience" and v is None:
                continue
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.reverse and self.kind != "lstm":
            raise ValueError(f"reverse applies to kind 'lstm' only, got kind {self.kind!r}")
        if self.kind == "bilstm" and self.n_cells % 2:
            raise ValueError(f"n_cells must be even for a bilstm, got {self.n_cells}")
        if self.n_negatives is not None and (not isinstance(self.n_negatives, int)
                                             or self.n_negatives < 1):
            raise ValueError(f"n_negatives must be a positive int or None, "
                             f"got {self.n_negatives!r}")
        if self.embed_lr is not None and not self.embed_lr > 0:
            raise ValueError(f"embed_lr must be > 0, got {self.embed_lr!r}")
        if self.gate_lr is not None:
            if not self.gate_lr > 0:
                raise ValueError(f"gate_lr must be > 0, got {self.gate_lr!r}")
            if self.kind not in ("lstm", "bilstm"):
                raise ValueError(f"gate_lr applies to an LSTM, got kind {self.kind!r}")
        if not self.input_gain > 0:
            raise ValueError(f"input_gain must be > 0, got {self.input_gain!r}")
        if not self.gamma > 0 or not self.clip > 0:
            raise ValueError(f"gamma and clip must be > 0, got {self.gamma}, {self.clip}")

    @property
    def step_size(self) -> float:
        """The learning rate in use."""
        if self.lr is not None:
            return float(self.lr)
        return 1e-4 if self.optimizer == "adam" else 1e-3


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


# --------------------------------------------------------------------------- init
def lsa_embedding(hasher: TrigramHasher, texts: Sequence[str], dim: int, *,
                  max_words: int | None = None, seed: int = 0) -> np.ndarray:
    """Trigram embedding from LSA: ``E = diag(idf) V_k`` of the tf-idf matrix.

    A text's sum of word vectors is then its LSA coordinates (folding in).

    Parameters
    ----------
    hasher : TrigramHasher
    texts : sequence of str
        The collection (e.g. the documents).
    dim : int
        Embedding size (columns beyond the matrix rank are small random).
    max_words : int, optional
        Words read per text.
    seed : int

    Returns
    -------
    ndarray (len(hasher), dim) float32
    """
    texts = check_texts("texts", texts)
    V = len(hasher)
    X = np.zeros((len(texts), V), dtype=np.float64)
    for r, t in enumerate(texts):
        for w in hasher.words(t)[:max_words]:
            np.add.at(X[r], hasher.word_ids(w), 1.0)
    df = (X > 0).sum(0)
    idf = np.log((1.0 + len(texts)) / (1.0 + df)) + 1.0
    with _one_blas_thread():  # a team of threads is 5x slower on a busy machine
        _, _, Vt = np.linalg.svd(X * idf, full_matrices=False)
    k = min(dim, Vt.shape[0])
    rng = np.random.default_rng(seed)
    E = np.zeros((V, dim))
    E[:, :k] = Vt[:k].T
    if k < dim:
        E[:, k:] = rng.standard_normal((V, dim - k)) * 0.01
    E *= idf[:, None]
    return E.astype(np.float32)


def _lsa_scale(hasher: TrigramHasher, E: np.ndarray, texts: Sequence[str],
               max_words: int | None) -> float:
    """Median RMS of the texts' summed word vectors (for the encoders' input scale)."""
    rms = []
    for t in texts:
        ws = hasher.words(t)[:max_words]
        if ws:
            v = sum(E[hasher.word_ids(w)].sum(0) for w in ws)
            rms.append(float(np.sqrt(np.mean(np.square(v)))))
    return float(np.median(rms)) if rms else 1.0


def _init_encoder(cfg: TextTrainConfig, rng: np.random.Generator, lsa: bool,
                  reverse: bool = False, n_cells: int | None = None,
                  input_scale: float = 1.0) -> Encoder:
    d, H = cfg.embed_dim, n_cells or cfg.n_cells
    alpha = 0.5 * cfg.input_gain / input_scale
    m = min(d, H)
    if cfg.kind in ("lstm", "bilstm"):
        if cfg.kind == "bilstm" and n_cells is None:
            return BiLSTMEncoder(
                _init_encoder(cfg, rng, lsa, False, H // 2, input_scale),  # type: ignore[arg-type]
                _init_encoder(cfg, rng, lsa, True, H // 2, input_scale))  # type: ignore[arg-type]
        s = 1.0 / math.sqrt(H)
        W = rng.uniform(-s, s, (4 * H, d))
        R = rng.uniform(-s, s, (4 * H, H))
        b = np.zeros(4 * H)
        p = rng.uniform(-s, s, (3, H))
        if lsa:
            W *= 0.02
            R *= 0.02
            p *= 0.0
            W[2 * H : 2 * H + m, :m] += alpha * np.eye(m)
            b[:H] = 1.0  # input gate mostly open
            b[H : 2 * H] = 7.0  # forget gate near 1: the cell sums its inputs
            b[3 * H :] = 1.0
        elif cfg.forget_gate:
            b[H : 2 * H] = 1.0
        return LSTMEncoder(W, R, b, p, peepholes=cfg.peepholes, forget_gate=cfg.forget_gate,
                           reverse=reverse, pool=cfg.pool)
    if cfg.kind == "rnn":
        s = 1.0 / math.sqrt(H)
        W = rng.uniform(-s, s, (H, d))
        R = rng.uniform(-s, s, (H, H))
        if lsa:
            W *= 0.02
            W[:m, :m] += alpha * np.eye(m)
            R = 0.99 * np.eye(H)  # a leaky sum (noise here would make it grow: radius > 1)
        return RNNEncoder(W, R, np.zeros(H))
    H1 = cfg.dssm_hidden
    W1 = rng.uniform(-1, 1, (H1, d)) / math.sqrt(d)
    W2 = rng.uniform(-1, 1, (H, H1)) / math.sqrt(H1)
    if lsa:
        W1 *= 0.02
        W2 *= 0.02
        m1 = min(d, H1)
        W1[:m1, :m1] += alpha * np.eye(m1)
        m2 = min(H, H1)
        W2[:m2, :m2] += np.eye(m2)
    return DSSMEncoder(W1, np.zeros(H1), W2, np.zeros(H))


# --------------------------------------------------------------------------- torch
class _Batch:
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
                batch: _Batch) -> Any:
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


def _torch_rnn(torch: Any, P: dict[str, Any], X: Any, batch: _Batch) -> Any:
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


def _torch_encode(torch: Any, kind: str, cfg: dict[str, Any], P: dict[str, Any], E: Any,
                  batch: _Batch, dropout: float = 0.0) -> Any:
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


def _loss(torch: Any, Q: Any, D: Any, invalid: np.ndarray, gamma: float,
          n_neg: int | None, gen: np.random.Generator) -> Any:
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


def _gate_entries(torch: Any, towers: list[tuple[Encoder, dict]]) -> list[tuple[Any, Any]]:
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


def _export(torch: Any, hasher: TrigramHasher, E: Any, towers: list[tuple[Encoder, dict]],
            cfg: TextTrainConfig, info: dict[str, Any] | None = None) -> RetrievalModel:
    encs = []
    for enc0, P in towers:
        arrays = {k: v.detach().numpy().astype(np.float32, copy=True) for k, v in P.items()}
        encs.append(encoder_from_arrays(enc0.config(), arrays))
    return RetrievalModel(hasher, E.detach().numpy().astype(np.float32, copy=True), encs[0],
                          encs[1], max_words=cfg.max_words, info=info)


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
    cfg = config or TextTrainConfig(**config_kwargs)
    torch = import_torch("training text encoders")
    if cfg.n_threads is not None:
        torch.set_num_threads(int(cfg.n_threads))
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    vocab_texts = check_texts("vocab_texts", vocab_texts)
    hasher = TrigramHasher.fit(vocab_texts, max_size=cfg.max_trigrams)
    lsa = cfg.init in ("lsa", "lsa-rotated")
    scale = 1.0
    if lsa:
        ltexts = check_texts("lsa_texts", lsa_texts) if lsa_texts is not None else vocab_texts
        E0 = lsa_embedding(hasher, ltexts, cfg.embed_dim, max_words=cfg.max_words,
                           seed=cfg.seed)
        scale = _lsa_scale(hasher, E0, ltexts, cfg.max_words)
        if cfg.init == "lsa-rotated":
            # the towers read the first m coordinates: give them a random
            # orthonormal basis of those m leading LSA directions
            read = {"lstm": cfg.n_cells, "bilstm": cfg.n_cells // 2, "rnn": cfg.n_cells,
                    "dssm": cfg.dssm_hidden}[cfg.kind]
            m = min(cfg.embed_dim, read)
            q, r = np.linalg.qr(rng.standard_normal((m, m)))
            E0[:, :m] = E0[:, :m] @ (q * np.sign(np.diag(r))).astype(np.float32)
    else:
        E0 = (rng.standard_normal((len(hasher), cfg.embed_dim)) * 0.1).astype(np.float32)
    E = torch.from_numpy(E0).requires_grad_(True)
    towers = []
    for _ in range(2):
        enc = _init_encoder(cfg, rng, lsa, reverse=cfg.reverse, input_scale=scale)
        P = {k: torch.from_numpy(np.array(v, dtype=np.float32)).requires_grad_(True)
             for k, v in enc.params().items()}
        towers.append((enc, P))
    groups = [[E], list(towers[0][1].values()), list(towers[1][1].values())]
    lr = cfg.step_size
    # gate entries whose steps are rescaled (none when gate_lr is the tower's step)
    gate_gain = (cfg.gate_lr or lr) / lr
    gate_steps = _gate_entries(torch, towers) if gate_gain != 1.0 else []
    params = [{"params": groups[0], "lr": lr if cfg.embed_lr is None else cfg.embed_lr},
              {"params": groups[1] + groups[2]}]
    if cfg.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=lr, weight_decay=cfg.weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True,
                              weight_decay=cfg.weight_decay)

    # the averaged weights (the raw ones themselves when avg_eta == 0), and
    # (average, weight) pairs in the order of ``groups``
    avg_E, avg_towers = E, towers
    pairs_avg: list[tuple[Any, Any]] = []
    if cfg.avg_eta > 0:
        avg_E = E.detach().clone()
        avg_towers = [(enc, {k: v.detach().clone() for k, v in P.items()})
                      for enc, P in towers]
        pairs_avg = list(zip([avg_E] + [v for _, P in avg_towers for v in P.values()],
                             [p for g in groups for p in g]))

    def get_pairs(epoch: int) -> list[TrainPair]:
        got = pairs(epoch) if callable(pairs) else pairs
        out = list(got)
        if not out:
            raise ValueError("no training pairs")
        return out

    words_cache: dict[str, list[str]] = {}

    def words(t: str) -> list[str]:
        w = words_cache.get(t)
        if w is None:
            w = hasher.words(t)[: cfg.max_words]
            if len(words_cache) < 100_000:
                words_cache[t] = w
        return w

    first = get_pairs(0)
    n_batches = math.ceil(len(first) / cfg.batch_size)
    total_updates = n_batches * cfg.max_epochs
    history: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    model = _export(torch, hasher, avg_E, avg_towers, cfg)
    score = float(evaluate(model))
    history.append({"epoch": 0, "val_score": score, "seconds": time.perf_counter() - t0})
    best: tuple[float, int, RetrievalModel] = (score, 0, model)
    bad = 0
    update = 0
    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total_updates, desc=f"{cfg.kind} training", unit="batch")
    try:
        for epoch in range(cfg.max_epochs):
            ep_pairs = first if epoch == 0 else get_pairs(epoch)
            pos: dict[int, set[int]] = {}
            for pr in ep_pairs:
                pos.setdefault(pr[2], set()).add(pr[3])
            perm = rng.permutation(len(ep_pairs))
            run, nb = 0.0, 0
            out_of_time = False
            for s in range(0, len(perm), cfg.batch_size):
                if cfg.max_seconds is not None and time.perf_counter() - t0 > cfg.max_seconds:
                    out_of_time = True
                    break
                bp = [ep_pairs[i] for i in perm[s : s + cfg.batch_size]]
                if len(bp) < 2:
                    continue
                qb = _Batch(torch, [words(p[0]) for p in bp], hasher)
                dtexts = [p[1] for p in bp] + [p[4] for p in bp if len(p) > 4]  # type: ignore[misc]
                dkeys = [p[3] for p in bp] + [p[5] for p in bp if len(p) > 4]  # type: ignore[misc]
                db = _Batch(torch, [words(t) for t in dtexts], hasher)
                invalid = np.array([[k in pos[p[2]] for k in dkeys] for p in bp])
                if cfg.optimizer == "nesterov":
                    frac = update / max(total_updates, 1)
                    mu = 0.9 if (frac < 0.02 or frac >= 0.98) else 0.995
                    for g in opt.param_groups:
                        g["momentum"] = mu
                Q = _torch_encode(torch, cfg.kind, towers[0][0].config(), towers[0][1], E, qb,
                                  cfg.dropout)
                D = _torch_encode(torch, cfg.kind, towers[1][0].config(), towers[1][1], E, db,
                                  cfg.dropout)
                loss = _loss(torch, Q, D, invalid, cfg.gamma, cfg.n_negatives, rng)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                for g in groups:
                    torch.nn.utils.clip_grad_norm_(g, cfg.clip)
                before = [t.detach()[mask] for t, mask in gate_steps]  # a copy
                opt.step()
                if gate_steps:
                    with torch.no_grad():
                        for (t, mask), b0 in zip(gate_steps, before):
                            t[mask] = b0 + gate_gain * (t[mask] - b0)
                if pairs_avg:
                    d = (update + 1) / (update + cfg.avg_eta + 2)
                    with torch.no_grad():
                        for a, w in pairs_avg:
                            a.mul_(d).add_(w.detach(), alpha=1.0 - d)
                update += 1
                run += float(loss.detach())
                nb += 1
                if bar is not None:
                    bar.update(1)
                    if nb % 10 == 0:
                        bar.set_postfix(epoch=epoch + 1, loss=f"{run / nb:.3f}",
                                        val=f"{best[0]:.3f}")
            model = _export(torch, hasher, avg_E, avg_towers, cfg)
            score = float(evaluate(model))
            history.append({"epoch": epoch + 1, "train_loss": run / max(nb, 1),
                            "val_score": score, "updates": update,
                            "seconds": time.perf_counter() - t0})
            if out_of_time:
                history[-1]["stopped"] = "max_seconds"
            if bar is not None:
                bar.set_postfix(epoch=epoch + 1, loss=f"{run / max(nb, 1):.3f}",
                                val=f"{score:.3f}")
            if cfg.patience is None:
                best = (score, epoch + 1, model)  # no early stopping: the last weights
            elif score > best[0] + 1e-4:
                best = (score, epoch + 1, model)
                bad = 0
            else:
                bad += 1
                if bad >= cfg.patience:
                    break
            if out_of_time:
                break
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    model = best[2]
    c = asdict(cfg)
    c.pop("progress", None)
    c["lr"] = cfg.step_size
    model.info = dict(info or {})
    model.info["training"] = {
        "config": c, "best_epoch": best[1], "best_val_score": round(best[0], 5),
        "seconds": round(seconds, 1),
        "history": [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in h.items()}
                    for h in history],
    }
    return TextTrainResult(model=model, history=history, best_epoch=best[1], seconds=seconds,
                           config=cfg)
