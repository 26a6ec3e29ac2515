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

The steps of a run are :func:`_check_request`, :func:`_open_run` (a fresh run
or :func:`_resume_manifest`), :func:`_verify_recorded`, :func:`_decode_missing`.
"""

from __future__ import annotations

import os
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .._optional import require
from ..decoders import Decoder
from .inputs import Input as _Input
from .inputs import default_chunk as _default_chunk
from .inputs import fingerprint as _fingerprint
from .inputs import input_fingerprint
from .inputs import open_input as _open_input
from .lock import OutputLock
from .manifest import (
    MANIFEST_NAME,
    MANIFEST_VERSION,
    chunk_checksum,
    decoder_fingerprint,
    fingerprint_sha256,
    read_manifest,
    write_json_atomic,
)

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


@dataclass
class _Run:
    """The state of one run: its output, manifest, array, recorded chunks and checksums."""

    out_path: Path
    manifest: dict[str, Any]
    arr: Any = None
    done: set[int] = field(default_factory=set)
    sums: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.done = {int(i) for i in self.manifest["done"]}
        self.sums = {int(k): v for k, v in self.manifest["chunk_sha256"].items()}

    @property
    def chunk(self) -> int:
        return int(self.manifest["chunk"])

    @property
    def n_chunks(self) -> int:
        return (int(self.manifest["shape"][0]) + self.chunk - 1) // self.chunk

    def rows(self, i: int) -> tuple[int, int]:
        i0 = i * self.chunk
        return i0, min(int(self.manifest["shape"][0]), i0 + self.chunk)

    def save(self) -> None:
        self.manifest["done"] = sorted(self.done)
        self.manifest["chunk_sha256"] = {str(i): self.sums[i] for i in sorted(self.done)}
        write_json_atomic(self.out_path / MANIFEST_NAME, self.manifest)

    def record(self, i: int, S: Any) -> None:
        """Write chunk ``i``, then record it with its checksum in the manifest."""
        i0, i1 = self.rows(i)
        S = np.asarray(S)
        want = (i1 - i0, *self.manifest["shape"][1:])
        if S.shape != want:
            raise ValueError(f"the decoder returned shape {S.shape} for chunk {i}; expected {want}")
        S = np.ascontiguousarray(S, dtype=np.dtype(self.manifest["dtype"]))
        self.arr[i0:i1] = S
        self.sums[i] = chunk_checksum(S)
        self.done.add(i)
        self.save()

    def chunk_ok(self, i: int) -> bool:
        """Whether recorded chunk ``i`` reads back with its recorded checksum."""
        want = self.sums.get(i)
        if want is None:
            return False
        i0, i1 = self.rows(i)
        try:
            got = np.asarray(self.arr[i0:i1])
        except Exception:  # a damaged chunk file: whatever its codec raises
            return False
        return got.shape == (i1 - i0, *self.manifest["shape"][1:]) and chunk_checksum(got) == want


# -- step 1: the request, before anything is touched ------------------------------------


def _check_paths(in_path: Path, out_path: Path, overwrite: bool) -> None:
    """Refuse an output that is, contains or lies inside the input."""
    src, dst = in_path.resolve(), out_path.resolve()
    same = dst == src or (out_path.exists() and os.path.samefile(in_path, out_path))
    if same or src in dst.parents or dst in src.parents:
        how = "is" if same else ("lies inside" if src in dst.parents else "contains")
        raise ValueError(
            f"output {out_path} {how} the input {in_path}; refusing to write there "
            "(nothing was touched) -- choose an output outside the input"
        )
    if out_path.is_symlink() and (overwrite or not out_path.exists()):
        raise ValueError(
            f"output {out_path} is a symbolic link"
            + ("" if out_path.exists() else " to nothing")
            + "; refusing to overwrite through it -- give the real path, or remove the link"
        )


def _check_request(
    dec: Decoder, inp: _Input, in_path: Path, out_path: Path, chunk: Any, overwrite: bool
) -> None:
    _, M, L = inp.shape
    if M != dec.M:
        raise ValueError(f"input has M = {M} measurements per channel; the decoder has {dec.M}")
    if dec.L is not None and L != dec.L:
        raise ValueError(f"input has L = {L} channels; the decoder's model expects {dec.L}")
    if chunk is not None:
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    _check_paths(in_path, out_path, overwrite)


# -- step 2: a fresh run, or the resumed one's record checked ---------------------------


def _describe_change(old: Any, new: dict[str, Any]) -> str:
    old = old if isinstance(old, dict) else {}
    if old.get("name") != new["name"]:
        return f"decoder {old.get('name')!r} then, {new['name']!r} now"
    if old.get("settings") != new["settings"]:
        return f"settings {old.get('settings')} then, {new['settings']} now"
    if "A" in new:
        return "another sensing matrix"
    return "another model (its weights or matrix differ)"


def _check_decoder(m: dict[str, Any], dec: Decoder, dec_fp: dict[str, Any], out: Path) -> None:
    if m["cscore_decode"] == 1:  # an older cscore recorded the config (null for objects)
        try:
            cfg: Any = dec.config
        except ValueError:
            cfg = None
        if cfg is None or m.get("decoder") in (None, cfg):
            return
        what = "its config differs"
    elif m["decoder_sha256"] == fingerprint_sha256(dec_fp):
        return
    else:
        what = _describe_change(m.get("decoder"), dec_fp)
    raise ValueError(
        f"output {out} was written by another decoder configuration ({what}); refusing to "
        "mix two decoders in one output -- use a new output or overwrite=True (--overwrite)"
    )


def _resume_manifest(
    dec: Decoder, dec_fp: dict[str, Any], inp: _Input, in_path: Path, out: Path, chunk: Any
) -> dict[str, Any]:
    """The manifest of the run at ``out``, checked against this request."""
    manifest_path = out / MANIFEST_NAME
    if not manifest_path.is_file():
        raise ValueError(
            f"output {out} exists and is not a cscore decode run "
            "(no manifest); pass overwrite=True (--overwrite) to replace it"
        )
    m = read_manifest(manifest_path)
    if m["input_sha256"] != _fingerprint(inp, m["chunk"]):
        raise ValueError(
            f"input {in_path} has changed since the run that wrote {out} "
            "(its fingerprint differs); refusing to mix results -- use a new output "
            "or overwrite=True (--overwrite)"
        )
    _check_decoder(m, dec, dec_fp, out)
    B, _, L = inp.shape
    cap = max(B, 1)
    if chunk is not None and min(int(chunk), cap) != min(m["chunk"], cap):
        raise ValueError(
            f"output {out} was started with chunk = {m['chunk']}; resume with the same chunk"
        )
    want = ([B, dec.N, L], dec.output_dtype(inp.dtype))
    if (m["shape"], np.dtype(m["dtype"])) != want:
        raise ValueError(
            f"the manifest of {out} records an output of shape {m['shape']} and dtype "
            f"{m['dtype']}, but this input and decoder give {want[0]}, {want[1]}; "
            "refusing to resume -- use a new output or overwrite=True (--overwrite)"
        )
    m["cscore_decode"] = MANIFEST_VERSION
    m["decoder"] = dec_fp
    m["decoder_sha256"] = fingerprint_sha256(dec_fp)
    return m


def _new_manifest(
    dec: Decoder, dec_fp: dict[str, Any], inp: _Input, in_path: Path, chunk: int
) -> dict[str, Any]:
    B, _, L = inp.shape
    return {
        "cscore_decode": MANIFEST_VERSION,
        "input": str(in_path.resolve()),
        "input_sha256": _fingerprint(inp, chunk),
        "shape": [B, dec.N, L],
        "dtype": dec.output_dtype(inp.dtype).str,
        "chunk": chunk,
        "decoder": dec_fp,
        "decoder_sha256": fingerprint_sha256(dec_fp),
        "done": [],
        "chunk_sha256": {},
        "complete": False,
    }


def _array_problem(arr: Any, m: dict[str, Any]) -> str | None:
    """How the zarr array's metadata disagrees with the run's record, or None."""
    want = (tuple(m["shape"]), np.dtype(m["dtype"]), (int(m["chunk"]), *m["shape"][1:]))
    got = (tuple(arr.shape), np.dtype(arr.dtype), tuple(arr.chunks))
    if got == want:
        return None
    return (
        f"the output array has shape {got[0]}, dtype {got[1]} and chunks {got[2]}, but the "
        f"run recorded shape {want[0]}, dtype {want[1]} and chunks {want[2]}: its metadata "
        "(zarr.json) was changed"
    )


def _open_array(run: _Run, dec_cfg: Any) -> Any:
    """The output array: opened and checked against the record, or created from it."""
    import zarr

    m, out = run.manifest, run.out_path
    if (out / "zarr.json").is_file():
        try:
            arr = zarr.open_array(str(out), mode="r+")
        except Exception as exc:  # whatever zarr raises on damaged metadata
            raise ValueError(
                f"the output array's metadata {out / 'zarr.json'} is unreadable ({exc}); "
                "use a new output or overwrite=True (--overwrite)"
            ) from exc
        problem = _array_problem(arr, m)
        if problem is not None:
            raise ValueError(f"refusing to resume {out}: {problem}; use a new output or "
                             "overwrite=True (--overwrite)")  # fmt: skip
        return arr
    # a new run, or a run whose zarr.json is gone: every recorded chunk is verified next
    return zarr.create_array(
        store=str(out),
        shape=tuple(m["shape"]),
        chunks=(run.chunk, *m["shape"][1:]),
        dtype=np.dtype(m["dtype"]),
        fill_value=0,
        attributes={"cscore": {"decoder": dec_cfg, "input_sha256": m["input_sha256"]}},
    )


def _open_run(
    dec: Decoder, inp: _Input, in_path: Path, out: Path, chunk: Any, overwrite: bool
) -> _Run:
    dec_fp = decoder_fingerprint(dec)
    if out.exists() and not overwrite:
        manifest = _resume_manifest(dec, dec_fp, inp, in_path, out, chunk)
    else:
        if out.is_dir():
            shutil.rmtree(out)
        elif out.exists():
            out.unlink()
        B = inp.shape[0]
        c = min(int(chunk), max(B, 1)) if chunk is not None else _default_chunk(inp)
        manifest = _new_manifest(dec, dec_fp, inp, in_path, c)
        out.mkdir(parents=True)
        write_json_atomic(out / MANIFEST_NAME, manifest)
    try:
        dec_cfg: Any = dec.config
    except ValueError:
        dec_cfg = None
    run = _Run(out, manifest)
    run.arr = _open_array(run, dec_cfg)
    for p in out.rglob("*.partial"):  # leftovers of a write killed mid-way
        p.unlink(missing_ok=True)
    return run


# -- step 3: verify what the run recorded -----------------------------------------------


def _verify_recorded(run: _Run) -> list[int]:
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
    run: _Run,
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
    _check_request(dec, inp, in_path, out_path, chunk, overwrite)
    with OutputLock(out_path):
        fresh = overwrite or not out_path.exists()
        run = _open_run(dec, inp, in_path, out_path, chunk, overwrite)
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

    from .distributed import _decode_block

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
                f = client.submit(_decode_block, Y, dec_f, pure=False)
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
