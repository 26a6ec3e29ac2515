"""Data loading, block protocol, sparsifying transforms, sensing and metrics."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from PIL import Image

from cscore.datasets import (
    block_transform,
    blocks_to_images,
    expected_noise_tol,
    gaussian_matrix,
    image_mmv_problems,
    image_to_blocks,
    inverse_block_transform,
    keep_largest,
    load_demo,
    load_image_folder,
    load_mnist,
    measure,
    mnist_mmv_problems,
    mnist_tuples,
    paper_matrix,
    problems_to_images,
    problems_to_natural_images,
    resize_images,
)
from cscore.metrics import nmse, nmse_per_item, support_f1, support_recovery

from conftest import shared_data


def _write_idx(path, arr, magic, compress):
    head = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    data = head + arr.astype(np.uint8).tobytes()
    if compress:
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("compress", [True, False])
def test_idx_round_trip(tmp_path, rng, compress):
    imgs = rng.integers(0, 256, size=(7, 5, 4)).astype(np.uint8)
    labs = rng.integers(0, 10, size=7).astype(np.uint8)
    ip, lp = tmp_path / "im.idx", tmp_path / "lab.idx"
    _write_idx(ip, imgs, 2051, compress)
    _write_idx(lp, labs, 2049, compress)
    got_i, got_l = load_mnist(ip, lp)
    np.testing.assert_array_equal(got_i, imgs)
    np.testing.assert_array_equal(got_l, labs)
    only, none = load_mnist(ip)
    assert none is None and only.shape == (7, 5, 4)


def test_idx_errors(tmp_path, rng):
    imgs = rng.integers(0, 256, size=(3, 2, 2)).astype(np.uint8)
    ip, lp = tmp_path / "im", tmp_path / "lab"
    _write_idx(ip, imgs, 2051, False)
    _write_idx(lp, np.zeros(4, np.uint8), 2049, False)
    with pytest.raises(ValueError, match="3 images but 4 labels"):
        load_mnist(ip, lp)
    _write_idx(lp, np.zeros((4, 1, 1), np.uint8), 2049, False)
    with pytest.raises(ValueError, match="magic"):
        load_mnist(lp)  # a label magic number in an image file
    ip.write_bytes(ip.read_bytes()[:-1])
    with pytest.raises(ValueError, match="holds"):
        load_mnist(ip)
    with pytest.raises(FileNotFoundError):
        load_mnist(tmp_path / "missing")


def test_shared_mnist_loads():
    d = shared_data("mnist")
    images, labels = load_mnist(d / "images-idx3-ubyte.gz", d / "labels-idx1-ubyte.gz")
    assert images.shape[1:] == (28, 28) and images.dtype == np.uint8
    assert labels.shape == (images.shape[0],) and labels.max() <= 9


def test_blocks_column_major_order():
    img = np.arange(16.0).reshape(4, 4)  # img[r, c] = 4 r + c
    blocks = image_to_blocks(img, 2)
    # block 0: top-left, block 1: bottom-left (column-major block order)
    np.testing.assert_array_equal(blocks[0], [0, 4, 1, 5])  # column-major inside
    np.testing.assert_array_equal(blocks[1], [8, 12, 9, 13])
    np.testing.assert_array_equal(blocks[2], [2, 6, 3, 7])
    np.testing.assert_array_equal(blocks_to_images(blocks, 4, 2), img)
    with pytest.raises(ValueError):
        image_to_blocks(np.zeros((5, 5)), 2)


def test_mnist_protocol_round_trip(rng):
    images = rng.integers(0, 256, size=(40, 28, 28)).astype(np.uint8)
    labels = np.repeat(np.arange(4), 10)
    rng.shuffle(labels)
    tuples = mnist_tuples(labels)
    assert tuples.shape == (10, 4)
    for j in range(4):
        assert (labels[tuples[:, j]] == j).all()
    S = mnist_mmv_problems(images, tuples[:3], None)
    assert S.shape == (12, 144, 4)
    back = problems_to_images(S)
    ref = resize_images(images[tuples[:3].ravel()], 24).reshape(3, 4, 24, 24)
    np.testing.assert_allclose(back, ref)
    # problem t*4 + b, channel j is block b of the tuple's image j
    np.testing.assert_allclose(S[1 * 4 + 2, :, 3], image_to_blocks(ref[1, 3], 12)[2])
    Sk = mnist_mmv_problems(images, tuples[:3], 7)
    assert (np.count_nonzero(Sk, axis=1) == 7).all()
    with pytest.raises(ValueError, match="seed"):
        mnist_tuples(labels, n_tuples=50)
    assert mnist_tuples(labels, n_tuples=50, seed=1).shape == (50, 4)


def test_keep_largest(rng):
    x = rng.standard_normal((5, 3, 30))
    y = keep_largest(x, 6)
    assert (np.count_nonzero(y, axis=-1) == 6).all()
    smallest_kept = np.where(y != 0, np.abs(y), np.inf).min(axis=-1)
    largest_dropped = np.where(y == 0, np.abs(x), -np.inf).max(axis=-1)
    assert (smallest_kept > largest_dropped).all()
    np.testing.assert_array_equal(keep_largest(np.array([1.0, -1.0, 1.0]), 2), [1, -1, 0])
    ks = rng.integers(1, 30, size=(5, 3))
    np.testing.assert_array_equal(np.count_nonzero(keep_largest(x, ks), axis=-1), ks)
    np.testing.assert_array_equal(keep_largest(x, 99), x)
    with pytest.raises(ValueError):
        keep_largest(x, 0)


@pytest.mark.parametrize("kind", ["dct", "haar", "none"])
def test_block_transform_round_trip(rng, kind):
    v = rng.standard_normal((4, 64))
    c = block_transform(v, kind, 8, levels=3)
    np.testing.assert_allclose(np.linalg.norm(c, axis=1), np.linalg.norm(v, axis=1))
    np.testing.assert_allclose(inverse_block_transform(c, kind, 8, levels=3), v, atol=1e-12)
    const = block_transform(np.ones(64), kind, 8)
    if kind != "none":  # a flat block has only its DC / approximation coefficient
        np.testing.assert_allclose(const[0], 8.0)
        np.testing.assert_allclose(const[1:], 0.0, atol=1e-12)
    ck = keep_largest(c, 5)
    assert (np.count_nonzero(ck, axis=1) == 5).all()


def test_haar_layout_matches_pywt(rng):
    pywt = pytest.importorskip("pywt")
    b = rng.standard_normal((8, 8))
    arr, _ = pywt.coeffs_to_array(pywt.wavedec2(b, "haar", mode="periodization", level=3))
    np.testing.assert_allclose(block_transform(b.T.ravel(), "haar", 8), arr.T.ravel())


def test_dct_vectorization_column_major():
    b = np.zeros((8, 8))
    b[:, 3] = 1.0  # varies horizontally only: frequencies (u=0, v>0), entries v*8
    c = block_transform(b.T.ravel(), "dct", 8)
    nz = np.flatnonzero(np.abs(c) > 1e-12)
    assert (nz % 8 == 0).all()
    with pytest.raises(ValueError):
        block_transform(np.zeros(64), "haar", 8, levels=4)


def test_natural_images_round_trip(tmp_path, rng):
    for i in range(3):
        arr = rng.integers(0, 256, size=(20, 30, 3)).astype(np.uint8)
        Image.fromarray(arr).save(tmp_path / f"im{i}.png")
    (tmp_path / "notes.txt").write_text("not an image")
    imgs, names = load_image_folder(tmp_path, size=32)
    assert imgs.shape == (3, 32, 32) and names == ["im0.png", "im1.png", "im2.png"]
    assert 0 <= imgs.min() and imgs.max() <= 1
    for kind in ("dct", "haar"):
        S = image_mmv_problems(imgs, block_size=8, transform=kind, L=4)
        assert S.shape == (3 * 16 // 4, 64, 4)
        back = problems_to_natural_images(S, 32, block_size=8, transform=kind)
        np.testing.assert_allclose(back, imgs, atol=1e-12)
        Sk = image_mmv_problems(imgs, block_size=8, transform=kind, L=4, k=6)
        assert (np.count_nonzero(Sk, axis=1) <= 6).all()
    with pytest.raises(FileNotFoundError):
        load_image_folder(tmp_path / "nope")


def test_paper_matrix():
    raw = paper_matrix(20, 50, seed=3, unit_norm=False)
    np.testing.assert_allclose(raw @ raw.T, np.eye(20), atol=1e-12)
    A = paper_matrix(20, 50, seed=3)
    np.testing.assert_allclose(np.linalg.norm(A, axis=0), 1.0)
    np.testing.assert_allclose(A, raw / np.linalg.norm(raw, axis=0))
    assert not np.allclose(A, paper_matrix(20, 50, seed=4))
    G = gaussian_matrix(10, 30, seed=1)
    np.testing.assert_allclose(np.linalg.norm(G, axis=0), 1.0)
    np.testing.assert_array_equal(G, gaussian_matrix(10, 30, seed=1))
    with pytest.raises(ValueError):
        paper_matrix(60, 50)


def test_measure_noise(rng):
    A = gaussian_matrix(10, 30, seed=0)
    S = rng.standard_normal((6, 30, 2))
    Y0, n0 = measure(A, S, 0.0)
    np.testing.assert_allclose(Y0, np.einsum("mn,pnl->pml", A, S))
    assert not n0.any()
    Y, noise = measure(A, S, 0.1, seed=5)
    np.testing.assert_allclose(Y - Y0, noise)
    assert not np.allclose(noise[0], noise[1])  # fresh per problem
    _, same = measure(A, S, 0.1, seed=5, fresh_noise=False)
    np.testing.assert_array_equal(same[0], same[1])
    assert expected_noise_tol(72, 4, 0.005) == pytest.approx(4 * 0.005 * np.sqrt(288))


def test_metrics():
    S = np.zeros((2, 4, 2))
    S[:, 0, :] = 1.0
    S_hat = S.copy()
    assert nmse(S_hat, S) == 0.0
    S_hat[1, 0, 0] = 0.0
    np.testing.assert_allclose(nmse_per_item(S_hat, S), [0.0, np.sqrt(0.5)])
    r = support_recovery(S_hat, S)
    assert r["recall"] == pytest.approx(0.75) and r["precision"] == 1.0
    assert r["exact"] == pytest.approx(0.75)
    assert 0 < support_f1(S_hat, S) < 1
    with pytest.raises(ValueError):
        nmse(S_hat[:1], S)


def test_load_demo():
    d = load_demo(k=6, image_size=64)
    assert d.A.shape == (32, 64)
    P = 64 // 4  # 64 blocks of one 64x64 test image, 4 per problem
    assert d.S_test.shape == (P, 64, 4) and d.Y_test.shape == (P, 32, 4)
    assert (np.count_nonzero(d.S_test, axis=1) <= 6).all()
    resid = d.Y_train - np.einsum("mn,pnl->pml", d.A, d.S_train)
    assert 0.003 < resid.std() < 0.007
    assert d.S_train.shape[0] + d.S_val.shape[0] == 2 * P
    assert d.to_images(load_demo(k=None, image_size=64).S_test).shape == (1, 64, 64)
