"""`cscore bench` with several models (``--model a,b``, issues 24 and 25): every model
decoder runs once per model of its class, labelled ``decoder[model]`` in the tables,
the JSON, the CSV and the report; the models must share one sensing matrix, and a
mistake is refused before any output folder or progress bar."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from cscore.bench import BenchConfig, BenchConfigError, run_bench
from cscore.bench.decoders import pair_models, sweep_runs
from cscore.bench.multi import check_shared_matrix, choose_model_decoders, model_labels
from cscore.cli import main
from cscore.decoders.learned import LAMP, LISTA
from cscore.problem import ProblemSpec

M, N, L = 16, 32, 2


def _A(seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((M, N))
    return A / np.linalg.norm(A, axis=0)


@pytest.fixture
def models(tmp_path):
    """Two LISTA models (3 and 40 ISTA layers) and a LAMP model on one A, and a LISTA
    model on another A, saved as files."""
    A, spec = _A(0), ProblemSpec(M=M, N=N, L=L)
    made = {
        "lista-short": LISTA.from_ista(A, spec, n_layers=3, lam=0.02),
        "lista-long": LISTA.from_ista(A, spec, n_layers=40, lam=0.02),
        "lamp-toy": LAMP.from_amp(A, spec, n_layers=8, shrinkage="soft", theta=(1.5, 1.0)),
        "lista-other-a": LISTA.from_ista(_A(1), spec, n_layers=3, lam=0.02),
    }
    paths = {}
    for name, m in made.items():
        paths[name] = tmp_path / f"{name}.npz"
        m.save(paths[name])
    return paths


def _argv(paths, *names, out, decoders="lista,lamp,somp"):
    return ["bench", "sparsity", "--model", ",".join(str(paths[n]) for n in names),
            "--decoders", decoders, "--stop", "k", "--k", "2,4", "--problems", "4",
            "--L", str(L), "--no-plot", "--no-progress", "--out", str(out)]  # fmt: skip


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_two_models_of_one_class_give_two_labelled_curves(models, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_argv(models, "lista-short", "lista-long", "lamp-toy", out=out)) == 0
    printed = capsys.readouterr().out
    for label in ("lista[lista-short]", "lista[lista-long]", "lamp[lamp-toy]", "somp (k)"):
        assert label in printed
    res = json.loads((out / "sparsity-synthetic.json").read_text())
    assert list(res["nmse"]) == ["lista[lista-short]", "lista[lista-long]", "lamp[lamp-toy]",
                                 "somp (k)"]
    assert res["info"]["models"] == ["lista-short", "lista-long", "lamp-toy"]
    short, long_ = res["nmse"]["lista[lista-short]"], res["nmse"]["lista[lista-long]"]
    assert len(short) == len(long_) == 2
    assert all(b < a for a, b in zip(short, long_))  # 40 ISTA steps beat 3
    rows = _read_csv(out / "results.csv")
    assert {(r["decoder"], r["model"]) for r in rows} == {
        ("lista[lista-short]", "lista-short"), ("lista[lista-long]", "lista-long"),
        ("lamp[lamp-toy]", "lamp-toy"), ("somp", "")}
    assert len(rows) == 4 * 2 * 4  # runs x k values x problems
    report = (out / "report.md").read_text()
    assert "| lista[lista-long] | own | 2 |" in report


def test_repeated_model_option_is_the_same_as_a_list(models, tmp_path):
    one = tmp_path / "one"
    two = tmp_path / "two"
    assert main(_argv(models, "lista-short", "lista-long", out=one, decoders="lista")) == 0
    argv = _argv(models, "lista-short", out=two, decoders="lista")
    i = argv.index("--decoders")
    argv[i:i] = ["--model", str(models["lista-long"])]
    assert main(argv) == 0
    a = json.loads((one / "sparsity-synthetic.json").read_text())
    b = json.loads((two / "sparsity-synthetic.json").read_text())
    assert a["nmse"] == b["nmse"] and list(a["nmse"]) == ["lista[lista-short]",
                                                          "lista[lista-long]"]


def test_one_model_keeps_the_plain_labels(models, tmp_path):
    out = tmp_path / "single"
    assert main(_argv(models, "lista-short", out=out, decoders="lista,somp")) == 0
    res = json.loads((out / "sparsity-synthetic.json").read_text())
    assert list(res["nmse"]) == ["lista", "somp (k)"] and "models" not in res["info"]
    rows = _read_csv(out / "results.csv")
    assert "model" not in rows[0] and {r["decoder"] for r in rows} == {"lista", "somp"}


def test_a_model_on_another_matrix_is_refused_early(models, tmp_path, capsys):
    out = tmp_path / "mixed"
    argv = _argv(models, "lista-short", "lista-other-a", "lista-long", out=out)
    argv.remove("--no-progress")  # a progress bar would show on stderr
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("cscore bench: error: --model: the models must share one sensing")
    assert "lista-other-a has A of shape (16, 32) with other entries" in err
    assert "unlike lista-short, lista-long" in err and "sweep" not in err
    assert not out.exists()


def test_a_model_decoder_without_its_model_is_refused(models, tmp_path, capsys):
    out = tmp_path / "nolstm"
    assert main(_argv(models, "lista-short", "lista-long", out=out,
                      decoders="lista,lstm-cs,somp")) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "lstm-cs needs a LSTMCS model, but none of the models is one" in err
    assert "lista-short (LISTA)" in err and not out.exists()


def test_library_checks(models, tmp_path):
    lista = {n: LISTA.load(models[n]) for n in ("lista-short", "lista-long")}
    lamp = LAMP.load(models["lamp-toy"])
    both = {**lista, "lamp-toy": lamp}
    assert pair_models(["somp", "lista", "lamp"], both) == [
        ("somp", "somp", None), ("lista[lista-short]", "lista", "lista-short"),
        ("lista[lista-long]", "lista", "lista-long"), ("lamp[lamp-toy]", "lamp", "lamp-toy")]
    runs = sweep_runs(["lista", "omp"], ["tol", "k"], models=lista)
    assert [r[0] for r in runs] == ["lista[lista-short]", "lista[lista-long]", "omp (tol)",
                                    "omp (k)"]
    assert runs[1][4] is lista["lista-long"]
    config = BenchConfig("sparsity", models=tuple(str(p) for p in models.values()))
    assert choose_model_decoders(config, both) == ["lista", "lamp", "somp", "omp"]
    check_shared_matrix(both)
    with pytest.raises(BenchConfigError, match="given twice") as exc:
        model_labels(["mnist-m72", "mnist-m72"])
    assert exc.value.option == "--model"
    assert model_labels(["mnist-m72", "a/x.npz", "b/y.npz"]) == ["mnist-m72", "x", "y"]
    assert model_labels(["a/x.npz", "b/x.npz"]) == ["a/x.npz", "b/x.npz"]


@pytest.mark.parametrize("experiment", ["phase"])  # bg takes several (tests/test_bg_learned.py)
def test_several_models_only_for_sparsity_and_noise(models, tmp_path, experiment):
    config = BenchConfig(experiment, models=(str(models["lista-short"]),
                                             str(models["lista-long"])),
                         out=str(tmp_path / "x"), progress=False, plot=False)
    with pytest.raises(BenchConfigError, match=f"{experiment} takes one"):
        run_bench(config)
    assert not (tmp_path / "x").exists()


def test_noise_experiment_with_two_models(models, tmp_path):
    config = BenchConfig("noise", models=(str(models["lista-short"]), str(models["lamp-toy"])),
                         decoders=("lista", "lamp"), sigma=(0.0, 0.05), k=(3,), problems=3,
                         L=L, out=str(tmp_path / "n"), progress=False, plot=False)
    outcome = run_bench(config)
    assert "lamp[lamp-toy]" in outcome.tables[0][1] and "lista[lista-short]" in \
        outcome.tables[0][1]
    nmse = outcome.result.nmse  # type: ignore[union-attr]
    assert nmse["lamp[lamp-toy]"] != nmse["lista[lista-short]"]


def test_figure_styles_keep_runs_apart():
    from cscore.bench import SweepResult
    from cscore.bench.plots import _curve_styles

    labels = ["lstm-cs[a] (tol)", "lstm-cs[a] (k)", "lstm-cs[b] (tol)", "lamp[c]", "somp (k)"]
    res = SweepResult("k", [5], nmse={lab: [0.1] for lab in labels},
                      info={"models": ["a", "b", "c"]})
    st = _curve_styles(res)
    assert st["lstm-cs[a] (tol)"]["color"] == st["lstm-cs[a] (k)"]["color"]
    assert (st["lstm-cs[a] (tol)"]["linestyle"], st["lstm-cs[a] (k)"]["linestyle"]) == ("-", ":")
    assert len({st[lab]["color"] for lab in labels}) == 4
    res.info = {}  # one model: the same rule, colour = decoder, line style = stopping rule
    one = ["lstm-cs (tol)", "lstm-cs (k)", "somp (tol)", "omp (k)"]
    res.nmse = {lab: [0.1] for lab in one}
    st = _curve_styles(res)
    assert st["lstm-cs (tol)"]["color"] == st["lstm-cs (k)"]["color"] != st["somp (tol)"]["color"]
    assert st["lstm-cs (tol)"]["linestyle"] == st["somp (tol)"]["linestyle"] == "-"
    assert st["lstm-cs (k)"]["linestyle"] == st["omp (k)"]["linestyle"] == ":"
