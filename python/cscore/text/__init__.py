"""Sentence embeddings for document retrieval (thesis chapter 3: LSTM-DSSM).

A text is lower-cased, split into words, and every word is hashed into its
letter trigrams (``#word#``); a shared trigram embedding turns each word into a
vector; a query-side and a document-side encoder (LSTM, RNN, BiLSTM or DSSM)
read the word vectors and return the sentence embedding; query and document
are compared by cosine similarity.  Inference is NumPy only; training
(:func:`train_retrieval_model`) needs PyTorch.

Examples
--------
>>> from cscore import text
>>> model = text.pretrained("cranfield-lstm")
>>> docs = ["flow past a flat plate", "heat transfer in hypersonic flow"]
>>> model.encode_documents(docs).shape == (2, model.dim)
True
>>> model.rank("hypersonic heat transfer", docs, top_k=1)[0][0]
1
"""

from __future__ import annotations

from .data import Collection, QuerySplit, fold_splits, load_cranfield, split_queries
from .encoders import BiLSTMEncoder, DSSMEncoder, Encoder, LSTMEncoder, RNNEncoder
from .hashing import TrigramHasher, tokenize, word_trigrams
from .metrics import mean_ndcg, ndcg_at_k
from .model import (
    RetrievalEnsemble,
    RetrievalModel,
    TextModelFileError,
    cosine_scores,
    load_model,
)
from .pretrained import list_pretrained, pretrained
from .train import TextTrainConfig, train_retrieval_model

__all__ = [
    "BiLSTMEncoder",
    "Collection",
    "DSSMEncoder",
    "Encoder",
    "LSTMEncoder",
    "QuerySplit",
    "RNNEncoder",
    "RetrievalEnsemble",
    "RetrievalModel",
    "TextModelFileError",
    "TextTrainConfig",
    "TrigramHasher",
    "cosine_scores",
    "fold_splits",
    "list_pretrained",
    "load_cranfield",
    "load_model",
    "mean_ndcg",
    "ndcg_at_k",
    "pretrained",
    "split_queries",
    "tokenize",
    "train_retrieval_model",
    "word_trigrams",
]
