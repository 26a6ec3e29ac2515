"""Sparsifying transforms for square blocks and the "keep the k largest" rule.

Vectorization
-------------
A b x b block ``B`` becomes the vector ``v`` with ``v[c * b + r] = B[r, c]``
(column-major, MATLAB's ``B(:)``).  Coefficient blocks are vectorized the same
way.

Transforms (both orthonormal, so ||coefficients|| == ||block||)
---------------------------------------------------------------
* ``"dct"``: the 2-D type-II DCT, ``scipy.fft.dctn(B, norm="ortho")``; the
  coefficient ``C[u, v]`` (vertical frequency u, horizontal v) is entry
  ``v * b + u`` of the vector.
* ``"haar"``: ``levels``-level 2-D Haar wavelet, ``pywt.wavedec2(B, "haar",
  mode="periodization", level=levels)``, laid out as a b x b array by
  ``pywt.coeffs_to_array`` (the coarsest approximation in the top-left corner,
  then for each level from coarse to fine the horizontal detail to the right,
  the vertical detail below and the diagonal detail bottom-right), then
  vectorized column-major.  The block side must be divisible by ``2**levels``.
* ``"none"``: the block itself.
"""

from __future__ import annotations

import numpy as np
import pywt
from scipy import fft as sfft

__all__ = ["TRANSFORMS", "block_transform", "inverse_block_transform", "keep_largest"]

TRANSFORMS = ("none", "dct", "haar")


def keep_largest(x: np.ndarray, k: int | np.ndarray) -> np.ndarray:
    """Zero all but the ``k`` largest-magnitude entries along the last axis.

    Ties are broken in favour of the lower index.  ``k >= x.shape[-1]`` keeps
    everything.

    Parameters
    ----------
    x : ndarray (..., N)
    k : int or ndarray of int with shape ``x.shape[:-1]``
        Entries kept per vector (>= 1); an array gives each vector its own k.

    Returns
    -------
    ndarray, same shape and dtype (a new array).
    """
    x = np.asarray(x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dimension, got a 0-d array {x!r}")
    if isinstance(k, (bool, np.bool_)):
        raise ValueError(f"k must be a positive int, got {k!r}")
    k_arr = np.asarray(k)
    if k_arr.dtype.kind not in "iu" or (k_arr < 1).any():
        raise ValueError(f"k must be a positive int (or array of them), got {k!r}")
    if k_arr.ndim and k_arr.shape != x.shape[:-1]:
        raise ValueError(f"k has shape {k_arr.shape}, expected {x.shape[:-1]}")
    # stable sort of -|x|: the k first are the largest, lower index first on ties
    order = np.argsort(-np.abs(x), axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(x.shape[-1]), axis=-1)
    mask = ranks < (k_arr[..., None] if k_arr.ndim else k_arr)
    return np.where(mask, x, np.zeros((), dtype=x.dtype))


def _check(kind: str, block_size: int, levels: int, N: int) -> None:
    if kind not in TRANSFORMS:
        raise ValueError(f"transform must be one of {TRANSFORMS}, got {kind!r}")
    if block_size * block_size != N:
        raise ValueError(f"vectors of length {N} are not {block_size}x{block_size} blocks")
    if kind == "haar":
        if levels < 1 or block_size % (2**levels):
            raise ValueError(
                f"a {levels}-level Haar transform needs a block side divisible by "
                f"2**levels; got block_size={block_size}"
            )


def _to_blocks(v: np.ndarray, b: int) -> np.ndarray:
    # v[..., c*b + r] -> B[..., r, c]
    return np.swapaxes(v.reshape(*v.shape[:-1], b, b), -1, -2)


def _to_vectors(B: np.ndarray) -> np.ndarray:
    b = B.shape[-1]
    return np.ascontiguousarray(np.swapaxes(B, -1, -2)).reshape(*B.shape[:-2], b * b)


def _haar_forward(B: np.ndarray, levels: int) -> np.ndarray:
    # pywt.coeffs_to_array's layout, built directly so that leading batch axes work
    coeffs = pywt.wavedec2(B, "haar", mode="periodization", level=levels, axes=(-2, -1))
    out = np.empty_like(B)
    s = coeffs[0].shape[-1]
    out[..., :s, :s] = coeffs[0]
    for cH, cV, cD in coeffs[1:]:
        s = cH.shape[-1]
        out[..., s : 2 * s, :s] = cH
        out[..., :s, s : 2 * s] = cV
        out[..., s : 2 * s, s : 2 * s] = cD
    return out


def _haar_inverse(C: np.ndarray, levels: int) -> np.ndarray:
    s = C.shape[-1] >> levels
    coeffs: list = [C[..., :s, :s]]
    for _ in range(levels):
        coeffs.append((C[..., s : 2 * s, :s], C[..., :s, s : 2 * s], C[..., s : 2 * s, s : 2 * s]))
        s *= 2
    return pywt.waverec2(coeffs, "haar", mode="periodization", axes=(-2, -1))


def _apply(v: np.ndarray, kind: str, block_size: int, levels: int, *,
           inverse: bool) -> np.ndarray:
    """The transform (or its inverse) of every vectorized block of ``v`` (float64)."""
    _check(kind, block_size, levels, v.shape[-1])
    if kind == "none":
        return v.copy()
    B = _to_blocks(v, block_size)
    if kind == "dct":
        dct = sfft.idctn if inverse else sfft.dctn
        return _to_vectors(dct(B, norm="ortho", axes=(-2, -1)))
    return _to_vectors(_haar_inverse(B, levels) if inverse else _haar_forward(B, levels))


def block_transform(
    x: np.ndarray, kind: str, block_size: int, levels: int = 3
) -> np.ndarray:
    """Transform column-major vectorized blocks to column-major coefficient vectors.

    Parameters
    ----------
    x : ndarray (..., block_size**2)
    kind : {"none", "dct", "haar"}
    block_size : int
    levels : int
        Haar levels (ignored otherwise).

    Returns
    -------
    ndarray (..., block_size**2) float64
    """
    x = np.asarray(x)
    if x.dtype.kind == "c":
        raise TypeError(f"x must be real; got complex dtype {x.dtype}")
    if x.ndim < 1:
        raise ValueError("x must have at least 1 dimension (block_size**2 entries last)")
    return _apply(np.asarray(x, dtype=np.float64), kind, block_size, levels, inverse=False)


def inverse_block_transform(
    c: np.ndarray, kind: str, block_size: int, levels: int = 3
) -> np.ndarray:
    """Inverse of :func:`block_transform`.

    Parameters
    ----------
    c : ndarray (..., block_size**2)
        Column-major coefficient vectors.
    kind : {"none", "dct", "haar"}
        The transform to invert.
    block_size : int
        Side of a block.
    levels : int, default 3
        Haar levels (ignored otherwise).

    Returns
    -------
    ndarray (..., block_size**2) float64
        Column-major vectorized blocks.
    """
    return _apply(np.asarray(c, dtype=np.float64), kind, block_size, levels, inverse=True)
