"""What people expect of a command line (issue 37): --version, "did you mean",
Ctrl-C as one line and exit 130 (training keeps its best model), a list of the
decoders, figure and input file names taken at their word, "already complete"."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import cscore
from cscore.cli import main
from cscore.decoders import (
    decoder_names,
    decoder_specs,
    register_decoder,
    unregister_decoder,
)

from conftest import requires_torch


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_flag(flag, capsys):
    with pytest.raises(SystemExit) as info:
        main([flag])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"cscore {cscore.__version__}"


def test_version_comes_from_one_place():
    from cscore import _version

    assert cscore.__version__ == _version.__version__
    assert _version.DISTRIBUTION != "cscore"  # the index's "cscore" is another project


@pytest.mark.parametrize(("argv", "suggestion"), [
    (["bnech"], "did you mean 'bench'?"),
    (["decoder"], "did you mean 'decoders'?"),
    (["bench", "sparsty"], "did you mean 'sparsity'?"),
    (["bench", "sparsity", "--data", "mnsit"], "did you mean 'mnist'?"),
    (["seq", "bnch"], "did you mean 'bench'?"),
])
def test_a_mistyped_choice_gets_did_you_mean(argv, suggestion, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and err.rstrip().endswith(suggestion)


def test_no_suggestion_for_a_far_miss(capsys):
    with pytest.raises(SystemExit):
        main(["zzzzzz"])
    err = capsys.readouterr().err
    assert "invalid choice: 'zzzzzz'" in err and "did you mean" not in err


def _rows(out: str) -> dict[str, dict[str, str]]:
    """The table of ``cscore decoders``, cut at its header's column starts."""
    lines = out.splitlines()
    header = lines[0].split()
    starts = [lines[0].index(f" {h} ") + 1 if i else 0 for i, h in enumerate(header[:-1])]
    starts.append(lines[0].rindex(header[-1]))
    rows = {}
    for line in lines[1:]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])]
        rows[cells[0]] = dict(zip(header, cells))
    return rows


def test_decoders_lists_every_decoder_with_what_it_accepts(capsys):
    assert main(["decoders"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert list(rows) == decoder_names()
    # OMP and SOMP take sparse matrices and operators (decoders/greedy_operator.py)
    for name in ("omp", "somp"):
        assert (rows[name]["sparse"], rows[name]["operator"]) == ("yes", "yes")
    assert (rows["tmsbl"]["sparse"], rows["tmsbl"]["complex"]) == ("no", "yes")
    assert rows["bcs"]["complex"] == "no" and rows["bcs"]["problem"] == "per channel"
    assert rows["lstm-cs"]["from"] == "model" and rows["omp"]["from"] == "matrix"
    assert all(r["dense"] == "yes" for r in rows.values())
    # GPU: the decoders with the torch backend's device= setting (docs/gpu.md)
    assert [n for n, r in rows.items() if r["GPU"] == "yes"] == [
        s.name for s in decoder_specs() if "device" in s.settings]
    assert rows["lstm-cs"]["GPU"] == "yes" and rows["tmsbl"]["GPU"] == "no"


def test_decoders_reads_the_registry(capsys):
    def mine(A, Y, *, n_nonzero=2):
        return np.zeros((A.shape[1], Y.shape[-1]))

    register_decoder("habit-test", mine, stopping=("n_nonzero",), complex_ok=True,
                     description="a test decoder")
    try:
        assert main(["decoders", "-v"]) == 0
    finally:
        unregister_decoder("habit-test")
    out = capsys.readouterr().out
    row = _rows(out)["habit-test"]
    assert (row["stopping"], row["complex"], row["sparse"]) == ("n_nonzero", "yes", "no")
    assert "habit-test: a test decoder" in out


@pytest.mark.parametrize(("argv", "target", "line"), [
    (["bench", "sparsity", "--data", "demo", "--quick", "--no-progress"],
     "cscore.bench.runner.run_bench", "cscore bench: interrupted"),
    (["seq", "bench", "--quick"], "cscore.seq.bench.run_bench", "cscore seq bench: interrupted"),
])
def test_ctrl_c_is_one_line_and_exit_130(argv, target, line, monkeypatch, capsys, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(target, interrupted)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 130
    assert capsys.readouterr().err.splitlines() == [line]


@pytest.mark.parametrize(("argv", "msg"), [
    (["-M", "65"], "-M (65) must not exceed N = 64"),
    (["--cells", "0"], "--cells must be >= 1"),
    (["--data", "mnist"], "--data mnist needs --mnist-dir"),
])
def test_train_options_are_checked_before_pytorch(argv, msg, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if PyTorch were not installed
    assert main(["train", "--data", "demo", *argv, "--out", str(tmp_path / "m.npz")]) == 2
    err = capsys.readouterr().err
    assert msg in err and "PyTorch" not in err


def test_train_without_pytorch_names_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["train", "--data", "demo", "--out", str(tmp_path / "m.npz")]) == 2
    assert 'pip install "cscore-decoders[train]"' in capsys.readouterr().err


def _train_argv(out):
    return ["train", "--data", "demo", "-M", "16", "--cells", "8", "--epochs", "4",
            "--patience", "4", "--problems-per-epoch", "40", "--k-max", "6", "--quiet",
            "--threads", "1", "--out", str(out)]


@requires_torch
def test_interrupted_train_keeps_the_best_model_so_far(monkeypatch, capsys, tmp_path):
    from cscore import LSTMCS
    from cscore.training import lstm

    validate, calls = lstm._validate, []

    def validate_then_stop(run, *args):
        calls.append(1)
        if len(calls) == 3:  # Ctrl-C while the third epoch is validated
            raise KeyboardInterrupt
        return validate(run, *args)

    monkeypatch.setattr(lstm, "_validate", validate_then_stop)
    out = tmp_path / "m.npz"
    assert main(_train_argv(out)) == 130
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "interrupted" in err[0] and str(out) in err[0]
    loaded = LSTMCS.load(out)
    w, spec, info = loaded.weights, loaded.spec, loaded.info
    history = info["training"]["history"]
    assert len(history) == 2 and w.n_cells == 8 and spec.M == 16
    best = min(range(2), key=lambda i: history[i]["val_loss"]) + 1
    assert f"(epoch {best})" in err[0] and info["training"]["best_epoch"] == best


@requires_torch
def test_train_interrupted_in_its_first_epoch_writes_nothing(monkeypatch, capsys, tmp_path):
    from cscore.training import lstm

    def stop(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(lstm, "_validate", stop)
    out = tmp_path / "m.npz"
    assert main(_train_argv(out)) == 130
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "nothing written" in err[0]
    assert not out.exists()


@pytest.mark.parametrize(("name", "magic"), [("figure", b"\x89PNG"), ("fig.v2", b"\x89PNG"),
                                             ("figure.pdf", b"%PDF"), ("figure.png", b"\x89PNG")])
def test_a_figure_is_written_under_the_name_given(name, magic, tmp_path):
    from cscore.bench.plots import plot_images

    path = tmp_path / name
    assert plot_images({"x": np.zeros((1, 8, 8))}, path, crop=None) == path
    assert path.read_bytes()[:4] == magic
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_times_below_10_us_print_in_microseconds():
    from cscore.bench.report import format_duration

    assert format_duration(4.2e-6) == "4.2 \u00b5s"
    assert format_duration(9.99e-6) == "9.99 \u00b5s"
    assert format_duration(1e-5) == "0.01 ms"
    assert format_duration(2.87e-3) == "2.87 ms"
    assert format_duration(0.5) == "500 ms"


@pytest.fixture
def decode_files(tmp_path):
    pytest.importorskip("zarr")
    rng = np.random.default_rng(0)
    np.save(tmp_path / "A.npy", rng.standard_normal((8, 16)))
    np.save(tmp_path / "Y.npy", rng.standard_normal((3, 8, 2)))
    return tmp_path


def _decode(folder, input_name, *more):
    return main(["decode", "--decoder", "omp", "--matrix", str(folder / "A.npy"),
                 "--n-nonzero", "2", "--input", str(folder / input_name),
                 "--output", str(folder / "S.zarr"), "--no-progress", *more])


def test_a_non_npy_input_is_named_as_such(decode_files, capsys):
    (decode_files / "Y.txt").write_text("1 2 3\n")
    np.savez(decode_files / "Y.npz", Y=np.zeros((3, 8, 2)))
    assert _decode(decode_files, "Y.txt") == 2
    err = capsys.readouterr().err
    assert "is not a .npy file" in err and "magic" not in err
    assert _decode(decode_files, "Y.npz") == 2
    assert "is an .npz archive" in capsys.readouterr().err
    assert not (decode_files / "S.zarr").exists()


def test_rerunning_a_finished_decode_says_already_complete(decode_files, capsys):
    assert _decode(decode_files, "Y.npy") == 0
    assert "wrote" in capsys.readouterr().err
    assert _decode(decode_files, "Y.npy") == 0
    err = capsys.readouterr().err
    assert "already complete" in err and "shape (3, 16, 2)" in err
    assert _decode(decode_files, "Y.npy", "--overwrite") == 0
    assert "already complete" not in capsys.readouterr().err


def test_phase_grid_runs_shuffled_but_reports_in_grid_order():
    from cscore.bench import phase_transition

    deltas, rhos = [0.3, 0.6, 0.9], [0.1, 0.4]
    pt = phase_transition(30, deltas, rhos, ["omp"], L=1, n_trials=2, progress=False)
    points = list(dict.fromkeys((r["delta"], r["rho"]) for r in pt["rows"]))
    assert points == [(d, r) for d in deltas for r in rhos]
    # each point has its own seed: one point alone gives the same success rate
    alone = phase_transition(30, [0.6], [0.4], ["omp"], L=1, n_trials=2, progress=False,
                             seed=1000 * 1 + 1)
    assert alone["success"]["omp"][0][0] == pt["success"]["omp"][1][1]
