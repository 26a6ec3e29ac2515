"""Where the unrolled decoders' training problems come from (:mod:`cscore.training.unrolled`).

A *source* has the sensing matrix ``A`` and ``draw(n, seed) -> (X, Y)``, ``X``
(n, N, L) the ground truths and ``Y`` (n, M, L) their measurements:

* :class:`BernoulliGaussian` -- synthetic ``Y = A X + noise`` at a given rate and
  SNR (Borgerding et al.'s benchmark: :func:`bg_benchmark_source`);
* :class:`ImageProblems` -- a pool of image blocks measured with fresh noise,
  e.g. :func:`mnist_source` (the LSTM-CS paper's MNIST blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..datasets import (
    gaussian_matrix,
    keep_largest,
    load_mnist,
    measure,
    mnist_mmv_problems,
    mnist_tuples,
)

__all__ = [
    "BG_BENCHMARK",
    "BernoulliGaussian",
    "ImageProblems",
    "ProblemSource",
    "bg_benchmark_source",
    "mnist_source",
]

class ProblemSource(Protocol):
    """Anything with ``A`` and ``draw(n, seed) -> (X (n, N, L), Y (n, M, L))``."""

    A: np.ndarray

    def draw(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` problems, ground truths and measurements."""
        ...


@dataclass
class BernoulliGaussian:
    """Synthetic problems ``Y = A X + noise``, X Bernoulli-Gaussian.

    Each entry of X is nonzero with probability ``rate`` (a whole row of the L
    channels at once when ``joint``), then N(0, ``variance``).  The noise is
    white Gaussian with variance set by ``snr_db = 10 log10(E||A x||^2 /
    E||noise||^2)`` (Borgerding et al.'s definition).

    Attributes
    ----------
    A : ndarray (M, N)
    rate : float, default 0.1
    snr_db : float, default 40.0
    L : int, default 1
    joint : bool, default False
    variance : float, default 1.0
    """

    A: np.ndarray
    rate: float = 0.1
    snr_db: float = 40.0
    L: int = 1
    joint: bool = False
    variance: float = 1.0

    @property
    def noise_sigma(self) -> float:
        """The noise standard deviation the SNR implies."""
        A = np.asarray(self.A, dtype=np.float64)
        signal = self.rate * self.variance * float(np.sum(A * A))  # E||A x||^2
        return math.sqrt(signal / (A.shape[0] * 10 ** (self.snr_db / 10)))

    def draw(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` problems.

        Parameters
        ----------
        n : int
            Problems to draw.
        seed : int
            Seed of every draw.

        Returns
        -------
        X : ndarray (n, N, L) float64
        Y : ndarray (n, M, L) float64
        """
        A = np.asarray(self.A, dtype=np.float64)
        rng = np.random.default_rng(seed)
        N, L = A.shape[1], self.L
        on = rng.random((n, N, 1 if self.joint else L)) < self.rate
        X = np.sqrt(self.variance) * rng.standard_normal((n, N, L)) * on
        Y, _ = measure(A, X, self.noise_sigma, seed=int(rng.integers(2**31)))
        return X, Y


@dataclass
class ImageProblems:
    """Problems from a pool of ground truths (image blocks), measured with fresh noise.

    Attributes
    ----------
    A : ndarray (M, N)
    S : ndarray (P, N, L)
        The pool (e.g. :func:`cscore.datasets.mnist_mmv_problems`).
    sigma : float, default 0.005
        Noise standard deviation (the LSTM-CS paper's).
    k_range : (int, int), optional
        Keep each channel's ``k`` largest entries, ``k`` drawn per problem in
        this range (inclusive); None keeps the blocks as they are.
    """

    A: np.ndarray
    S: np.ndarray
    sigma: float = 0.005
    k_range: tuple[int, int] | None = None

    def draw(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` problems of the pool (without replacement while ``n <= P``).

        Parameters
        ----------
        n : int
            Problems to draw.
        seed : int
            Seed of every draw.

        Returns
        -------
        X : ndarray (n, N, L) float64
        Y : ndarray (n, M, L) float64
        """
        rng = np.random.default_rng(seed)
        P = self.S.shape[0]
        idx = rng.permutation(P)[:n] if n <= P else rng.integers(0, P, n)
        X = np.asarray(self.S[idx], dtype=np.float64)
        if self.k_range is not None:
            ks = rng.integers(self.k_range[0], self.k_range[1] + 1, size=n)
            X = keep_largest(X.transpose(0, 2, 1),
                             np.repeat(ks[:, None], X.shape[2], axis=1)).transpose(0, 2, 1)
        Y, _ = measure(np.asarray(self.A, dtype=np.float64), X, self.sigma,
                       seed=int(rng.integers(2**31)))
        return np.ascontiguousarray(X), Y


def mnist_source(
    A: np.ndarray, data_dir: str | Path, *, indices: Any = None, n_tuples: int = 2500,
    k_range: tuple[int, int] | None = (5, 32), sigma: float = 0.005, seed: int = 1,
) -> ImageProblems:
    """The LSTM-CS paper's MNIST problems (as ``scripts/train_pretrained.py`` makes them).

    Digits 0-3 (channel j holds digit j), 28x28 -> 24x24, 12x12 blocks (N = 144),
    random 4-tuples of images, each problem re-sparsified to a k in ``k_range``.

    Parameters
    ----------
    A : ndarray (M, 144)
        The model's sensing matrix (e.g. ``cscore.pretrained("mnist-m72").A``).
    data_dir : path
        Folder with ``images-idx3-ubyte.gz`` and ``labels-idx1-ubyte.gz``.
    indices : array of int, optional
        Images allowed (default 0..5999: the shipped models' training and
        validation images; 6000..7999 stay for testing).
    n_tuples : int, default 2500
    k_range : (int, int), optional
    sigma : float, default 0.005
    seed : int, default 1
        Seed of the tuples.

    Returns
    -------
    ImageProblems
    """
    data_dir = Path(data_dir)
    images, labels = load_mnist(data_dir / "images-idx3-ubyte.gz",
                                data_dir / "labels-idx1-ubyte.gz")
    assert labels is not None
    idx = np.arange(0, 6000) if indices is None else np.asarray(indices)
    tuples = mnist_tuples(labels, idx, n_tuples=n_tuples, seed=seed)
    return ImageProblems(A=np.asarray(A, dtype=np.float64),
                         S=mnist_mmv_problems(images, tuples, None), sigma=sigma,
                         k_range=k_range)



# -- the benchmark -----------------------------------------------------------------
#: Borgerding et al.'s benchmark: N = 500, M = 250, A iid N(0, 1/M), BG rate 0.1, SNR 40 dB.
BG_BENCHMARK: dict[str, Any] = {"M": 250, "N": 500, "rate": 0.1, "snr_db": 40.0}


def bg_benchmark_source(seed_A: int = 0) -> BernoulliGaussian:
    """The problems of Borgerding et al.'s benchmark (:data:`BG_BENCHMARK`).

    Parameters
    ----------
    seed_A : int, default 0
        Seed of the matrix ``cscore.datasets.gaussian_matrix(250, 500, seed_A,
        unit_norm=False)``.

    Returns
    -------
    BernoulliGaussian
    """
    A = gaussian_matrix(BG_BENCHMARK["M"], BG_BENCHMARK["N"], seed_A, unit_norm=False)
    return BernoulliGaussian(A, rate=BG_BENCHMARK["rate"], snr_db=BG_BENCHMARK["snr_db"])
