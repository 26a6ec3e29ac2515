"""The learned decoders shipped for the Bernoulli-Gaussian benchmark (issue 24).

``lista-bg-n500-m250`` (tied LISTA) and ``lstm-bg-n500-m250`` (LSTM-CS, L = 1)
are trained for ``lamp-bg-n500-m250``'s matrix; ``cscore bench bg`` runs them
together with ``--model`` repeated.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import cscore
from cscore.bench.bg import bg_models, bg_problems, nmse_db
from cscore.cli import main
from cscore.decoders.learned import LISTA

LISTA_BG = "lista-bg-n500-m250"
LSTM_BG = "lstm-bg-n500-m250"
LAMP_BG = "lamp-bg-n500-m250"


@pytest.fixture(scope="module")
def lista():
    return cscore.pretrained(LISTA_BG)


@pytest.fixture(scope="module")
def lstm():
    return cscore.pretrained(LSTM_BG)


@pytest.fixture(scope="module")
def problems(lista):
    return bg_problems(20, A=np.asarray(lista.A), seed=4242)


def _untrained(model):
    """The network the training started from (its recorded grid point)."""
    rec = model.info["init"]
    A = np.asarray(model.A, dtype=np.float64)
    T = model.n_layers
    theta = np.maximum(rec["theta0"] * rec["ratio"] ** np.arange(T), rec["theta_min"])
    arrays = {"B": rec["gamma"] * A.T, "S": np.eye(A.shape[1]) - rec["gamma"] * A.T @ A,
              "theta": theta[:, None]}
    return LISTA(arrays, A, model.spec, model.arch_params(), {})


def test_the_bg_models_share_lamps_matrix(lista, lstm):
    lamp = cscore.pretrained(LAMP_BG)
    for m in (lista, lstm):
        assert np.array_equal(np.asarray(m.A), np.asarray(lamp.A))
    assert set(bg_models({"a": lamp, "b": lista, "c": lstm})) == {"lamp", "lista", "lstm-cs"}


def test_lista_bg_is_tied_and_small():
    entry = next(e for e in cscore.models.registry.pretrained_entries() if e.name == LISTA_BG)
    assert entry.size_bytes < 3_000_000 and entry.arch == "lista"
    assert "LISTA" in entry.description
    w = cscore.pretrained(LISTA_BG).arrays()
    assert w["B"].shape == (500, 250) and w["S"].shape == (500, 500)


def test_lista_bg_beats_its_untrained_network(lista, problems):
    trained = nmse_db(np.asarray(lista.decode(problems.Y)), problems.X)
    start = nmse_db(np.asarray(_untrained(lista).decode(problems.Y)), problems.X)
    assert trained < start - 3.0
    assert trained < -15.0
    # the layers improve: the last is better than half way
    layers = np.asarray(lista.decode_layers(problems.Y))
    assert trained < nmse_db(layers[lista.n_layers // 2], problems.X) - 2.0


def test_lstm_bg_beats_the_zero_estimate(lstm, problems):
    # with the mean support size as the atom count (the tol rule runs on while its
    # picks miss, up to M atoms: see benchmarks/results/bg_learned.md)
    X_hat = np.asarray(lstm.decode(problems.Y, n_nonzero=50))
    zero = nmse_db(np.zeros_like(problems.X), problems.X)
    assert zero == pytest.approx(0.0)
    assert nmse_db(X_hat, problems.X) < zero - 3.0
    tol = math.sqrt(problems.noise_var * problems.A.shape[0])
    res = lstm.decode(problems.Y, tol=tol, return_result=True)
    assert np.all(np.asarray(res.n_iter) >= 20)  # ~50 nonzeros: never stops early


def test_lstm_bg_recovers_an_easy_support(lstm):
    A = np.asarray(lstm.A)
    rng = np.random.default_rng(3)
    S = np.sort(rng.choice(500, 8, replace=False))
    x = np.zeros((500, 1))
    x[S, 0] = rng.choice([-1.0, 1.0], 8) * rng.uniform(1.0, 2.0, 8)
    X_hat = np.asarray(lstm.decode((A @ x)[None], n_nonzero=8))[0, :, 0]
    assert set(np.flatnonzero(X_hat)) == set(S)
    assert np.allclose(X_hat[:, None], x, atol=1e-8)


def test_bench_bg_runs_every_learned_decoder(tmp_path, capsys):
    out = tmp_path / "bg"
    argv = ["bench", "bg", "--model", LAMP_BG, "--model", LISTA_BG, "--model", LSTM_BG,
            "--problems", "3", "--decoders", "lamp,lista,lstm-cs,omp", "--out", str(out),
            "--no-progress", "--no-plot"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for label in ("support oracle", "| lamp |", "| lista |", "| lstm-cs |", "| omp |"):
        assert label in printed
    data = json.loads((out / "bg.json").read_text())
    db = data["nmse_db"]
    assert set(db) == {"support oracle", "lamp", "lista", "lstm-cs", "omp"}
    assert db["support oracle"] <= db["lamp"] < -30.0
    assert db["lista"] < -15.0 and math.isfinite(db["lstm-cs"])
    assert db["omp"] < db["lista"]


def test_bench_bg_default_decoders_with_several_models(tmp_path, capsys):
    out = tmp_path / "bg"
    assert main(["bench", "bg", "--model", f"{LAMP_BG},{LISTA_BG}", "--problems", "2",
                 "--out", str(out), "--no-progress", "--no-plot"]) == 0
    db = json.loads((out / "bg.json").read_text())["nmse_db"]
    assert {"lamp", "lista", "omp", "amp", "vamp"} <= set(db)


def test_bench_bg_refuses_models_of_another_matrix(tmp_path, capsys):
    out = tmp_path / "bg"
    assert main(["bench", "bg", "--model", LAMP_BG, "--model", "lista-mnist-m72",
                 "--problems", "2", "--out", str(out), "--no-progress", "--no-plot"]) == 2
    assert "sensing matrix" in capsys.readouterr().err
    assert not out.exists()


def test_bg_models_takes_one_model_per_decoder(lista):
    with pytest.raises(ValueError, match="one model per decoder"):
        bg_models({"a": lista, "b": lista})


def test_bench_bg_refuses_two_models_of_one_decoder(tmp_path, capsys):
    from cscore.problem import ProblemSpec

    A = np.asarray(cscore.pretrained(LAMP_BG).A)
    spec = ProblemSpec(M=250, N=500, L=1)
    paths = []
    for T in (2, 3):
        paths.append(tmp_path / f"lista{T}.npz")
        LISTA.from_ista(A, spec, n_layers=T, lam=0.05).save(paths[-1])
    out = tmp_path / "bg"
    assert main(["bench", "bg", "--model", str(paths[0]), "--model", str(paths[1]),
                 "--problems", "2", "--out", str(out), "--no-progress", "--no-plot"]) == 2
    assert "one model per decoder" in capsys.readouterr().err
    assert not out.exists()


def test_models_are_refused_with_another_condition_number():
    from cscore.bench.bg import run_bg

    lamp = cscore.pretrained(LAMP_BG)
    with pytest.raises(ValueError, match="kappa 15"):
        run_bg(["lamp"], n_problems=2, kappa=15.0, models={"lamp": lamp})


def test_joint_online_training_of_a_tied_lista_improves_on_its_start():
    pytest.importorskip("torch")
    from cscore.problem import ProblemSpec
    from cscore.training._lista_init import lista_stepped
    from cscore.training.unrolled import BernoulliGaussian, UnrolledTrainConfig, train_unrolled

    rng = np.random.default_rng(0)
    A = rng.standard_normal((20, 40)) / math.sqrt(20)
    src = BernoulliGaussian(A, rate=0.1, snr_db=40.0)
    spec = ProblemSpec(M=20, N=40, L=1)
    X, Y = src.draw(200, 5)
    init = lista_stepped(A, spec, X, Y, n_layers=4)
    assert init.info["init"]["nmse_db_fit"] < -3.0  # better than 0 (the zero estimate)
    cfg = UnrolledTrainConfig(n_layers=4, n_train=400, batch_size=32, lr=3e-3, refine=(0.3,),
                              val_every=5, patience=50, max_steps=60, schedule="joint",
                              online=True, matrix_lr=0.5, progress=False, n_threads=1)
    res = train_unrolled("lista", src, cfg, untied=False, init=init)
    assert [h["stage"] for h in res.history] == ["all x1", "all x0.3"]
    assert len(res.val_nmse_db) == 4 and res.val_nmse_db[-1] < res.val_nmse_db[0]
    Xv, Yv = src.draw(300, 99)
    before = nmse_db(np.asarray(init.decode(Yv)), Xv)
    after = nmse_db(np.asarray(res.model.decode(Yv)), Xv)
    assert after < before
    with pytest.raises(ValueError, match="schedule"):
        train_unrolled("lista", src, UnrolledTrainConfig(schedule="grow", progress=False))
