"""Adding a decoder is one module plus one registration (docs/architecture.md).

A toy matrix decoder and a toy learned decoder (with its own model-file
architecture) are defined and registered here, in test code, and each is then
used unchanged through every consumer of the registry: ``cscore.decoder``, a
JSON config round trip, the bench adapter and ``cscore bench``, ``cscore
decode`` and ``cscore.dask.decode``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest

import cscore
from cscore.bench import run_decoder
from cscore.cli import main
from cscore.decoders import get_decoder_spec, register_decoder, unregister_decoder
from cscore.decoders.learned import FileArray, ScoredGreedyModel
from cscore.decoders.learned._greedy import checked_weight
from cscore.models import ARCHITECTURES, ModelFileError, load_model
from cscore.problem import ProblemSpec


# -- the two toy decoders: everything a new decoder needs -------------------------
def toy_threshold(A: np.ndarray, Y: np.ndarray, *, n_nonzero: int = 2,
                  tol: float | None = None) -> np.ndarray:
    """Keep the ``n_nonzero`` rows of largest energy of A^T Y (joint support), refit."""
    Y3 = Y[None] if Y.ndim == 2 else Y
    out = np.zeros((Y3.shape[0], A.shape[1], Y3.shape[2]))
    for b, Yb in enumerate(Y3):
        rows = np.argsort(-np.linalg.norm(A.T @ Yb, axis=1), kind="stable")[:n_nonzero]
        out[b, rows] = np.linalg.lstsq(A[:, rows], Yb, rcond=None)[0]
    return out[0] if Y.ndim == 2 else out


class ToyCorrelation(ScoredGreedyModel):
    """A learned greedy decoder whose 'network' is one linear layer W (N, M)."""

    ARCH = "toy-correlation"
    JOINT = False
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = {"W": FileArray(("N", "M"))}  # no params

    def __init__(self, W: np.ndarray, A: np.ndarray, spec: ProblemSpec,
                 info: dict[str, Any] | None = None) -> None:
        super().__init__(A, spec, info)
        self._W = checked_weight("W", W, (spec.N, spec.M))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"W": self._W}

    def arch_params(self) -> dict[str, int]:
        return {}

    @classmethod
    def _from_arrays(cls, arrays, A, spec, params, info):  # type: ignore[no-untyped-def]
        return cls(arrays["W"], A, spec, info)

    def _score(self, X: np.ndarray) -> np.ndarray:
        return np.abs(X @ self._W.T.astype(np.float64))


@pytest.fixture
def toys(tmp_path):
    register_decoder("toy-threshold", toy_threshold, description="toy: top rows of A^T Y")
    register_decoder("toy-learned", model_type=ToyCorrelation,
                     stopping=("n_nonzero", "tol", "auto"), description="toy learned decoder")
    rng = np.random.default_rng(3)
    M, N, L = 12, 24, 3
    A = rng.standard_normal((M, N)) / np.sqrt(M)
    model = ToyCorrelation(A.T / np.linalg.norm(A, axis=0)[:, None], A,
                           ProblemSpec(M=M, N=N, L=L), {"description": "toy"})
    path = tmp_path / "toy.npz"
    model.save(path)
    S = np.zeros((5, N, L))
    for b in range(5):
        S[b, rng.choice(N, 2, replace=False)] = rng.standard_normal((2, L)) + 2.0
    Y = A @ S
    try:
        yield {"A": A, "Y": Y, "S": S, "model": model, "path": path}
    finally:
        unregister_decoder("toy-threshold")
        unregister_decoder("toy-learned")
        ARCHITECTURES.pop("toy-correlation", None)


def test_registration_declares_what_consumers_need(toys):
    m = get_decoder_spec("toy-threshold")
    assert (m.kind, m.layout, m.settings, m.stopping) == \
        ("matrix", "batch", ("n_nonzero", "tol"), ("n_nonzero", "tol"))
    d = get_decoder_spec("toy-learned")
    assert (d.kind, d.archs, d.stopping) == ("model", ("toy-correlation",),
                                             ("n_nonzero", "tol", "auto"))
    assert "n_nonzero" in d.settings and "return_result" not in d.settings
    assert ARCHITECTURES["toy-correlation"].model_class is ToyCorrelation
    assert {"toy-threshold", "toy-learned"} <= set(cscore.decoder_names())


def test_decoder_and_config_round_trip(toys, tmp_path):
    A, Y = toys["A"], toys["Y"]
    dec = cscore.decoder("toy-threshold", A, n_nonzero=2)
    np.testing.assert_array_equal(dec(Y), toy_threshold(A, Y, n_nonzero=2))
    np.testing.assert_array_equal(dec(Y[1]), toy_threshold(A, Y[1], n_nonzero=2))
    back = cscore.Decoder.from_config(json.loads(json.dumps(dec.config)))
    assert back == dec
    np.testing.assert_array_equal(back(Y), dec(Y))
    with pytest.raises(ValueError, match="unknown setting 'k'"):
        cscore.decoder("toy-threshold", A, k=2)

    ldec = cscore.decoder("toy-learned", model=toys["path"], n_nonzero=2)
    out = ldec(Y)
    np.testing.assert_array_equal(out, toys["model"].decode(Y, n_nonzero=2))
    assert np.mean(np.linalg.norm(out - toys["S"], axis=(1, 2))
                   / np.linalg.norm(toys["S"], axis=(1, 2))) < 0.5
    cfg = tmp_path / "dec.json"
    ldec.save(cfg)
    np.testing.assert_array_equal(cscore.Decoder.from_config(cfg)(Y), out)
    # tol="auto" comes with the learned base class
    auto = cscore.decoder("toy-learned", model=toys["path"], tol="auto")(Y)
    assert auto.shape == out.shape


def test_model_file_loads_through_the_one_resolver(toys, tmp_path):
    loaded = load_model(toys["path"])
    assert isinstance(loaded, ToyCorrelation)
    np.testing.assert_array_equal(loaded.arrays()["W"], toys["model"].arrays()["W"])
    bad = tmp_path / "bad.npz"
    bad.write_bytes(toys["path"].read_bytes()[:200])
    with pytest.raises(ModelFileError):
        load_model(bad)
    with pytest.raises(TypeError, match="must be a ToyCorrelation"):
        cscore.decoder("toy-learned", model=cscore.pretrained("mnist-m72"))


def test_bench_adapter_and_cli(toys, tmp_path, capsys):
    A, Y = toys["A"], toys["Y"]
    np.testing.assert_array_equal(run_decoder("toy-threshold", A, Y, k=2),
                                  toy_threshold(A, Y, n_nonzero=2))
    np.testing.assert_array_equal(run_decoder("toy-learned", A, Y, k=2, model=toys["model"]),
                                  toys["model"].decode(Y, n_nonzero=2))
    with pytest.raises(ValueError, match="needs a model"):
        run_decoder("toy-learned", A, Y, k=2)
    out = tmp_path / "bench"
    code = main(["bench", "sparsity", "--data", "synthetic", "--M", "12", "--N", "24",
                 "--L", "3", "--k", "2,3", "--problems", "3", "--decoders", "toy-threshold,somp",
                 "--stop", "k", "--no-plot", "--no-progress", "--out", str(out)])
    assert code == 0
    rows = (next(out.rglob("results.csv"))).read_text().splitlines()
    assert any(r.startswith("toy-threshold,") or ",toy-threshold," in r for r in rows[1:])


def test_cscore_decode_cli_and_dask(toys, tmp_path):
    pytest.importorskip("zarr")
    A, Y = toys["A"], toys["Y"]
    np.save(tmp_path / "Y.npy", Y)
    np.save(tmp_path / "A.npy", A)
    assert main(["decode", "--decoder", "toy-threshold", "--matrix", str(tmp_path / "A.npy"),
                 "--n-nonzero", "2", "--input", str(tmp_path / "Y.npy"), "--output",
                 str(tmp_path / "out.zarr"), "--no-progress"]) == 0
    import zarr

    np.testing.assert_array_equal(np.asarray(zarr.open_array(str(tmp_path / "out.zarr"))),
                                  toy_threshold(A, Y, n_nonzero=2))
    assert main(["decode", "--decoder", "toy-learned", "--model", str(toys["path"]),
                 "--n-nonzero", "2", "--input", str(tmp_path / "Y.npy"), "--output",
                 str(tmp_path / "out2.zarr"), "--no-progress"]) == 0
    np.testing.assert_array_equal(np.asarray(zarr.open_array(str(tmp_path / "out2.zarr"))),
                                  toys["model"].decode(Y, n_nonzero=2))

    da = pytest.importorskip("dask.array")
    dec = cscore.decoder("toy-learned", model=toys["path"], n_nonzero=2)
    lazy = cscore.dask.decode(dec, da.from_array(Y, chunks=(2, -1, -1)))
    np.testing.assert_array_equal(lazy.compute(scheduler="synchronous"), dec(Y))


def test_decode_help_lists_every_registered_decoder(toys, capsys):
    with pytest.raises(SystemExit):
        main(["decode", "--help"])
    # argparse may wrap a name at its hyphen ("lstm-cs-" / "beam"): compare without spaces
    help_text = "".join(capsys.readouterr().out.split())
    for name in cscore.decoder_names():
        assert name in help_text


def test_cscore_decode_takes_tol_auto(tmp_path):
    pytest.importorskip("zarr")
    import zarr

    rng = np.random.default_rng(5)
    A = rng.standard_normal((24, 48)) / np.sqrt(24)
    S = np.zeros((4, 48, 2))
    for b in range(4):
        S[b, rng.choice(48, 3, replace=False)] = 1.0 + rng.random((3, 2))
    Y = A @ S + 0.001 * rng.standard_normal((4, 24, 2))
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "Y.npy", Y)
    assert main(["decode", "--decoder", "somp", "--matrix", str(tmp_path / "A.npy"), "--tol",
                 "auto", "--input", str(tmp_path / "Y.npy"), "--output",
                 str(tmp_path / "S.zarr"), "--no-progress"]) == 0
    out = np.asarray(zarr.open_array(str(tmp_path / "S.zarr")))
    np.testing.assert_array_equal(out, cscore.somp(A, Y, tol="auto"))
    with pytest.raises(SystemExit):
        main(["decode", "--decoder", "somp", "--tol", "often", "--input", "x", "--output", "y"])
