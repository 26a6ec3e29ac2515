"""The inputs of :func:`cscore.decode_file`: ``.npy`` files and zarr arrays, read in slabs.

:func:`open_input` opens a (B, M, L) array of real numbers without loading it;
``read(i0, i1)`` returns rows ``i0:i1``.  :func:`input_fingerprint` is the sha256 a
run records to refuse an input that changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Union

import numpy as np

__all__ = ["Input", "default_chunk", "fingerprint", "input_fingerprint", "open_input"]


class _NpyInput:
    """A C-ordered ``.npy`` file read one slab at a time through a short-lived memmap.

    Each slab is mapped, copied and unmapped, so resident memory stays at one
    slab however large the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as f:
            try:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            except (EOFError, ValueError):
                f.seek(0)
                what = "an .npz archive" if f.read(2) == b"PK" else "not a .npy file"
                raise ValueError(
                    f"input {path} is {what}: give one (B, M, L) array saved with np.save "
                    "(.npy), or a zarr array directory") from None
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


Input = Union[_NpyInput, _ZarrInput]


def open_input(path: Path) -> Input:
    if not path.exists():
        raise FileNotFoundError(f"input not found: {path}")
    inp: Input = _NpyInput(path) if path.is_file() else _ZarrInput(path)
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
    return fingerprint(open_input(Path(path)), chunk)


def fingerprint(inp: Input, chunk: int) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"shape": list(inp.shape), "dtype": inp.dtype.str}).encode())
    B = inp.shape[0]
    for i0 in range(0, B, chunk):
        h.update(np.ascontiguousarray(inp.read(i0, min(B, i0 + chunk))).data)
    return h.hexdigest()


def default_chunk(inp: Input) -> int:
    per = int(np.prod(inp.shape[1:], dtype=np.int64)) * 8
    c = max(1, (4 << 20) // max(per, 1))
    if c >= 128:
        c -= c % 64
    return int(min(c, max(inp.shape[0], 1)))
