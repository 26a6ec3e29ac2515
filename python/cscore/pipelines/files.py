"""Resumable out-of-core runs: :func:`decode_file`.

:func:`decode_file` decodes a ``.npy`` or zarr array of measurements (B, M, L)
chunk by chunk into a zarr array (B, N, L).  Each finished chunk is written
atomically and recorded in a manifest, so a killed run resumes where it stopped
and produces the same output as an uninterrupted run; an input that changed
since the first run is refused.  See ``docs/pipelines.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Union

import numpy as np

from ..decoders import Decoder

__all__ = ["MANIFEST_NAME", "decode_file", "input_fingerprint"]

#: File inside the output zarr store that records the finished chunks.
MANIFEST_NAME = "cscore-manifest.json"
MANIFEST_VERSION = 1


class _NpyInput:
    """A C-ordered ``.npy`` file read one slab at a time through a short-lived memmap.

    Each slab is mapped, copied and unmapped, so resident memory stays at one
    slab however large the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            self.offset = f.tell()
        if fortran and len(shape) > 1:
            raise ValueError(f"input {path} is Fortran-ordered; save it in C order")
        if dtype.hasobject:
            raise ValueError(f"input {path} holds Python objects, not numbers")
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    def read(self, i0: int, i1: int) -> np.ndarray:
        row = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        i1 = min(i1, self.shape[0])
        if i1 <= i0:
            return np.zeros((0, *self.shape[1:]), dtype=self.dtype)
        mm = np.memmap(
            self.path,
            dtype=self.dtype,
            mode="r",
            offset=self.offset + i0 * row,
            shape=(i1 - i0, *self.shape[1:]),
        )
        try:
            return np.array(mm, copy=True)
        finally:
            mm._mmap.close()  # type: ignore[attr-defined]
            del mm


class _ZarrInput:
    def __init__(self, path: Path) -> None:
        import zarr

        self.path = path
        self.arr = zarr.open_array(str(path), mode="r")
        self.shape = tuple(int(s) for s in self.arr.shape)
        self.dtype = np.dtype(self.arr.dtype)

    def read(self, i0: int, i1: int) -> np.ndarray:
        return np.asarray(self.arr[i0:i1])


_Input = Union[_NpyInput, _ZarrInput]


def _open_input(path: Path) -> _Input:
    if not path.exists():
        raise FileNotFoundError(f"input not found: {path}")
    inp: _Input = _NpyInput(path) if path.is_file() else _ZarrInput(path)
    if len(inp.shape) != 3:
        raise ValueError(f"input must be a (B, M, L) array, got shape {inp.shape}")
    if inp.dtype.kind not in "fiu":
        raise ValueError(f"input must hold real numbers, got dtype {inp.dtype}")
    return inp


def input_fingerprint(path: str | os.PathLike[str], *, chunk: int = 4096) -> str:
    """sha256 of an input array's shape, dtype and data (read in slabs of ``chunk``).

    Parameters
    ----------
    path : path
        A ``.npy`` file or a zarr array (B, ...).
    chunk : int, default 4096
        Problems per slab read.

    Returns
    -------
    str
        Hex digest; equal for equal arrays whatever their file format.
    """
    return _fingerprint(_open_input(Path(path)), chunk)


def _fingerprint(inp: _Input, chunk: int) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"shape": list(inp.shape), "dtype": inp.dtype.str}).encode())
    B = inp.shape[0]
    for i0 in range(0, B, chunk):
        h.update(np.ascontiguousarray(inp.read(i0, min(B, i0 + chunk))).data)
    return h.hexdigest()


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:  # make the rename durable (power loss)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # pragma: no cover - platforms without directory fsync
        pass


def _default_chunk(inp: _Input) -> int:
    per = int(np.prod(inp.shape[1:], dtype=np.int64)) * 8
    c = max(1, (4 << 20) // max(per, 1))
    if c >= 128:
        c -= c % 64
    return int(min(c, max(inp.shape[0], 1)))


def _as_decoder(dec: Any) -> Decoder:
    if isinstance(dec, Decoder):
        return dec
    if isinstance(dec, (dict, str, os.PathLike)):
        return Decoder.from_config(dec)
    raise TypeError(f"dec must be a Decoder, a config dict or a config file, got {type(dec)}")


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
        run, only the missing chunks are decoded.
    chunk : int, optional
        Problems per chunk (default: about 4 MiB of float64 input, a multiple
        of 64).  A resumed run keeps the chunk size of the first run.
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
        Bad input shape, an output that belongs to another input (the input
        changed since the first run: its fingerprint differs), another decoder
        or chunk size, or a non-cscore directory at ``output``.

    Notes
    -----
    Each chunk is written with zarr's atomic writes (temporary file, then
    rename) and then recorded in ``output/cscore-manifest.json`` (itself
    replaced atomically and fsync'ed).  A run killed at any moment leaves
    recorded chunks complete; unrecorded ones are decoded again.  A chunk is
    decoded in calls of :data:`SLICE` problems per decoder thread (Python reacts
    to signals between calls; the results are unchanged).  On Ctrl-C
    (KeyboardInterrupt) every finished chunk is recorded before it propagates.
    """
    import zarr

    dec = _as_decoder(dec)
    in_path = Path(input)
    out_path = Path(output)
    inp = _open_input(in_path)
    B, M, L = inp.shape
    if M != dec.M:
        raise ValueError(f"input has M = {M} measurements per channel; the decoder has {dec.M}")
    if dec.L is not None and L != dec.L:
        raise ValueError(f"input has L = {L} channels; the decoder's model expects {dec.L}")
    if chunk is not None:
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    try:
        dec_cfg: Any = dec.config
    except ValueError:
        dec_cfg = None
    out_dtype = dec.output_dtype(inp.dtype)
    manifest_path = out_path / MANIFEST_NAME

    manifest: dict[str, Any] | None = None
    if out_path.exists() and not overwrite:
        if not manifest_path.is_file():
            raise ValueError(
                f"output {out_path} exists and is not a cscore decode run "
                "(no manifest); pass overwrite=True (--overwrite) to replace it"
            )
        manifest = json.loads(manifest_path.read_text())
        chunk_ = int(manifest["chunk"])
        fp = _fingerprint(inp, chunk_)
        if manifest.get("input_sha256") != fp:
            raise ValueError(
                f"input {in_path} has changed since the run that wrote {out_path} "
                "(its fingerprint differs); refusing to mix results -- use a new output "
                "or overwrite=True (--overwrite)"
            )
        if dec_cfg is not None and manifest.get("decoder") not in (None, dec_cfg):
            raise ValueError(
                f"output {out_path} was written by another decoder configuration; "
                "use a new output or overwrite=True (--overwrite)"
            )
        if chunk is not None and int(chunk) != chunk_:
            raise ValueError(
                f"output {out_path} was started with chunk = {chunk_}; resume with the same chunk"
            )
        chunk = chunk_
    else:
        if out_path.exists():
            import shutil

            if out_path.is_dir():
                shutil.rmtree(out_path)
            else:
                out_path.unlink()
        chunk = int(chunk) if chunk is not None else _default_chunk(inp)
        fp = _fingerprint(inp, chunk)
        out_path.mkdir(parents=True)
        manifest = {
            "cscore_decode": MANIFEST_VERSION,
            "input": str(in_path.resolve()),
            "input_sha256": fp,
            "shape": [B, dec.N, L],
            "dtype": out_dtype.str,
            "chunk": chunk,
            "decoder": dec_cfg,
            "done": [],
            "complete": False,
        }
        _write_json_atomic(manifest_path, manifest)

    n_chunks = (B + chunk - 1) // chunk
    if (out_path / "zarr.json").is_file():
        arr = zarr.open_array(str(out_path), mode="r+")
    else:
        arr = zarr.create_array(
            store=str(out_path),
            shape=(B, dec.N, L),
            chunks=(max(1, chunk), dec.N, L),
            dtype=out_dtype,
            fill_value=0,
            attributes={"cscore": {"decoder": dec_cfg, "input_sha256": fp}},
        )
    for p in out_path.rglob("*.partial"):  # leftovers of a write killed mid-way
        p.unlink(missing_ok=True)
    done = set(int(i) for i in manifest["done"])
    todo = [i for i in range(n_chunks) if i not in done]

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_chunks, initial=len(done), unit="chunk", desc="decode")

    def record(i: int, S: np.ndarray) -> None:
        i0 = i * chunk
        arr[i0 : i0 + S.shape[0]] = S
        done.add(i)
        manifest["done"] = sorted(done)
        _write_json_atomic(manifest_path, manifest)
        if bar is not None:
            bar.update(1)
        if on_chunk is not None:
            on_chunk(len(done), n_chunks)

    try:
        if scheduler is None:
            for i in todo:
                i0, i1 = i * chunk, min(B, (i + 1) * chunk)
                record(i, _decode_in_slices(dec, inp.read(i0, i1)))
        else:
            _run_distributed(dec, inp, todo, chunk, scheduler, record)
    finally:
        if bar is not None:
            bar.close()
    if len(done) == n_chunks and not manifest.get("complete"):
        manifest["complete"] = True
        _write_json_atomic(manifest_path, manifest)
    return arr


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
    from distributed import Client, as_completed

    from .distributed import _decode_block

    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        dec_f = client.scatter(dec, broadcast=True, hash=False)
        window = 2 * n_workers
        B = inp.shape[0]
        it = iter(todo)
        futs: dict[Any, int] = {}
        ac = as_completed()

        def submit_next() -> bool:
            i = next(it, None)
            if i is None:
                return False
            Y = inp.read(i * chunk, min(B, (i + 1) * chunk))
            f = client.submit(_decode_block, Y, dec_f, pure=False)
            futs[f] = i
            ac.add(f)
            return True

        for _ in range(window):
            if not submit_next():
                break
        results: dict[int, np.ndarray] = {}
        order = list(todo)
        pos = 0
        for f in ac:
            i = futs.pop(f)
            results[i] = f.result()
            f.release()
            # record in input order so that the manifest grows as a prefix would
            while pos < len(order) and order[pos] in results:
                record(order[pos], results.pop(order[pos]))
                pos += 1
            submit_next()
    finally:
        if own:
            client.close()
