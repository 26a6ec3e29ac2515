"""``cscore bench bg``: the Bernoulli-Gaussian benchmark of the AMP/LAMP papers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cscore.bench.bg import CURVE_CAP, bg_matrix, bg_problems, nmse_db, run_bg, support_oracle
from cscore.cli import main


def test_matrix_condition_number_and_scale():
    A = bg_matrix(40, 80, kappa=15.0, seed=1)
    s = np.linalg.svd(A, compute_uv=False)
    assert s[0] / s[-1] == pytest.approx(15.0, rel=1e-9)
    assert np.sum(A**2) == pytest.approx(80.0, rel=1e-9)  # as the Gaussian matrix, in mean
    G = bg_matrix(40, 80, seed=1)
    assert np.sum(G**2) == pytest.approx(80.0, rel=0.1)
    with pytest.raises(ValueError, match="kappa"):
        bg_matrix(4, 8, kappa=0.5)


def test_problems_have_the_requested_snr_and_rate():
    p = bg_problems(200, N=100, M=50, rate=0.2, snr_db=20.0, seed=3)
    assert abs(np.mean(p.X != 0) - 0.2) < 0.02
    signal = np.mean(np.sum((p.A @ p.X) ** 2, axis=(1, 2)))
    noise = np.mean(np.sum((p.Y - p.A @ p.X) ** 2, axis=(1, 2)))
    assert 10 * np.log10(signal / noise) == pytest.approx(20.0, abs=0.5)


def test_oracle_bounds_the_decoders_and_amp_reaches_it():
    res = run_bg(["omp", "amp"], n_problems=12, N=120, M=60, iterations=5, seed=2)
    assert set(res.nmse_db) == {"support oracle", "omp", "amp"}
    oracle = res.nmse_db["support oracle"]
    assert oracle < res.nmse_db["omp"] + 0.5 and oracle < res.nmse_db["amp"] + 0.5
    assert res.nmse_db["amp"] < oracle + 3.0  # Bayes-optimal AMP is near the genie
    curve = res.curves["amp"]
    assert len(curve) >= 5 and curve[-1] < curve[0]
    # the curve goes on until the run behind the bar stopped (or CURVE_CAP): it ends at
    # the bar
    assert len(curve) == min(res.info["iterations_run"]["amp"], CURVE_CAP)
    assert curve[-1] == pytest.approx(res.nmse_db["amp"], abs=0.5)
    assert len(res.rows) == 3 * 12


def test_noiseless_oracle_is_exact():
    p = bg_problems(5, N=60, M=40, snr_db=300.0, seed=4)
    assert nmse_db(support_oracle(p), p.X) < -100


def test_model_decoders_need_a_model():
    with pytest.raises(ValueError, match="needs a model"):
        run_bg(["lstm-cs"], n_problems=2, N=40, M=20)


def test_cli_writes_the_experiment(tmp_path, capsys):
    out = tmp_path / "bg"
    assert main(["bench", "bg", "--N", "100", "--problems", "4", "--decoders", "omp,amp",
                 "--kappa", "15", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "support oracle" in printed and "amp" in printed
    data = json.loads((out / "bg-kappa15.json").read_text())
    assert data["info"]["kappa"] == 15 and data["info"]["M"] == 50
    assert (out / "bg-kappa15.png").stat().st_size > 0
    assert "Published levels" in (out / "report.md").read_text()
    assert main(["bench", "bg", "--kappa", "0.5", "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()


def test_warnings_are_counted_per_decoder():
    import warnings

    from cscore.bench.tally import WarningTally
    from cscore.decoders import register_decoder, unregister_decoder

    def warner(A, Y):
        warnings.warn("did not converge", RuntimeWarning, stacklevel=2)
        return np.zeros((*Y.shape[:-2], A.shape[1], Y.shape[-1]))

    register_decoder("bg-warner", warner, stopping=())
    try:
        tally = WarningTally()
        res = run_bg(["omp", "bg-warner"], n_problems=3, N=40, M=20, iterations=0, tally=tally)
    finally:
        unregister_decoder("bg-warner")
    assert tally.counts == {"bg-warner": 1}
    assert res.nmse_db["bg-warner"] == pytest.approx(0.0)  # zeros: NMSE 1
