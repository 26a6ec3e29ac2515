"""The settings of text-encoder training (:mod:`cscore.text.train`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

__all__ = ["KINDS", "TextTrainConfig", "TrainPair"]


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
