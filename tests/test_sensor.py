"""The sensor demo (docs/sensor.md): a real 14-channel EEG, binary sensing, decoded as a stream.

The tests that read the recording need the ``sensor`` extra (spkit, whose wheel
ships it) and are skipped without it; the rest run everywhere.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
import scipy.fft

import cscore
from cscore.bench.sensor import (
    SENSOR_N,
    prepare_sensor,
    run_sensor,
    sensing_operator,
    sensor_model_name,
)
from cscore.cli import main
from cscore.datasets.sensor import (
    EEG14,
    binary_sensing_matrix,
    dct_matrix,
    load_eeg14,
    split_recording,
    windows,
)

HAVE_SPKIT = importlib.util.find_spec("spkit") is not None
needs_extra = pytest.mark.skipif(not HAVE_SPKIT, reason='needs the sensor extra: '
                                 'pip install "cscore-decoders[sensor]"')


@pytest.mark.parametrize(("M", "N", "d"), [(32, 64, 2), (16, 64, 2), (5, 7, 3), (4, 4, 4)])
def test_binary_matrix_has_d_ones_per_column(M, N, d):
    P = binary_sensing_matrix(M, N, d, seed=3)
    assert P.shape == (M, N)
    assert set(np.unique(P)) <= {0.0, 1.0}
    assert (P.sum(axis=0) == d).all()
    assert np.array_equal(P, binary_sensing_matrix(M, N, d, seed=3))
    assert not np.array_equal(binary_sensing_matrix(32, 64, 2, seed=0),
                              binary_sensing_matrix(32, 64, 2, seed=1))


@pytest.mark.parametrize(("M", "N", "d"), [(3, 64, 4), (65, 64, 2), (0, 64, 2), (8, 64, 0)])
def test_binary_matrix_refuses_bad_sizes(M, N, d):
    with pytest.raises(ValueError):
        binary_sensing_matrix(M, N, d)


def test_demo_operator_is_binary_sensing_of_dct_coefficients():
    Phi, A = sensing_operator(24)
    assert (Phi.sum(axis=0) == 2).all() and set(np.unique(Phi)) == {0.0, 1.0}
    x = np.random.default_rng(0).standard_normal(SENSOR_N)
    np.testing.assert_allclose(A @ (dct_matrix(SENSOR_N) @ x), Phi @ x, atol=1e-12)


def test_dct_matrix_is_scipys_orthonormal_dct():
    D = dct_matrix(64)
    np.testing.assert_allclose(D, scipy.fft.dct(np.eye(64), norm="ortho", axis=0), atol=1e-12)
    np.testing.assert_allclose(D @ D.T, np.eye(64), atol=1e-12)


def test_windows():
    X = np.arange(20.0).reshape(10, 2)
    W = windows(X, 4)
    assert W.shape == (2, 4, 2)
    np.testing.assert_array_equal(W[1], X[4:8])
    assert windows(X, 4, stride=2).shape == (4, 4, 2)
    assert windows(X, 11).shape == (0, 11, 2)


def _hide_spkit(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "spkit" else real(name, *a, **k))
    monkeypatch.setitem(sys.modules, "spkit", None)  # importing it fails too


def test_missing_extra_says_how_to_install(monkeypatch):
    _hide_spkit(monkeypatch)
    with pytest.raises(ImportError, match=r'pip install "cscore-decoders\[sensor\]"') as info:
        load_eeg14()
    assert info.value.name == "spkit"


def test_cli_missing_extra(monkeypatch, capsys):
    _hide_spkit(monkeypatch)
    assert main(["demo", "sensor"]) == 2
    assert 'pip install "cscore-decoders[sensor]"' in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["demo", "sensor", "--k", "5"], "--k: options of the image demo"),
    (["demo", "--M", "16"], "--M is an option of 'cscore demo sensor'"),
    # sizes are checked before the recording is read: no extra needed
    (["demo", "sensor", "--M", "70"], "every M must be between 2 and 64"),
])
def test_cli_bad_options(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@needs_extra
def test_loader_returns_documented_recording():
    rec = load_eeg14()
    assert rec.signal.shape == (2048, 14) and rec.signal.dtype == np.float64
    assert rec.fs == 128.0 and rec.seconds == 16.0
    assert rec.channels == EEG14.channels and rec.channels[0] == "AF3"
    assert np.isfinite(rec.signal).all() and 20 < rec.signal.std() < 500  # microvolts
    parts = split_recording(rec)
    assert [parts[k].shape[0] for k in ("train", "val", "test")] == [1280, 256, 512]
    np.testing.assert_array_equal(np.concatenate([parts[k] for k in ("train", "val", "test")]),
                                  rec.signal)


@needs_extra
def test_demo_decodes_every_channel():
    # measured on the test part (benchmarks/results/sensor.md), M = 24: mean NMSE 0.066
    # (SOMP) and 0.033 (LSTM-CS), worst channel 0.23 (SOMP, F3); a broken decoder gives ~1
    setup = prepare_sensor(Ms=(24,), decoders=("somp", "lstm-cs"))
    seen = []
    res = run_sensor(setup, cscore.stream, on_run=seen.append)
    assert [r.decoder for r in res.runs] == ["somp", "lstm-cs"] == [r.decoder for r in seen]
    assert not res.skipped and res.figure is None
    for r in res.runs:
        assert r.nmse.shape == (14,) and r.decoded.shape == setup.test.shape
        assert r.nmse.max() < 0.5, (r.decoder, r.nmse)
        assert r.nmse.mean() < 0.15, (r.decoder, r.nmse)
        np.testing.assert_allclose(r.snr_db, -10 * np.log10(r.nmse))
        assert r.compression_ratio == 62.5 and r.realtime_factor > 0
    # the stream decodes exactly what one batch call does
    Phi, _ = sensing_operator(24)
    dec = cscore.decoder("somp", sensing_operator(24)[1], n_nonzero=6)
    Y = np.einsum("mn,bnl->bml", Phi, windows(setup.test, SENSOR_N)) / setup.scale
    direct = np.einsum("kn,bkl->bnl", dct_matrix(SENSOR_N), dec(Y)) * setup.scale
    np.testing.assert_allclose(res.runs[0].decoded, direct.reshape(setup.test.shape),
                               atol=1e-9)


def test_shipped_models_are_small_and_registered():
    for M in (32, 24, 16):
        entry = {e.name: e for e in cscore.models.registry.pretrained_entries()}[
            sensor_model_name(M)]
        assert entry.size_bytes < 1_000_000 and (entry.M, entry.N, entry.L) == (M, 64, 14)
        # A = Phi @ D.T is a BLAS product (OpenBLAS's AVX-512 and AVX2 kernels differ
        # by an ulp here), so the shipped A matches the one computed now to rounding
        np.testing.assert_allclose(cscore.pretrained(sensor_model_name(M)).A,
                                   sensing_operator(M)[1], rtol=0, atol=1e-14)


@needs_extra
def test_cli_demo_sensor_writes_figure(tmp_path, capsys):
    png = tmp_path / "sensor.png"
    assert main(["demo", "sensor", "--M", "32", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    for name in ("somp", "tmsbl", "lstm-cs"):
        assert f"\n{name} " in out
    assert "SNR (dB) per channel" in out and "NMSE per channel" in out and "\nO1 " in out
    assert f"figure: {png}" in out
