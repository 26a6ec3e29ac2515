"""``cscore bench scaling`` (python/cscore/bench/scaling.py) on a tiny grid."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from cscore.bench.scaling import (
    ScalingConfig,
    available_libraries,
    partial_dct_operator,
    run_scaling,
)
from cscore.cli import main


def _rows(path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_partial_dct_operator_is_a_row_subset_of_an_orthonormal_transform() -> None:
    op = partial_dct_operator(12, 40, seed=3)
    A = op.matmat(np.eye(40))
    assert A.shape == (12, 40)
    assert np.allclose(A @ A.T, np.eye(12), atol=1e-12)  # orthonormal rows
    assert np.allclose(op.rmatmat(np.eye(12)), A.T, atol=1e-12)  # adjoint is the transpose
    assert np.allclose(op.matvec(np.arange(40.0)), A @ np.arange(40.0), atol=1e-12)


def test_tiny_grid_writes_tidy_rows_report_and_figure(tmp_path) -> None:
    libs = available_libraries(["cscore", "sklearn"])
    cfg = ScalingConfig(sizes=(32, 64), batches=(3,), libraries=tuple(libs), repeats=1,
                        out=str(tmp_path), plot=True, seed=1)
    pytest.importorskip("matplotlib")
    res = run_scaling(cfg)
    rows = _rows(res["csv"])
    assert len(rows) == len(res["rows"]) > 0
    got = {(r["library"], r["method"], r["stop"], r["matrix"], int(r["N"])) for r in rows}
    for kind in ("dense", "dct"):
        for N in (32, 64):
            assert ("cscore", "amp", "conv", kind, N) in got
            assert ("cscore", "omp", "k", kind, N) in got
            assert ("cscore", "omp", "tol", kind, N) in got
    if "sklearn" in libs:  # dense only: scikit-learn's OMP needs the matrix
        assert ("sklearn", "omp", "k", "dense", 64) in got
        assert not any(g[0] == "sklearn" and g[3] == "dct" for g in got)
    for r in rows:
        assert int(r["M"]) == int(r["N"]) // 2 and int(r["k"]) == round(0.2 * int(r["M"]))
        assert float(r["seconds_per_vector"]) > 0 and float(r["peak_mib"]) >= 0
        assert np.isfinite(float(r["nmse_db"]))
    # OMP with the true k recovers these easy problems
    omp_k = [float(r["nmse_db"]) for r in rows if r["method"] == "omp" and r["stop"] == "k"]
    assert np.median(omp_k) < -20.0
    report = res["report"].read_text()
    assert "scaling.png" in report and "| cscore | amp | conv | dense | 32 |" in report
    assert res["figure"].stat().st_size > 1000


def test_bad_grid_is_refused() -> None:
    with pytest.raises(ValueError, match="--matrices"):
        ScalingConfig(matrices=("fft2",)).check()
    with pytest.raises(ValueError, match="--sizes"):
        ScalingConfig(sizes=(4,)).check()
    with pytest.raises(ValueError, match="--libraries"):
        ScalingConfig(libraries=("matlab",)).check()


def test_cli_runs_the_experiment(tmp_path, capsys) -> None:
    out = tmp_path / "s"
    argv = ["bench", "scaling", "--sizes", "32", "--batches", "2", "--libraries", "cscore",
            "--matrices", "dense", "--repeats", "1", "--out", str(out), "--no-plot",
            "--no-progress"]
    assert main(argv) == 0
    assert "results:" in capsys.readouterr().out
    assert len(_rows(out / "results.csv")) == 3  # amp, omp (k), omp (tol)
    assert main(argv) == 2  # the folder now holds results: refused without --overwrite
    assert main(["bench", "scaling", "--matrices", "nope", "--out", str(tmp_path / "t")]) == 2
