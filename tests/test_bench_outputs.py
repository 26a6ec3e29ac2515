"""`cscore bench` outputs: results.csv, report.md, --data images/demo, --first-index, --quick."""

from __future__ import annotations

import csv
import gzip
import struct

import numpy as np
import pytest

import cscore
from cscore.bench import mnist_problems, synthetic_problems
from cscore.bench.report import CSV_COLUMNS, summary
from cscore.cli import main
from cscore.metrics import nmse_per_item

from conftest import requires_torch, shared_data

pytest.importorskip("matplotlib")


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_csv_row_equals_direct_public_api_call(tmp_path):
    args = ["bench", "sparsity", "--decoders", "somp,omp", "--k", "3,5", "--problems", "6",
            "--M", "24", "--N", "48", "--L", "3", "--sigma", "0.01", "--seed", "7",
            "--out", str(tmp_path), "--no-progress", "--no-plot"]  # fmt: skip
    assert main(args) == 0
    rows = _read_csv(tmp_path / "results.csv")
    assert list(rows[0])[: len(CSV_COLUMNS)] == list(CSV_COLUMNS)
    # 2 decoders x 3 rules x 2 k x 6 problems
    assert len(rows) == 2 * 3 * 2 * 6
    ps = synthetic_problems(24, 48, 3, 5, n_problems=6, sigma=0.01, seed=7)
    for stop, kw in (("tol", {"tol": ps.tol}), ("auto", {"tol": "auto"}), ("k", {"n_nonzero": 5})):
        row = next(r for r in rows if r["decoder"] == "somp" and r["stop"] == stop
                   and r["k"] == "5" and r["problem"] == "4")  # fmt: skip
        direct = cscore.somp(ps.A, ps.Y[4], **kw)
        expect = np.linalg.norm(direct - ps.S[4]) / np.linalg.norm(ps.S[4])
        assert float(row["nmse"]) == pytest.approx(expect, rel=1e-9)
        assert row["m"] == "24" and float(row["sigma"]) == 0.01
    rep = (tmp_path / "report.md").read_text()
    assert "cscore bench sparsity" in rep and "--seed 7" in rep
    assert "| somp | auto | 5 |" in rep and "numpy" in rep and "machine:" in rep


def test_summary_mean_and_spread():
    rows = [{"d": "a", "nmse": v} for v in (1.0, 3.0)] + [{"d": "b", "nmse": 2.0}]
    s = summary(rows, ("d",))
    assert s[0] == {"d": "a", "mean": 2.0, "std": 1.0, "median": 2.0, "n": 2}
    assert s[1]["n"] == 1


def test_images_folder_with_haar_and_report_embeds_figure(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    folder = tmp_path / "pics"
    folder.mkdir()
    for i in range(2):
        x = np.linspace(0, 1, 40)
        img = 200 * np.outer(x, x[::-1]) + 30 * rng.random((40, 40))
        Image.fromarray(img.astype(np.uint8)).save(folder / f"p{i}.png")
    out = tmp_path / "out"
    args = ["bench", "sparsity", "--data", "images", "--images-dir", str(folder),
            "--transform", "haar", "--image-size", "32", "--M", "25", "--decoders", "somp",
            "--stop", "tol", "--k", "4,8", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    rows = _read_csv(out / "results.csv")
    # 2 images of 16 8x8 blocks, 4 blocks per problem -> 8 problems per k
    assert len(rows) == 2 * 8 and {r["m"] for r in rows} == {"25"}
    rep = (out / "report.md").read_text()
    assert "![sparsity-images.png](sparsity-images.png)" in rep and "HAAR" in rep
    assert (out / "sparsity-images.png").read_bytes()[:4] == b"\x89PNG"


def test_images_dir_missing_is_a_clear_error(tmp_path, capsys):
    assert main(["bench", "sparsity", "--data", "images", "--out", str(tmp_path)]) == 2
    assert "--images-dir" in capsys.readouterr().err


def test_demo_quick_needs_no_path(tmp_path, capsys):
    args = ["bench", "sparsity", "--data", "demo", "--quick", "--decoders", "somp",
            "--out", str(tmp_path), "--no-progress", "--no-plot"]  # fmt: skip
    assert main(args) == 0
    rows = _read_csv(tmp_path / "results.csv")
    assert sorted({int(r["k"]) for r in rows}) == [5, 20, 30]
    assert "demo-dct-m32" in (tmp_path / "report.md").read_text()


def _write_idx(folder, images, labels):
    folder.mkdir()
    with gzip.open(folder / "images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 2051, len(images), 28, 28) + images.tobytes())
    with gzip.open(folder / "labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 2049, len(labels)) + labels.tobytes())


def test_small_mnist_folder_needs_first_index_0(tmp_path, capsys):
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(4, dtype=np.uint8), 5)
    images = np.zeros((20, 28, 28), dtype=np.uint8)
    images[:, 4:24, 4:24] = rng.integers(0, 256, (20, 20, 20), dtype=np.uint8)
    folder = tmp_path / "digits"
    _write_idx(folder, images, labels)
    base = ["bench", "sparsity", "--data", "mnist", "--data-dir", str(folder), "--model",
            "mnist-m72", "--decoders", "somp", "--stop", "k", "--k", "10", "--problems", "3",
            "--no-progress", "--no-plot"]  # fmt: skip
    assert main([*base, "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "first_index=6000" in err and "20 digits" in err and "--first-index 0" in err
    assert main([*base, "--first-index", "0", "--out", str(tmp_path / "b")]) == 0
    rows = _read_csv(tmp_path / "b" / "results.csv")
    assert len(rows) == 12  # 3 tuples x 4 blocks
    A = cscore.pretrained("mnist-m72").A
    ps = mnist_problems(folder, A, 10, n_tuples=3, first_index=0)
    direct = cscore.somp(A, ps.Y, n_nonzero=10)
    np.testing.assert_allclose([float(r["nmse"]) for r in rows], nmse_per_item(direct, ps.S),
                               rtol=1e-9)  # fmt: skip


def test_heldout_mnist_draws_only_its_index_range(tmp_path):
    """The one held-out builder: tuples from [first_index, end_index) only, one digit a
    channel; mnist_problems and HeldOutMNIST.problems measure the same signals alike."""
    from cscore.bench import MNIST_SPLITS, heldout_mnist

    rng = np.random.default_rng(2)
    labels = np.tile(np.arange(4, dtype=np.uint8), 10)  # 40 digits: 0 1 2 3 0 1 2 3 ...
    images = rng.integers(0, 256, (40, 28, 28), dtype=np.uint8)
    folder = tmp_path / "digits"
    _write_idx(folder, images, labels)
    held = heldout_mnist(folder, first_index=8, end_index=28)
    assert held.tuples.shape == (5, 4)  # 20 images, 5 of each digit
    assert held.tuples.min() >= 8 and held.tuples.max() < 28
    assert (labels[held.tuples] == np.arange(4)).all()
    S = held.signals(10)
    assert S.shape == (20, 144, 4) and ((S != 0).sum(axis=1) <= 10).all()
    assert held.to_images(S).shape == (20, 24, 24)
    A = cscore.pretrained("mnist-m72").A
    ps = mnist_problems(folder, A, 10, n_tuples=3, first_index=8, seed=4)
    shuffled = heldout_mnist(folder, first_index=8, n_tuples=3, seed=4)
    np.testing.assert_array_equal(ps.S, shuffled.signals(10))
    np.testing.assert_array_equal(ps.Y, shuffled.problems(A, 10, seed=5).Y)
    assert MNIST_SPLITS["test"][0] == 6000  # the shipped models never saw 6000 on
    with pytest.raises(ValueError, match="leaves no image"):
        heldout_mnist(folder, first_index=40)


def test_phase_reaches_rho_one_with_dt_curve(tmp_path):
    args = ["bench", "phase", "--quick", "--decoders", "somp", "--out", str(tmp_path),
            "--no-progress"]  # fmt: skip
    assert main(args) == 0
    import json

    pt = json.loads((tmp_path / "phase.json").read_text())
    assert max(pt["rhos"]) == pytest.approx(1.0)
    succ = np.asarray(pt["success"]["somp"])
    assert succ[0].max() > succ[-1].min()  # the transition is inside the grid
    rows = _read_csv(tmp_path / "results.csv")
    assert {"delta", "rho", "success"} <= set(rows[0])
    assert (tmp_path / "phase.png").exists() and "phase.png" in (tmp_path / "report.md").read_text()


def test_mnist_phase_curve_from_success_rates():
    from cscore.bench.phase_mnist import mnist_phase

    d = shared_data("mnist")
    res = mnist_phase(d, ["somp"], ratios=[0.2, 0.5], rhos=[0.05, 0.3, 1.0], n_tuples=3,
                      progress=False)  # fmt: skip
    rate = np.asarray(res["rate"]["somp"])
    assert rate.shape == (3, 2) and np.all((rate >= 0) & (rate <= 1))
    for j, c in enumerate(res["curve"]["somp"]):
        ok = rate[:, j] >= 0.9
        expect = 0.0 if not ok[0] else [0.05, 0.3, 1.0][int(np.argmin(ok)) - 1 if not ok.all()
                                                          else 2]  # fmt: skip
        assert c == expect
    assert {r["m"] for r in res["rows"]} == {29, 72}
    with pytest.raises(ValueError, match="train-models"):
        mnist_phase(d, ["lstm-cs"], ratios=[0.5], progress=False)


@pytest.mark.torch
@requires_torch
def test_small_mnist_model_is_trained_once_and_cached(tmp_path):
    from cscore.bench.phase_mnist import small_mnist_model

    d = shared_data("mnist")
    kw = {"n_tuples": 40, "n_cells": 8, "epochs": 1, "cache_dir": tmp_path}
    m1 = small_mnist_model(24, d, **kw)
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1 and m1.M == 24 and m1.N == 144
    m2 = small_mnist_model(24, d, **kw)  # from the cache
    np.testing.assert_array_equal(m1.weights.U, m2.weights.U)
    np.testing.assert_array_equal(m1.A, m2.A)
