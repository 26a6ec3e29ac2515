"""A model file's zip container: bounded reading of its .npy entries, atomic writing.

The low-level half of :mod:`cscore.models.format` (which offers
:class:`ModelFileError`, :func:`read_npz_entries` and :func:`save_npz_atomic`
from here).  A model file is opened only if it is a regular file (FIFOs and
devices are refused without being read), the archive's directory is bounded
from its end record before :mod:`zipfile` parses it, and each ``.npy`` header is
parsed by hand (no pickle, no ``eval``) and checked against the expected shape,
dtype and size before the entry's data is decompressed.  Every defect is a
:class:`ModelFileError` naming the file (and the entry).  Writing goes through a
temporary file renamed over the destination (:func:`save_npz_atomic`).
"""

from __future__ import annotations

import ast
import os
import stat
import struct
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = [
    "MAX_DIM",
    "MAX_ENTRIES",
    "READ_ERRORS",
    "ModelFileError",
    "fail",
    "open_archive",
    "read_entry",
    "read_npz_entries",
    "save_npz_atomic",
    "strict_int",
]


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


def fail(path: Path, what: str) -> ModelFileError:
    """The error for defect ``what`` of the file ``path``."""
    return ModelFileError(f"{path}: {what}")


def strict_int(v: Any, lo: int = 0, hi: int = MAX_DIM) -> bool:
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
        raise fail(path, f"cannot open: {exc}") from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ModelFileError(f"{path} is a directory, not a model file")
        if not stat.S_ISREG(st.st_mode):
            raise fail(path, "not a regular file (a FIFO, device or socket is never read)")
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
        raise fail(path, f"archive lists {n_total} entries / {dir_size} directory bytes")


def _read_npy_header(
    path: Path, name: str, f: IO[bytes]
) -> tuple[tuple[int, ...], np.dtype, bool, int]:
    """Parse an .npy header from ``f`` by hand (bounded; no pickle, no eval)."""
    head = f.read(10)
    if len(head) < 10 or head[:6] != b"\x93NUMPY":
        raise fail(path, f"entry {name!r} is not an .npy array")
    major = head[6]
    if major == 1:
        hlen = struct.unpack("<H", head[8:10])[0]
        start = 10
    elif major in (2, 3):
        head += f.read(2)
        if len(head) < 12:
            raise fail(path, f"entry {name!r}: truncated .npy header")
        hlen = struct.unpack("<I", head[8:12])[0]
        start = 12
    else:
        raise fail(path, f"entry {name!r}: unsupported .npy version {major}")
    if hlen > _MAX_NPY_HEADER:
        raise fail(path, f"entry {name!r}: .npy header of {hlen} bytes is too large")
    raw = f.read(hlen)
    if len(raw) < hlen:
        raise fail(path, f"entry {name!r}: truncated .npy header")
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
        if not isinstance(shape, tuple) or not all(strict_int(n, 0, 1 << 62) for n in shape):
            raise ValueError("shape")
        dtype = np.dtype(descr)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise fail(path, f"entry {name!r}: malformed .npy header ({exc})") from None
    return shape, dtype, fortran, start + hlen


def read_entry(
    path: Path, zf: zipfile.ZipFile, name: str, want_shape: tuple[int, ...] | None,
    dtypes: tuple[str, ...], max_bytes: int,
) -> np.ndarray:
    """Read entry ``name``.npy, checking its header against the spec before its data."""
    info = zf.getinfo(name + ".npy")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise fail(path, f"entry {name!r}: unsupported compression {info.compress_type}")
    if info.flag_bits & 0x1:
        raise fail(path, f"entry {name!r} is encrypted")
    with zf.open(info) as f:
        shape, dtype, fortran, hdr = _read_npy_header(path, name, f)
        if dtype.hasobject or dtype.str not in dtypes:
            raise fail(path, f"entry {name!r} has dtype {dtype}; expected one of {list(dtypes)}")
        if want_shape is not None and shape != want_shape:
            raise fail(path, f"entry {name!r} has shape {shape}, expected {want_shape}")
        if len(shape) != 1 and want_shape is None:
            raise fail(path, f"entry {name!r} must be 1-D, has shape {shape}")
        count = 1
        for n in shape:
            count *= n
        nbytes = count * dtype.itemsize
        if nbytes > max_bytes:
            raise fail(path, f"entry {name!r} declares {nbytes} bytes (cap {max_bytes})")
        if info.file_size != hdr + nbytes:
            raise fail(
                path,
                f"entry {name!r}: archive size {info.file_size} disagrees with its "
                f".npy header ({hdr + nbytes} bytes)",
            )
        data = f.read(nbytes)
        if len(data) != nbytes:
            raise fail(path, f"entry {name!r} is truncated")
        f.read(1)  # reach the end of the member: zipfile checks its CRC there
    arr = np.frombuffer(data, dtype=dtype)
    shaped = arr.reshape(shape, order="F") if fortran else arr.reshape(shape)
    return np.ascontiguousarray(shaped).copy()


#: What reading a damaged archive or entry can raise (turned into ModelFileError).
READ_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, struct.error, ValueError,
                NotImplementedError, RuntimeError, KeyError, OverflowError, MemoryError)




def open_archive(path: Path) -> tuple[IO[bytes], zipfile.ZipFile]:
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
            raise fail(path, f"archive lists {len(names)} entries")
        if len(set(names)) != len(names):
            raise fail(path, "archive lists an entry twice")
        return fh, zf
    except BaseException as exc:
        fh.close()
        if isinstance(exc, READ_ERRORS) and not isinstance(
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
                    raise fail(path, f"archive lists {len(names)} entries, or one twice")
                headers = []
                for name in names:
                    if not name.endswith(".npy"):
                        raise fail(path, f"entry {name!r} is not an .npy array")
                    with zf.open(name) as f:
                        shape, dtype, _, _ = _read_npy_header(path, name[:-4], f)
                    if dtype.hasobject or dtype.kind not in kinds:
                        raise fail(path, f"entry {name[:-4]!r} has dtype {dtype}")
                    headers.append((name[:-4], shape, dtype))
                total = sum(int(np.prod(s, dtype=object)) * d.itemsize for _, s, d in headers)
                if total > max_bytes:
                    raise fail(path, f"declared sizes total {total} bytes (cap {max_bytes})")
                # (reshaped: read_entry returns a 0-d array as 1-d)
                return {n: read_entry(path, zf, n, s, (d.str,), max_bytes).reshape(s)
                        for n, s, d in headers}
        except ModelFileError:
            raise
        except READ_ERRORS as exc:
            raise ModelFileError(f"{path} is not a readable .npz model file: {exc}") from None


def _umask() -> int:
    """The process's file-creation mask (read without changing it where possible)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:  # elsewhere: set and restore it at once
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_UMASK_LOCK = threading.Lock()


def save_npz_atomic(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` as a compressed ``.npz`` at ``path``, atomically.

    The archive goes to a temporary file in the same folder, is flushed and
    fsync'ed, then renamed over ``path``: a failure at any point (disk full,
    quota, a signal) leaves an existing ``path`` untouched and no temporary
    file behind.  Every model format of cscore saves through this function.

    Parameters
    ----------
    path : path
        Destination (replaced if it exists).
    arrays : mapping of str to ndarray
        Entry names and arrays (no object arrays).
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, allow_pickle=False, **arrays)  # type: ignore[arg-type]
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # as open() would create it (mkstemp makes 0600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
