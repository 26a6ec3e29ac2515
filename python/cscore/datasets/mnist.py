"""MNIST: the IDX reader and the LSTM-CS paper's block protocol.

The paper's protocol (Palangi, Ward and Deng 2016, section 4.4)
-----------------------------------------------------------------
* each 28x28 digit is resized to 24x24 (bilinear, see :func:`resize_images`)
  with pixels scaled to [0, 1];
* the 24x24 image is cut into four distinct 12x12 blocks, N = 144;
* each block is vectorized **column-major** (MATLAB's ``B(:)``) and the blocks
  of an image are ordered **column-major** too (MATLAB
  ``im2col(I, [12 12], 'distinct')``: top-left, bottom-left, top-right,
  bottom-right);
* channel j of an MMV problem holds a block of an image of digit ``digits[j]``
  (digits 0..3, L = 4); problem ``(t, b)`` holds block b of the t-th image
  tuple ``(image of digit 0, image of digit 1, ...)``;
* every block keeps its k largest-magnitude pixels (ties broken by the lower
  index); that k-sparse block is the ground truth S.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .images import blocks_to_images, image_to_blocks, resize_images
from .sparsify import keep_largest

__all__ = [
    "MNIST_BLOCK",
    "MNIST_IMAGE",
    "load_mnist",
    "mnist_mmv_problems",
    "mnist_tuples",
    "problems_to_images",
]

#: the paper's resized image side and block side
MNIST_IMAGE = 24
MNIST_BLOCK = 12

_IMAGES_MAGIC = 2051
_LABELS_MAGIC = 2049


def _read_idx(path: Path, magic: int, ndim: int) -> np.ndarray:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no IDX file at {path}")
    with open(path, "rb") as fh:
        head = fh.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    try:
        with opener(path, "rb") as fh:  # type: ignore[operator]
            data = fh.read()
    except (EOFError, OSError, zlib.error) as exc:  # truncated or corrupt .gz
        raise ValueError(f"{path}: unreadable (damaged or truncated gzip file): {exc}") from None
    if len(data) < 4 + 4 * ndim:
        raise ValueError(f"{path}: too short to be an IDX file")
    got = int.from_bytes(data[:4], "big")
    if got != magic:
        raise ValueError(
            f"{path}: IDX magic number {got}, expected {magic} "
            f"({'images' if magic == _IMAGES_MAGIC else 'labels'} file)"
        )
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    count = int(np.prod(dims))
    if len(data) - offset != count:
        raise ValueError(
            f"{path}: header says {dims} ({count} bytes of data) but the file holds "
            f"{len(data) - offset}"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims).copy()


def load_mnist(
    images_path: str | Path, labels_path: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Read MNIST-style IDX files (gzip-compressed or not).

    Parameters
    ----------
    images_path : str or Path
        IDX3 image file (magic number 2051), e.g. ``images-idx3-ubyte.gz``.
    labels_path : str or Path, optional
        IDX1 label file (magic number 2049).

    Returns
    -------
    images : ndarray of uint8, shape (n, rows, cols)
    labels : ndarray of uint8, shape (n,), or None when no label file is given

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    ValueError
        Wrong magic number, truncated data, or image/label counts that differ.
    """
    images = _read_idx(Path(images_path), _IMAGES_MAGIC, 3)
    if labels_path is None:
        return images, None
    labels = _read_idx(Path(labels_path), _LABELS_MAGIC, 1)
    if labels.shape[0] != images.shape[0]:
        raise ValueError(
            f"{images.shape[0]} images but {labels.shape[0]} labels in {labels_path}"
        )
    return images, labels


def mnist_tuples(
    labels: np.ndarray,
    indices: Sequence[int] | np.ndarray | None = None,
    digits: Sequence[int] = (0, 1, 2, 3),
    *,
    n_tuples: int | None = None,
    seed: int | None = None,
) -> np.ndarray:
    """Group images into tuples, one image of each digit in ``digits``.

    Parameters
    ----------
    labels : ndarray (n,)
        Digit labels.
    indices : sequence of int, optional
        Images allowed (default: all).  Used to keep train/validation/test apart.
    digits : sequence of int
        Digit of each channel; ``len(digits)`` is L.
    n_tuples : int, optional
        Number of tuples.  Default: as many as the rarest digit allows, pairing
        the i-th image of every digit (in index order, or shuffled when
        ``seed`` is given).  With ``seed`` and a larger ``n_tuples``, images
        are drawn with replacement (random pairings; data augmentation).
    seed : int, optional
        Shuffle / draw with this seed.

    Returns
    -------
    ndarray of int64, shape (n_tuples, L)
        Row t holds the image indices of tuple t, column j an image of digit
        ``digits[j]``.
    """
    labels = np.asarray(labels)
    pool = np.arange(labels.shape[0]) if indices is None else np.asarray(indices, dtype=np.int64)
    per_digit = [pool[labels[pool] == d] for d in digits]
    for d, ids in zip(digits, per_digit):
        if ids.size == 0:
            raise ValueError(f"no image of digit {d} among the given indices")
    rng = np.random.default_rng(seed) if seed is not None else None
    n_min = min(ids.size for ids in per_digit)
    if n_tuples is None or (n_tuples <= n_min):
        n = n_min if n_tuples is None else n_tuples
        cols = []
        for ids in per_digit:
            ids = rng.permutation(ids) if rng is not None else ids
            cols.append(ids[:n])
        return np.stack(cols, axis=1).astype(np.int64)
    if rng is None:
        raise ValueError(
            f"n_tuples={n_tuples} exceeds the {n_min} images of the rarest digit; "
            "give a seed to draw random pairings"
        )
    return np.stack([rng.choice(ids, n_tuples) for ids in per_digit], axis=1).astype(np.int64)


def mnist_mmv_problems(
    images: np.ndarray,
    tuples: np.ndarray,
    k: int | None,
    *,
    image_size: int = MNIST_IMAGE,
    block_size: int = MNIST_BLOCK,
) -> np.ndarray:
    """Turn image tuples into the paper's MMV ground truths S.

    Parameters
    ----------
    images : ndarray (n, 28, 28)
        uint8 (scaled by 1/255) or float images.
    tuples : ndarray of int (T, L)
        From :func:`mnist_tuples`.
    k : int or None
        Pixels kept per block (largest magnitude); None keeps the block dense.
    image_size, block_size : int
        Resized side (24) and block side (12).

    Returns
    -------
    S : ndarray float64, shape (T * n_blocks, N, L)
        Problem ``t * n_blocks + b`` holds block b (column-major block order)
        of tuple t, N = block_size**2.
    """
    tuples = np.asarray(tuples, dtype=np.int64)
    if tuples.ndim != 2:
        raise ValueError(f"tuples must be 2-D (T, L), got shape {tuples.shape}")
    T, L = tuples.shape
    resized = resize_images(images[tuples.ravel()], image_size)  # (T*L, s, s)
    blocks = image_to_blocks(resized, block_size)  # (T*L, nb, N)
    nb, N = blocks.shape[1], blocks.shape[2]
    if k is not None:
        blocks = keep_largest(blocks, k)
    S = blocks.reshape(T, L, nb, N).transpose(0, 2, 3, 1)  # (T, nb, N, L)
    return np.ascontiguousarray(S.reshape(T * nb, N, L))


def problems_to_images(
    S: np.ndarray, *, image_size: int = MNIST_IMAGE, block_size: int = MNIST_BLOCK
) -> np.ndarray:
    """Inverse of :func:`mnist_mmv_problems` (without the sparsification).

    Parameters
    ----------
    S : ndarray (T * n_blocks, N, L)

    Returns
    -------
    ndarray (T, L, image_size, image_size): image of tuple t, channel j.
    """
    S = np.asarray(S)
    nb = (image_size // block_size) ** 2
    if S.ndim != 3 or S.shape[0] % nb:
        raise ValueError(
            f"S must be (T * {nb}, N, L) for {image_size}x{image_size} images cut into "
            f"{block_size}x{block_size} blocks; got shape {S.shape}"
        )
    P, N, L = S.shape
    T = P // nb
    blocks = S.reshape(T, nb, N, L).transpose(0, 3, 1, 2).reshape(T * L, nb, N)
    return blocks_to_images(blocks, image_size, block_size).reshape(T, L, image_size, image_size)
