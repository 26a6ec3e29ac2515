"""Decoder configs: every defect is a ValueError (or FileNotFoundError) naming the field."""

from __future__ import annotations

import json

import numpy as np
import pytest

import cscore
from cscore.models.registry import file_sha256

M, N = 6, 10


@pytest.fixture()
def A():
    return np.random.default_rng(0).standard_normal((M, N))


def _write(path, cfg):
    path.write_text(json.dumps(cfg) if not isinstance(cfg, str) else cfg)
    return path


def _cfg(mat, **extra):
    cfg = {"cscore_decoder": 1, "name": "somp", "settings": {"n_nonzero": 2},
           "A": {"shape": list(mat.shape), "dtype": "float64", "data": mat.tolist()}}
    cfg.update(extra)
    return cfg


def test_deeply_nested_json_is_a_value_error(tmp_path):
    p = _write(tmp_path / "deep.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        cscore.Decoder.from_config(p)


def test_huge_number_in_A_is_a_value_error(tmp_path, A):
    data = A.tolist()
    data[0][0] = 10**400
    p = _write(tmp_path / "big.json", _cfg(A, A={"shape": [M, N], "data": data}))
    with pytest.raises(ValueError, match="'A' is malformed"):
        cscore.Decoder.from_config(p)


def test_bad_A_files_are_value_errors(tmp_path, A):
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    npz = tmp_path / "a.npz"
    np.savez(npz, A=A)
    for f in (empty, npz):
        p = _write(tmp_path / "c.json",
                   _cfg(A, A={"file": f.name, "sha256": file_sha256(f)}))
        with pytest.raises(ValueError, match=r"'A' file .* is not a \.npy array"):
            cscore.Decoder.from_config(p)


def test_file_reference_needs_its_hash(tmp_path, A):
    np.save(tmp_path / "A.npy", A)
    p = _write(tmp_path / "c.json", _cfg(A, A={"file": "A.npy"}))
    with pytest.raises(ValueError, match="'A' reference needs 'sha256'"):
        cscore.Decoder.from_config(p)
    ok = _write(tmp_path / "ok.json",
                _cfg(A, A={"file": "A.npy", "sha256": file_sha256(tmp_path / "A.npy")}))
    np.testing.assert_array_equal(cscore.Decoder.from_config(ok).A, A)


def test_settings_of_the_wrong_type_name_the_setting(tmp_path, A):
    cases = [
        ({"n_nonzero": {"a": 1}}, "setting 'n_nonzero' is a dict"),
        ({"n_nonzero": True}, "setting 'n_nonzero' must be an integer, not a boolean"),
        ({"n_nonzero": [[[[[[[[[[1]]]]]]]]]]}, "setting 'n_nonzero' is nested too deeply"),
    ]
    for settings, match in cases:
        p = _write(tmp_path / "c.json", _cfg(A, settings=settings))
        with pytest.raises(ValueError, match=match):
            cscore.Decoder.from_config(p)
    with pytest.raises(ValueError, match="setting 'n_nonzero' is a dict"):
        cscore.Decoder.from_config(_cfg(A, settings={"n_nonzero": {"a": 1}}))


def test_boolean_version_is_refused(A):
    with pytest.raises(ValueError, match="cscore_decoder = True"):
        cscore.Decoder.from_config(_cfg(A, cscore_decoder=True))


def test_references_outside_the_config_folder_are_refused(tmp_path, A):
    inner = tmp_path / "cfg"
    inner.mkdir()
    np.save(tmp_path / "A.npy", A)
    ref = {"sha256": file_sha256(tmp_path / "A.npy")}
    for f in ("../A.npy", str(tmp_path / "A.npy")):
        p = _write(inner / "c.json", _cfg(A, A={"file": f, **ref}))
        with pytest.raises(ValueError, match="outside the config's folder"):
            cscore.Decoder.from_config(p)
        dec = cscore.Decoder.from_config(p, allow_outside=True)
        np.testing.assert_array_equal(dec.A, A)
    # a symlink inside the folder that points out is refused too
    (inner / "link.npy").symlink_to(tmp_path / "A.npy")
    p = _write(inner / "c.json", _cfg(A, A={"file": "link.npy", **ref}))
    with pytest.raises(ValueError, match="outside"):
        cscore.Decoder.from_config(p)
    # references resolve relative to the config file, not the current directory
    np.save(inner / "B.npy", A)
    p = _write(inner / "c.json",
               _cfg(A, A={"file": "B.npy", "sha256": file_sha256(inner / "B.npy")}))
    np.testing.assert_array_equal(cscore.Decoder.from_config(p).A, A)


def test_cli_reports_a_too_long_file_name(tmp_path, capsys):
    from cscore.cli.app import main

    rc = main(["decode", "--config", "x" * 5000, "--input", str(tmp_path / "Y.npy"), "--output",
               str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("cscore decode: error:") and "too long" in err
    assert len(err) < 1000


def test_cli_keeps_tracebacks_for_oserrors_without_errno(monkeypatch, capsys):
    import argparse
    import errno

    from cscore.cli import app

    def parser_raising(exc):
        def build():
            p = argparse.ArgumentParser(prog="cscore")
            sub = p.add_subparsers(dest="command")
            s = sub.add_parser("x")

            def run(args):
                raise exc

            s.set_defaults(_run=run)
            return p

        return build

    monkeypatch.setattr(app, "build_parser",
                        parser_raising(OSError(errno.ENOSPC, "No space left on device", "f")))
    assert app.main(["x"]) == 2
    assert capsys.readouterr().err.startswith("cscore x: error: No space left on device: f")
    monkeypatch.setattr(app, "build_parser", parser_raising(FileNotFoundError("gone: f")))
    assert app.main(["x"]) == 2
    assert "cscore x: error: gone: f" in capsys.readouterr().err
    monkeypatch.setattr(app, "build_parser", parser_raising(OSError("a bug")))
    with pytest.raises(OSError, match="a bug"):
        app.main(["x"])


def test_too_long_config_name_is_a_value_error():
    with pytest.raises(ValueError, match="too long"):
        cscore.Decoder.from_config("x" * 5000)


def test_cscore_decode_config_outside_its_folder_needs_allow_outside(tmp_path, capsys):
    pytest.importorskip("zarr")
    from cscore.cli import main

    model = cscore.pretrained("nwsomp-mnist-m72")
    elsewhere = tmp_path / "models"
    elsewhere.mkdir()
    model.save(elsewhere / "m.npz")
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    cscore.decoder("nwsomp", model=elsewhere / "m.npz", n_nonzero=3).save(cfg_dir / "dec.json")
    Y = np.zeros((2, model.M, model.L))
    np.save(tmp_path / "Y.npy", Y)
    argv = ["decode", "--config", str(cfg_dir / "dec.json"), "--input", str(tmp_path / "Y.npy"),
            "--output", str(tmp_path / "S.zarr"), "--no-progress"]
    assert main(argv) == 2
    assert "outside" in capsys.readouterr().err
    assert main([*argv, "--allow-outside"]) == 0
