"""The one rule that tells a model file from a pretrained name, in each place a
model is named: :func:`cscore.models.resolve_model`, ``cscore.decoder(...,
model=...)`` and decoder configs (the text models' resolver: tests/test_text.py).

The rule (:func:`cscore.models.registry.is_model_path`): a path object is a file;
a string is a file when it contains a path separator or ends in ``.npz``; any
other string is a pretrained name, whatever files sit in the current folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore.decoders.learned import LSTMCSWeights
from cscore.models import resolve_model
from cscore.models.registry import is_model_path
from cscore.problem import ProblemSpec

NAME = "demo-dct-m32"  # a shipped model (M = 32)


@pytest.mark.parametrize("text,is_path", [
    ("mnist-m72", False),
    ("my model", False),
    ("./mnist-m72", True),
    ("mnist-m72.npz", True),
    ("models/mnist-m72", True),
    (f"..{os.sep}m", True),
    (Path("mnist-m72"), True),
])
def test_the_rule(text, is_path):
    assert is_model_path(text) is is_path


@pytest.fixture
def cwd_with_lookalikes(tmp_path, monkeypatch):
    """The current folder holds a small LSTM-CS model (M = 6) under the shipped
    model's name, under an unknown name and as ``small.npz``."""
    rng = np.random.default_rng(0)
    M, N, L, H = 6, 12, 2, 3
    w = LSTMCSWeights(W=rng.normal(size=(3 * H, M)), R=rng.normal(size=(3 * H, H)),
                      b=np.zeros(3 * H), U=rng.normal(size=(N, H)), c_out=np.zeros(N))
    model = cscore.LSTMCS(w, rng.normal(size=(M, N)), ProblemSpec(M=M, N=N, L=L))
    monkeypatch.chdir(tmp_path)
    for name in (NAME, "mine", "small.npz"):
        model.save(tmp_path / name)
    return tmp_path


def test_resolver_names_win_without_a_separator(cwd_with_lookalikes):
    model, ref = resolve_model(NAME)
    assert ref == NAME and model.M == 32
    model, ref = resolve_model(f"./{NAME}")
    assert model.M == 6 and ref["file"] == str(cwd_with_lookalikes / NAME)
    assert len(ref["sha256"]) == 64
    assert resolve_model("small.npz")[0].M == 6
    assert resolve_model(Path(NAME))[0].M == 6
    with pytest.raises(ValueError, match=r"unknown pretrained model 'mine'.*'\./mine'"):
        resolve_model("mine")
    with pytest.raises(FileNotFoundError):
        resolve_model("absent.npz")


def test_decoder_and_config_follow_the_rule(cwd_with_lookalikes):
    dec = cscore.decoder("lstm-cs", model=NAME, n_nonzero=2)
    assert dec.M == 32 and dec.config["model"] == NAME
    dec = cscore.decoder("lstm-cs", model=f"./{NAME}", n_nonzero=2)
    assert dec.M == 6 and dec.config["model"]["file"] == str(cwd_with_lookalikes / NAME)
    assert cscore.Decoder.from_config(dec.config).M == 6
    assert cscore.decoder("lstm-cs", model="small.npz").M == 6
    with pytest.raises(ValueError, match=r"'\./mine'"):
        cscore.decoder("lstm-cs", model="mine")
