"""Data for compressive-sensing experiments: MNIST, natural images, the demo set.

* :mod:`~cscore.datasets.mnist`: IDX reader and the LSTM-CS paper's block protocol.
* :mod:`~cscore.datasets.images`: resizing, distinct blocks, folders of images.
* :mod:`~cscore.datasets.sparsify`: DCT / Haar block transforms, keep the k largest.
* :mod:`~cscore.datasets.sensing`: sensing matrices, measurements, noise.
* :mod:`~cscore.datasets.demo`: the embedded demo set (PyWavelets' images).
"""

from __future__ import annotations

from .demo import DEMO_IMAGES, DemoData, demo_images, load_demo
from .images import (
    blocks_to_images,
    image_mmv_problems,
    image_to_blocks,
    load_image_folder,
    problems_to_natural_images,
    resize_images,
)
from .mnist import (
    MNIST_BLOCK,
    MNIST_IMAGE,
    load_mnist,
    mnist_mmv_problems,
    mnist_tuples,
    problems_to_images,
)
from .sensing import expected_noise_tol, gaussian_matrix, measure, paper_matrix
from .sparsify import TRANSFORMS, block_transform, inverse_block_transform, keep_largest

__all__ = [
    "DEMO_IMAGES",
    "MNIST_BLOCK",
    "MNIST_IMAGE",
    "TRANSFORMS",
    "DemoData",
    "block_transform",
    "blocks_to_images",
    "demo_images",
    "expected_noise_tol",
    "gaussian_matrix",
    "image_mmv_problems",
    "image_to_blocks",
    "inverse_block_transform",
    "keep_largest",
    "load_demo",
    "load_image_folder",
    "load_mnist",
    "measure",
    "mnist_mmv_problems",
    "mnist_tuples",
    "paper_matrix",
    "problems_to_images",
    "problems_to_natural_images",
    "resize_images",
]
