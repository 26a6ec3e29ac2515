"""`cscore bench` as a library (config, checks, runner, demo) and the command's behaviour:
a default output folder per experiment and data, no overwriting without --overwrite,
nothing written on a bad path, warnings counted, help texts, error prefixes."""

from __future__ import annotations

import argparse
import csv
import gzip
import struct
import warnings

import numpy as np
import pytest

import cscore
from cscore.bench import BenchConfig, BenchConfigError, WarningTally, run_bench, sweep
from cscore.bench.choose import choose_decoders, default_decoders
from cscore.bench.config import (
    check_config,
    parse_floats,
    parse_ints,
)
from cscore.bench.decoders import own_decoder
from cscore.bench.paths import check_output_dir, check_paths
from cscore.bench.problems import synthetic_problems
from cscore.cli import main
from cscore.decoders import register_decoder, unregister_decoder

SMALL = ["--decoders", "somp", "--stop", "k", "--k", "2,4", "--problems", "3", "--M", "20",
         "--N", "40", "--L", "2", "--no-plot"]  # fmt: skip


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# -- output folders ---------------------------------------------------------------------


def test_default_output_folder_per_experiment_and_data(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "sparsity", *SMALL, "--no-progress"]) == 0
    assert main(["bench", "noise", *SMALL, "--sigma", "0.01,0.02", "--no-progress"]) == 0
    assert main(["bench", "phase", "--quick", "--decoders", "somp", "--N", "20",
                 "--problems", "2", "--no-plot", "--no-progress"]) == 0  # fmt: skip
    out = tmp_path / "bench-out"
    assert sorted(p.name for p in out.iterdir()) == \
        ["noise-synthetic", "phase-synthetic", "sparsity-synthetic"]
    sparsity = _read_csv(out / "sparsity-synthetic" / "results.csv")
    noise = _read_csv(out / "noise-synthetic" / "results.csv")
    assert {r["k"] for r in sparsity} == {"2", "4"} and {r["sigma"] for r in noise} == \
        {"0.01", "0.02"}
    assert (out / "phase-synthetic" / "phase.json").exists()
    printed = capsys.readouterr().out
    assert "bench-out/sparsity-synthetic/report.md" in printed.replace("\\", "/")


def test_results_are_not_replaced_without_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["bench", "sparsity", *SMALL, "--out", str(out), "--no-progress"]) == 0
    first = (out / "results.csv").read_bytes()
    capsys.readouterr()
    again = ["bench", "sparsity", *SMALL, "--seed", "5", "--out", str(out), "--no-progress"]
    assert main(again) == 2
    err = capsys.readouterr().err
    assert err.startswith("cscore bench: error:") and "already holds" in err
    assert "--overwrite" in err and "Traceback" not in err
    assert (out / "results.csv").read_bytes() == first
    assert main([*again, "--overwrite"]) == 0
    assert (out / "results.csv").read_bytes() != first  # another seed, other errors


def test_an_existing_folder_without_results_is_used(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["bench", "sparsity", *SMALL, "--out", str(tmp_path), "--no-progress"]) == 0
    assert (tmp_path / "results.csv").exists() and (tmp_path / "notes.txt").read_text() == "mine"


def test_output_folder_checks(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(BenchConfigError, match="is a file") as exc:
        check_output_dir(f)
    assert exc.value.option == "--out"
    with pytest.raises(BenchConfigError, match="cannot create"):
        check_output_dir(f / "sub" / "dir")
    check_output_dir(tmp_path / "new" / "deeper")  # creatable: fine
    assert not (tmp_path / "new").exists()


# -- bad paths: refused before any folder or progress bar -------------------------------


def _write_idx(folder, n=20):
    rng = np.random.default_rng(1)
    folder.mkdir()
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = np.resize(np.arange(4, dtype=np.uint8), n)
    with gzip.open(folder / "images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
    with gzip.open(folder / "labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels.tobytes())
    return folder


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["sparsity", "--data", "mnist", "--model", "mnist-m72", "--data-dir", "{tmp}/nope"],
         "--data-dir {tmp}/nope: no such folder"),
        (["sparsity", "--data", "mnist", "--model", "mnist-m72", "--data-dir", "{tmp}/empty"],
         "no MNIST IDX files"),
        (["sparsity", "--data", "mnist", "--model", "mnist-m72", "--data-dir", "{tmp}/digits"],
         "first_index=6000 leaves no image"),
        (["phase", "--data", "mnist", "--data-dir", "{tmp}/nope"], "--data-dir"),
        (["phase", "--data", "mnist", "--data-dir", "{tmp}/digits"], "holds 20 digits"),
        (["phase", "--data", "mnist"], "--data mnist needs --data-dir"),
        (["sparsity", "--data", "images", "--images-dir", "{tmp}/nope"], "no such folder"),
        (["sparsity", "--data", "images", "--images-dir", "{tmp}/empty"], "no pictures"),
        (["noise", "--model", "{tmp}/missing.npz"], "no model file"),
    ],
)
def test_bad_paths_write_nothing_and_start_no_bar(argv, msg, tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    _write_idx(tmp_path / "digits")
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["bench", *argv, "--decoders", "somp"]) == 2  # progress bars on
    assert main(["bench", *argv, "--decoders", "somp", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cscore bench: error:") and msg.replace("{tmp}", str(tmp_path)) in err
    assert "%|" not in err and "Traceback" not in err  # no progress bar was started
    assert not (tmp_path / "bench-out").exists() and not (tmp_path / "o").exists()


# -- warnings ---------------------------------------------------------------------------


@pytest.fixture
def warny():
    def decode(A, Y):
        warnings.warn("warny-test: did not settle", RuntimeWarning, stacklevel=2)
        return np.zeros((*Y.shape[:-2], A.shape[1], Y.shape[-1]))  # (M, L) or (B, M, L)

    register_decoder("warny-test", decode, stopping=())
    yield "warny-test"
    unregister_decoder("warny-test")


def test_warning_tally_counts_every_warning_per_label():
    tally = WarningTally()
    assert tally.summary() == "none" and tally.table() == "None." and tally.total == 0
    for _ in range(3):
        with tally.catch("a"):
            warnings.warn("same text", RuntimeWarning, stacklevel=1)
    with tally.catch("b"):
        warnings.warn("other | text", UserWarning, stacklevel=1)
    with tally.catch("c"):
        pass
    assert tally.counts == {"a": 3, "b": 1} and tally.total == 4
    assert tally.first["a"] == "RuntimeWarning: same text"
    assert tally.summary() == "a 3, b 1"
    assert "| b | 1 | UserWarning: other \\| text |" in tally.table()


def test_sweep_counts_warnings_instead_of_showing_them(warny):
    def make(k):
        return synthetic_problems(10, 20, 2, k, n_problems=2, seed=k)

    with pytest.warns(RuntimeWarning, match="did not settle"):
        sweep("k", [1, 2], make, [warny], progress=False)
    tally = WarningTally()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that escaped would raise
        sweep("k", [1, 2, 3], make, [warny, "somp"], stop=("k",), progress=False, tally=tally)
    assert tally.counts == {warny: 3}


def test_bench_reports_warning_counts(warny, tmp_path, capsys):
    assert main(["bench", "sparsity", *SMALL, "--decoders", f"{warny},somp", "--out",
                 str(tmp_path), "--no-progress"]) == 0  # fmt: skip
    cap = capsys.readouterr()
    assert "RuntimeWarning" not in cap.err
    assert f"warnings caught during the run (per decoder, also in the report): {warny} 2" \
        in cap.out
    rep = (tmp_path / "report.md").read_text()
    assert "## Warnings caught during the run" in rep
    assert f"| {warny} | 2 | RuntimeWarning: warny-test: did not settle |" in rep


def test_report_says_when_no_warning_was_caught(tmp_path, capsys):
    assert main(["bench", "sparsity", *SMALL, "--out", str(tmp_path), "--no-progress"]) == 0
    assert "warnings caught" not in capsys.readouterr().out
    rep = (tmp_path / "report.md").read_text()
    assert "## Warnings caught during the run\n\nNone." in rep


# -- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "option", "msg"),
    [
        ({"experiment": "speed"}, "experiment", "experiment must be one of"),
        ({"data": "nope"}, "--data", "--data must be one of"),
        ({"k": (0,)}, "--k", "--k must be between 1 and N = 144"),
        ({"k": ()}, "--k", "--k gives no sparsity"),
        ({"sigma": (float("nan"),)}, "--sigma", "--sigma must be finite"),
        ({"problems": 0}, "--problems", "--problems must be >= 1"),
        ({"stop": ("tol", "never")}, "--stop", "--stop takes a list of tol, auto and k"),
        ({"first_index": -1}, "--first-index", "--first-index must be >= 0"),
        ({"M": 200}, "--M", "--M (200) must not exceed --N (144)"),
        ({"M": 0}, "--M", "--M must be >= 1"),
        ({"data": "mnist"}, "--model", "--data mnist needs --model"),
        ({"data": "images", "image_size": 60}, "--image-size", "multiple of the block side 8"),
        ({"experiment": "phase", "L": 0}, "--L", "--L must be >= 1"),
        ({"transform": "wavelet"}, "--transform", "--transform must be dct or haar"),
    ],
)
def test_config_errors_name_the_option(changes, option, msg):
    config = BenchConfig(**{"experiment": "sparsity", **changes})
    with pytest.raises(BenchConfigError) as exc:
        check_config(config)
    assert exc.value.option == option and msg in str(exc.value)
    assert isinstance(exc.value, ValueError)


def test_config_checks_the_model_and_parses_lists():
    model = cscore.pretrained("demo-dct-m32")
    with pytest.raises(BenchConfigError, match="decodes L = 4 channels") as exc:
        check_config(BenchConfig("sparsity", L=3, model="demo-dct-m32"), model)
    assert exc.value.option == "--L"
    check_config(BenchConfig("sparsity", data="demo", k=(5, 64)), model)
    assert parse_ints("--k", "5:20:5") == (5, 10, 15, 20) and parse_ints("--k", "3,1") == (3, 1)
    assert parse_floats("--sigma", "0,0.5") == (0.0, 0.5)
    for text in ("a,b", "1:x", "5:30:0"):
        with pytest.raises(BenchConfigError, match="--k must be integers"):
            parse_ints("--k", text)
    with pytest.raises(BenchConfigError, match="--sigma must be numbers") as exc:
        parse_floats("--sigma", "low")
    assert exc.value.option == "--sigma"


def test_check_paths_names_the_option(tmp_path):
    with pytest.raises(BenchConfigError, match="--data images needs --images-dir") as exc:
        check_paths(BenchConfig("sparsity", data="images", out=str(tmp_path / "o")))
    assert exc.value.option == "--images-dir"
    (tmp_path / "cache").write_text("a file")
    with pytest.raises(BenchConfigError) as exc:
        check_paths(BenchConfig("phase", model_cache=str(tmp_path / "cache")))
    assert exc.value.option == "--model-cache"
    assert BenchConfig("phase", data="demo").output_dir().as_posix() == "bench-out/phase-synthetic"
    assert BenchConfig("noise", data="demo").output_dir().as_posix() == "bench-out/noise-demo"


def test_run_bench_is_the_library_behind_the_command(tmp_path):
    config = BenchConfig("sparsity", decoders=("somp", "omp"), k=(2, 4), stop=("k",),
                         problems=3, M=20, N=40, L=2, seed=3, out=str(tmp_path / "lib"),
                         progress=False, plot=False)  # fmt: skip
    outcome = run_bench(config)
    assert outcome.n_rows == 2 * 2 * 3 and outcome.csv_path.exists()
    assert outcome.result.values == [2, 4] and outcome.figures == []
    assert [caption for caption, _ in outcome.tables] == \
        ["NMSE (mean over problems):", "seconds per problem:"]
    ps = synthetic_problems(20, 40, 2, 4, n_problems=3, seed=3, sigma=0.005)
    direct = cscore.somp(ps.A, ps.Y, n_nonzero=4)
    err = np.linalg.norm(direct - ps.S, axis=(1, 2)) / np.linalg.norm(ps.S, axis=(1, 2))
    assert outcome.result.nmse["somp (k)"][1] == pytest.approx(err.mean(), rel=1e-12)


# -- decoders from the registry ---------------------------------------------------------


def test_default_decoders_follow_the_models_registration():
    assert default_decoders(None) == ["somp", "omp", "tmsbl"]
    for name, decoder in [("demo-dct-m32", "lstm-cs"), ("msrc-buildings-dct-m32-blstm",
                          "blstm-cs"), ("nwsomp-mnist-m72", "nwsomp"),
                          ("cdsn-msrc-dct-m25", "cdsn-cs")]:  # fmt: skip
        model = cscore.pretrained(name)
        assert own_decoder(model) == decoder
        assert default_decoders(model) == [decoder, "somp", "omp"]


class _ToyModel:
    A = np.eye(4)

    def decode(self, Y, n_nonzero=None):
        return np.zeros((*np.shape(Y)[:-2], 4, np.shape(Y)[-1]))


def test_a_decoder_registered_later_is_chosen_and_checked():
    register_decoder("toy-model-decoder", model_type=_ToyModel, stopping=("n_nonzero",))
    try:
        toy = _ToyModel()
        assert own_decoder(toy) == "toy-model-decoder"
        assert default_decoders(toy) == ["toy-model-decoder", "somp", "omp"]
        bare = BenchConfig("sparsity", decoders=("toy-model-decoder", "somp"))
        with pytest.raises(BenchConfigError, match="toy-model-decoder needs --model") as exc:
            choose_decoders(bare, None)
        assert exc.value.option == "--decoders"
        assert choose_decoders(bare, toy) == ["toy-model-decoder", "somp"]
        with pytest.raises(BenchConfigError, match="needs a _ToyModel model"):
            choose_decoders(bare, cscore.pretrained("demo-dct-m32"))
        with pytest.raises(BenchConfigError, match="needs a LSTMCS model"):
            choose_decoders(BenchConfig("sparsity", decoders=("lstm-cs",)), toy)
    finally:
        unregister_decoder("toy-model-decoder")


def test_demo_runs_the_models_own_decoder():
    from cscore.bench.demo import prepare_demo, run_demo

    with pytest.raises(BenchConfigError, match="--k must be between 1 and 64") as exc:
        prepare_demo(k=65)
    assert exc.value.option == "--k"
    seen = []
    res = run_demo(prepare_demo("msrc-buildings-dct-m32-blstm", k=5), on_run=seen.append)
    assert [r.label for r in res.runs] == ["blstm-cs (tol)", "blstm-cs (k)", "somp (tol)",
                                           "omp (k)"]  # fmt: skip
    assert seen == res.runs and all(0 <= r.nmse < 0.5 for r in res.runs) and res.figure is None


# -- the command line: help texts and error prefixes ------------------------------------


def _subparser(name):
    from cscore.cli.app import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", ["bench", "demo"])
def test_every_option_has_help_with_its_default(command):
    p = _subparser(command)
    for action in p._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert action.help, f"{command} {action.option_strings[0]} has no help"
        assert "default" in action.help, f"{command} {action.option_strings[0]}: no default"
        if action.default not in (None, False):
            assert str(action.default) in action.help, \
                f"{command} {action.option_strings[0]}: default {action.default} not shown"


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["bench", "sparsity", "--k", "a,b"], "cscore bench: error: --k must be integers"),
        (["bench", "sparsity", "--model", "no-such-model"],
         "cscore bench: error: unknown pretrained model"),
        (["bench", "sparsity", "--decoders", "lstm-cs"], "cscore bench: error: lstm-cs needs"),
        (["demo", "--sigma", "-1"], "cscore demo: error: --sigma must be finite"),
        (["demo", "--model", "/nonexistent/m.npz"], "cscore demo: error: --model"),
    ],
)
def test_errors_carry_the_subcommand_prefix(argv, prefix, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(prefix), err
    assert list(tmp_path.iterdir()) == []
