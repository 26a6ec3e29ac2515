"""The experiment runner, its CLI and plots, on small synthetic problems."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from cscore.bench import (
    SweepResult,
    decoder_names,
    phase_transition,
    run_decoder,
    sweep,
    synthetic_problems,
)
from cscore.cli import main


def test_synthetic_problems_shapes_and_sparsity():
    ps = synthetic_problems(20, 40, 3, 4, n_problems=5, sigma=0.0, joint=False, seed=1)
    assert ps.A.shape == (20, 40) and ps.S.shape == (5, 40, 3) and ps.Y.shape == (5, 20, 3)
    assert np.all((ps.S != 0).sum(axis=1) == 4)
    np.testing.assert_allclose(ps.Y, np.einsum("mn,pnl->pml", ps.A, ps.S), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(ps.A, axis=0), 1.0)
    joint = synthetic_problems(20, 40, 3, 4, n_problems=5, joint=True, seed=1)
    rows = joint.S != 0
    assert np.all(rows.all(axis=2) == rows.any(axis=2))


def test_run_decoder_matches_direct_calls():
    import cscore

    ps = synthetic_problems(24, 48, 3, 4, n_problems=6, seed=2)
    S_somp = run_decoder("somp", ps.A, ps.Y, k=4)
    np.testing.assert_array_equal(S_somp, cscore.somp(ps.A, ps.Y, n_nonzero=4))
    S_omp = run_decoder("omp", ps.A, ps.Y, k=4)
    for p in range(6):
        np.testing.assert_allclose(S_omp[p], cscore.omp(ps.A, ps.Y[p], n_nonzero=4))
    with pytest.raises(ValueError, match="unknown decoder"):
        run_decoder("nope", ps.A, ps.Y, k=4)
    with pytest.raises(ValueError, match="needs a model"):
        run_decoder("lstm-cs", ps.A, ps.Y, k=4)
    assert {"somp", "omp", "lstm-cs"} <= set(decoder_names())


def test_sweep_noiseless_exact_recovery_and_roundtrip(tmp_path):
    res = sweep(
        "k",
        [2, 4],
        lambda k: synthetic_problems(30, 60, 2, k, n_problems=8, seed=k),
        ["somp", "omp"],
        stop=("k", "tol"),
        progress=False,
    )
    assert set(res.nmse) == {"somp (k)", "somp (tol)", "omp (k)", "omp (tol)"}
    for label in res.nmse:
        assert max(res.nmse[label]) < 1e-8, label
        assert all(t > 0 for t in res.seconds[label])
    res.save(tmp_path / "r.json")
    back = SweepResult.load(tmp_path / "r.json")
    assert back.nmse == res.nmse and back.values == [2, 4]
    assert "| k | somp (k)" in res.table()


def test_sweep_errors_grow_with_sparsity():
    res = sweep(
        "k",
        [3, 25],
        lambda k: synthetic_problems(40, 80, 1, k, n_problems=10, sigma=0.01, seed=3),
        ["omp"],
        stop=("k",),
        progress=False,
    )
    small, large = res.nmse["omp (k)"]
    assert small < 0.05 < large


def test_phase_transition_monotone_in_measurements():
    pt = phase_transition(40, [0.25, 0.9], [0.2], ["somp"], L=2, n_trials=6, progress=False)
    succ = np.asarray(pt["success"]["somp"])
    assert succ.shape == (1, 2)
    assert succ[0, 1] >= succ[0, 0] and succ[0, 1] == 1.0


def test_bench_cli_writes_json_and_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rc = main(
        [
            "bench",
            "sparsity",
            "--decoders",
            "somp,omp",
            "--k",
            "2,4",
            "--problems",
            "4",
            "--M",
            "20",
            "--N",
            "40",
            "--L",
            "2",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert rc == 0
    data = json.loads((tmp_path / "sparsity-synthetic.json").read_text())
    assert data["values"] == [2, 4] and "somp (tol)" in data["nmse"]
    png = (tmp_path / "sparsity-synthetic.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "NMSE" in capsys.readouterr().out


def test_bench_cli_rejects_unknown_decoder(tmp_path, capsys):
    assert main(["bench", "sparsity", "--decoders", "foo", "--out", str(tmp_path)]) == 2
    assert "unknown decoder" in capsys.readouterr().err


def test_demo_runs_on_embedded_data_and_lstm_beats_omp(tmp_path, capsys):
    """The README's main job: the shipped demo model on PyWavelets' bundled image."""
    pytest.importorskip("matplotlib")
    png = tmp_path / "demo.png"
    assert main(["demo", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    nmse = {}
    for line in out.splitlines():  # decoder (rule), NMSE, time with its unit
        row = re.fullmatch(r"(\S+ \((?:tol|k)\))\s+([\d.]+)\s+[\d.]+ (?:ms|\u00b5s)", line)
        if row:
            nmse[row[1]] = float(row[2])
    assert set(nmse) == {"lstm-cs (tol)", "lstm-cs (k)", "somp (tol)", "omp (k)"}
    assert nmse["lstm-cs (k)"] < nmse["omp (k)"]
    assert nmse["lstm-cs (tol)"] < nmse["somp (tol)"]
    assert png.read_bytes()[:4] == b"\x89PNG"
