"""Decoding Dask arrays, on one machine or a ``dask.distributed`` cluster.

Needs the optional extra ``cscore-decoders[dask]`` (``dask[distributed]``); nothing else
in cscore imports this module.

>>> import dask.array as da                             # doctest: +SKIP
>>> S = cscore.dask.decode(dec, da.from_zarr("Y.zarr"))  # doctest: +SKIP
>>> S.to_zarr("S.zarr")                                 # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._optional import require
from ..decoders import Decoder

__all__ = ["decode"]


def decode_block(Y: np.ndarray, dec: Decoder) -> np.ndarray:
    """Decode one block of problems: a Dask task (here and in a cluster run of decode_file).

    Parameters
    ----------
    Y : ndarray (b, M, L)
        The block's measurements.
    dec : Decoder

    Returns
    -------
    ndarray (b, N, L)
    """
    return np.asarray(dec(np.asarray(Y)))


def _current_client() -> Any:
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:
        return None


def decode(dec: Decoder, Y: Any, *, client: Any = None) -> Any:
    """Decode a dask array of measurements (B, M, L), chunked along B.

    Parameters
    ----------
    dec : Decoder
        The decoder (see :func:`cscore.decoder`).
    Y : dask.array.Array, shape (B, M, L)
        Measurements; chunks along M and L are merged (one block spans whole
        problems).
    client : distributed.Client, optional
        The cluster's client (default: the current one, if any).  With a client,
        the decoder -- its model or sensing matrix -- is scattered to every worker
        once (``broadcast=True``) and the tasks refer to it, instead of each task
        carrying a copy.  Without one, the decoder runs in Dask's local scheduler.

    Returns
    -------
    dask.array.Array, shape (B, N, L)
        Lazy result with the chunks of ``Y`` along B; float32 for float32 input.

    Notes
    -----
    Blocks are decoded independently with ``dec(block)``; the result equals
    ``dec(Y.compute())`` bit for bit when ``dec`` does not depend on how
    problems are batched, which holds for every built-in decoder.
    """
    da = require("dask.array", "cscore.dask.decode")

    if not isinstance(dec, Decoder):
        raise TypeError(f"dec must be a cscore.Decoder, got {type(dec).__name__}")
    if not isinstance(Y, da.Array):
        raise TypeError(f"Y must be a dask.array.Array, got {type(Y).__name__}")
    if Y.ndim != 3:
        raise ValueError(f"Y must have shape (B, M, L), got {Y.shape}")
    if Y.shape[1] != dec.M:
        raise ValueError(f"Y has M = {Y.shape[1]} rows per problem; the decoder has {dec.M}")
    if dec.L is not None and Y.shape[2] != dec.L:
        raise ValueError(f"Y has L = {Y.shape[2]} channels; the decoder's model expects {dec.L}")
    if Y.dtype.kind not in "fiu":
        raise ValueError(f"Y must hold real numbers, got dtype {Y.dtype}")
    Y = Y.rechunk({1: -1, 2: -1})
    L = int(Y.shape[2])
    client = client if client is not None else _current_client()
    dec_arg: Any = dec
    if client is not None:
        dec_arg = client.scatter(dec, broadcast=True, hash=False)
    return da.map_blocks(
        decode_block,
        Y,
        dec_arg,
        dtype=dec.output_dtype(Y.dtype),
        chunks=(Y.chunks[0], (dec.N,), (L,)),
        meta=np.empty((0, 0, 0), dtype=dec.output_dtype(Y.dtype)),
    )
