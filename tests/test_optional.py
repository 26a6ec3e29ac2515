"""The one install message for optional packages (cscore._optional)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import cscore
from cscore import _optional
from cscore._optional import install_hint, require


@pytest.fixture
def problem(tmp_path):
    A = np.random.default_rng(0).standard_normal((12, 24))
    np.save(tmp_path / "Y.npy", np.zeros((3, 12, 2)))
    return cscore.decoder("somp", A, n_nonzero=2), tmp_path


@pytest.mark.parametrize("version", ["2.18.3", "2.0", "1.9.0rc1"])
def test_decode_file_with_old_zarr_says_how_to_install(problem, monkeypatch, version):
    dec, tmp = problem
    monkeypatch.setitem(sys.modules, "zarr", types.SimpleNamespace(__version__=version))
    with pytest.raises(ImportError) as info:
        cscore.decode_file(dec, tmp / "Y.npy", tmp / "S.zarr")
    msg = str(info.value)
    assert f"needs zarr 3 (zarr {version} is installed)" in msg
    assert msg.endswith('pip install "cscore-decoders[pipeline]"')
    assert info.value.name == "zarr"
    assert not (tmp / "S.zarr").exists()


@pytest.mark.parametrize("version", ["3", "3.0.0rc1", "3.1.6", "10.0"])
def test_min_version_accepts_new_enough(monkeypatch, version):
    fake = types.SimpleNamespace(__version__=version)
    monkeypatch.setitem(sys.modules, "zarr", fake)
    assert require("zarr", "test", min_version="3") is fake


def test_min_version_compares_numerically(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", types.SimpleNamespace(__version__="2024.9.1"))
    assert require("dask", "test", min_version="2024.9") is sys.modules["dask"]
    with pytest.raises(ImportError, match=r"needs dask 2024\.10 \(dask 2024\.9\.1 is installed\)"):
        require("dask", "test", min_version="2024.10")
    # no readable version: accepted (as the zarr check always did)
    monkeypatch.setitem(sys.modules, "dask", types.SimpleNamespace())
    assert require("dask", "test", min_version="2024.10") is sys.modules["dask"]


def test_missing_module_message_is_unchanged(monkeypatch):
    monkeypatch.setitem(sys.modules, "zarr", None)
    with pytest.raises(ImportError,
                       match=r'^x needs zarr: pip install "cscore-decoders\[pipeline\]"$'):
        require("zarr", "x", min_version="3")


def test_extras_and_hints():
    assert _optional.EXTRAS["spkit"] == "sensor"
    assert install_hint("spkit") == 'pip install "cscore-decoders[sensor]"'
    assert install_hint("dask.array") == 'pip install "cscore-decoders[dask]"'
    assert install_hint("matplotlib") == 'pip install "cscore-decoders[plot]"'
    assert install_hint("rank_bm25") == 'pip install "cscore-decoders[text]"'
    assert install_hint("no_such_module") == "pip install no_such_module"


def test_sensor_module_does_not_patch_extras():
    import inspect

    from cscore.datasets import sensor

    assert "EXTRAS" not in inspect.getsource(sensor)


def test_matplotlib_hints_use_the_one_format(monkeypatch):
    from cscore.bench.plots import pyplot
    from cscore.text.analysis import _plt

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    for fn in (pyplot, _plt):
        with pytest.raises(ImportError, match=r'pip install "cscore-decoders\[plot\]"$'):
            fn()
