"""Decoding inside pipelines: streams, resumable out-of-core runs, Dask.

* :func:`stream` (:mod:`~cscore.pipelines.stream`) -- frames in, decoded frames
  out, in order, with bounded read-ahead;
* :func:`decode_file` (:mod:`~cscore.pipelines.files`) -- a ``.npy``/zarr file of
  measurements into a zarr array, chunk by chunk, resumable, under a lock
  (:mod:`~cscore.pipelines.lock`), with a manifest of checksums and fingerprints
  (:mod:`~cscore.pipelines.manifest`); :func:`verify_output`
  (:mod:`~cscore.pipelines.verify`) checks a finished run;
* :mod:`~cscore.pipelines.distributed` -- the same decoders over Dask arrays
  and clusters (also reachable as ``cscore.dask``; needs ``cscore-decoders[dask]``).

Every function takes any :class:`cscore.Decoder`, so every registered decoder
works here unchanged.
"""

from __future__ import annotations

from .files import MANIFEST_NAME, ChunkDamageWarning, decode_file, input_fingerprint
from .stream import stream
from .verify import VerifyReport, verify_output

__all__ = [
    "MANIFEST_NAME",
    "ChunkDamageWarning",
    "VerifyReport",
    "decode_file",
    "input_fingerprint",
    "stream",
    "verify_output",
]
