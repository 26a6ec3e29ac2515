"""The start of training (:mod:`cscore.text.train`): the trigram embedding and the encoders.

``init="lsa"`` starts from latent semantic analysis: the trigram embedding is
the truncated SVD of the tf-idf weighted document x trigram matrix
(:func:`lsa_embedding`), and every encoder starts as (nearly) the sum of its
words' LSA vectors (:func:`init_encoder`); ``init="random"`` from small random
numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._blas import single_threaded_blas
from .encoders import BiLSTMEncoder, DSSMEncoder, Encoder, LSTMEncoder, RNNEncoder
from .hashing import TrigramHasher, check_texts

if TYPE_CHECKING:
    from ._train_config import TextTrainConfig

__all__ = ["init_encoder", "initial_embedding", "lsa_embedding"]


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
    with single_threaded_blas():  # a team of threads is 5x slower on a busy machine
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


def init_encoder(cfg: TextTrainConfig, rng: np.random.Generator, lsa: bool,
                 reverse: bool = False, n_cells: int | None = None,
                 input_scale: float = 1.0) -> Encoder:
    """One tower's starting encoder for ``cfg.kind``.

    With ``lsa`` the encoder starts as (nearly) the sum of its words' LSA vectors
    (``input_scale``: the typical size of a word vector); otherwise from small
    random numbers.  ``reverse`` reads the words last to first; ``n_cells``
    overrides ``cfg.n_cells`` (each half of a BiLSTM).
    """
    d, H = cfg.embed_dim, n_cells or cfg.n_cells
    alpha = 0.5 * cfg.input_gain / input_scale
    m = min(d, H)
    if cfg.kind in ("lstm", "bilstm"):
        if cfg.kind == "bilstm" and n_cells is None:
            return BiLSTMEncoder(
                init_encoder(cfg, rng, lsa, False, H // 2, input_scale),  # type: ignore[arg-type]
                init_encoder(cfg, rng, lsa, True, H // 2, input_scale))  # type: ignore[arg-type]
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


def initial_embedding(cfg: TextTrainConfig, hasher: TrigramHasher, vocab_texts: list[str],
                      lsa_texts: Sequence[str] | None,
                      rng: np.random.Generator) -> tuple[np.ndarray, bool, float]:
    """The trigram embedding training starts from, as ``cfg.init`` says.

    Parameters
    ----------
    cfg : TextTrainConfig
    hasher : TrigramHasher
        The trigram vocabulary.
    vocab_texts : list of str
        The (checked) vocabulary texts.
    lsa_texts : sequence of str, optional
        Texts for the LSA start (default ``vocab_texts``).
    rng : numpy.random.Generator
        Draws the rotation (``"lsa-rotated"``) or the random embedding.

    Returns
    -------
    E0 : ndarray (len(hasher), cfg.embed_dim) float32
    lsa : bool
        Whether training starts from LSA.
    scale : float
        Median RMS of the LSA texts' summed word vectors (1 without LSA): the
        encoders' input scale.
    """
    lsa = cfg.init in ("lsa", "lsa-rotated")
    if not lsa:
        E0 = (rng.standard_normal((len(hasher), cfg.embed_dim)) * 0.1).astype(np.float32)
        return E0, False, 1.0
    ltexts = check_texts("lsa_texts", lsa_texts) if lsa_texts is not None else vocab_texts
    E0 = lsa_embedding(hasher, ltexts, cfg.embed_dim, max_words=cfg.max_words, seed=cfg.seed)
    scale = _lsa_scale(hasher, E0, ltexts, cfg.max_words)
    if cfg.init == "lsa-rotated":
        # the towers read the first m coordinates: give them a random
        # orthonormal basis of those m leading LSA directions
        read = {"lstm": cfg.n_cells, "bilstm": cfg.n_cells // 2, "rnn": cfg.n_cells,
                "dssm": cfg.dssm_hidden}[cfg.kind]
        m = min(cfg.embed_dim, read)
        q, r = np.linalg.qr(rng.standard_normal((m, m)))
        E0[:, :m] = E0[:, :m] @ (q * np.sign(np.diag(r))).astype(np.float32)
    return E0, True, scale
