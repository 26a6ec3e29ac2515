"""The held-out problem sets every experiment and benchmark draws from.

A :class:`ProblemSet` is a batch of MMV problems sharing one sensing matrix
(ground truth ``S``, matrix ``A``, measurements ``Y``, the paper's stopping
threshold ``tol``).  :func:`heldout_mnist` is the one builder of the MNIST
test-digit set (:data:`MNIST_SPLITS` names the held-out ranges);
:func:`mnist_problems`, :func:`demo_problems`, :func:`image_problems` and
:func:`synthetic_problems` measure each source with a matrix.  Noise is drawn
fresh for every problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MNIST_SPLITS",
    "HeldOutMNIST",
    "ProblemSet",
    "demo_problems",
    "heldout_mnist",
    "image_problems",
    "mnist_problems",
    "synthetic_problems",
]

#: Held-out index ranges ``[first, end)`` of the MNIST reference file (t10k images).
#:
#: The shipped models never trained on them: ``val`` chose their settings,
#: ``test`` is the benchmarks' test set (``cscore bench`` uses 6000 on).
MNIST_SPLITS = {"val": (5400, 6000), "test": (6000, 8000)}


@dataclass
class ProblemSet:
    """A batch of MMV problems sharing one sensing matrix.

    Attributes
    ----------
    A : ndarray (M, N)
    S : ndarray (P, N, L)
        Ground truth.
    Y : ndarray (P, M, L)
        Noisy measurements.
    sigma : float
        Noise standard deviation.
    tol : float
        The paper's stopping threshold for these problems (expected
        ``L * ||noise||_F``).
    k : int or None
        Nonzeros per channel the data was made with (None: not k-sparse).
    """

    A: np.ndarray
    S: np.ndarray
    Y: np.ndarray
    sigma: float
    tol: float
    k: int | None = None


def _tol(M: int, L: int, sigma: float) -> float:
    from ..datasets import expected_noise_tol

    return expected_noise_tol(M, L, sigma) if sigma > 0 else 1e-9


def _check_k(k: Any, N: int, what: str) -> Any:
    """``k`` checked to lie in ``[1, N]`` (None passes: dense signals)."""
    from .._validation import check_positive_int

    if k is None:
        return None
    return check_positive_int("k", k, upper=N, upper_desc=what)


def _finish(A: np.ndarray, S: np.ndarray, sigma: float, seed: int, k: int | None) -> ProblemSet:
    from ..datasets import measure

    Y, _ = measure(A, S, sigma, seed)
    return ProblemSet(A=A, S=S, Y=Y, sigma=sigma, tol=_tol(A.shape[0], S.shape[2], sigma), k=k)


@dataclass
class HeldOutMNIST:
    """MNIST digits the shipped models never saw, grouped into the paper's tuples.

    Every experiment on MNIST and every benchmark draws its problems from here
    (:func:`heldout_mnist`), so they all use the same images for a given range.

    Attributes
    ----------
    images : ndarray (n, 28, 28)
        The file's images.
    labels : ndarray (n,)
        Their digits.
    tuples : ndarray of int (T, L)
        Row t: the image indices of problem tuple t, one image per digit.
    """

    images: np.ndarray
    labels: np.ndarray
    tuples: np.ndarray

    def signals(self, k: int | None) -> np.ndarray:
        """The ground truth: 12x12 blocks of the tuples' images, ``k`` largest pixels kept.

        Parameters
        ----------
        k : int or None
            Pixels kept per block (None: all).

        Returns
        -------
        ndarray (4 * T, 144, L)
        """
        from ..datasets import mnist_mmv_problems

        return mnist_mmv_problems(self.images, self.tuples, k)

    def problems(self, A: np.ndarray, k: int, *, sigma: float = 0.005,
                 seed: int = 0) -> ProblemSet:
        """The signals of sparsity ``k`` measured with ``A`` (noise fresh per problem).

        Parameters
        ----------
        A : ndarray (M, 144)
        k : int
        sigma : float, default 0.005
        seed : int, default 0
            Seed of the noise.

        Returns
        -------
        ProblemSet
        """
        A = np.asarray(A, dtype=np.float64)
        k = _check_k(k, 144, "pixels of a 12x12 block")
        return _finish(A, self.signals(k), sigma, seed, k)

    def to_images(self, S: np.ndarray) -> np.ndarray:
        """Blocks back to 24x24 image crops (the inverse of :meth:`signals`).

        Parameters
        ----------
        S : ndarray (4 * T, 144, L)

        Returns
        -------
        ndarray (T * L, 24, 24)
        """
        from ..datasets import problems_to_images

        return problems_to_images(S).reshape(-1, 24, 24)


def heldout_mnist(
    data_dir: str | Path,
    *,
    first_index: int = 6000,
    end_index: int | None = None,
    n_tuples: int | None = None,
    digits: Sequence[int] = (0, 1, 2, 3),
    seed: int | None = None,
) -> HeldOutMNIST:
    """The held-out MNIST problem set: images ``first_index`` to ``end_index`` in tuples.

    The shipped MNIST models were trained on the reference file's images
    before 5400 and validated on 5400 to 6000: :data:`MNIST_SPLITS` names the
    ranges (``"val"``, ``"test"``).

    Parameters
    ----------
    data_dir : path
        Folder with ``*images-idx3-ubyte[.gz]`` and ``*labels-idx1-ubyte[.gz]``.
    first_index : int, default 6000
        First image index used.
    end_index : int, optional
        One past the last index used (default: the end of the file).
    n_tuples : int, optional
        Keep the first ``n_tuples`` tuples (default: all).
    digits : sequence of int, default (0, 1, 2, 3)
        Digit of each channel.
    seed : int, optional
        Shuffle the pairing of the images (default: in index order).

    Returns
    -------
    HeldOutMNIST

    Raises
    ------
    FileNotFoundError
        No MNIST files in ``data_dir``.
    ValueError
        ``first_index`` negative or beyond the file.
    """
    from ..datasets import load_mnist, mnist_tuples

    data_dir = Path(data_dir)
    imgs = sorted(data_dir.glob("*images-idx3-ubyte*"))
    labs = sorted(data_dir.glob("*labels-idx1-ubyte*"))
    if not imgs or not labs:
        raise FileNotFoundError(f"no MNIST IDX files (*images-idx3-ubyte*) in {data_dir}")
    images, labels = load_mnist(imgs[0], labs[0])
    if labels is None:  # pragma: no cover - a labels file was given
        raise FileNotFoundError(f"no MNIST labels file in {data_dir}")
    if first_index < 0:
        raise ValueError(f"first_index must be >= 0, got {first_index}")
    end = labels.shape[0] if end_index is None else min(end_index, labels.shape[0])
    pool = np.arange(first_index, end)
    if pool.size == 0:
        raise ValueError(
            f"first_index={first_index} leaves no image: {data_dir} holds {labels.shape[0]} "
            f"digits (the default 6000 skips the images the shipped models were trained on; "
            f"use first_index=0, --first-index 0, for digit files they never saw)"
        )
    tuples = mnist_tuples(labels, pool, digits, seed=seed)[:n_tuples]
    return HeldOutMNIST(images=images, labels=labels, tuples=tuples)


def mnist_problems(
    data_dir: str | Path,
    A: np.ndarray,
    k: int,
    *,
    sigma: float = 0.005,
    seed: int = 0,
    n_tuples: int = 50,
    first_index: int = 6000,
    digits: Sequence[int] = (0, 1, 2, 3),
) -> ProblemSet:
    """MNIST problems by the paper's protocol, from images ``first_index`` on.

    The shipped models never saw MNIST images with index >= 6000 of the
    reference file, so the default draws only held-out digits.

    Parameters
    ----------
    data_dir : path
        Folder with ``*images-idx3-ubyte[.gz]`` and ``*labels-idx1-ubyte[.gz]``.
    A : ndarray (M, 144)
    k : int
        Pixels kept per 12 x 12 block.
    sigma, seed : float, int
        Noise level and seed (noise fresh per problem).
    n_tuples : int
        Image tuples (one image per digit); each gives 4 problems (blocks).
    first_index : int, default 6000
        Only images with this index or later are used.  The shipped MNIST
        models were trained on the reference file's images before 6000; use
        0 for a file of digits they never saw.
    digits : sequence of int
        Digit of each channel (L = len(digits)).

    Returns
    -------
    ProblemSet
        ``4 * n_tuples`` problems (P, 144, L) measured with ``A``.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[1] != 144:
        raise ValueError(f"A must be (M, 144) for 12x12 MNIST blocks; got shape {A.shape}")
    k = _check_k(k, 144, "pixels of a 12x12 block")
    held = heldout_mnist(data_dir, first_index=first_index, n_tuples=n_tuples, digits=digits,
                         seed=seed)
    return _finish(A, held.signals(k), sigma, seed + 1, k)


def demo_problems(
    A: np.ndarray, k: int | None, *, sigma: float = 0.005, seed: int = 0
) -> ProblemSet:
    """Test problems of the embedded demo set (PyWavelets' images, 8x8 DCT blocks).

    Parameters
    ----------
    A : ndarray (M, 64)
        Sensing matrix (64 atoms: one per DCT coefficient of an 8x8 block).
    k : int or None
        DCT coefficients kept per block (None: all).
    sigma : float, default 0.005
        Noise standard deviation.
    seed : int, default 0
        Seed of the noise.

    Returns
    -------
    ProblemSet
        The demo's held-out problems measured with ``A``; ``tol`` is the
        paper's threshold for ``sigma``.
    """
    from ..datasets import load_demo

    A = np.asarray(A, dtype=np.float64)
    k = _check_k(k, 64, "coefficients of an 8x8 block")
    data = load_demo(k, M=A.shape[0], A=A, sigma=sigma, seed=seed)
    return ProblemSet(
        A=A,
        S=data.S_test,
        Y=data.Y_test,
        sigma=sigma,
        tol=_tol(A.shape[0], data.S_test.shape[2], sigma),
        k=k,
    )


def image_problems(
    images: str | Path | np.ndarray,
    A: np.ndarray,
    k: int | None,
    *,
    sigma: float = 0.005,
    seed: int = 0,
    transform: str = "dct",
    image_size: int = 64,
    L: int = 4,
    limit: int | None = None,
) -> ProblemSet:
    """Problems from any folder of pictures (the paper's natural-image experiments).

    Every image is read as grayscale, resized to ``image_size`` squared, cut
    into ``b x b`` blocks (``b = sqrt(N)``), transformed (DCT or Haar) and
    sparsified to its ``k`` largest coefficients per block; ``L`` consecutive
    blocks make one problem (:func:`cscore.datasets.image_mmv_problems`).

    Parameters
    ----------
    images : path or ndarray (n, s, s)
        A folder of images (any format Pillow reads) or the images themselves.
    A : ndarray (M, N)
        Sensing matrix; ``N`` must be a square (the block's pixels).
    k : int or None
        Coefficients kept per block (None: all).
    sigma, seed : float, int
        Noise level and seed.
    transform : {"dct", "haar", "none"}
        Sparsifying transform (a model's ``spec.transform``).
    image_size : int, default 64
        Side the images are resized to (a multiple of ``b``).
    L : int, default 4
        Blocks per problem.
    limit : int, optional
        Read at most this many files.

    Returns
    -------
    ProblemSet
    """
    from ..datasets import image_mmv_problems, load_image_folder

    A = np.asarray(A, dtype=np.float64)
    N = A.shape[1]
    b = math.isqrt(N)
    if b * b != N:
        raise ValueError(f"A must have a square number of columns (b x b blocks); got {N}")
    if image_size % b:
        raise ValueError(f"image_size {image_size} must be a multiple of the block side {b}")
    k = _check_k(k, N, f"coefficients of a {b}x{b} block")
    if isinstance(images, (str, Path)):
        imgs, _ = load_image_folder(images, image_size, limit=limit)
    else:
        imgs = np.asarray(images, dtype=np.float64)
    S = image_mmv_problems(imgs, block_size=b, transform=transform, k=k, L=L)
    return _finish(A, S, sigma, seed + 1, k)


def synthetic_problems(
    M: int,
    N: int,
    L: int,
    k: int,
    *,
    n_problems: int = 100,
    sigma: float = 0.0,
    joint: bool = True,
    correlation: float = 0.0,
    seed: int = 0,
) -> ProblemSet:
    """Random k-sparse problems with a unit-norm Gaussian ``A``.

    Parameters
    ----------
    M, N, L, k : int
        Sizes and nonzeros per channel.
    n_problems : int
        Problems in the batch.
    sigma : float
        Noise standard deviation.
    joint : bool
        Same support in every channel (the SOMP/SBL model) or one per channel.
    correlation : float
        AR(1) coefficient of each nonzero row across channels (T-SBL's model).
    seed : int

    Returns
    -------
    ProblemSet
        ``A`` (M, N), ``S`` (n_problems, N, L), ``Y`` (n_problems, M, L).

    Raises
    ------
    ValueError
        A size is < 1, ``k > N``, ``sigma < 0`` or ``|correlation| > 1``.
    """
    from .._validation import check_nonnegative_float, check_positive_int

    M = check_positive_int("M", M)
    N = check_positive_int("N", N)
    L = check_positive_int("L", L)
    k = check_positive_int("k", k, upper=N, upper_desc="the number of atoms N")
    n_problems = check_positive_int("n_problems", n_problems)
    sigma = check_nonnegative_float("sigma", sigma)
    if not -1.0 <= correlation <= 1.0:
        raise ValueError(f"correlation must be in [-1, 1], got {correlation!r}")
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((n_problems, N, L))
    for p in range(n_problems):
        rows = rng.choice(N, k, replace=False)
        vals = np.empty((k, L))
        vals[:, 0] = rng.standard_normal(k)
        for j in range(1, L):
            vals[:, j] = correlation * vals[:, j - 1] + np.sqrt(
                1 - correlation**2
            ) * rng.standard_normal(k)
        if joint:
            S[p, rows, :] = vals
        else:
            for j in range(L):
                S[p, rng.choice(N, k, replace=False), j] = vals[:, j]
    return _finish(A, S, sigma, seed + 1, k)
