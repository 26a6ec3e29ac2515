"""The embedded demo set: PyWavelets' bundled test images as natural images.

Needs no download: ``pywt.data.camera()``, ``pywt.data.ascent()`` and
``pywt.data.aero()`` (512 x 512 grayscale, shipped with PyWavelets, a core
dependency) are resized to ``image_size`` (bilinear), cut into 8 x 8 blocks,
DCT-sparsified (k largest coefficients kept per block) and grouped into MMV
problems of L = 4 consecutive blocks (see :mod:`cscore.datasets.images`).

Split by image: ``camera`` and ``ascent`` are the training images (the last
``val_fraction`` of their problems form the validation set), ``aero`` is the
test image -- never used for training or model selection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .images import image_mmv_problems, problems_to_natural_images, resize_images
from .sensing import measure, paper_matrix

__all__ = ["DEMO_IMAGES", "DemoData", "demo_images", "load_demo"]

#: (name, split) of the bundled images
DEMO_IMAGES: tuple[tuple[str, str], ...] = (("camera", "train"), ("ascent", "train"),
                                            ("aero", "test"))


def demo_images(image_size: int = 256) -> dict[str, np.ndarray]:
    """The bundled images, grayscale in [0, 1], resized to ``image_size``.

    Parameters
    ----------
    image_size : int, default 256
        Side of the square output images (bilinear resizing).

    Returns
    -------
    dict
        Image name (see :data:`DEMO_IMAGES`) -> float64 array
        (image_size, image_size) in [0, 1].
    """
    import pywt.data

    out = {}
    for name, _ in DEMO_IMAGES:
        raw = getattr(pywt.data, name)()
        out[name] = resize_images(np.asarray(raw, dtype=np.uint8)[None], image_size)[0]
    return out


@dataclass
class DemoData:
    """Ready MMV problems from the demo images (see :func:`load_demo`).

    ``S_*`` are (P, N, L) ground truths (k-sparse DCT coefficients), ``Y_*``
    (P, M, L) noisy measurements ``A S + noise``.
    """

    A: np.ndarray
    S_train: np.ndarray
    Y_train: np.ndarray
    S_val: np.ndarray
    Y_val: np.ndarray
    S_test: np.ndarray
    Y_test: np.ndarray
    k: int | None
    sigma: float
    image_size: int
    block_size: int = 8
    transform: str = "dct"
    info: dict = field(default_factory=dict)

    def to_images(self, S: np.ndarray) -> np.ndarray:
        """Coefficients (P, N, L) of whole images back to images (n, s, s).

        Parameters
        ----------
        S : ndarray (P, N, L)
            DCT coefficients of consecutive blocks, as in ``S_test``.

        Returns
        -------
        ndarray (n, s, s)
            The images, ``s`` being this data set's image size.
        """
        return problems_to_natural_images(
            S, self.image_size, block_size=self.block_size, transform=self.transform
        )


def load_demo(
    k: int | None = 10,
    *,
    M: int = 32,
    L: int = 4,
    image_size: int = 256,
    sigma: float = 0.005,
    seed: int = 0,
    A: np.ndarray | None = None,
    val_fraction: float = 0.1,
) -> DemoData:
    """Problems from the bundled PyWavelets images (no download needed).

    Parameters
    ----------
    k : int or None, default 10
        DCT coefficients kept per 8 x 8 block (None keeps all: compressible,
        not sparse).
    M : int, default 32
        Measurements per block (N = 64).
    L : int, default 4
        Consecutive blocks per problem.
    image_size : int, default 256
        Side the 512 x 512 images are resized to (a multiple of 8 * L ... any
        multiple of 8 whose block count L divides).
    sigma : float, default 0.005
        Noise standard deviation, fresh per problem.
    seed : int, default 0
        Seeds the sensing matrix (``paper_matrix(M, 64, seed)``, the matrix of
        the ``demo-dct-m32`` pretrained model for the defaults) and the noise.
    A : ndarray (M, 64), optional
        Use this sensing matrix instead (e.g. a pretrained model's).
    val_fraction : float
        Last fraction of the training images' problems kept for validation.

    Returns
    -------
    DemoData
    """
    N = 64
    if A is None:
        A = paper_matrix(M, N, seed)
    A = np.asarray(A, dtype=np.float64)
    if A.shape[1] != N:
        raise ValueError(f"A must have {N} columns for 8x8 blocks; got shape {A.shape}")
    imgs = demo_images(image_size)
    train = [imgs[n] for n, s in DEMO_IMAGES if s == "train"]
    test = [imgs[n] for n, s in DEMO_IMAGES if s == "test"]
    S_tr = image_mmv_problems(np.stack(train), block_size=8, transform="dct", k=k, L=L)
    S_te = image_mmv_problems(np.stack(test), block_size=8, transform="dct", k=k, L=L)
    n_val = round(val_fraction * S_tr.shape[0])
    S_val, S_tr = S_tr[S_tr.shape[0] - n_val :], S_tr[: S_tr.shape[0] - n_val]
    Y_tr, _ = measure(A, S_tr, sigma, seed + 1)
    Y_val, _ = measure(A, S_val, sigma, seed + 2)
    Y_te, _ = measure(A, S_te, sigma, seed + 3)
    return DemoData(
        A=A, S_train=S_tr, Y_train=Y_tr, S_val=S_val, Y_val=Y_val, S_test=S_te, Y_test=Y_te,
        k=k, sigma=sigma, image_size=image_size,
        info={"images": dict(DEMO_IMAGES), "source": "pywt.data", "seed": seed},
    )
