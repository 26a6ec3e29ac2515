"""cscore.text: hashing, encoders, model files, metrics, data, training, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cscore import text
from cscore.text.encoders import (
    BiLSTMEncoder,
    DSSMEncoder,
    LSTMEncoder,
    RNNEncoder,
    encoder_from_arrays,
)
from cscore.text.hashing import TrigramHasher, tokenize, word_trigrams
from cscore.text.metrics import mean_ndcg, ndcg_at_k, paired_difference, per_query_ndcg
from cscore.text.model import RetrievalModel, TextModelFileError, cosine_scores

from conftest import requires_torch, shared_data

#: Python and PyTorch only (no C++ kernels): left out of the sanitizer run (scripts/sanitize.sh).
pytestmark = pytest.mark.slow

CORPUS = [
    "supersonic flow over a wedge",
    "heat transfer in hypersonic boundary layers",
    "buckling of thin cylindrical shells under pressure",
    "wing flutter at transonic speeds",
]


def tiny_model(kind: str = "lstm", d: int = 6, H: int = 4, seed: int = 0, **kw) -> RetrievalModel:
    h = TrigramHasher.fit(CORPUS)
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((len(h), d)).astype(np.float32) * 0.3

    def enc(s: int):
        if kind == "lstm":
            return LSTMEncoder.random(d, H, seed=s, **kw)
        if kind == "rnn":
            return RNNEncoder.random(d, H, seed=s)
        if kind == "bilstm":
            return BiLSTMEncoder(LSTMEncoder.random(d, H // 2, seed=s),
                                 LSTMEncoder.random(d, H // 2, seed=s + 7, reverse=True))
        return DSSMEncoder.random(d, 5, H, seed=s)

    return RetrievalModel(h, E, enc(seed + 1), enc(seed + 2), max_words=None)


# ----------------------------------------------------------------------------- hashing
def test_tokenize_and_trigrams():
    assert tokenize("Mach-2 Flow, over a WEDGE.") == ["mach", "2", "flow", "over", "a", "wedge"]
    assert word_trigrams("flow") == ["#fl", "flo", "low", "ow#"]
    assert word_trigrams("a") == ["#a#"]
    with pytest.raises(TypeError, match="text must be a str"):
        tokenize(3)  # type: ignore[arg-type]


def test_hasher_drops_unknown_trigrams_and_words():
    h = TrigramHasher.fit(["flow flows"])
    assert set(h.trigrams) == {"#fl", "flo", "low", "ow#", "ows", "ws#"}
    # "glow" shares "low" and "ow#"; "xyz" has no known trigram and is dropped
    assert sorted(h.trigrams[i] for i in h.word_ids("glow")) == ["low", "ow#"]
    assert h.words("xyz glow") == ["glow"]
    assert h.bag("flow flow").sum() == 8
    h2 = TrigramHasher.from_json(json.loads(json.dumps(h.to_json())))
    assert h2.trigrams == h.trigrams
    assert len(TrigramHasher.fit(CORPUS, max_size=5)) == 5
    with pytest.raises(ValueError, match="no words"):
        TrigramHasher.fit(["", "  ,. "])


# ----------------------------------------------------------------------------- encoders
def _lstm_reference(enc: LSTMEncoder, X: np.ndarray) -> np.ndarray:
    """Eq. 3.2 one word at a time, float64."""
    H = enc.n_cells
    W, R, b, p = (a.astype(np.float64) for a in (enc.W, enc.R, enc.b, enc.p))
    p = p if enc.peepholes else 0 * p
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    y, c = np.zeros(H), np.zeros(H)
    for x in (X[::-1] if enc.reverse else X):
        a = W @ x + R @ y + b
        i = sig(a[:H] + p[0] * c)
        f = sig(a[H : 2 * H] + p[1] * c) if enc.forget_gate else 1.0
        c = f * c + i * np.tanh(a[2 * H : 3 * H])
        o = sig(a[3 * H :] + p[2] * c)
        y = o * np.tanh(c)
    return y


@pytest.mark.parametrize("kw", [{}, {"forget_gate": False}, {"peepholes": False},
                                {"reverse": True}])
def test_lstm_batched_matches_one_word_at_a_time(rng, kw):
    enc = LSTMEncoder.random(5, 4, seed=3, **kw)
    enc.p[:] = rng.uniform(-0.5, 0.5, enc.p.shape)
    table = rng.standard_normal((9, 5)).astype(np.float32)
    seqs = [rng.integers(0, 9, n) for n in (3, 0, 7, 1, 7)]
    out = enc.encode(seqs, table)
    assert out.dtype == np.float32 and out.shape == (5, 4)
    for s, row in zip(seqs, out):
        want = _lstm_reference(enc, table[s]) if len(s) else np.zeros(4)
        np.testing.assert_allclose(row, want, atol=1e-5)
    tr = enc.trace(seqs[2], table)
    assert tr["input_gate"].shape == (7, 4)
    row = tr["output"][0] if enc.reverse else tr["output"][-1]
    np.testing.assert_allclose(row, out[2], atol=1e-6)


def test_lstm_mean_pool_is_the_mean_of_the_outputs(rng):
    enc = LSTMEncoder.random(5, 4, seed=3, pool="mean")
    table = rng.standard_normal((9, 5)).astype(np.float32)
    seqs = [rng.integers(0, 9, n) for n in (3, 0, 7, 1)]
    out = enc.encode(seqs, table)
    for s, row in zip(seqs, out):
        want = enc.trace(s, table)["output"].mean(0) if len(s) else np.zeros(4)
        np.testing.assert_allclose(row, want, atol=1e-5)
    last = LSTMEncoder(enc.W, enc.R, enc.b, enc.p).encode(seqs, table)
    assert not np.allclose(out[0], last[0])
    with pytest.raises(ValueError, match="pool"):
        LSTMEncoder.random(5, 4, pool="max")


def test_lstm_last_plus_bag_adds_the_mean_word_vector(rng):
    enc = LSTMEncoder.random(5, 3, seed=3, pool="last+bag")
    table = rng.standard_normal((9, 5)).astype(np.float32)
    seqs = [rng.integers(0, 9, n) for n in (3, 0, 7, 1)]
    out = enc.encode(seqs, table)
    last = LSTMEncoder(enc.W, enc.R, enc.b, enc.p).encode(seqs, table)
    for s, row, lrow in zip(seqs, out, last):
        want = lrow + (table[s, :3].mean(0) if len(s) else 0.0)
        np.testing.assert_allclose(row, want, atol=1e-5)
    assert not out[1].any()  # no words: zero vector, no NaN


def test_rnn_and_dssm_match_their_equations(rng):
    table = rng.standard_normal((6, 3)).astype(np.float32)
    seq = np.array([0, 4, 2])
    rnn = RNNEncoder.random(3, 4, seed=1)
    y = np.zeros(4)
    for x in table[seq]:
        y = np.tanh(rnn.W @ x + rnn.R @ y + rnn.b)
    np.testing.assert_allclose(rnn.encode([seq], table)[0], y, atol=1e-5)
    dssm = DSSMEncoder.random(3, 5, 4, seed=2)
    s = table[seq].sum(0)
    want = np.tanh(dssm.W2 @ np.tanh(dssm.W1 @ s + dssm.b1) + dssm.b2)
    out = dssm.encode([seq, np.array([], dtype=int)], table)
    np.testing.assert_allclose(out[0], want, atol=1e-5)
    assert not out[1].any()  # no words: the zero vector


def test_encoder_configs_roundtrip():
    for kind in ("lstm", "rnn", "bilstm", "dssm", "lstm-mean", "lstm-last+bag"):
        enc = (tiny_model("lstm", pool=kind[5:]) if kind.startswith("lstm-")
               else tiny_model(kind)).document_encoder
        back = encoder_from_arrays(json.loads(json.dumps(enc.config())), enc.params())
        assert back.config() == enc.config()
        for k, v in enc.params().items():
            np.testing.assert_array_equal(back.params()[k], v)
    with pytest.raises(ValueError, match="unknown encoder kind"):
        encoder_from_arrays({"kind": "gru"}, {})
    with pytest.raises(ValueError, match="missing the array"):
        encoder_from_arrays({"kind": "rnn"}, {"W": np.zeros((2, 2))})


# ----------------------------------------------------------------------------- model
@pytest.mark.parametrize("kind", ["lstm", "rnn", "bilstm", "dssm"])
def test_model_save_load_roundtrip(tmp_path, kind):
    m = tiny_model(kind)
    m.info["note"] = "x"
    path = m.save(tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as npz:  # no pickle needed
        assert all(npz[k].dtype in (np.float32, np.uint8) for k in npz.files)
    m2 = RetrievalModel.load(path)
    assert m2.kind == kind and m2.info["note"] == "x"
    np.testing.assert_array_equal(m2.encode_documents(CORPUS), m.encode_documents(CORPUS))
    np.testing.assert_array_equal(m2.encode_queries(CORPUS), m.encode_queries(CORPUS))


def test_model_file_errors(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(TextModelFileError):
        RetrievalModel.load(bad)
    other = tmp_path / "other.npz"
    np.savez(other, embedding=np.zeros((2, 2)),
             meta=np.frombuffer(b'{"format": "cscore.lstm_cs"}', dtype=np.uint8))
    with pytest.raises(TextModelFileError, match=r"not a cscore\.text"):
        RetrievalModel.load(other)


def test_model_files_are_read_bounded_and_written_atomically(tmp_path):
    import os

    from cscore.models.format import ModelFileError

    assert issubclass(TextModelFileError, ModelFileError)
    path = tiny_model("lstm").save(tmp_path / "m.npz")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["m.npz"]  # no temporary left
    blob = path.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(blob[: len(blob) - 40])
    with pytest.raises(TextModelFileError):
        text.load_model(cut)
    with pytest.raises(TextModelFileError, match="directory"):
        text.load_model(tmp_path)
    with pytest.raises(FileNotFoundError):
        text.load_model(tmp_path / "missing.npz")
    obj = tmp_path / "obj.npz"
    np.savez(obj, meta=np.array([{"format": "cscore.text"}], dtype=object))
    with pytest.raises(TextModelFileError, match="dtype object"):
        text.load_model(obj)
    if hasattr(os, "mkfifo"):  # a FIFO is refused without blocking on it
        fifo = tmp_path / "fifo.npz"
        os.mkfifo(fifo)
        with pytest.raises(TextModelFileError, match="not a regular file"):
            text.load_model(fifo)


def test_search_and_analysis_of_cranfield(tmp_path):
    from cscore.text.analysis import write_cranfield_analysis
    from cscore.text.cranfield import search

    c = text.load_cranfield()
    m = tiny_model("lstm")
    hits = search(m, "heat transfer", top_k=3, collection=c)
    want = m.rank("heat transfer", c.documents, top_k=3)
    assert [(h.rank, h.doc_id, h.title, h.score) for h in hits] == \
        [(r, c.doc_ids[i], c.titles[i], s) for r, (i, s) in enumerate(want, 1)]
    ens = text.RetrievalEnsemble([m, tiny_model("lstm", seed=2)])
    with pytest.raises(ValueError, match=r"member must be in \[0, 2\)"):
        write_cranfield_analysis(ens, "heat", tmp_path, member=2)
    assert not any(tmp_path.iterdir())


def test_resolve_model_takes_a_name_or_a_file(tmp_path, monkeypatch):
    import shutil

    from cscore.text.pretrained import resolve_model

    path = tiny_model("rnn").save(tmp_path / "m.npz")
    m = resolve_model(path)
    assert isinstance(m, RetrievalModel) and m.kind == "rnn"
    assert resolve_model(str(path)).kind == "rnn"
    assert isinstance(resolve_model("cranfield-dssm"), text.RetrievalEnsemble)
    with pytest.raises(FileNotFoundError, match=r"missing\.npz"):
        resolve_model(tmp_path / "missing.npz")
    # the one rule of every cscore model (cscore.models.registry.is_model_path): a
    # string without a path separator or .npz is a name, even beside a file so named
    monkeypatch.chdir(tmp_path)
    shutil.copy(path, "cranfield-dssm")
    shutil.copy(path, "mine")
    assert isinstance(resolve_model("cranfield-dssm"), text.RetrievalEnsemble)
    assert resolve_model("./cranfield-dssm").kind == "rnn"
    assert resolve_model("m.npz").kind == "rnn"
    with pytest.raises(ValueError, match=r"unknown pretrained text model 'mine'.*'\./mine'"):
        resolve_model("mine")


# ----------------------------------------------------------------------------- ensembles
def test_ensemble_score_is_the_mean_of_member_cosines():
    a, b = tiny_model("lstm", seed=0), tiny_model("dssm", seed=3)
    ens = text.RetrievalEnsemble([a, b])
    assert ens.dim == a.dim + b.dim and ens.kind == "mixed"
    q = ["hypersonic heat", "flutter of a wing", ""]
    S = ens.score(q, CORPUS)
    want = (a.score(q, CORPUS) + b.score(q, CORPUS)) / 2
    np.testing.assert_allclose(S, want, atol=1e-6)
    assert S.dtype == np.float32 and not S[2].any()
    # the embeddings are what a user's own cosine sees
    Q, D = ens.encode_queries(q), ens.encode_documents(CORPUS)
    assert Q.dtype == D.dtype == np.float32 and Q.shape == (3, ens.dim)
    np.testing.assert_allclose(cosine_scores(Q, D), want, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(D, axis=1), 1.0, atol=1e-6)
    assert ens.rank("hypersonic heat", CORPUS, top_k=4) == \
        [(i, pytest.approx(float(S[0, i]), abs=1e-6)) for i in np.argsort(-S[0], kind="stable")]


def test_ensemble_member_that_knows_no_word_contributes_zero():
    a = tiny_model("rnn", seed=1)
    h = TrigramHasher.fit(["wedge"])
    rng = np.random.default_rng(5)
    b = RetrievalModel(h, rng.standard_normal((len(h), 6)).astype(np.float32),
                       RNNEncoder.random(6, 4, seed=1), RNNEncoder.random(6, 4, seed=2))
    ens = text.RetrievalEnsemble([a, b])
    S = ens.score(["heat transfer"], CORPUS)  # b knows no word of the query
    np.testing.assert_allclose(S, a.score(["heat transfer"], CORPUS) / 2, atol=1e-6)
    assert ens.words("heat wedge") == ["heat", "wedge"] and b.words("heat wedge") == ["wedge"]
    assert np.isfinite(S).all()


def test_ensemble_errors_and_trace():
    with pytest.raises(ValueError, match="at least one member"):
        text.RetrievalEnsemble([])
    with pytest.raises(TypeError, match="member 1"):
        text.RetrievalEnsemble([tiny_model(), "model"])  # type: ignore[list-item]
    ens = text.RetrievalEnsemble([tiny_model("lstm", seed=0), tiny_model("lstm", seed=4)])
    assert ens.kind == "lstm"
    words, acts = ens.trace("heat transfer", member=1)
    w1, a1 = ens.members[1].trace("heat transfer")
    assert words == w1 and np.array_equal(acts["input_gate"], a1["input_gate"])
    with pytest.raises(ValueError, match="member must be"):
        ens.trace("heat", member=2)


def test_ensemble_save_load_roundtrip(tmp_path):
    ens = text.RetrievalEnsemble([tiny_model("lstm", seed=0), tiny_model("rnn", seed=2)],
                                 info={"note": "x"})
    ens.members[1].info["split"] = {"val": [3, 4]}
    path = ens.save(tmp_path / "e.npz")
    with np.load(path, allow_pickle=False) as npz:
        assert all(npz[k].dtype in (np.float32, np.uint8) for k in npz.files)
    e2 = text.load_model(path)
    assert isinstance(e2, text.RetrievalEnsemble) and e2.info["note"] == "x"
    assert [m.kind for m in e2.members] == ["lstm", "rnn"]
    assert e2.members[1].info["split"]["val"] == [3, 4]
    np.testing.assert_array_equal(e2.encode_documents(CORPUS), ens.encode_documents(CORPUS))
    assert isinstance(text.RetrievalEnsemble.load(path), text.RetrievalEnsemble)
    with pytest.raises(TextModelFileError, match="ensemble of 2 models"):
        RetrievalModel.load(path)
    single = tiny_model().save(tmp_path / "one.npz")
    assert isinstance(text.load_model(single), RetrievalModel)
    assert len(text.RetrievalEnsemble.load(single).members) == 1
    # a newer format than this version reads, and a broken member list
    for meta in (b'{"format": "cscore.text", "version": 3, "members": []}',
                 b'{"format": "cscore.text", "version": 2, "members": []}'):
        bad = tmp_path / "bad.npz"
        np.savez(bad, meta=np.frombuffer(meta, dtype=np.uint8))
        with pytest.raises(TextModelFileError):
            text.load_model(bad)


def test_fold_splits_cover_the_non_test_queries():
    sp = text.QuerySplit(tuple(range(0, 23)), tuple(range(23, 30)), (30, 31))
    folds = text.fold_splits(sp, 5, seed=1)
    held = [set(f.val) for f in folds]
    assert sum(len(h) for h in held) == 30 and set().union(*held) == set(range(30))
    for f in folds:
        assert not set(f.train) & set(f.val) and set(f.train) | set(f.val) == set(range(30))
        assert f.test == (30, 31)
    assert text.fold_splits(sp, 5, seed=1) == folds and text.fold_splits(sp, 5, seed=2) != folds
    with pytest.raises(ValueError, match="n_folds"):
        text.fold_splits(sp, 1)


def test_evaluate_methods_rows_carry_per_query_ndcg():
    from cscore.text.cranfield import evaluate_methods

    c = text.load_cranfield()
    sp = text.split_queries(c)
    rows = evaluate_methods(c, sp, {"LSTM": tiny_model()}, queries=sp.test[:5])
    assert [r.name for r in rows] == ["BM25", "TF-IDF cosine", "LSTM", "BM25 + LSTM"]
    for r in rows:
        assert set(r.per_query) == {1, 3, 10} and len(r.per_query[10]) == 5
        for k, v in r.full.items():
            assert v == pytest.approx(r.per_query[k].mean())


def test_selection_scores_are_out_of_fold():
    from cscore.text.cranfield import model_scores, selection_scores

    c = text.load_cranfield()
    sp = text.split_queries(c)
    a, b = tiny_model("lstm", seed=0), tiny_model("lstm", seed=4)
    qa, qb = [sp.val[0], sp.train[0]], [sp.train[1], sp.test[0]]  # a test query is never used
    a.info["split"], b.info["split"] = {"val": qa}, {"val": qb}
    ens = text.RetrievalEnsemble([a, b])
    queries, S, how = selection_scores(ens, c, sp)
    assert how == "out-of-fold validation" and queries == sorted([*qa, sp.train[1]])
    for q, row in zip(queries, S):
        m = a if q in qa else b
        np.testing.assert_allclose(row, model_scores(m, c, [q])[0], atol=1e-6)
    # without recorded folds: the ensemble's own scores on the validation queries
    queries, S, how = selection_scores(text.RetrievalEnsemble([tiny_model()]), c, sp)
    assert how == "validation" and queries == list(sp.val) and S.shape == (20, 1400)


def test_encode_edge_cases():
    m = tiny_model()
    long_query = " ".join(CORPUS * 50)  # far longer than any "training" text
    texts = ["", "   ", "qqq zzz", "flow", long_query]
    for side in ("query", "document"):
        E = m.encode(texts, side)
        assert E.dtype == np.float32 and E.shape == (5, m.dim)
        assert np.isfinite(E).all()
        assert not E[:3].any()  # empty, blank, only unknown trigrams: zero vectors
        assert E[3].any() and E[4].any()
    S = m.score(texts, CORPUS)
    assert np.isfinite(S).all() and not S[:3].any()
    assert (np.abs(S) <= 1 + 1e-6).all()
    hits = m.rank("", CORPUS)
    assert [s for _, s in hits] == [0.0] * 4
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str"):
        m.encode_queries(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not a single str"):
        m.encode_documents("one text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="query must be a str"):
        m.rank(None, CORPUS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="top_k"):
        m.rank("flow", CORPUS, top_k=0)
    with pytest.raises(ValueError, match="side"):
        m.encode(CORPUS, "both")


def test_rank_orders_by_cosine_and_accepts_embeddings():
    m = tiny_model()
    D = m.encode_documents(CORPUS)
    hits = m.rank("hypersonic heat", D, top_k=None)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and len(hits) == 4
    want = cosine_scores(m.encode_queries(["hypersonic heat"]), D)[0]
    assert hits[0] == (int(np.argmax(want)), pytest.approx(float(want.max()), abs=1e-6))
    assert m.rank("hypersonic heat", CORPUS, top_k=2) == hits[:2]
    m.max_words = 2
    assert m.words("heat transfer in hypersonic") == ["heat", "transfer"]


# ----------------------------------------------------------------------------- metrics
def test_ndcg():
    grades = {3: 4, 7: 1}
    assert ndcg_at_k([3, 7, 0], grades, 3) == pytest.approx(1.0)
    assert ndcg_at_k([0, 1, 2], grades, 3) == 0.0
    # exponential gains: (2^1-1)/log2(2) + (2^4-1)/log2(3) over the ideal
    want = (1 + 15 / np.log2(3)) / (15 + 1 / np.log2(3))
    assert ndcg_at_k([7, 3], grades, 2) == pytest.approx(want)
    lin = (1 + 4 / np.log2(3)) / (4 + 1 / np.log2(3))
    assert ndcg_at_k([7, 3], grades, 2, gain="linear") == pytest.approx(lin)
    assert ndcg_at_k([1], {}, 10) == 0.0
    S = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0]])
    res = mean_ndcg(S, {0: {1: 2}, 1: {2: 3}}, [0, 1], (1,))
    assert res[1] == pytest.approx(0.5)
    res = mean_ndcg(S, {0: {1: 2}, 1: {2: 3}}, [0, 1], (1,), candidates=np.array([[1], [2]]))
    assert res[1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="NaN"):
        mean_ndcg(np.array([[np.nan]]), {}, [0])
    per = per_query_ndcg(S, {0: {1: 2}, 1: {2: 3}}, [0, 1], (1,))
    np.testing.assert_array_equal(per[1], [1.0, 0.0])


def test_paired_difference():
    a, b = np.array([0.5, 0.2, 0.9, 0.4]), np.array([0.3, 0.2, 0.6, 0.5])
    d = a - b
    mean, se, wins, losses = paired_difference(a, b)
    assert mean == pytest.approx(d.mean()) and wins == 2 and losses == 1
    assert se == pytest.approx(np.std(d, ddof=1) / 2)
    with pytest.raises(ValueError, match="length >= 2"):
        paired_difference(a[:1], b[:1])


# ----------------------------------------------------------------------------- data
def test_shipped_cranfield():
    c = text.load_cranfield()
    assert c.n_docs == 1400 and len(c.queries) == 150
    assert c.documents[0].startswith("experimental investigation of the aerodynamics")
    assert all(1 <= g <= 4 for rel in c.qrels.values() for g in rel.values())
    sp = text.split_queries(c)
    assert (len(sp.train), len(sp.val), len(sp.test)) == (80, 20, 50)
    assert not set(sp.train) & set(sp.test) and not set(sp.val) & set(sp.test)
    assert text.split_queries(c) == sp
    with pytest.raises(ValueError, match="no training queries"):
        text.split_queries(c, n_val=100, n_test=50)
    with pytest.raises(FileNotFoundError):
        text.load_cranfield("/nonexistent/dir")


def test_cranfield_from_a_user_directory():
    path = shared_data("cranfield")
    a, b = text.load_cranfield(path), text.load_cranfield()
    assert a.titles == b.titles and a.abstracts == b.abstracts and a.qrels == b.qrels


# ----------------------------------------------------------------------------- training
@requires_torch
@pytest.mark.parametrize("kind", ["lstm", "rnn", "bilstm", "dssm", "lstm-mean",
                                  "lstm-last+bag", "lstm-reverse"])
def test_torch_forward_matches_numpy(kind):
    import torch

    from cscore.text import _train_torch as T

    if kind == "lstm-reverse":
        m = tiny_model("lstm", seed=5, reverse=True)
    elif kind.startswith("lstm-"):
        m = tiny_model("lstm", seed=5, pool=kind[5:])
    else:
        m = tiny_model(kind, seed=5)
    kind = m.kind
    enc = m.document_encoder
    P = {k: torch.from_numpy(v.copy()) for k, v in enc.params().items()}
    seqs = [m.words(t) for t in [*CORPUS, ""]]
    batch = T.Batch(torch, seqs, m.hasher)
    with torch.no_grad():
        out = T.torch_encode(torch, kind, enc.config(), P, torch.from_numpy(m.embedding), batch)
    np.testing.assert_allclose(out.numpy(), m.encode_documents([*CORPUS, ""]), atol=1e-5)


@requires_torch
def test_training_learns_a_toy_task():
    # queries are two words of their document; the model must find the document
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, 5)) for _ in range(40)]
    docs = [" ".join(rng.choice(words, 5, replace=False)) for _ in range(16)]

    def pairs(epoch):
        r = np.random.default_rng(epoch)
        return [(" ".join(r.choice(d.split(), 2, replace=False)), d, i, i)
                for i, d in enumerate(docs) for _ in range(2)]

    held = pairs(99)

    def top1(model):
        S = cosine_scores(model.encode_queries([q for q, *_ in held]),
                          model.encode_documents(docs))
        return float(np.mean(S.argmax(1) == np.array([k for *_, k in held])))

    res = text.train_retrieval_model(
        pairs, vocab_texts=docs, evaluate=top1, kind="lstm", n_cells=16, embed_dim=16,
        init="random", optimizer="adam", lr=0.02, batch_size=16, max_epochs=8, patience=8,
        n_negatives=None, progress=False, max_words=None)
    first = res.history[0]["val_score"]
    assert res.model.info["training"]["best_val_score"] == pytest.approx(
        max(h["val_score"] for h in res.history), abs=1e-4)
    assert top1(res.model) > first + 0.3
    with pytest.raises(ValueError, match="kind"):
        text.TextTrainConfig(kind="gru")


def test_bm25_matrix_matches_rank_bm25():
    from cscore.text.cranfield import BM25Matrix, bm25_scores

    c = text.load_cranfield()
    qs = list(range(0, 150, 15))
    got = BM25Matrix(c.documents).scores([c.queries[q] for q in qs] + ["", "zzqx"])
    np.testing.assert_allclose(got[:-2], bm25_scores(c, qs), rtol=1e-10, atol=1e-10)
    assert not got[-2:].any()


def test_bm25_without_rank_bm25_names_the_text_extra(monkeypatch):
    import sys

    from cscore.text.cranfield import BM25Matrix, bm25_scores, tfidf_scores, training_pairs

    monkeypatch.setitem(sys.modules, "rank_bm25", None)  # as if not installed
    c = text.load_cranfield()
    sp = text.split_queries(c)
    hint = r'needs rank_bm25: pip install "cscore-decoders\[text\]"$'
    with pytest.raises(ImportError, match=hint):
        bm25_scores(c, [0])
    with pytest.raises(ImportError, match=hint):
        BM25Matrix(c.documents)
    with pytest.raises(ImportError, match=hint):
        training_pairs(c, sp, hard_negatives=2)
    # what does not use BM25 works without it: plain pairs, TF-IDF, a model's ranking
    assert len(training_pairs(c, sp, sentences_per_doc=0, judged_repeat=1)(0)) > 0
    assert tfidf_scores(c, [0]).shape == (1, c.n_docs)
    assert len(tiny_model().rank("hypersonic heat", CORPUS, top_k=2)) == 2


def test_training_pairs_hard_negatives():
    from cscore.text.cranfield import BM25Matrix, training_pairs

    c = text.load_cranfield()
    sp = text.split_queries(c)
    plain = training_pairs(c, sp, sentences_per_doc=1, seed=3)(0)
    hard = training_pairs(c, sp, sentences_per_doc=1, hard_negatives=4, seed=3)(0)
    assert all(len(p) == 4 for p in plain) and all(len(p) == 6 for p in hard)
    assert [p[:4] for p in hard] == plain  # the same pairs, each with a negative added
    bm = BM25Matrix(c.documents)
    judged = [p for p in hard if p[2] < 10_000]
    assert len(judged) == 3 * sum(len(c.qrels.get(q, {})) for q in sp.train)
    for q, _, qk, dk, neg_text, neg in hard[::50] + judged[::20]:
        relevant = set(c.qrels[qk]) if qk < 10_000 else {dk}
        assert neg not in relevant and neg_text == c.documents[neg]
        order = [d for d in np.argsort(-bm.scores([q])[0], kind="stable")
                 if d not in relevant]
        assert neg in order[:4]
    again = training_pairs(c, sp, sentences_per_doc=1, hard_negatives=4, seed=3)(0)
    assert again == hard
    with pytest.raises(ValueError, match="hard_negatives"):
        training_pairs(c, sp, hard_negatives=-1)


@requires_torch
def test_loss_ignores_masked_hard_negatives():
    import torch

    from cscore.text import _train_torch as T

    g = torch.Generator().manual_seed(0)
    Q, D = torch.randn(4, 6, generator=g), torch.randn(7, 6, generator=g)
    D[5] = Q[1]  # a "hard negative" that query 1 would score highest
    inv = np.zeros((4, 7), dtype=bool)
    inv[np.arange(4), np.arange(4)] = True  # each query's own positive
    inv[1, 5] = True  # a "hard negative" that is relevant to query 1
    rng = np.random.default_rng(0)
    full = T.retrieval_loss(torch, Q, D, inv, 10.0, None, rng)
    # the masked column contributes nothing: the same as query 1 never seeing it
    keep = [0, 1, 2, 3, 4, 6]
    S = torch.nn.functional.normalize(Q, dim=1) @ torch.nn.functional.normalize(D, dim=1).T
    want = []
    for r in range(4):
        cols = keep if r == 1 else list(range(7))
        logits = 10.0 * S[r, cols]
        want.append(float(torch.logsumexp(logits, 0) - 10.0 * S[r, r]))
    assert float(full) == pytest.approx(np.mean(want), rel=1e-5)
    eye = np.eye(4, 7, dtype=bool)
    assert float(full) != pytest.approx(float(T.retrieval_loss(torch, Q, D, eye, 10.0, None, rng)),
                                        rel=1e-3)


def _toy_epochs(worse: bool = False, **kw):
    """Models after each epoch (epoch 0 first) of a 4-document DSSM run.

    The minibatch holds all four pairs, so every epoch is one update; every
    epoch "improves" (``worse``: gets worse), and the run must return the last
    model (``worse``: returns it with ``res``).
    """
    docs = ["alpha beta gamma", "delta epsilon zeta", "eta theta iota", "kappa lambda mu"]
    pairs = [(d.split()[0], d, i, i) for i, d in enumerate(docs)]
    seen = []

    def ev(m):
        seen.append(m)
        return -float(len(seen)) if worse else float(len(seen))

    res = text.train_retrieval_model(
        pairs, vocab_texts=docs, evaluate=ev, kind="dssm", n_cells=8, embed_dim=8,
        dssm_hidden=8, init="random", batch_size=4, progress=False, **kw)
    if worse:
        return seen, res
    assert res.model is seen[-1]
    return seen


@requires_torch
def test_reverse_trains_and_saves_a_reversed_lstm(tmp_path):
    docs = ["alpha beta gamma", "delta epsilon zeta", "eta theta iota", "kappa lambda mu"]
    pairs = [(d.split()[0], d, i, i) for i, d in enumerate(docs)]
    res = text.train_retrieval_model(
        pairs, vocab_texts=docs, evaluate=lambda m: 0.0, kind="lstm", n_cells=4,
        embed_dim=4, init="random", batch_size=4, max_epochs=1, progress=False, max_words=None,
        reverse=True)
    m = res.model
    assert m.query_encoder.reverse and m.document_encoder.reverse
    loaded = text.RetrievalModel.load(m.save(tmp_path / "rev.npz"))
    assert loaded.document_encoder.reverse
    np.testing.assert_array_equal(loaded.encode_documents(docs), m.encode_documents(docs))
    # the reversed tower reads "c b a" as the forward tower with its weights reads "a b c"
    fwd = LSTMEncoder(**{k: v for k, v in m.document_encoder.params().items()})
    fm = text.RetrievalModel(m.hasher, m.embedding, fwd, fwd, max_words=None)
    np.testing.assert_allclose(m.encode_documents(["alpha beta gamma"]),
                               fm.encode_documents(["gamma beta alpha"]), atol=1e-6)
    assert not np.allclose(m.encode_documents(["alpha beta gamma"]),
                           fm.encode_documents(["alpha beta gamma"]), atol=1e-3)
    with pytest.raises(ValueError, match="reverse"):
        text.TextTrainConfig(kind="dssm", reverse=True)


@pytest.mark.parametrize("kind", ["lstm", "rnn", "dssm"])
def test_input_gain_scales_the_lsa_start_input_weights(kind):
    from cscore.text import _train_init as T

    def start(gain):
        cfg = text.TextTrainConfig(kind=kind, n_cells=6, embed_dim=4, dssm_hidden=8,
                                   input_gain=gain)
        return T.init_encoder(cfg, np.random.default_rng(3), True, input_scale=2.0).params()

    a, b = start(1.0), start(4.0)
    key = "W1" if kind == "dssm" else "W"
    rows = slice(12, 16) if kind == "lstm" else slice(0, 4)  # LSTM: the cell-input block
    diag_a, diag_b = np.diag(a[key][rows, :4]), np.diag(b[key][rows, :4])
    assert np.all(diag_a > 0.2)  # 0.5 / input_scale, plus small noise
    np.testing.assert_allclose(diag_b, 4 * diag_a, rtol=0.1)
    np.testing.assert_allclose(np.delete(b[key], rows, axis=0), np.delete(a[key], rows, axis=0))
    with pytest.raises(ValueError, match="input_gain"):
        text.TextTrainConfig(input_gain=0.0)


@requires_torch
@pytest.mark.parametrize("kind", ["lstm", "bilstm"])
def test_gate_lr_scales_the_steps_of_the_gates_only(kind):
    docs = ["alpha beta gamma", "delta epsilon zeta", "eta theta iota", "kappa lambda mu"]
    pairs = [(d.split()[0], d, i, i) for i, d in enumerate(docs)]
    seen = []

    def run(**kw):
        seen.clear()
        text.train_retrieval_model(
            pairs, vocab_texts=docs, evaluate=lambda m: seen.append(m) or 0.0, kind=kind,
            n_cells=4, embed_dim=4, init="lsa", batch_size=4, max_epochs=1, patience=None,
            progress=False, max_words=None, lr=1e-3, **kw)
        return [(m.query_encoder.params(), m.embedding) for m in seen]

    (p0, _), (p1, e1) = run()
    _, (p10, e10) = run(gate_lr=1e-2)
    _, (p_same, _) = run(gate_lr=1e-3)
    np.testing.assert_array_equal(e10, e1)  # one update: the embedding's step is unchanged
    for k in p0:
        if k.endswith("p"):
            gate = np.ones(p0[k].shape[0], bool)
        else:
            H = p0[k].shape[0] // 4
            gate = np.arange(p0[k].shape[0]) // H != 2
        d1, d10 = p1[k] - p0[k], p10[k] - p0[k]
        np.testing.assert_allclose(d10[gate], 10 * d1[gate], rtol=1e-3, atol=1e-7)
        np.testing.assert_allclose(d10[~gate], d1[~gate], rtol=1e-4, atol=1e-8)
        np.testing.assert_array_equal(p_same[k], p1[k])
        if k.endswith("W"):  # (R has no gradient here: the queries are one word long)
            assert np.abs(d1[gate]).max() > 0 and np.abs(d1[~gate]).max() > 0
    with pytest.raises(ValueError, match="gate_lr"):
        text.TextTrainConfig(kind="dssm", gate_lr=1e-3)
    with pytest.raises(ValueError, match="gate_lr"):
        text.TextTrainConfig(gate_lr=0.0)


@requires_torch
def test_lsa_rotated_start_is_a_rotation_of_the_lsa_start():
    docs = [*CORPUS, "flow over a flat plate", "pressure on a cone in supersonic flow"]
    pairs = [(d.split()[0], d, i, i) for i, d in enumerate(docs)]

    def start(init: str, seed: int = 0) -> np.ndarray:
        res = text.train_retrieval_model(
            pairs, vocab_texts=docs, evaluate=lambda m: 0.0, kind="lstm", n_cells=4,
            embed_dim=6, init=init, max_epochs=1, max_seconds=0.0, progress=False, seed=seed)
        assert res.best_epoch == 0
        return res.model.embedding.astype(np.float64)

    E, R = start("lsa"), start("lsa-rotated")
    m = 4  # the cells read the first min(embed_dim, n_cells) coordinates
    np.testing.assert_allclose(R[:, m:], E[:, m:])
    np.testing.assert_allclose(R[:, :m] @ R[:, :m].T, E[:, :m] @ E[:, :m].T, atol=1e-5)
    assert not np.allclose(R[:, :m], E[:, :m], atol=1e-3)
    assert not np.allclose(start("lsa-rotated", seed=1)[:, :m], R[:, :m], atol=1e-3)
    with pytest.raises(ValueError, match="lsa-rotated"):
        text.TextTrainConfig(init="rotated")


@requires_torch
def test_patience_none_trains_every_epoch_and_keeps_the_last():
    seen, res = _toy_epochs(worse=True, lr=1e-2, max_epochs=3, patience=1)
    assert len(seen) == 2 and res.model is seen[0] and res.best_epoch == 0  # early stop
    seen, res = _toy_epochs(worse=True, lr=1e-2, max_epochs=3, patience=None)
    assert len(seen) == 4 and res.model is seen[-1] and res.best_epoch == 3
    assert res.model.info["training"]["best_val_score"] == -4.0
    with pytest.raises(ValueError, match="patience"):
        text.TextTrainConfig(patience=0)


@requires_torch
def test_embed_lr_sets_the_embedding_step_size():
    def run(**kw):
        seen = _toy_epochs(lr=1e-4, max_epochs=3, patience=3, **kw)
        first, last = seen[0], seen[-1]
        dE = np.abs(last.embedding - first.embedding).max()
        dW = np.abs(last.query_encoder.params()["W1"] - first.query_encoder.params()["W1"]).max()
        return dE, dW

    dE, dW = run()
    dE_fast, dW_fast = run(embed_lr=1e-2)
    assert dE_fast > 20 * dE and dW_fast < 5 * dW
    with pytest.raises(ValueError, match="embed_lr"):
        text.TextTrainConfig(embed_lr=0.0)


@requires_torch
def test_avg_eta_exports_the_polynomial_decay_average():
    def run(**kw):
        seen = _toy_epochs(lr=1e-2, max_epochs=4, patience=4, **kw)
        return [m.embedding.astype(np.float64) for m in seen]

    raw = run()
    eta = 3
    avg = run(avg_eta=eta)
    expect = raw[0].copy()
    assert np.array_equal(avg[0], raw[0])
    for u in range(len(raw) - 1):
        d = (u + 1) / (u + eta + 2)
        expect = d * expect + (1 - d) * raw[u + 1]
        np.testing.assert_allclose(avg[u + 1], expect, atol=1e-6)
    assert np.abs(avg[-1] - raw[-1]).max() > 1e-3  # the average lags the raw weights
    with pytest.raises(ValueError, match="avg_eta"):
        text.TextTrainConfig(avg_eta=-1)


# ----------------------------------------------------------------------------- pretrained
@pytest.mark.parametrize("name", ["cranfield-lstm", "cranfield-rnn", "cranfield-dssm"])
def test_pretrained_models(name):
    m = text.pretrained(name)
    q = m.encode_queries(["what is the heat transfer to a blunt body", ""])
    d = m.encode_documents(text.load_cranfield().documents[:5])
    assert q.dtype == d.dtype == np.float32 and q.shape[1] == d.shape[1] == m.dim
    assert not q[1].any() and np.isfinite(d).all()
    with pytest.raises(ValueError, match="unknown pretrained text model"):
        text.pretrained("nope")


def test_cli_search_and_analyze(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from cscore import cli

    assert cli.main(["text", "search", "heat transfer to blunt bodies", "--top", "3"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 3 and out[0].lstrip().startswith("1")
    assert cli.main(["text", "analyze", "heat transfer in hypersonic flow", "--out-dir",
                     str(tmp_path), "--topic-queries", "3", "--member", "2"]) == 0
    assert "member 2 of the 3-member ensemble" in capsys.readouterr().out
    for f in ("activations.png", "keywords.png", "analysis.md"):
        assert (tmp_path / f).stat().st_size > 0
    assert cli.main(["text", "analyze", "heat", "--out-dir", str(tmp_path), "--member", "3"]) == 2


def test_cli_eval_writes_table_and_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    from cscore import cli

    assert cli.main(["text", "eval", "--model", "LSTM=cranfield-lstm", "--out-dir",
                     str(tmp_path)]) == 0
    table = (tmp_path / "table.md").read_text()
    for row in ("BM25", "TF-IDF cosine", "LSTM", "BM25 + LSTM"):
        assert f"| {row} |" in table
    rows = json.loads((tmp_path / "table.json").read_text())
    assert all(0 <= v <= 1 for r in rows for v in r["full"].values())
    assert (tmp_path / "ndcg.png").stat().st_size > 0


@requires_torch
def test_cli_train_one_model_or_members_on_their_own_folds(tmp_path, capsys):
    from cscore import cli

    base = ["text", "train", "--kind", "dssm", "--epochs", "1", "--quiet"]
    one, out = tmp_path / "m.npz", tmp_path / "e.npz"
    assert cli.main([*base, "--out", str(one), "--max-seconds", "0.5", "--hard-negatives",
                     "5", "--max-trigrams", "500", "--members", "1", "--input-gain", "2.5"]) == 0
    m = RetrievalModel.load(one)
    assert m.kind == "dssm" and m.info["dataset"] == "cranfield" and len(m.hasher) == 500
    assert m.info["training"]["config"]["input_gain"] == 2.5
    assert len(m.info["split"]["test"]) == 50
    members = [*base, "--max-trigrams", "300", "--members", "2", "--seed", "4"]
    assert cli.main([*members, "--out", str(out), "--jobs", "2"]) == 0
    assert "2 members" in capsys.readouterr().out
    ens = text.load_model(out)
    # one process at a time gives the same members as two at a time
    assert cli.main([*members, "--out", str(tmp_path / "e1.npz"), "--jobs", "1"]) == 0
    for a, b in zip(ens.members, text.load_model(tmp_path / "e1.npz").members):
        assert np.array_equal(a.embedding, b.embedding)
        assert all(np.array_equal(v, b.query_encoder.params()[k])
                   for k, v in a.query_encoder.params().items())
    assert isinstance(ens, text.RetrievalEnsemble) and len(ens.members) == 2
    assert ens.info["members"]["seeds"] == [4, 5]
    sp = text.split_queries(text.load_cranfield())
    non_test = set(sp.train) | set(sp.val)
    trained = set()
    for m in ens.members:
        s = m.info["split"]
        assert len(s["val"]) == 20 and not set(s["val"]) & set(s["train"])
        assert set(s["val"]) | set(s["train"]) == non_test and s["test"] == list(sp.test)
        trained |= set(s["train"])
    assert trained == non_test  # two members between them train on every non-test query
    assert not set(ens.members[0].info["split"]["val"]) & set(ens.members[1].info["split"]["val"])
    assert cli.main(["text", "train", "--kind", "dssm", "--out", str(out), "--members", "0"]) == 2
    assert "--members must be >= 1" in capsys.readouterr().err
    assert cli.main(["text", "train", "--kind", "dssm", "--out", str(out), "--jobs", "0"]) == 2
    assert "--jobs must be >= 1" in capsys.readouterr().err


def test_encode_refuses_non_positive_batch_sizes():
    m = tiny_model()
    ens = text.RetrievalEnsemble([m, tiny_model(seed=3)])
    for model in (m, ens):
        for bad in (0, -1):  # -1 returned all-zero embeddings
            with pytest.raises(ValueError, match="batch_size"):
                model.encode(CORPUS, batch_size=bad)
        with pytest.raises(TypeError, match="batch_size"):
            model.encode(CORPUS, batch_size=True)
        np.testing.assert_array_equal(model.encode(CORPUS, batch_size=1), model.encode(CORPUS))


def test_long_tokens_are_cut_before_hashing():
    import time

    from cscore.text.hashing import MAX_WORD_CHARS

    assert MAX_WORD_CHARS == 100
    word = "flow" * 40  # 160 characters
    assert tokenize(f"a {word} b") == ["a", word[:MAX_WORD_CHARS], "b"]
    m = tiny_model()
    m.max_words = 200
    huge = "flow" * 2_500_000  # one 10 MB token: seconds and ~1 GB before the cut
    t0 = time.perf_counter()
    E = m.encode([huge, word[:MAX_WORD_CHARS]], "query")
    assert time.perf_counter() - t0 < 2.0
    np.testing.assert_array_equal(E[0], E[1])
    # only the first max_words known words are hashed
    assert m.words("flow " * 1000 + "qqq") == ["flow"] * 200


@requires_torch
def test_training_reports_batches_to_a_progress_sink():
    """Workers of a parallel ensemble report every batch (the parent's one bar)."""
    from cscore.text._train_loop import set_progress_sink

    got: list[int] = []
    set_progress_sink(got.append)
    try:
        seen = _toy_epochs(max_epochs=3, patience=None)
    finally:
        set_progress_sink(None)
    assert sum(got) == 3 and len(seen) == 4  # one update per epoch, 3 epochs
    got.clear()
    _toy_epochs(max_epochs=2, patience=None)
    assert got == []  # no sink, no reports
