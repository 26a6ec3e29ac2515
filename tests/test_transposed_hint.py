"""A sensing matrix passed transposed, (N, M) for (M, N), gets a hint in every decoder."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.linalg import aslinearoperator

import cscore
from cscore._validation import transposed_hint
from cscore.decoders.learned.base import LearnedModel
from cscore.decoders.registry import decoder_specs
from cscore.decoders.stopping import auto_decode_mmv
from cscore.problem import ProblemSpec

M, N, L = 12, 30, 3
HINT = "did you pass A transposed? A must be (M, N)"

_rng = np.random.default_rng(0)
A = _rng.standard_normal((M, N))
Y = _rng.standard_normal((M, L))
MATRIX_DECODERS = [s for s in decoder_specs() if s.kind == "matrix"]


def test_every_builtin_matrix_decoder_is_covered() -> None:
    names = {s.name for s in MATRIX_DECODERS}
    assert {"omp", "somp", "bcs", "mtbcs", "tsbl", "tmsbl", "amp", "vamp"} <= names


@pytest.mark.parametrize("spec", MATRIX_DECODERS, ids=lambda s: s.name)
def test_transposed_A_gives_the_hint(spec) -> None:
    with pytest.raises(ValueError, match=r"must have|measurements") as info:
        spec.func(A.T, Y)
    msg = str(info.value)
    assert HINT in msg
    assert f"here ({M}, {N}): transpose it" in msg


@pytest.mark.parametrize("spec", MATRIX_DECODERS, ids=lambda s: s.name)
def test_other_row_mismatch_gives_no_hint(spec) -> None:
    # Y's row count is neither M nor N: a plain shape error, no transposition hint
    with pytest.raises(ValueError) as info:
        spec.func(A, Y[:-1])
    assert "transposed" not in str(info.value)


@pytest.mark.parametrize("spec", [s for s in MATRIX_DECODERS if "auto" in s.stopping],
                         ids=lambda s: s.name)
def test_transposed_A_with_auto_stopping(spec) -> None:
    with pytest.raises(ValueError, match="did you pass A transposed"):
        spec.func(A.T, Y, tol="auto")


def test_batch_and_operator_inputs() -> None:
    with pytest.raises(ValueError, match="did you pass A transposed"):
        cscore.somp(A.T, np.stack([Y, Y]), n_nonzero=2)
    with pytest.raises(ValueError, match="did you pass A transposed"):
        cscore.somp(aslinearoperator(A.T), Y, n_nonzero=2)
    with pytest.raises(ValueError, match="did you pass A transposed"):
        cscore.omp(aslinearoperator(A.T), Y[:, 0], n_nonzero=2)


def test_auto_stopping_entry_point() -> None:
    with pytest.raises(ValueError, match="did you pass A transposed"):
        auto_decode_mmv(lambda Y3, K: None, A.T, Y)
    # a 1-D Y is refused by its ndim, without a hint and without an IndexError
    with pytest.raises(ValueError, match=r"\(M, L\) or \(B, M, L\)") as info:
        auto_decode_mmv(lambda Y3, K: None, A.T, Y[:, 0])
    assert "transposed" not in str(info.value)


def test_learned_model_spec_check() -> None:
    spec = ProblemSpec(M=M, N=N, L=L)
    with pytest.raises(ValueError, match="spec says") as info:
        LearnedModel()._set_spec(A.T, spec, None)
    assert HINT in str(info.value)
    with pytest.raises(ValueError, match="spec says") as info:
        LearnedModel()._set_spec(A[:, :-1], spec, None)
    assert "transposed" not in str(info.value)


def test_transposed_hint_cases() -> None:
    assert transposed_hint((N, M), M) != ""
    assert transposed_hint((M, N), M) == ""  # the rows fit: nothing to hint
    assert transposed_hint((M, M), M) == ""  # square: cannot tell
    assert transposed_hint((N, M), M + 1) == ""
    assert transposed_hint((N, M), M, cols=N) != ""
    assert transposed_hint((N + 1, M), M, cols=N) == ""
    assert transposed_hint((M,), M) == ""
