"""What a new user of the ``cscore`` command meets first (issue 27): one error
prefix per (sub)command, a missing or too old optional package named with its
``pip install`` line before anything is written, a transposed sensing matrix
explained, ``cscore models`` as two tables, ``cscore models | head`` quiet."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest

from cscore.cli.app import main


@pytest.mark.parametrize(("argv", "prefix"), [
    (["text", "search", "flow", "--top", "0"], "cscore text search: error:"),
    (["text", "analyze", "flow", "--member", "7"], "cscore text analyze: error:"),
    (["seq", "bench", "--sizes", "0"], "cscore seq bench: error:"),
    (["text"], "cscore text: error:"),
    (["seq"], "cscore seq: error:"),
    (["train", "--data", "mnist", "--mnist-dir", "no-such-dir", "--out", "m.npz"],
     "cscore train: error:"),
    (["bench", "sparsity", "--data-dir", "no-such-dir", "--data", "mnist", "--model",
      "mnist-m72"], "cscore bench: error:"),
    (["demo", "--k", "0"], "cscore demo: error:"),
])
def test_errors_carry_the_prefix_of_the_command_that_failed(argv, prefix, capsys, tmp_path,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(prefix), captured.err
    assert list(tmp_path.iterdir()) == []  # nothing written before the error


def test_argparse_errors_and_ours_share_the_prefix(capsys):
    with pytest.raises(SystemExit):
        main(["text", "search", "flow", "--top", "x"])
    parse_error = capsys.readouterr().err.strip().splitlines()[-1]
    main(["text", "search", "flow", "--top", "0"])
    run_error = capsys.readouterr().err
    assert parse_error.split(" error:")[0] == run_error.split(" error:")[0] == "cscore text search:"


def test_models_prints_a_table_of_decoders_and_one_of_text_encoders(capsys):
    from cscore.text.pretrained import list_pretrained

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    decoders, text = out.split("\ntext encoders")
    assert decoders.startswith("decoder models")
    header, *rows = text.strip().splitlines()[1:]
    assert header.split() == ["name", "kind", "members", "dim", "trigrams", "max", "words",
                              "dataset", "size"]
    kinds = {r.split()[0]: r.split()[1] for r in rows}
    assert set(kinds) == set(list_pretrained())
    assert kinds["cranfield-lstm"] == "lstm" and kinds["cranfield-dssm"] == "dssm"
    assert all(line == line.rstrip() for line in out.splitlines())


def test_models_into_a_closed_pipe_is_quiet():
    # stdout is a pipe whose reader has gone (``cscore models | head -n 1`` once head
    # exits): no error message, no traceback, the shell's status for SIGPIPE
    code = ("import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
            "from cscore.cli.app import main; sys.exit(main(['models']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert (proc.returncode, proc.stderr) == (141, "")


@pytest.fixture
def problem(tmp_path, monkeypatch):
    """A somp problem on disk: A.npy (72, 144), its transpose AT.npy, Y.npy (3, 72, 4)."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((72, 144))
    np.save("A.npy", A)
    np.save("AT.npy", A.T)
    np.save("Y.npy", rng.standard_normal((3, 72, 4)))
    return tmp_path


def test_decode_accepts_tol_auto(problem, capsys):
    pytest.importorskip("zarr")
    argv = ["decode", "--decoder", "somp", "--matrix", "A.npy", "--tol", "auto",
            "--input", "Y.npy", "--output", "S.zarr", "--no-progress"]
    assert main(argv) == 0
    assert "wrote S.zarr: shape (3, 144, 4)" in capsys.readouterr().err


def test_a_transposed_matrix_gets_a_hint_and_no_output(problem, capsys):
    pytest.importorskip("zarr")
    argv = ["decode", "--decoder", "somp", "--matrix", "AT.npy", "--n-nonzero", "5",
            "--input", "Y.npy", "--output", "S.zarr"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("cscore decode: error: input has M = 72")
    assert "is it transposed?" in err and "(144, 72)" in err
    assert not (problem / "S.zarr").exists()


def test_zarr_2_is_named_with_the_pip_line(problem, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "zarr", types.SimpleNamespace(__version__="2.18.3"))
    argv = ["decode", "--decoder", "somp", "--matrix", "A.npy", "--n-nonzero", "5",
            "--input", "Y.npy", "--output", "S.zarr"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "zarr 3 (zarr 2.18.3 is installed)" in err
    assert 'pip install "cscore-decoders[pipeline]"' in err
    assert not (problem / "S.zarr").exists()


@pytest.mark.parametrize(("module", "extra"), [("zarr", "pipeline"), ("distributed", "dask")])
def test_a_missing_package_is_named_before_any_output(module, extra, problem, capsys,
                                                      monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    argv = ["decode", "--decoder", "somp", "--matrix", "A.npy", "--n-nonzero", "5",
            "--input", "Y.npy", "--output", "S.zarr", "--scheduler", "tcp://127.0.0.1:1"]
    if module == "distributed":
        pytest.importorskip("zarr")
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("cscore decode: error:")
    assert f'pip install "cscore-decoders[{extra}]"' in captured.err
    assert "decode:" not in captured.err.split("error:", 1)[1]  # no progress bar
    assert not (problem / "S.zarr").exists()


def test_an_unreachable_scheduler_is_an_error_before_any_output(problem, capsys,
                                                                monkeypatch):
    pytest.importorskip("zarr")
    distributed = pytest.importorskip("distributed")

    def refuse(address, *args, **kwargs):
        raise OSError(f"Timed out trying to connect to {address} after 30 s")

    monkeypatch.setattr(distributed, "Client", refuse)
    argv = ["decode", "--decoder", "somp", "--matrix", "A.npy", "--n-nonzero", "5",
            "--input", "Y.npy", "--output", "S.zarr", "--scheduler", "tcp://127.0.0.1:1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("cscore decode: error: --scheduler tcp://127.0.0.1:1: cannot reach")
    assert not (problem / "S.zarr").exists()


def test_help_cscore_lists_entry_points_that_exist():
    import re

    import cscore

    doc = cscore.__doc__ or ""
    assert "Entry points" in doc and "cscore --help" in doc
    names = re.findall(r":(?:func|class):`(\w+)`", doc)
    assert {"omp", "somp", "pretrained", "decoder", "stream", "decode_file"} <= set(names)
    assert [n for n in names if not hasattr(cscore, n)] == []
