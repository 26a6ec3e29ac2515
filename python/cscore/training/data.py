"""Training data of the learned decoders: ground truths and what a model is for.

Each function loads one data source and returns ``(S_train, S_val, spec)``:
training and validation ground truths (P, N, L) -- dense, every coefficient
kept, so that training can re-sparsify each problem to its own k (the
``k_range`` of the fitting functions) -- and the :class:`~cscore.problem.ProblemSpec`
of a model trained on them.  ``cscore train --data ...``,
``scripts/train_pretrained.py`` and the benchmarks share them.

* :func:`mnist_training_data` -- MNIST digits, channel j holding digit j
  (:mod:`cscore.datasets.mnist`), pixels sparse;
* :func:`folder_training_data` -- a folder of natural images, 8x8 blocks, DCT or Haar;
* :func:`demo_training_data` -- the bundled demo images (:mod:`cscore.datasets.demo`);
* :func:`cdsn_msrc_training_data` -- the MSRC split of the shipped CDSN-CS model.

:data:`TRAINING_SOURCES` gives, per source of ``cscore train``, the atoms per
problem and the default range of training sparsities.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..datasets import (
    image_mmv_problems,
    load_image_folder,
    load_mnist,
    mnist_mmv_problems,
    mnist_tuples,
)
from ..datasets.demo import DEMO_IMAGES, demo_images
from ..problem import ProblemSpec

__all__ = [
    "CDSN_MSRC_TEST_BUILDINGS",
    "CDSN_MSRC_VAL_BUILDINGS",
    "TRAINING_SOURCES",
    "SourceDefaults",
    "cdsn_msrc_training_data",
    "demo_training_data",
    "dihedral_copies",
    "folder_training_data",
    "mnist_training_data",
]

#: side of an MNIST block (24x24 digits cut into four 12x12 blocks): N = 144
MNIST_BLOCK = 12
#: side of a natural-image block: N = 64
IMAGE_BLOCK = 8


@dataclass(frozen=True)
class SourceDefaults:
    """Facts of a data source of ``cscore train``.

    Attributes
    ----------
    N : int
        Atoms per problem (pixels or coefficients of one block).
    k_range : (int, int)
        Default ``(k_min, k_max)`` of the training sparsities.
    """

    N: int
    k_range: tuple[int, int]


#: data source of ``cscore train --data`` -> its atoms and default training sparsities
TRAINING_SOURCES: dict[str, SourceDefaults] = {
    "mnist": SourceDefaults(N=MNIST_BLOCK**2, k_range=(5, 32)),
    "folder": SourceDefaults(N=IMAGE_BLOCK**2, k_range=(2, 20)),
    "demo": SourceDefaults(N=IMAGE_BLOCK**2, k_range=(2, 20)),
}

#: MSRC split of the ``cdsn-msrc-dct-m25`` model: its held-out test buildings
CDSN_MSRC_TEST_BUILDINGS: tuple[str, ...] = ("18.png", "19.png", "20.png", "21.png", "22.png")
#: ... and its validation buildings (every other image of every class trains)
CDSN_MSRC_VAL_BUILDINGS: tuple[str, ...] = ("13.png", "14.png", "15.png", "16.png", "17.png")


def _measurements(M: int | None, N: int) -> int:
    """``M``, by default ``N // 2``; a ValueError names ``M`` when it is not in ``[1, N]``."""
    if M is None:
        return N // 2
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 1:
        raise ValueError(f"M must be a positive int, got {M!r}")
    if M > N:
        raise ValueError(f"M ({M}) must not exceed N = {N} (atoms per block)")
    return int(M)


def _positive(name: str, value: int, low: int = 1) -> int:
    """``value`` as an int; a ValueError names ``name`` when it is below ``low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def _mnist_file(folder: Path, stem: str) -> Path:
    """``folder/stem.gz`` or ``folder/stem``, whichever exists first."""
    for name in (f"{stem}.gz", stem):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"no {stem}(.gz) in {folder}")


def mnist_training_data(
    mnist_dir: str | Path,
    M: int | None = None,
    *,
    L: int = 4,
    n_images: int | None = None,
    n_tuples: int = 2500,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, ProblemSpec]:
    """MNIST training and validation problems (the LSTM-CS paper's protocol).

    The first ``n_images`` digits are used, the last tenth of them (at least
    one) for validation.  Channel j of a problem holds digit j; a digit gives
    four problems (its 24x24 image cut into 12x12 blocks, pixels sparse, see
    :func:`~cscore.datasets.mnist_mmv_problems`).  Training tuples pair images
    at random (``n_tuples`` of them, drawn with ``seed``); validation tuples
    pair the i-th image of every digit.

    Parameters
    ----------
    mnist_dir : path
        Folder with ``images-idx3-ubyte(.gz)`` and ``labels-idx1-ubyte(.gz)``.
    M : int, optional
        Measurements per channel (default N/2 = 72), recorded in the spec.
    L : int, default 4
        Channels per problem: digits 0 .. L-1 (at most 10).
    n_images : int, optional
        Digits used for training and validation (default: the first 75%).
    n_tuples : int, default 2500
        Training image tuples.
    seed : int, default 0
        Seed of the training pairings.

    Returns
    -------
    S_train, S_val : ndarray (P, 144, L)
        Dense ground truths.
    spec : ProblemSpec
        ``N = 144``, 12x12 blocks of 24x24 images, no transform.

    Raises
    ------
    FileNotFoundError
        ``mnist_dir`` lacks the image or label file.
    ValueError
        An argument out of range (the message names it).
    """
    N = MNIST_BLOCK**2
    M = _measurements(M, N)
    L = _positive("L", L)
    if L > 10:
        raise ValueError(f"L must be <= 10 (one digit per channel), got {L}")
    n_tuples = _positive("n_tuples", n_tuples)
    folder = Path(mnist_dir)
    images, labels = load_mnist(_mnist_file(folder, "images-idx3-ubyte"),
                                _mnist_file(folder, "labels-idx1-ubyte"))
    if labels is None:
        raise ValueError(f"no labels in {folder}")
    n = int(0.75 * images.shape[0]) if n_images is None else _positive("n_images", n_images, 2)
    if n > images.shape[0]:
        raise ValueError(f"n_images ({n}) exceeds the {images.shape[0]} digits in {folder}")
    n_val = max(1, n // 10)
    digits = tuple(range(L))
    tr = mnist_tuples(labels, np.arange(0, n - n_val), digits, n_tuples=n_tuples, seed=seed)
    va = mnist_tuples(labels, np.arange(n - n_val, n), digits)
    spec = ProblemSpec(M=M, N=N, L=L, block_size=MNIST_BLOCK, transform="none", image_size=24,
                       dataset=f"mnist (first {n} images; last {n_val} of them for validation)")
    return mnist_mmv_problems(images, tr, None), mnist_mmv_problems(images, va, None), spec


def folder_training_data(
    images_dir: str | Path,
    M: int | None = None,
    *,
    L: int = 4,
    image_size: int = 64,
    transform: str = "dct",
) -> tuple[np.ndarray, np.ndarray, ProblemSpec]:
    """Problems from a folder of natural images; the last tenth of the images validates.

    Images are read in name order as ``image_size`` grayscale squares
    (:func:`~cscore.datasets.load_image_folder`), cut into 8x8 blocks and
    transformed; L consecutive blocks form a problem.

    Parameters
    ----------
    images_dir : path
        Folder of images (at least two).
    M : int, optional
        Measurements per channel (default N/2 = 32), recorded in the spec.
    L : int, default 4
        Blocks per problem; must divide the blocks per image.
    image_size : int, default 64
        Side the images are resized to.
    transform : {"dct", "haar", "none"}, default "dct"
        Block transform (Haar: 3 levels).

    Returns
    -------
    S_train, S_val : ndarray (P, 64, L)
        Dense ground truths, training images first.
    spec : ProblemSpec

    Raises
    ------
    FileNotFoundError
        ``images_dir`` is not a folder.
    ValueError
        An argument out of range (the message names it), or fewer than 2 images.
    """
    N = IMAGE_BLOCK**2
    M = _measurements(M, N)
    L = _positive("L", L)
    image_size = _positive("image_size", image_size, IMAGE_BLOCK)
    if transform not in ("dct", "haar", "none"):
        raise ValueError(f"transform must be 'dct', 'haar' or 'none', got {transform!r}")
    imgs, names = load_image_folder(images_dir, image_size)
    n_val = max(1, len(names) // 10)
    if len(names) - n_val < 1:
        raise ValueError("need at least 2 images (training and validation)")
    kw: dict[str, Any] = {"block_size": IMAGE_BLOCK, "transform": transform, "k": None, "L": L}
    spec = ProblemSpec(M=M, N=N, L=L, block_size=IMAGE_BLOCK, transform=transform,
                       levels=3 if transform == "haar" else 0, image_size=image_size,
                       dataset=f"{images_dir} ({len(names)} images, last {n_val} validation)")
    return (image_mmv_problems(imgs[:-n_val], **kw), image_mmv_problems(imgs[-n_val:], **kw),
            spec)


def dihedral_copies(img: np.ndarray) -> list[np.ndarray]:
    """The 8 flips and transposes of a square image (training-set augmentation).

    Parameters
    ----------
    img : ndarray (s, s)

    Returns
    -------
    list of 8 ndarray (s, s)
        ``img`` and ``img.T``, each as is, flipped upside down, left-right and both.
    """
    out = []
    for t in (img, img.T):
        for f in (t, t[::-1], t[:, ::-1], t[::-1, ::-1]):
            out.append(np.ascontiguousarray(f))
    return out


def demo_training_data(
    M: int | None = None, *, L: int = 4, augment: bool = False
) -> tuple[np.ndarray, np.ndarray, ProblemSpec]:
    """Problems from the training images of the demo set (camera and ascent, 256x256, DCT).

    Validation is the last tenth of the problems (the split of
    :func:`~cscore.datasets.load_demo`); ``aero``, the test image, is not used.

    Parameters
    ----------
    M : int, optional
        Measurements per channel (default N/2 = 32), recorded in the spec.
    L : int, default 4
        Blocks per problem; must divide the 1024 blocks per image.
    augment : bool, default False
        Train on camera in its 8 flips/transposes (:func:`dihedral_copies`)
        plus the training part of ascent (not flipped, so that no validation
        block leaks into training) -- the recipe of the shipped ``demo-dct-m32``.

    Returns
    -------
    S_train, S_val : ndarray (P, 64, L)
        Dense DCT coefficients.
    spec : ProblemSpec

    Raises
    ------
    ValueError
        An argument out of range (the message names it).
    """
    N, size = IMAGE_BLOCK**2, 256
    M = _measurements(M, N)
    L = _positive("L", L)
    imgs = demo_images(size)
    train = np.stack([imgs[n] for n, s in DEMO_IMAGES if s == "train"])
    S = image_mmv_problems(train, block_size=IMAGE_BLOCK, transform="dct", k=None, L=L)
    n_val = round(0.1 * S.shape[0])
    if n_val < 1:
        raise ValueError(f"L={L} leaves no validation problem (only {S.shape[0]} problems)")
    spec = ProblemSpec(M=M, N=N, L=L, block_size=IMAGE_BLOCK, transform="dct", image_size=size,
                       dataset="pywt.data camera + ascent (demo set)")
    S_val = S[S.shape[0] - n_val :]
    if not augment:
        return S[: S.shape[0] - n_val], S_val, spec
    S_cam = image_mmv_problems(np.stack(dihedral_copies(imgs["camera"])), block_size=IMAGE_BLOCK,
                               transform="dct", k=None, L=L)
    # camera's problems come first in S: ascent's start after one image's worth
    S_train = np.concatenate([S_cam, S[S_cam.shape[0] // 8 : S.shape[0] - n_val]])
    return S_train, S_val, spec


def cdsn_msrc_training_data(
    msrc_dir: str | Path, M: int = 25, *, L: int = 8, image_size: int = 64
) -> tuple[np.ndarray, np.ndarray, ProblemSpec]:
    """Problems of the ``cdsn-msrc-dct-m25`` split of MSRC v2 (8x8 DCT blocks).

    Training: every class except buildings, plus buildings 01..12;
    validation: :data:`CDSN_MSRC_VAL_BUILDINGS`; test, never loaded here:
    :data:`CDSN_MSRC_TEST_BUILDINGS`.

    Parameters
    ----------
    msrc_dir : path
        The ``msrc-v2`` folder (one subfolder per class).
    M : int, default 25
        Measurements per channel, recorded in the spec.
    L : int, default 8
        Blocks per problem; must divide the blocks per image.
    image_size : int, default 64
        Side the images are resized to.

    Returns
    -------
    S_train, S_val : ndarray (P, 64, L)
        Dense DCT coefficients.
    spec : ProblemSpec

    Raises
    ------
    FileNotFoundError
        ``msrc_dir`` has no class folders.
    ValueError
        An argument out of range (the message names it).
    """
    N = IMAGE_BLOCK**2
    M = _measurements(M, N)
    L = _positive("L", L)
    image_size = _positive("image_size", image_size, IMAGE_BLOCK)
    root = Path(msrc_dir)
    classes = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not classes:
        raise FileNotFoundError(f"no class folders under {root}")
    train: list[np.ndarray] = []
    val: list[np.ndarray] = []
    for cls in classes:
        imgs, names = load_image_folder(root / cls, image_size)
        for img, nm in zip(imgs, names):
            if cls == "buildings" and nm in CDSN_MSRC_TEST_BUILDINGS:
                continue
            (val if cls == "buildings" and nm in CDSN_MSRC_VAL_BUILDINGS else train).append(img)
    kw: dict[str, Any] = {"block_size": IMAGE_BLOCK, "transform": "dct", "k": None, "L": L}
    spec = ProblemSpec(M=M, N=N, L=L, block_size=IMAGE_BLOCK, transform="dct",
                       image_size=image_size,
                       dataset="msrc-v2 (all classes; buildings 13-22 held out)")
    return image_mmv_problems(np.stack(train), **kw), image_mmv_problems(np.stack(val), **kw), spec
