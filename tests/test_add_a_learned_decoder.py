"""A new learned decoder with its own file format: 1 class + 1 registration + its
training recipe, all in this test file (docs/architecture.md, "Adding a decoder").

The toy is a greedy decoder whose atom scores come from a low-rank linear map
``|Q P (x - mu)|`` of each channel's normalized residual ``x``.  Its file holds
``P`` (rank, M), ``Q`` (N, rank) and, only when ``centered``, ``mu`` (M,), with
``rank`` and ``centered`` in ``arch_params``: a format of its own, declared as two
tables (``FILE_PARAMS``, ``FILE_ARRAYS``) and read and written by the one
model-file protocol of :class:`cscore.decoders.learned.LearnedModel`.  The
recipe fits it by least squares in NumPy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest

import cscore
from cscore.decoders import register_decoder, unregister_decoder
from cscore.decoders.learned import FileArray, FileParam, ScoredGreedyModel
from cscore.models import ARCHITECTURES, ModelFileError, load_model, resolve_model
from cscore.problem import ProblemSpec


# -- the new decoder: one class ----------------------------------------------------
class ToyLowRank(ScoredGreedyModel):
    """Greedy decoding with atom scores ``|Q P (x - mu)|`` per channel."""

    ARCH = "toy-lowrank"
    JOINT = False
    FILE_PARAMS: ClassVar[Mapping[str, FileParam]] = {
        "rank": FileParam(hi=64),
        "centered": FileParam("flag", default=0),
    }
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = {
        "P": FileArray(("rank", "M")),
        "Q": FileArray(("N", "rank")),
        "mu": FileArray(("M",), when="centered"),
    }

    def __init__(self, P: np.ndarray, Q: np.ndarray, mu: np.ndarray | None, A: np.ndarray,
                 spec: ProblemSpec, info: dict[str, Any] | None = None) -> None:
        super().__init__(A, spec, info)
        self.P, self.Q = np.asarray(P, np.float32), np.asarray(Q, np.float32)
        self.mu = None if mu is None else np.asarray(mu, np.float32)

    @classmethod
    def _from_arrays(cls, arrays: dict[str, np.ndarray], A: np.ndarray, spec: ProblemSpec,
                     params: dict[str, Any], info: dict[str, Any]) -> ToyLowRank:
        return cls(arrays["P"], arrays["Q"], arrays.get("mu"), A, spec, info)

    def _to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays = {"P": self.P, "Q": self.Q, **({} if self.mu is None else {"mu": self.mu})}
        return arrays, {"rank": self.P.shape[0], "centered": int(self.mu is not None)}

    def _score(self, X: np.ndarray) -> np.ndarray:  # X (b, L, M) -> (b, L, N)
        Xc = X if self.mu is None else X - self.mu
        return np.abs(Xc @ self.P.T.astype(np.float64) @ self.Q.T.astype(np.float64))


# -- its training recipe (NumPy) ----------------------------------------------------
def train_toy(A: np.ndarray, S: np.ndarray, *, rank: int, centered: bool) -> ToyLowRank:
    """Fit the map from a channel's normalized residual (after least squares on its
    ``t`` largest atoms, ``t = 0, 1, ...``) to the signed one-hot of its next
    largest atom by least squares, then keep its best rank-``rank`` part."""
    N, L = S.shape[1:]
    X, T = [], []
    for s in S.transpose(0, 2, 1).reshape(-1, N):  # one channel at a time
        order = np.argsort(-np.abs(s))[: np.count_nonzero(s)]
        y = A @ s
        for t, atom in enumerate(order):
            sub = A[:, order[:t]]
            r = y - sub @ np.linalg.lstsq(sub, y, rcond=None)[0] if t else y
            X.append(r / np.abs(r).max())
            T.append(np.eye(N)[atom] * np.sign(s[atom]))
    X, T = np.array(X), np.array(T)
    mu = X.mean(axis=0) if centered else None
    W = np.linalg.lstsq(X - (0 if mu is None else mu), T, rcond=None)[0]  # (M, N)
    U, sv, Vt = np.linalg.svd(W.T, full_matrices=False)
    spec = ProblemSpec(M=A.shape[0], N=N, L=L, dataset="toy")
    return ToyLowRank(Vt[:rank], U[:, :rank] * sv[:rank], mu, A, spec, {"recipe": "lstsq"})


def _problems(A: np.ndarray, B: int, k: int, L: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    S = np.zeros((B, A.shape[1], L))
    for b in range(B):
        for c in range(L):
            S[b, rng.choice(A.shape[1], k, replace=False), c] = rng.choice([-1, 1], k) * \
                rng.uniform(1.0, 2.0, k)
    return S


@pytest.fixture
def toy():
    register_decoder("toy-lowrank", model_type=ToyLowRank, stopping=("n_nonzero", "tol", "auto"),
                     description="toy: greedy with a low-rank learned scorer")
    rng = np.random.default_rng(0)
    A = rng.standard_normal((16, 32)) / 4.0
    try:
        yield A, _problems(A, 400, 2, 2, seed=1)
    finally:
        unregister_decoder("toy-lowrank")
        ARCHITECTURES.pop("toy-lowrank", None)


@pytest.mark.parametrize("centered", [False, True])
def test_train_save_load_decode(toy, tmp_path, centered):
    A, S = toy
    model = train_toy(A, S, rank=12, centered=centered)
    path = tmp_path / "toy.npz"
    model.save(path)
    with np.load(path, allow_pickle=False) as z:  # its own format, in the one container
        assert sorted(z.files) == sorted(["meta", "A", "P", "Q", *(["mu"] if centered else [])])
        meta = json.loads(z["meta"].tobytes())
    assert meta["arch"] == "toy-lowrank"
    assert meta["arch_params"] == {"rank": 12, "centered": int(centered)}

    S_test = _problems(A, 20, 2, 2, seed=2)
    Y = np.einsum("mn,bnl->bml", A, S_test)
    want = model.decode(Y, n_nonzero=2)
    err = np.linalg.norm(want - S_test, axis=(1, 2)) / np.linalg.norm(S_test, axis=(1, 2))
    assert np.mean(err < 1e-6) >= 0.5  # the trained scorer finds both atoms of most problems
    untrained = ToyLowRank(np.eye(12, 16), np.ones((32, 12)), None, A, model.spec)
    assert np.median(err) < np.median(np.linalg.norm(
        untrained.decode(Y, n_nonzero=2) - S_test, axis=(1, 2)))

    resolved, ref = resolve_model(str(path))
    assert ref["file"] == str(path.resolve())
    for loaded in (ToyLowRank.load(path), load_model(path), resolved,
                   cscore.decoder("toy-lowrank", model=path).model):
        assert type(loaded) is ToyLowRank and loaded.info == {"recipe": "lstsq"}
        for name, arr in model._to_arrays()[0].items():
            np.testing.assert_array_equal(loaded._to_arrays()[0][name], arr)
        np.testing.assert_array_equal(loaded.decode(Y, n_nonzero=2), want)
    dec = cscore.decoder("toy-lowrank", model=str(path), n_nonzero=2)
    np.testing.assert_array_equal(dec(Y), want)
    np.testing.assert_array_equal(cscore.Decoder.from_config(dec.config)(Y), want)


def _rewrite(src, dst, change):
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["meta"].tobytes())
    change(arrays, meta)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez_compressed(dst, **arrays)


@pytest.mark.parametrize("damage,match", [
    (lambda a, m: a.pop("mu"), r"lacks the arrays \['mu'\]"),
    (lambda a, m: m["arch_params"].update(centered=0), r"does not define: \['mu.npy'\]"),
    (lambda a, m: m["arch_params"].update(rank=0), r"arch_params\['rank'\] must be an int"),
    (lambda a, m: m["arch_params"].update(centered=2),
     r"arch_params\['centered'\] must be an int in \[0, 1\]"),
    (lambda a, m: m["arch_params"].update(width=3), r"unknown arch_params \['width'\]"),
    (lambda a, m: a.update(Q=a["Q"][:, :-1]), r"entry 'Q' has shape \(32, 11\)"),
    (lambda a, m: a.update(P=np.full_like(a["P"], np.nan)), r"entry 'P' contains NaN"),
])
def test_corrupted_toy_files_raise_the_protocols_error(toy, tmp_path, damage, match):
    A, S = toy
    good = tmp_path / "good.npz"
    train_toy(A, S, rank=12, centered=True).save(good)
    bad = tmp_path / "bad.npz"
    _rewrite(good, bad, damage)
    for load in (ToyLowRank.load, load_model, lambda p: cscore.decoder("toy-lowrank", model=p)):
        with pytest.raises(ModelFileError, match=match) as exc:
            load(bad)
        assert str(bad) in str(exc.value)  # the message names the file


def test_a_model_that_does_not_match_its_table_is_not_saved(toy, tmp_path):
    A, S = toy
    model = train_toy(A, S, rank=4, centered=False)
    model.Q = model.Q[:, :3]
    with pytest.raises(ValueError, match="do not match the file's entries"):
        model.save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()
