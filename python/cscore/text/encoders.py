"""Sentence encoders in NumPy (inference; training lives in :mod:`cscore.text.train`).

Every encoder reads a text as a sequence of word vectors.  A word vector is the
sum of the embeddings of the word's letter trigrams (``e(w) = E^T l(w)``, with
``l(w)`` the trigram counts of ``#w#``: the thesis's hashing ``W_h`` followed
by a linear layer, shared by both towers of a model).  Encoders take the
sequences as index arrays into a table of word vectors, so a word's input
projection is computed once per call.

* :class:`LSTMEncoder`, the chapter's cell (eq. 3.2), gates in the order
  ``i, f, g, o`` stacked in the rows of ``W`` (4H, d), ``R`` (4H, H), ``b``
  (4H,), with diagonal peepholes ``p`` (3, H) for ``i, f, o``::

      g = tanh(W_g e + R_g y' + b_g)
      i = sigmoid(W_i e + R_i y' + p_i * c' + b_i)
      f = sigmoid(W_f e + R_f y' + p_f * c' + b_f)      (1 without forget gate)
      c = f * c' + i * g
      o = sigmoid(W_o e + R_o y' + p_o * c + b_o)
      y = o * tanh(c)

  The embedding is ``y`` after the last word.
* :class:`RNNEncoder`: ``y = tanh(W e + R y' + b)`` (eq. 3.1).
* :class:`BiLSTMEncoder`: a forward and a backward :class:`LSTMEncoder`,
  final states concatenated.
* :class:`DSSMEncoder`: bag of trigrams (sum of the word vectors), then
  ``tanh(W2 tanh(W1 s + b1) + b2)``.

A text with no known word gets the zero vector from every encoder (its cosine
similarity with anything is then defined as 0).  The recurrent cells run over a
batch of texts in :func:`cscore.text._recurrence.run_recurrent`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ._recurrence import F32, mean_word_vectors, run_recurrent

__all__ = [
    "ENCODER_KINDS",
    "BiLSTMEncoder",
    "DSSMEncoder",
    "Encoder",
    "LSTMEncoder",
    "RNNEncoder",
    "encoder_from_arrays",
]

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return F32(0.5) * (np.tanh(F32(0.5) * x) + F32(1.0))


def _as_f32(name: str, a: Any, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.ascontiguousarray(a, dtype=F32)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


class Encoder:
    """Base class: ``encode(seqs, table)`` maps index sequences to embeddings."""

    kind: ClassVar[str] = ""
    n_in: int
    out_dim: int

    def params(self) -> dict[str, np.ndarray]:
        """The weight arrays by name (float32)."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """JSON-serializable settings (with ``kind``)."""
        raise NotImplementedError

    def encode(self, seqs: Sequence[np.ndarray], table: np.ndarray) -> np.ndarray:
        """Embed sequences of word indices.

        Parameters
        ----------
        seqs : sequence of int arrays
            Row indices into ``table`` per text (may be empty).
        table : ndarray (U, n_in)
            Word vectors.

        Returns
        -------
        ndarray (len(seqs), out_dim) float32
        """
        raise NotImplementedError

    def n_params(self) -> int:
        """Number of weights."""
        return int(sum(a.size for a in self.params().values()))


class LSTMEncoder(Encoder):
    """The chapter's LSTM cell (forget gate and peepholes), last output as embedding.

    Parameters
    ----------
    W, R, b, p : ndarray
        ``W`` (4H, n_in), ``R`` (4H, H), ``b`` (4H,), ``p`` (3, H); gate order
        ``i, f, g, o`` (peepholes ``i, f, o``).
    peepholes : bool
        Use ``p`` (else it is ignored).
    forget_gate : bool
        Use the forget gate (else ``f = 1``, the cell the chapter's analysis ran).
    reverse : bool
        Read texts right to left.
    pool : {"last", "mean", "last+bag"}
        The embedding: the last output (the chapter's), the mean of the
        outputs over the words, or the last output plus the mean word vector
        (first ``H`` coordinates: a residual bag of trigrams).
    """

    kind: ClassVar[str] = "lstm"

    def __init__(self, W: Any, R: Any, b: Any, p: Any = None, *, peepholes: bool = True,
                 forget_gate: bool = True, reverse: bool = False, pool: str = "last") -> None:
        if pool not in ("last", "mean", "last+bag"):
            raise ValueError(f"pool must be 'last', 'mean' or 'last+bag', got {pool!r}")
        self.pool = pool
        W = np.asarray(W)
        if W.ndim != 2 or W.shape[0] % 4:
            raise ValueError(f"W must be (4H, n_in); got shape {W.shape}")
        H = W.shape[0] // 4
        self.n_cells = H
        self.n_in = int(W.shape[1])
        self.out_dim = H
        self.W = _as_f32("W", W, (4 * H, self.n_in))
        self.R = _as_f32("R", R, (4 * H, H))
        self.b = _as_f32("b", b, (4 * H,))
        self.p = _as_f32("p", np.zeros((3, H)) if p is None else p, (3, H))
        self.peepholes = bool(peepholes)
        self.forget_gate = bool(forget_gate)
        self.reverse = bool(reverse)

    @classmethod
    def random(cls, n_in: int, n_cells: int, seed: int = 0, **kw: Any) -> LSTMEncoder:
        """Small random weights (for tests and as a starting point)."""
        rng = np.random.default_rng(seed)
        s = 1.0 / np.sqrt(n_cells)
        return cls(rng.uniform(-s, s, (4 * n_cells, n_in)),
                   rng.uniform(-s, s, (4 * n_cells, n_cells)), np.zeros(4 * n_cells),
                   rng.uniform(-s, s, (3, n_cells)), **kw)

    def params(self) -> dict[str, np.ndarray]:
        return {"W": self.W, "R": self.R, "b": self.b, "p": self.p}

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "n_in": self.n_in, "n_cells": self.n_cells,
                "peepholes": self.peepholes, "forget_gate": self.forget_gate,
                "reverse": self.reverse, "pool": self.pool}

    def _step(self, record: bool) -> Any:
        H = self.n_cells
        RT = np.ascontiguousarray(self.R.T)
        pi, pf, po = (self.p if self.peepholes else np.zeros_like(self.p))

        def step(pt: np.ndarray, state: tuple[np.ndarray, ...]) -> Any:
            y, c = state
            a = pt + y @ RT
            i = _sigmoid(a[:, :H] + pi * c)
            g = np.tanh(a[:, 2 * H : 3 * H])
            if self.forget_gate:
                f = _sigmoid(a[:, H : 2 * H] + pf * c)
                c = f * c + i * g
            else:
                f = np.ones_like(i)
                c = c + i * g
            o = _sigmoid(a[:, 3 * H :] + po * c)
            y = o * np.tanh(c)
            rec = {"input_gate": i, "forget_gate": f, "output_gate": o, "cell": c,
                   "output": y} if record else {}
            return y, c, rec

        return step

    def encode(self, seqs: Sequence[np.ndarray], table: np.ndarray) -> np.ndarray:
        P = np.asarray(table, dtype=F32) @ self.W.T + self.b
        out, _ = run_recurrent(seqs, P, self.n_cells, self._step(False), self.reverse,
                                pool="last" if self.pool == "last+bag" else self.pool)
        if self.pool == "last+bag":
            out = out + mean_word_vectors(seqs, table, self.n_cells)
        return out

    def trace(self, seq: np.ndarray, table: np.ndarray) -> dict[str, np.ndarray]:
        """Activations at every word of one text (in reading order).

        Parameters
        ----------
        seq : int array
            Word indices of one text.
        table : ndarray (U, n_in)

        Returns
        -------
        dict
            ``input_gate``, ``forget_gate``, ``output_gate``, ``cell``,
            ``output``: each (T, H) float32, row t after word t (for a reversed
            encoder, row t is still word t of the text).
        """
        P = np.asarray(table, dtype=F32) @ self.W.T + self.b
        _, tr = run_recurrent([seq], P, self.n_cells, self._step(True), self.reverse,
                               record=True)
        keys = ("input_gate", "forget_gate", "output_gate", "cell", "output")
        if not tr:
            return {k: np.zeros((0, self.n_cells), F32) for k in keys}
        out = {k: np.stack([d[k] for d in tr]) for k in keys}
        if self.reverse:
            out = {k: v[::-1].copy() for k, v in out.items()}
        return out


class RNNEncoder(Encoder):
    """The plain RNN of eq. 3.1: ``y = tanh(W e + R y' + b)``.

    Parameters
    ----------
    W, R, b : ndarray
        ``W`` (H, n_in), ``R`` (H, H), ``b`` (H,).
    """

    kind: ClassVar[str] = "rnn"

    def __init__(self, W: Any, R: Any, b: Any) -> None:
        W = np.asarray(W)
        if W.ndim != 2:
            raise ValueError(f"W must be (H, n_in); got shape {W.shape}")
        H = W.shape[0]
        self.n_cells = H
        self.n_in = int(W.shape[1])
        self.out_dim = H
        self.W = _as_f32("W", W, (H, self.n_in))
        self.R = _as_f32("R", R, (H, H))
        self.b = _as_f32("b", b, (H,))

    @classmethod
    def random(cls, n_in: int, n_cells: int, seed: int = 0) -> RNNEncoder:
        """Small random weights."""
        rng = np.random.default_rng(seed)
        s = 1.0 / np.sqrt(n_cells)
        return cls(rng.uniform(-s, s, (n_cells, n_in)), rng.uniform(-s, s, (n_cells, n_cells)),
                   np.zeros(n_cells))

    def params(self) -> dict[str, np.ndarray]:
        return {"W": self.W, "R": self.R, "b": self.b}

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "n_in": self.n_in, "n_cells": self.n_cells}

    def _step(self, record: bool) -> Any:
        RT = np.ascontiguousarray(self.R.T)

        def step(pt: np.ndarray, state: tuple[np.ndarray, ...]) -> Any:
            y = np.tanh(pt + state[0] @ RT)
            return y, state[1], ({"output": y} if record else {})

        return step

    def encode(self, seqs: Sequence[np.ndarray], table: np.ndarray) -> np.ndarray:
        P = np.asarray(table, dtype=F32) @ self.W.T + self.b
        out, _ = run_recurrent(seqs, P, self.n_cells, self._step(False), False)
        return out

    def trace(self, seq: np.ndarray, table: np.ndarray) -> dict[str, np.ndarray]:
        """Hidden activations ``output`` (T, H) after every word of one text."""
        P = np.asarray(table, dtype=F32) @ self.W.T + self.b
        _, tr = run_recurrent([seq], P, self.n_cells, self._step(True), False, record=True)
        if not tr:
            return {"output": np.zeros((0, self.n_cells), F32)}
        return {"output": np.stack([d["output"] for d in tr])}


class BiLSTMEncoder(Encoder):
    """Forward and backward :class:`LSTMEncoder`; embeddings concatenated.

    Parameters
    ----------
    forward, backward : LSTMEncoder
        ``backward.reverse`` must be True, ``forward.reverse`` False.
    """

    kind: ClassVar[str] = "bilstm"

    def __init__(self, forward: LSTMEncoder, backward: LSTMEncoder) -> None:
        if forward.reverse or not backward.reverse:
            raise ValueError("forward must read left to right and backward right to left")
        if forward.n_in != backward.n_in:
            raise ValueError("forward and backward encoders must have the same input size")
        self.fwd, self.bwd = forward, backward
        self.n_in = forward.n_in
        self.n_cells = forward.n_cells
        self.out_dim = forward.out_dim + backward.out_dim

    def params(self) -> dict[str, np.ndarray]:
        out = {f"fwd.{k}": v for k, v in self.fwd.params().items()}
        out.update({f"bwd.{k}": v for k, v in self.bwd.params().items()})
        return out

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "fwd": self.fwd.config(), "bwd": self.bwd.config()}

    def encode(self, seqs: Sequence[np.ndarray], table: np.ndarray) -> np.ndarray:
        return np.concatenate([self.fwd.encode(seqs, table), self.bwd.encode(seqs, table)], 1)

    def trace(self, seq: np.ndarray, table: np.ndarray) -> dict[str, np.ndarray]:
        """Forward and backward activations, concatenated along the cell axis."""
        a, b = self.fwd.trace(seq, table), self.bwd.trace(seq, table)
        return {k: np.concatenate([a[k], b[k]], 1) for k in a}


class DSSMEncoder(Encoder):
    """DSSM: bag of trigrams, two tanh layers (Huang et al. 2013).

    Parameters
    ----------
    W1, b1, W2, b2 : ndarray
        ``W1`` (H1, n_in), ``b1`` (H1,), ``W2`` (H, H1), ``b2`` (H,).
    """

    kind: ClassVar[str] = "dssm"

    def __init__(self, W1: Any, b1: Any, W2: Any, b2: Any) -> None:
        W1, W2 = np.asarray(W1), np.asarray(W2)
        if W1.ndim != 2 or W2.ndim != 2 or W2.shape[1] != W1.shape[0]:
            raise ValueError(f"W1 (H1, n_in) and W2 (H, H1) do not fit: {W1.shape}, {W2.shape}")
        self.n_in = int(W1.shape[1])
        self.n_hidden = int(W1.shape[0])
        self.out_dim = int(W2.shape[0])
        self.W1 = _as_f32("W1", W1, W1.shape)
        self.b1 = _as_f32("b1", b1, (self.n_hidden,))
        self.W2 = _as_f32("W2", W2, W2.shape)
        self.b2 = _as_f32("b2", b2, (self.out_dim,))

    @classmethod
    def random(cls, n_in: int, n_hidden: int, n_out: int, seed: int = 0) -> DSSMEncoder:
        """Small random weights."""
        rng = np.random.default_rng(seed)
        return cls(rng.uniform(-1, 1, (n_hidden, n_in)) / np.sqrt(n_in), np.zeros(n_hidden),
                   rng.uniform(-1, 1, (n_out, n_hidden)) / np.sqrt(n_hidden), np.zeros(n_out))

    def params(self) -> dict[str, np.ndarray]:
        return {"W1": self.W1, "b1": self.b1, "W2": self.W2, "b2": self.b2}

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "n_in": self.n_in, "n_hidden": self.n_hidden,
                "n_out": self.out_dim}

    def encode(self, seqs: Sequence[np.ndarray], table: np.ndarray) -> np.ndarray:
        table = np.asarray(table, dtype=F32)
        S = np.zeros((len(seqs), self.n_in), dtype=F32)
        nonempty = np.zeros(len(seqs), dtype=bool)
        for k, s in enumerate(seqs):
            if len(s):
                S[k] = table[np.asarray(s, dtype=np.int64)].sum(0)
                nonempty[k] = True
        Y = np.tanh(np.tanh(S @ self.W1.T + self.b1) @ self.W2.T + self.b2)
        Y[~nonempty] = 0.0
        return Y.astype(F32, copy=False)


ENCODER_KINDS: dict[str, type[Encoder]] = {
    "lstm": LSTMEncoder, "rnn": RNNEncoder, "bilstm": BiLSTMEncoder, "dssm": DSSMEncoder,
}


def encoder_from_arrays(config: dict[str, Any], arrays: dict[str, np.ndarray]) -> Encoder:
    """Rebuild an encoder from :meth:`Encoder.config` and :meth:`Encoder.params`.

    Parameters
    ----------
    config : dict
    arrays : dict
        Name -> array, names as :meth:`Encoder.params` gives them.

    Returns
    -------
    Encoder
    """
    kind = config.get("kind")
    try:
        if kind == "lstm":
            return LSTMEncoder(arrays["W"], arrays["R"], arrays["b"], arrays["p"],
                               peepholes=bool(config.get("peepholes", True)),
                               forget_gate=bool(config.get("forget_gate", True)),
                               reverse=bool(config.get("reverse", False)),
                               pool=str(config.get("pool", "last")))
        if kind == "rnn":
            return RNNEncoder(arrays["W"], arrays["R"], arrays["b"])
        if kind == "dssm":
            return DSSMEncoder(arrays["W1"], arrays["b1"], arrays["W2"], arrays["b2"])
        if kind == "bilstm":
            f = encoder_from_arrays(config["fwd"], {k[4:]: v for k, v in arrays.items()
                                                     if k.startswith("fwd.")})
            b = encoder_from_arrays(config["bwd"], {k[4:]: v for k, v in arrays.items()
                                                     if k.startswith("bwd.")})
            if not isinstance(f, LSTMEncoder) or not isinstance(b, LSTMEncoder):
                raise ValueError("bilstm parts must be lstm encoders")
            return BiLSTMEncoder(f, b)
    except KeyError as exc:
        raise ValueError(f"{kind} encoder is missing the array {exc}") from None
    raise ValueError(f"unknown encoder kind {kind!r}; known: {sorted(ENCODER_KINDS)}")
