"""Decode a Dask array of problems on a cluster: ``cscore.dask.decode``.

``import cscore.dask`` (or ``from cscore.dask import decode``) gives
:func:`decode`, which maps a :class:`cscore.Decoder` over the blocks of a
(B, M, L) Dask array; it needs the ``dask`` extra.  The implementation lives in
:mod:`cscore.pipelines.distributed` (and ``cscore.decode_file(...,
scheduler=...)`` for resumable runs on a cluster).
"""

from __future__ import annotations

from .pipelines.distributed import decode

__all__ = ["decode"]
