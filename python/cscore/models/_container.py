"""Bounded reading of a model file's zip container and its .npy entries.

The low-level half of :mod:`cscore.models.format`, which imports everything
here back: a model file is opened only if it is a regular file (FIFOs and
devices are refused without being read), the archive's directory is bounded
from its end record before :mod:`zipfile` parses it, and each ``.npy`` header is
parsed by hand (no pickle, no ``eval``) and checked against the expected shape,
dtype and size before the entry's data is decompressed.  Every defect is a
:class:`ModelFileError` naming the file (and the entry).
"""

from __future__ import annotations

import ast
import os
import stat
import struct
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["MAX_DIM", "MAX_ENTRIES", "ModelFileError"]


class ModelFileError(ValueError):
    """A model file is malformed, of another format, or inconsistent.

    The one error class of every cscore model file; the sequence-model and text
    loaders raise subclasses of it.
    """

    # defined here for the readers below, documented and exported by the format
    # module: tracebacks and pickles name it where users import it from
    __module__ = "cscore.models.format"


#: Largest dimension accepted in ``meta`` (M, N, L, n_cells, ...).
MAX_DIM = 1 << 20
#: Most entries a model archive may list (checked before the directory is parsed).
MAX_ENTRIES = 64
#: Largest central directory accepted (bytes).
_MAX_DIRECTORY_BYTES = 1 << 20
#: Largest .npy header accepted (bytes).
_MAX_NPY_HEADER = 1 << 14


def _fail(path: Path, what: str) -> ModelFileError:
    """The error for defect ``what`` of the file ``path``."""
    return ModelFileError(f"{path}: {what}")


def _strict_int(v: Any, lo: int = 0, hi: int = MAX_DIM) -> bool:
    """``v`` is an int (not a bool) in ``[lo, hi]``."""
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _open_regular(path: Path) -> IO[bytes]:
    """Open ``path`` for reading; refuse anything but a regular file, never block."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileNotFoundError(f"no model file at {path}") from None
    except IsADirectoryError:
        raise ModelFileError(f"{path} is a directory, not a model file") from None
    except OSError as exc:
        raise _fail(path, f"cannot open: {exc}") from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ModelFileError(f"{path} is a directory, not a model file")
        if not stat.S_ISREG(st.st_mode):
            raise _fail(path, "not a regular file (a FIFO, device or socket is never read)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_directory(path: Path, fh: IO[bytes], max_entries: int = MAX_ENTRIES) -> None:
    """Bound the archive's directory from its end record before zipfile parses it."""
    size = fh.seek(0, os.SEEK_END)
    if size < 22:
        raise ModelFileError(
            f"{path} is not a model file: not an .npz (zip) archive"
            + (" (the file is empty)" if size == 0 else "")
        )
    tail_len = min(size, 22 + 65535)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    pos = tail.rfind(b"PK\x05\x06")
    if pos < 0 or len(tail) - pos < 22:
        raise ModelFileError(f"{path} is not a model file: not an .npz (zip) archive")
    _, _, _, n_here, n_total, dir_size, _, _ = struct.unpack("<4sHHHHIIH", tail[pos : pos + 22])
    if n_total == 0xFFFF or dir_size == 0xFFFFFFFF:
        return  # zip64 end record: zipfile reads the real counts; checked after
    if max(n_here, n_total) > max_entries or dir_size > _MAX_DIRECTORY_BYTES:
        raise _fail(path, f"archive lists {n_total} entries / {dir_size} directory bytes")


def _read_npy_header(
    path: Path, name: str, f: IO[bytes]
) -> tuple[tuple[int, ...], np.dtype, bool, int]:
    """Parse an .npy header from ``f`` by hand (bounded; no pickle, no eval)."""
    head = f.read(10)
    if len(head) < 10 or head[:6] != b"\x93NUMPY":
        raise _fail(path, f"entry {name!r} is not an .npy array")
    major = head[6]
    if major == 1:
        hlen = struct.unpack("<H", head[8:10])[0]
        start = 10
    elif major in (2, 3):
        head += f.read(2)
        if len(head) < 12:
            raise _fail(path, f"entry {name!r}: truncated .npy header")
        hlen = struct.unpack("<I", head[8:12])[0]
        start = 12
    else:
        raise _fail(path, f"entry {name!r}: unsupported .npy version {major}")
    if hlen > _MAX_NPY_HEADER:
        raise _fail(path, f"entry {name!r}: .npy header of {hlen} bytes is too large")
    raw = f.read(hlen)
    if len(raw) < hlen:
        raise _fail(path, f"entry {name!r}: truncated .npy header")
    try:
        text = raw.decode("latin1" if major < 3 else "utf-8")
        if len(text) > 2000 or text.count("(") > 4 or text.count("{") > 1:
            raise ValueError("header too complex")
        d = ast.literal_eval(text)
        if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
            raise ValueError("keys")
        descr, fortran, shape = d["descr"], d["fortran_order"], d["shape"]
        if not isinstance(descr, str) or not isinstance(fortran, bool):
            raise ValueError("descr/fortran_order")
        if not isinstance(shape, tuple) or not all(_strict_int(n, 0, 1 << 62) for n in shape):
            raise ValueError("shape")
        dtype = np.dtype(descr)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise _fail(path, f"entry {name!r}: malformed .npy header ({exc})") from None
    return shape, dtype, fortran, start + hlen


def _read_entry(
    path: Path, zf: zipfile.ZipFile, name: str, want_shape: tuple[int, ...] | None,
    dtypes: tuple[str, ...], max_bytes: int,
) -> np.ndarray:
    """Read entry ``name``.npy, checking its header against the spec before its data."""
    info = zf.getinfo(name + ".npy")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise _fail(path, f"entry {name!r}: unsupported compression {info.compress_type}")
    if info.flag_bits & 0x1:
        raise _fail(path, f"entry {name!r} is encrypted")
    with zf.open(info) as f:
        shape, dtype, fortran, hdr = _read_npy_header(path, name, f)
        if dtype.hasobject or dtype.str not in dtypes:
            raise _fail(path, f"entry {name!r} has dtype {dtype}; expected one of {list(dtypes)}")
        if want_shape is not None and shape != want_shape:
            raise _fail(path, f"entry {name!r} has shape {shape}, expected {want_shape}")
        if len(shape) != 1 and want_shape is None:
            raise _fail(path, f"entry {name!r} must be 1-D, has shape {shape}")
        count = 1
        for n in shape:
            count *= n
        nbytes = count * dtype.itemsize
        if nbytes > max_bytes:
            raise _fail(path, f"entry {name!r} declares {nbytes} bytes (cap {max_bytes})")
        if info.file_size != hdr + nbytes:
            raise _fail(
                path,
                f"entry {name!r}: archive size {info.file_size} disagrees with its "
                f".npy header ({hdr + nbytes} bytes)",
            )
        data = f.read(nbytes)
        if len(data) != nbytes:
            raise _fail(path, f"entry {name!r} is truncated")
        f.read(1)  # reach the end of the member: zipfile checks its CRC there
    arr = np.frombuffer(data, dtype=dtype)
    shaped = arr.reshape(shape, order="F") if fortran else arr.reshape(shape)
    return np.ascontiguousarray(shaped).copy()


#: What reading a damaged archive or entry can raise (turned into ModelFileError).
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, struct.error, ValueError,
                NotImplementedError, RuntimeError, KeyError, OverflowError, MemoryError)




def _open_archive(path: Path) -> tuple[IO[bytes], zipfile.ZipFile]:
    """Open ``path`` as a zip archive of at most :data:`MAX_ENTRIES` distinct entries.

    Returns the open file and the archive (close the file when done); any
    failure to parse it is a :class:`ModelFileError`.
    """
    fh = _open_regular(path)
    try:
        _check_directory(path, fh)
        fh.seek(0)
        zf = zipfile.ZipFile(fh)
        names = [i.filename for i in zf.infolist()]
        if len(names) > MAX_ENTRIES:
            raise _fail(path, f"archive lists {len(names)} entries")
        if len(set(names)) != len(names):
            raise _fail(path, "archive lists an entry twice")
        return fh, zf
    except BaseException as exc:
        fh.close()
        if isinstance(exc, _READ_ERRORS) and not isinstance(
            exc, (ModelFileError, FileNotFoundError)
        ):
            raise ModelFileError(f"{path} is not a readable .npz model file: {exc}") from None
        raise


def read_npz_entries(
    path: str | Path,
    kinds: str,
    *,
    max_entries: int = MAX_ENTRIES,
    max_bytes: int = 256 << 20,
) -> dict[str, np.ndarray]:
    """Read every array of a plain ``.npz`` archive with the model file's bounds.

    For the formats that are not :data:`cscore.models.format.FORMAT_NAME` files
    (the sequence-model and text-model files): the file is opened as a regular file without
    blocking, the archive's directory is bounded from its end record before it
    is parsed, every entry's ``.npy`` header is parsed by hand (no pickle) and
    the declared sizes are summed and capped before any data is decompressed.

    Parameters
    ----------
    path : path
        The ``.npz`` file.
    kinds : str
        The numpy dtype kinds an entry may have (e.g. ``"fu"``); object arrays
        are always refused.
    max_entries : int
        Most entries the archive may list.
    max_bytes : int
        Largest total size of the arrays once decompressed (bytes).

    Returns
    -------
    dict of str to ndarray
        Entry name (without ``.npy``) -> array, in archive order.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Anything wrong with the file, naming the entry concerned.
    """
    path = Path(path)
    with _open_regular(path) as fh:
        try:
            _check_directory(path, fh, max_entries)
            fh.seek(0)
            with zipfile.ZipFile(fh) as zf:
                infos = zf.infolist()
                names = [i.filename for i in infos]
                if len(names) > max_entries or len(set(names)) != len(names):
                    raise _fail(path, f"archive lists {len(names)} entries, or one twice")
                headers = []
                for name in names:
                    if not name.endswith(".npy"):
                        raise _fail(path, f"entry {name!r} is not an .npy array")
                    with zf.open(name) as f:
                        shape, dtype, _, _ = _read_npy_header(path, name[:-4], f)
                    if dtype.hasobject or dtype.kind not in kinds:
                        raise _fail(path, f"entry {name[:-4]!r} has dtype {dtype}")
                    headers.append((name[:-4], shape, dtype))
                total = sum(int(np.prod(s, dtype=object)) * d.itemsize for _, s, d in headers)
                if total > max_bytes:
                    raise _fail(path, f"declared sizes total {total} bytes (cap {max_bytes})")
                # (reshaped: _read_entry returns a 0-d array as 1-d)
                return {n: _read_entry(path, zf, n, s, (d.str,), max_bytes).reshape(s)
                        for n, s, d in headers}
        except ModelFileError:
            raise
        except _READ_ERRORS as exc:
            raise ModelFileError(f"{path} is not a readable .npz model file: {exc}") from None
