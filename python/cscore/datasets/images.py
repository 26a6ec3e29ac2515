"""Images: resizing, distinct blocks (MATLAB ``im2col`` order), folders of images.

Block order
-----------
An ``s x s`` image cut into distinct ``b x b`` blocks gives ``(s/b)**2`` blocks
ordered column-major (block (br, bc) has index ``bc * (s/b) + br``), each
vectorized column-major (pixel (r, c) of the block is entry ``c * b + r``);
exactly MATLAB's ``im2col(I, [b b], 'distinct')``.

Natural-image MMV problems
--------------------------
:func:`image_mmv_problems` transforms each block (DCT or Haar, see
:mod:`cscore.datasets.sparsify`), keeps its k largest coefficients and puts L
consecutive blocks of one image (in the block order above) into one problem:
problem ``i * (n_blocks / L) + g`` holds blocks ``g*L .. g*L + L - 1`` of image i.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from .sparsify import block_transform, inverse_block_transform, keep_largest

__all__ = [
    "IMAGE_SUFFIXES",
    "blocks_to_images",
    "image_mmv_problems",
    "image_to_blocks",
    "load_image_folder",
    "problems_to_natural_images",
    "resize_images",
]

_BILINEAR = getattr(Image, "Resampling", Image).BILINEAR

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif", ".pgm", ".ppm")


def resize_images(images: np.ndarray, size: int) -> np.ndarray:
    """Resize a stack of grayscale images to ``size x size`` (bilinear, Pillow).

    uint8 input is scaled to [0, 1] first; float input is used as is.

    Parameters
    ----------
    images : ndarray (n, h, w)
    size : int

    Returns
    -------
    ndarray float64 (n, size, size)
    """
    images = np.asarray(images)
    if images.ndim != 3:
        raise ValueError(f"images must be (n, h, w), got shape {images.shape}")
    _real_numeric("images", images)
    size = _positive_int("size", size)
    scale = 1.0 / 255.0 if images.dtype == np.uint8 else 1.0
    out = np.empty((images.shape[0], size, size))
    for i, im in enumerate(images):
        pil = Image.fromarray(np.asarray(im, dtype=np.float32) * np.float32(scale), mode="F")
        if im.shape != (size, size):
            pil = pil.resize((size, size), _BILINEAR)
        out[i] = np.asarray(pil, dtype=np.float64)
    return out


def _positive_int(name: str, v: object) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    return int(v)


def _real_numeric(name: str, a: np.ndarray) -> None:
    if a.dtype.kind == "c":
        raise TypeError(f"{name} must be real; got complex dtype {a.dtype}")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array; got dtype {a.dtype}")


def image_to_blocks(images: np.ndarray, block_size: int) -> np.ndarray:
    """Cut images into distinct blocks (column-major block order and vectorization).

    Parameters
    ----------
    images : ndarray (n, s, s) or (s, s)
    block_size : int
        Must divide s.

    Returns
    -------
    ndarray (n, (s/b)**2, b*b)  (or ((s/b)**2, b*b) for one image)
    """
    images = np.asarray(images)
    if images.ndim not in (2, 3):
        raise ValueError(f"images must be (n, s, s) or (s, s), got shape {images.shape}")
    b = _positive_int("block_size", block_size)
    single = images.ndim == 2
    if single:
        images = images[None]
    n, h, w = images.shape
    if h != w or h % b:
        raise ValueError(f"images must be square with side divisible by {b}; got {h}x{w}")
    nbs = h // b
    x = images.reshape(n, nbs, b, nbs, b)  # (n, br, r, bc, c)
    x = x.transpose(0, 3, 1, 4, 2)  # (n, bc, br, c, r)
    out = np.ascontiguousarray(x).reshape(n, nbs * nbs, b * b)
    return out[0] if single else out


def blocks_to_images(blocks: np.ndarray, image_size: int, block_size: int) -> np.ndarray:
    """Inverse of :func:`image_to_blocks` (MATLAB ``col2im(..., 'distinct')``).

    Parameters
    ----------
    blocks : ndarray (n, n_blocks, block_size**2) or (n_blocks, block_size**2)
        Column-major vectorized blocks, in column-major block order.
    image_size : int
        Side of the square images (a multiple of ``block_size``).
    block_size : int
        Side of a block.

    Returns
    -------
    ndarray (n, image_size, image_size) (or (image_size, image_size))
        The reassembled images.
    """
    blocks = np.asarray(blocks)
    single = blocks.ndim == 2
    if single:
        blocks = blocks[None]
    n, nb, N = blocks.shape
    b = block_size
    nbs = image_size // b
    if N != b * b or nb != nbs * nbs or image_size % b:
        raise ValueError(
            f"blocks of shape {blocks.shape[1:]} do not tile a {image_size}x{image_size} "
            f"image with {b}x{b} blocks"
        )
    x = blocks.reshape(n, nbs, nbs, b, b)  # (n, bc, br, c, r)
    x = x.transpose(0, 2, 4, 1, 3)  # (n, br, r, bc, c)
    out = np.ascontiguousarray(x).reshape(n, image_size, image_size)
    return out[0] if single else out


def load_image_folder(
    folder: str | Path,
    size: int = 64,
    *,
    limit: int | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Load every image of a folder as grayscale ``size x size`` in [0, 1].

    Files are read in sorted name order; any format Pillow reads is accepted
    (suffixes :data:`IMAGE_SUFFIXES`).  Colour images are converted with
    Pillow's ``"L"`` mode, then resized bilinearly.

    Parameters
    ----------
    folder : path
        Folder to read (not recursive).
    size : int, default 64
        Side of the square output images.
    limit : int, optional
        Read at most this many files (the first in name order).

    Returns
    -------
    images : ndarray float64 (n, size, size)
    names : list of str (file names, same order)
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no image folder at {folder}")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if limit is not None:
        files = files[:limit]
    if not files:
        raise ValueError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {folder}")
    out = np.empty((len(files), size, size))
    for i, p in enumerate(files):
        with Image.open(p) as im:
            g = im.convert("L").resize((size, size), _BILINEAR)
            out[i] = np.asarray(g, dtype=np.float64) / 255.0
    return out, [p.name for p in files]


def image_mmv_problems(
    images: np.ndarray,
    *,
    block_size: int = 8,
    transform: str = "dct",
    k: int | None = None,
    L: int = 4,
    levels: int = 3,
) -> np.ndarray:
    """Sparse MMV ground truths from natural images (see the module docstring).

    Parameters
    ----------
    images : ndarray (n, s, s) float
    block_size : int
    transform : {"dct", "haar", "none"}
    k : int or None
        Coefficients kept per block (None: all).
    L : int
        Consecutive blocks per problem; must divide the number of blocks per image.
    levels : int
        Haar levels.

    Returns
    -------
    S : ndarray (n * n_blocks / L, block_size**2, L)
    """
    blocks = image_to_blocks(np.asarray(images, dtype=np.float64), block_size)
    if blocks.ndim == 2:
        blocks = blocks[None]
    n, nb, N = blocks.shape
    if nb % L:
        raise ValueError(f"L={L} must divide the {nb} blocks per image")
    coef = block_transform(blocks, transform, block_size, levels)
    if k is not None:
        coef = keep_largest(coef, k)
    S = coef.reshape(n, nb // L, L, N).transpose(0, 1, 3, 2)
    return np.ascontiguousarray(S.reshape(n * nb // L, N, L))


def problems_to_natural_images(
    S: np.ndarray,
    image_size: int,
    *,
    block_size: int = 8,
    transform: str = "dct",
    levels: int = 3,
) -> np.ndarray:
    """Inverse of :func:`image_mmv_problems`: coefficients back to images (n, s, s).

    Parameters
    ----------
    S : ndarray (P, N, L)
        Coefficients of consecutive blocks (channel-major within a problem), as
        made by :func:`image_mmv_problems`; ``P * L`` must be a whole number of
        images.
    image_size : int
        Side of the images.
    block_size : int, default 8
        Side of a block (``N == block_size**2``).
    transform : {"none", "dct", "haar"}, default "dct"
        Sparsifying transform to invert.
    levels : int, default 3
        Haar levels (ignored otherwise).

    Returns
    -------
    ndarray (n, image_size, image_size)
        The images, ``n = P * L * block_size**2 / image_size**2``.
    """
    S = np.asarray(S, dtype=np.float64)
    P, N, L = S.shape
    nb = (image_size // block_size) ** 2
    if (P * L) % nb:
        raise ValueError(f"{P} problems of {L} blocks do not make whole images of {nb} blocks")
    coef = S.transpose(0, 2, 1).reshape(-1, nb, N)
    blocks = inverse_block_transform(coef, transform, block_size, levels)
    return blocks_to_images(blocks, image_size, block_size)
