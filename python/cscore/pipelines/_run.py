"""One run of :func:`~cscore.pipelines.decode_file` on disk: its record, checked and opened.

:class:`Run` holds the output, its manifest and array, the recorded chunks and
their checksums (also read by :func:`~cscore.pipelines.verify_output`);
:func:`check_request` refuses a request before anything is touched;
:func:`open_run` starts a fresh run or resumes one after checking its record
against this request (input fingerprint, decoder fingerprint, chunk size, the
output array's shape, dtype and chunks: :func:`array_problem`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..decoders import Decoder
from .inputs import Input
from .inputs import default_chunk as _default_chunk
from .inputs import fingerprint as _fingerprint
from .manifest import (
    MANIFEST_NAME,
    MANIFEST_VERSION,
    chunk_checksum,
    decoder_fingerprint,
    fingerprint_sha256,
    read_manifest,
    write_json_atomic,
)

__all__ = ["Run", "array_problem", "check_request", "open_run"]


@dataclass
class Run:
    """The state of one run: its output, manifest, array, recorded chunks and checksums.

    Parameters
    ----------
    out_path : Path
        The output zarr array (a directory).
    manifest : dict
        The run's record (:mod:`cscore.pipelines.manifest`).
    arr : zarr.Array, optional
        The output array, once opened.
    """

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


def check_request(
    dec: Decoder, inp: Input, in_path: Path, out_path: Path, chunk: Any, overwrite: bool
) -> None:
    """Refuse a request that cannot run, before anything is touched.

    The input's M (and L) must match the decoder's, ``chunk`` be a positive int,
    and the output lie apart from the input (:func:`_check_paths`).
    """
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
    dec: Decoder, dec_fp: dict[str, Any], inp: Input, in_path: Path, out: Path, chunk: Any
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
    dec: Decoder, dec_fp: dict[str, Any], inp: Input, in_path: Path, chunk: int
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


def array_problem(arr: Any, m: dict[str, Any]) -> str | None:
    """How the zarr array's metadata disagrees with the run's record, or None.

    Parameters
    ----------
    arr : zarr.Array
        The output array.
    m : dict
        The run's manifest.

    Returns
    -------
    str or None
        A sentence for the error message, or None when shape, dtype and chunks agree.
    """
    want = (tuple(m["shape"]), np.dtype(m["dtype"]), (int(m["chunk"]), *m["shape"][1:]))
    got = (tuple(arr.shape), np.dtype(arr.dtype), tuple(arr.chunks))
    if got == want:
        return None
    return (
        f"the output array has shape {got[0]}, dtype {got[1]} and chunks {got[2]}, but the "
        f"run recorded shape {want[0]}, dtype {want[1]} and chunks {want[2]}: its metadata "
        "(zarr.json) was changed"
    )


def _open_array(run: Run, dec_cfg: Any) -> Any:
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
        problem = array_problem(arr, m)
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


def open_run(
    dec: Decoder, inp: Input, in_path: Path, out: Path, chunk: Any, overwrite: bool
) -> Run:
    """The run at ``out``: the resumed one (its record checked) or a fresh one.

    Stale ``*.partial`` files of a write killed mid-way are removed; the output
    array is opened (and checked against the record) or created.
    """
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
    run = Run(out, manifest)
    run.arr = _open_array(run, dec_cfg)
    for p in out.rglob("*.partial"):  # leftovers of a write killed mid-way
        p.unlink(missing_ok=True)
    return run
