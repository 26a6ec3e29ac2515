"""Resumable out-of-core runs: :func:`decode_file`, :func:`verify_output`.

:func:`decode_file` decodes a ``.npy`` or zarr array of measurements (B, M, L)
chunk by chunk into a zarr array (B, N, L).  Each finished chunk is written
atomically and recorded in a manifest with its checksum, so a killed run resumes
where it stopped and produces the same output as an uninterrupted run.

Safety (see ``docs/pipelines.md``, "Safety"):

* an output that is, contains or lies inside the input is refused before
  anything is touched;
* the run holds an exclusive lock on the output (:mod:`.lock`);
* a resume checks the input's fingerprint, the decoder's fingerprint (name,
  settings, sensing-matrix or model-weights hash), the chunk size and the
  output array's shape, dtype and chunks against the run's own record, and
  verifies every recorded chunk against its checksum, decoding again what fails
  (with a :class:`ChunkDamageWarning`);
* :func:`verify_output` checks a finished run (``cscore decode --verify``).

The steps of a run are :func:`~cscore.pipelines._run.check_request`,
:func:`~cscore.pipelines._run.open_run` (a fresh run or the resumed one, its
record checked; :mod:`cscore.pipelines._run`), :func:`_verify_recorded`,
:func:`_decode_missing`.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .._optional import require
from ..decoders import Decoder
from ._run import Run, check_request, open_run
from .inputs import Input as _Input
from .inputs import input_fingerprint
from .inputs import open_input as _open_input
from .lock import OutputLock
from .manifest import MANIFEST_NAME

__all__ = [
    "MANIFEST_NAME",
    "ChunkDamageWarning",
    "decode_file",
    "input_fingerprint",
]


def _as_decoder(dec: Any) -> Decoder:
    if isinstance(dec, Decoder):
        return dec
    if isinstance(dec, (dict, str, os.PathLike)):
        return Decoder.from_config(dec)
    raise TypeError(f"dec must be a Decoder, a config dict or a config file, got {type(dec)}")


class ChunkDamageWarning(UserWarning):
    """Recorded chunks of a resumed run failed verification; they are decoded again.

    Parameters
    ----------
    message : str
        The warning text (says how many chunks and which).
    output : str
        The output of the run.
    chunks : list of int
        The chunk numbers decoded again.
    """

    def __init__(self, message: str, output: str = "", chunks: list[int] | None = None) -> None:
        super().__init__(message)
        self.output = output
        self.chunks = list(chunks or [])


# -- step 3: verify what the run recorded -----------------------------------------------


def _verify_recorded(run: Run) -> list[int]:
    """Check every recorded chunk against its checksum; unrecord those that fail."""
    bad = [i for i in sorted(run.done) if not run.chunk_ok(i)]
    if not bad:
        return bad
    unchecked = sum(1 for i in bad if i not in run.sums)
    for i in bad:
        run.done.discard(i)
        run.sums.pop(i, None)
    run.manifest["complete"] = False
    run.save()
    shown = ", ".join(map(str, bad[:20])) + (", ..." if len(bad) > 20 else "")
    why = (
        f" ({unchecked} recorded by an older cscore without checksums)" if unchecked else ""
    )
    warnings.warn(
        ChunkDamageWarning(
            f"{len(bad)} recorded chunk(s) of {run.out_path} failed verification{why} and "
            f"are decoded again: chunk(s) {shown}",
            str(run.out_path),
            bad,
        ),
        stacklevel=3,
    )
    return bad


# -- step 4: decode what is missing -----------------------------------------------------


def _decode_missing(
    run: Run,
    dec: Decoder,
    inp: _Input,
    scheduler: Any,
    progress: bool,
    on_chunk: Callable[[int, int], None] | None,
) -> None:
    n_chunks = run.n_chunks
    todo = [i for i in range(n_chunks) if i not in run.done]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_chunks, initial=len(run.done), unit="chunk", desc="decode")

    def record(i: int, S: np.ndarray) -> None:
        run.record(i, S)
        if bar is not None:
            bar.update(1)
        if on_chunk is not None:
            on_chunk(len(run.done), n_chunks)

    try:
        if scheduler is None:
            for i in todo:
                record(i, _decode_in_slices(dec, inp.read(*run.rows(i))))
        else:
            _run_distributed(dec, inp, todo, run.chunk, scheduler, record)
    finally:
        if bar is not None:
            bar.close()
    if len(run.done) == n_chunks and not run.manifest["complete"]:
        run.manifest["complete"] = True
        run.save()


def decode_file(
    dec: Decoder | dict[str, Any] | str | os.PathLike[str],
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    chunk: int | None = None,
    progress: bool = True,
    scheduler: Any = None,
    overwrite: bool = False,
    on_chunk: Callable[[int, int], None] | None = None,
) -> Any:
    """Decode a (B, M, L) array on disk into a zarr array (B, N, L), resumably.

    Parameters
    ----------
    dec : Decoder, dict or path
        The decoder, its config, or a config file.
    input : path
        A ``.npy`` file (C order; read through short memory maps, one chunk at a
        time) or a zarr array directory.
    output : path
        The zarr array to write (a directory store).  If it holds an unfinished
        run, only the missing chunks are decoded.  It must not be, contain or
        lie inside ``input``.
    chunk : int, optional
        Problems per chunk (default: about 4 MiB of float64 input, a multiple
        of 64; at most B).  A resumed run keeps the chunk size of the first run.
    progress : bool, default True
        Show a tqdm progress bar (on stderr).
    scheduler : str or distributed.Client, optional
        Decode on a Dask cluster (its address, or a client); chunks are sent to
        the workers (the decoder once per worker) and written here as they come
        back.  Needs ``dask[distributed]``.
    overwrite : bool, default False
        Start afresh even if ``output`` holds another run (or something else).
    on_chunk : callable, optional
        ``on_chunk(done, total)`` after each recorded chunk.

    Returns
    -------
    zarr.Array
        The finished output array.

    Raises
    ------
    ValueError
        Bad input shape; an output that is, contains or lies inside the input;
        an output in use by another run (its lock); an output that belongs to
        another input (the input changed since the first run: its fingerprint
        differs), another decoder (name, settings, sensing matrix or model
        weights), another chunk size, or whose array metadata (shape, dtype,
        chunks) differs from the run's record; a damaged manifest; a
        non-cscore directory at ``output``.

    Warns
    -----
    ChunkDamageWarning
        On a resume, recorded chunks that failed verification against their
        checksums (deleted, truncated or altered chunk files); they are decoded
        again.

    Notes
    -----
    The run holds an exclusive lock on the output (``<output>.cscore-lock``,
    see :mod:`cscore.pipelines.lock`).  Each chunk is written with zarr's
    atomic writes (temporary file, then rename) and then recorded with its
    sha256 in ``output/cscore-manifest.json`` (itself replaced atomically and
    fsync'ed).  A run killed at any moment leaves recorded chunks complete;
    unrecorded ones are decoded again.  A chunk is decoded in calls of
    :data:`SLICE` problems per decoder thread (Python reacts to signals
    between calls; the results are unchanged).  On Ctrl-C (KeyboardInterrupt)
    every finished chunk is recorded before it propagates.
    """
    # fail before touching anything when an optional package is missing
    require("zarr", "cscore.decode_file", min_version="3")
    if scheduler is not None:
        require("distributed", "decoding on a Dask cluster (scheduler=)")
    dec = _as_decoder(dec)
    in_path, out_path = Path(input), Path(output)
    inp = _open_input(in_path)
    check_request(dec, inp, in_path, out_path, chunk, overwrite)
    with OutputLock(out_path):
        fresh = overwrite or not out_path.exists()
        run = open_run(dec, inp, in_path, out_path, chunk, overwrite)
        _verify_recorded(run)
        try:
            _decode_missing(run, dec, inp, scheduler, progress, on_chunk)
        except Exception:
            # A run that failed before recording anything leaves nothing behind, so
            # that the corrected command starts afresh instead of refusing to resume.
            if fresh and not run.done:
                shutil.rmtree(out_path, ignore_errors=True)
            raise
    return run.arr


#: Problems per decoder call inside a chunk, per decoder thread: Python checks for
#: Ctrl-C between calls.  A multiple of 64, the LSTM-CS decoder's GEMM group, so the
#: results do not change.
SLICE = 64


def _slice_size(dec: Decoder) -> int:
    from .._config import get_num_threads

    threads = dec.settings.get("n_threads") or get_num_threads()
    return SLICE * max(1, int(threads))


def _decode_in_slices(dec: Decoder, Y: np.ndarray) -> np.ndarray:
    step = _slice_size(dec)
    if len(Y) <= step:
        return np.asarray(dec(Y))
    return np.concatenate([np.asarray(dec(Y[i : i + step])) for i in range(0, len(Y), step)])


def _run_distributed(
    dec: Decoder,
    inp: _Input,
    todo: list[int],
    chunk: int,
    scheduler: Any,
    record: Callable[[int, np.ndarray], None],
) -> None:
    """Decode chunks ``todo`` on a cluster; record each as soon as it comes back.

    At most two chunks per worker are in flight; nothing waits in memory for an
    earlier chunk, so a failure or a kill loses only the chunks in flight.
    """
    from distributed import Client, as_completed

    from .distributed import decode_block

    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        dec_f = client.scatter(dec, broadcast=True, hash=False)
        B = inp.shape[0]
        it = iter(todo)
        futs: dict[Any, int] = {}
        ac = as_completed()

        def submit_next() -> None:
            i = next(it, None)
            if i is not None:
                Y = inp.read(i * chunk, min(B, (i + 1) * chunk))
                f = client.submit(decode_block, Y, dec_f, pure=False)
                futs[f] = i
                ac.add(f)

        for _ in range(2 * n_workers):
            submit_next()
        for f in ac:
            i = futs.pop(f)
            S = f.result()
            f.release()
            record(i, S)
            submit_next()
    finally:
        if own:
            client.close()
