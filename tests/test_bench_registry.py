"""The experiment registry (issue 38): a new experiment is one module and one registration.

The toy experiment below is registered from this test file (its "module") and runs
through ``cscore bench`` like the built-in ones: its name is a choice of the
command, its own option appears in ``--help``, its settings are checked before
anything is written, and its run writes ``results.csv`` and ``report.md``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cscore
from cscore.bench import (
    BenchConfig,
    BenchConfigError,
    BenchOutcome,
    BenchPlan,
    ExperimentOption,
    WarningTally,
    experiment_names,
    finish_run,
    register_experiment,
    run_bench,
    unregister_experiment,
)
from cscore.bench.problems import synthetic_problems
from cscore.bench.registry import get_experiment
from cscore.cli import main

BENCH = Path(cscore.__file__).resolve().parent / "bench"


def _toy_check(config: BenchConfig, model: Any) -> None:
    if config.option("repeats_per_k") < 1:
        raise BenchConfigError("--repeats-per-k", "--repeats-per-k must be >= 1")


def _toy_run(plan: BenchPlan, log: Any) -> BenchOutcome:
    """Decode synthetic problems with every decoder of the run; one row per problem."""
    c = plan.config
    rows = []
    for k in c.ks:
        for r in range(c.option("repeats_per_k")):
            ps = synthetic_problems(24, c.n_atoms, 2, k, n_problems=c.n_problems,
                                    seed=c.seed + r)
            for name in plan.decoders:
                S_hat = cscore.bench.run_decoder(name, ps.A, ps.Y, k=k)
                err = np.linalg.norm(S_hat - ps.S, axis=(1, 2)) / np.linalg.norm(ps.S, axis=(1, 2))
                rows += [{"decoder": name, "stop": "k", "k": k, "m": 24, "sigma": 0.0,
                          "problem": i, "nmse": float(e), "seconds": 0.0, "repeat": r}
                         for i, e in enumerate(err)]
    log(f"toy: {len(rows)} rows")
    return finish_run(plan, None, "toy experiment", rows, rows, ("decoder", "k"), [], [], [],
                      WarningTally())


@pytest.fixture
def toy() -> Iterator[str]:
    register_experiment(
        "toy", _toy_run, help="a toy experiment registered by a test", check=_toy_check,
        defaults={"N": 48}, data=("synthetic",), decoders=("omp",),
        options=(ExperimentOption("repeats_per_k", 1, "repeats per sparsity (default 1)", int),),
    )
    try:
        yield "toy"
    finally:
        unregister_experiment("toy")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_built_in_experiments_are_registered() -> None:
    assert experiment_names()[:5] == ["sparsity", "noise", "phase", "bg", "scaling"]
    assert get_experiment("bg").defaults == {"N": 500}
    assert BenchConfig("bg").n_atoms == 500 and BenchConfig("sparsity").n_atoms == 144


def test_a_toy_experiment_runs_through_cscore_bench(toy, tmp_path, capsys) -> None:
    out = tmp_path / "toy-out"
    argv = ["bench", toy, "--k", "2,4", "--problems", "3", "--repeats-per-k", "2",
            "--out", str(out), "--no-plot", "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "toy: 12 rows" in printed  # 2 k x 2 repeats x 3 problems x 1 decoder (omp)
    rows = _rows(out / "results.csv")
    assert len(rows) == 12
    assert {r["decoder"] for r in rows} == {"omp"}  # the experiment's default decoders
    assert {(r["k"], r["repeat"]) for r in rows} == {(k, r) for k in "24" for r in "01"}
    # OMP with the true k on noiseless problems: nearly all exact (24 x 48 can miss one)
    assert sum(float(r["nmse"]) < 1e-9 for r in rows) >= 10
    report = (out / "report.md").read_text()
    assert "toy experiment" in report and "| omp |" in report
    assert f"results: {out / 'results.csv'} (12 rows)" in printed
    # a second run into the folder is refused, nothing replaced
    assert main(argv) == 2
    assert "already holds" in capsys.readouterr().err


def test_the_toy_experiment_is_in_help_and_its_option_checked_before_writing(
        toy, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    help_text = capsys.readouterr().out
    assert re.search(r"\btoy\b", help_text) and "--repeats-per-k" in help_text
    out = tmp_path / "never"
    assert main(["bench", toy, "--repeats-per-k", "0", "--out", str(out)]) == 2
    assert "--repeats-per-k must be >= 1" in capsys.readouterr().err
    assert not out.exists()
    # another experiment's option, and a data source the toy does not read: refused
    assert main(["bench", toy, "--sizes", "32", "--out", str(out)]) == 2
    assert "--sizes" in capsys.readouterr().err
    assert main(["bench", toy, "--data", "demo", "--out", str(out)]) == 2
    assert "toy reads --data synthetic" in capsys.readouterr().err
    assert not out.exists()


def test_the_toy_experiment_as_a_library(toy, tmp_path) -> None:
    outcome = run_bench(BenchConfig(toy, k=(3,), problems=2, out=str(tmp_path / "o"),
                                    progress=False, plot=False))
    assert outcome.json_path is None and outcome.n_rows == 2
    assert outcome.csv_path.is_file() and outcome.report_path.is_file()


def test_registration_is_checked() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_experiment("sparsity", lambda plan, log: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="data must be from"):
        register_experiment("t2", lambda plan, log: None, data=("csv",))  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="already a setting"):
        register_experiment("t2", lambda plan, log: None,  # type: ignore[arg-type,return-value]
                            options=(ExperimentOption("seed", 0, "x", int),))
    with pytest.raises(BenchConfigError, match="experiment must be one of") as exc:
        run_bench(BenchConfig("nope"))
    assert exc.value.option == "experiment"
    assert "t2" not in experiment_names()


def test_no_experiment_branches_left_in_bench() -> None:
    """Dispatch goes through the registry: no module of bench/ asks which experiment runs."""
    hits = [f"{p.name}:{i}" for p in sorted(BENCH.glob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"experiment\s*(==|!=|in\s)", line)]
    assert hits == []


def test_the_shared_settings_are_the_config_fields() -> None:
    """The registry's list of shared settings (it imports no other bench module) is complete."""
    from cscore.bench.registry import DEFAULTABLE, SHARED_SETTINGS

    assert set(BenchConfig.__dataclass_fields__) == SHARED_SETTINGS
    assert set(DEFAULTABLE) <= SHARED_SETTINGS
