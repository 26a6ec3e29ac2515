"""LSTM-CS models: the problem spec, the weight layout and the model file.

Weight layout (the contract between training, the file and the C++ decoder)
-----------------------------------------------------------------------------
``H`` cells, input size ``M`` (the residual lives in the measurement domain),
output size ``N`` (one logit per atom).  Gates are stacked in the rows of the
input, recurrent and bias arrays, in the order given by ``cell``:

* ``cell="paper"`` (the model Palangi et al. ran; no forget gate, no peepholes),
  ``G = 3`` gates in the order ``i, g, o``::

      i = sigmoid(W_i x + R_i v' + b_i)
      g = tanh(W_g x + R_g v' + b_g)
      c = c' + i * g
      o = sigmoid(W_o x + R_o v' + b_o)
      v = o * tanh(c)

* ``cell="lstm"`` (standard LSTM with forget gate), ``G = 4`` gates in the order
  ``i, f, g, o`` (PyTorch's order), ``c = f * c' + i * g``.

Then ``z = U v + c_out`` and ``softmax(z)`` over the N atoms.

Arrays (all float32 in the file): ``W`` (G*H, M), ``R`` (G*H, H), ``b`` (G*H,),
``U`` (N, H), ``c_out`` (N,).

Architectures (``arch`` in the metadata; "lstm" when absent, as in files written
before the field existed), with the arrays each needs (:data:`ARCH_ARRAYS`):

* ``"lstm"``: the unidirectional LSTM-CS above.
* ``"blstm"``: bidirectional LSTM-CS (thesis section 4.6).  A forward LSTM
  (``W``, ``R``, ``b``) runs over channels ``0..L-1`` and a backward one (``Wb``,
  ``Rb``, ``bb``, same shapes, same cell type) over ``L-1..0``; at channel j the
  two outputs are concatenated, ``z = U [v_fwd; v_bwd] + c_out`` with ``U``
  (N, 2H).  See :class:`BLSTMCSWeights`.

Input to the LSTM at channel j is the channel's residual divided by its largest
absolute entry (``x = r / max|r|``, zero stays zero).  The state (v, c) starts at
zero for channel 0 of every greedy iteration and is carried from channel j-1 to
channel j.

File format
-----------
An ``.npz`` archive (``numpy.savez``, readable with ``allow_pickle=False``) with
the arrays above, the sensing matrix ``A`` (float64, (M, N)) and ``meta``: a
uint8 array holding UTF-8 JSON with ``format``, ``version``, ``cell``,
``n_cells`` and the :class:`ProblemSpec` fields, plus free-form ``info``
(training settings, data provenance), and optionally ``arch`` (the architecture,
"lstm" when absent; see :data:`ARCH_ARRAYS` for the arrays of each).

Loading is bounded: only the entries the format defines are read, each one's
declared shape, dtype and size are checked against the metadata before its data
is decompressed, ``meta`` is capped (:data:`MAX_META_BYTES`) and so is the total
(:data:`MAX_ARRAYS_BYTES`); FIFOs and devices are refused without being read.
Every defect is a :class:`ModelFileError` naming the entry.  Saving is atomic
(:func:`save_npz_atomic`).
"""

from __future__ import annotations

import ast
import json
import os
import stat
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any, ClassVar

import numpy as np

__all__ = [
    "ARCH_ARRAYS",
    "ARCH_SHAPES",
    "CELL_GATES",
    "COMMON_ARRAYS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "BLSTMCSWeights",
    "LSTMCSWeights",
    "ModelFileError",
    "ProblemSpec",
    "load_model_file",
    "model_dims",
    "read_model_arrays",
    "read_model_meta",
    "save_model_file",
    "save_npz_atomic",
]

FORMAT_NAME = "cscore.lstm_cs"
FORMAT_VERSION = 1

#: gate order per cell type
CELL_GATES: dict[str, str] = {"paper": "igo", "lstm": "ifgo"}

_TRANSFORMS = ("none", "dct", "haar")


class ModelFileError(ValueError):
    """A model file is malformed, of another format, or inconsistent."""


@dataclass(frozen=True)
class ProblemSpec:
    """What a model was trained for: sizes and how signals were made sparse.

    Attributes
    ----------
    M, N, L : int
        Measurements per channel, atoms (signal length), channels per problem.
    block_size : int
        Side of the square image block a channel's signal comes from
        (``N == block_size**2``), or 0 when the signals are not image blocks.
    transform : {"none", "dct", "haar"}
        Sparsifying transform applied to each block ("none": pixels are sparse).
    levels : int
        Haar decomposition levels (0 unless ``transform == "haar"``).
    image_size : int
        Side of the (resized) images blocks were cut from, 0 if not images.
    vectorization : str
        How a block becomes a vector: "column-major" (MATLAB's ``(:)``), the
        block order being column-major too (MATLAB ``im2col(..., 'distinct')``).
    dataset : str
        Where the training signals came from (free text, e.g. "mnist").
    """

    M: int
    N: int
    L: int
    block_size: int = 0
    transform: str = "none"
    levels: int = 0
    image_size: int = 0
    vectorization: str = "column-major"
    dataset: str = ""

    def __post_init__(self) -> None:
        for name in ("M", "N", "L"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"ProblemSpec.{name} must be a positive int, got {v!r}")
        if self.transform not in _TRANSFORMS:
            raise ValueError(
                f"ProblemSpec.transform must be one of {_TRANSFORMS}, got {self.transform!r}"
            )
        if self.block_size and self.block_size**2 != self.N:
            raise ValueError(
                f"ProblemSpec: block_size**2 ({self.block_size**2}) must equal N ({self.N})"
            )


class _WeightsMixin:
    """What LSTMCSWeights and BLSTMCSWeights share: the gate count, validation, casting.

    Subclasses (dataclasses) set ``arch`` and ``_ARRAYS`` (their array fields).
    """

    arch: ClassVar[str]
    _ARRAYS: ClassVar[tuple[str, ...]]
    cell: str

    @property
    def n_gates(self) -> int:
        """Number of gates G (3 for the paper's cell, 4 with a forget gate)."""
        return len(CELL_GATES[self.cell])

    def validate(self, M: int, N: int) -> None:
        """Check shapes, dtypes and finiteness; raise :class:`ModelFileError`.

        Parameters
        ----------
        M, N : int
            Measurements and atoms of the problems the weights must fit.
        """
        _check_weight_arrays(self, self.arch, M, N)

    def _cast_arrays(self, dtype: Any) -> dict[str, np.ndarray]:
        """Every array of ``_ARRAYS`` cast to ``dtype`` (C-contiguous), by name."""
        return {k: np.ascontiguousarray(getattr(self, k), dtype=dtype) for k in self._ARRAYS}


@dataclass
class LSTMCSWeights(_WeightsMixin):
    """LSTM-CS weights in the layout described in this module's docstring."""

    W: np.ndarray
    R: np.ndarray
    b: np.ndarray
    U: np.ndarray
    c_out: np.ndarray
    cell: str = "paper"
    extra: dict[str, Any] = field(default_factory=dict)

    arch: ClassVar[str] = "lstm"
    _ARRAYS: ClassVar[tuple[str, ...]] = ("W", "R", "b", "U", "c_out")

    @property
    def n_cells(self) -> int:
        """Number of LSTM cells H."""
        return int(self.R.shape[1])

    def astype(self, dtype: Any) -> LSTMCSWeights:
        """Return a copy with every array cast to ``dtype`` (C-contiguous).

        Parameters
        ----------
        dtype : dtype
            float32 or float64.

        Returns
        -------
        LSTMCSWeights
        """
        return LSTMCSWeights(**self._cast_arrays(dtype), cell=self.cell, extra=dict(self.extra))


def _check_weight_arrays(weights: Any, arch: str, M: int, N: int) -> None:
    """Check ``weights``' arrays against :data:`ARCH_ARRAYS`; raise ModelFileError."""
    if weights.cell not in CELL_GATES:
        raise ModelFileError(f"unknown cell type {weights.cell!r}; known: {list(CELL_GATES)}")
    R = getattr(weights, "R", None)
    if not isinstance(R, np.ndarray) or R.ndim != 2 or R.shape[1] < 1:
        shape = getattr(R, "shape", None)
        raise ModelFileError(f"weight R must be 2-D (G*H, H), got shape {shape}")
    G, H = len(CELL_GATES[weights.cell]), int(R.shape[1])
    dims = {"G": G, "H": H, "M": M, "N": N}
    for name, rule in ARCH_ARRAYS[arch].items():
        arr = getattr(weights, name)
        shape = rule(dims)
        if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
            raise ModelFileError(f"weight {name} must be a float array")
        if arr.shape != shape:
            raise ModelFileError(
                f"weight {name} has shape {arr.shape}, expected {shape} "
                f"(arch={arch!r}, cell={weights.cell!r}, H={H}, M={M}, N={N})"
            )
        if not np.isfinite(arr).all():
            raise ModelFileError(f"weight {name} contains NaN or infinity")


@dataclass
class BLSTMCSWeights(_WeightsMixin):
    """Bidirectional LSTM-CS weights (``arch="blstm"``, see the module docstring).

    ``W, R, b`` are the forward LSTM's, ``Wb, Rb, bb`` the backward one's (same
    layout), ``U`` (N, 2H) maps ``[v_fwd; v_bwd]`` to the logits.
    """

    W: np.ndarray
    R: np.ndarray
    b: np.ndarray
    Wb: np.ndarray
    Rb: np.ndarray
    bb: np.ndarray
    U: np.ndarray
    c_out: np.ndarray
    cell: str = "paper"
    extra: dict[str, Any] = field(default_factory=dict)

    arch: ClassVar[str] = "blstm"
    _ARRAYS: ClassVar[tuple[str, ...]] = ("W", "R", "b", "Wb", "Rb", "bb", "U", "c_out")

    @property
    def n_cells(self) -> int:
        """Cells H of each direction (0 if ``R`` is not 2-D)."""
        R = np.asarray(self.R)
        return int(R.shape[1]) if R.ndim == 2 else 0

    def astype(self, dtype: Any) -> BLSTMCSWeights:
        """Return a copy with every array cast to ``dtype`` (C-contiguous).

        Parameters
        ----------
        dtype : dtype
            float32 or float64.

        Returns
        -------
        BLSTMCSWeights
        """
        return BLSTMCSWeights(**self._cast_arrays(dtype), cell=self.cell, extra=dict(self.extra))

    def direction(self, backward: bool) -> LSTMCSWeights:
        """One direction as unidirectional weights (its half of ``U``, ``c_out`` zero).

        Parameters
        ----------
        backward : bool
            The backward LSTM (else the forward one).

        Returns
        -------
        LSTMCSWeights
            Its logits are that direction's contribution to ``U [v_f; v_b]``.
        """
        H = self.n_cells
        W, R, b = (self.Wb, self.Rb, self.bb) if backward else (self.W, self.R, self.b)
        U = self.U[:, H:] if backward else self.U[:, :H]
        return LSTMCSWeights(W=W, R=R, b=b, U=np.ascontiguousarray(U),
                             c_out=np.zeros_like(self.c_out), cell=self.cell)


def weights_arch(weights: LSTMCSWeights | BLSTMCSWeights) -> str:
    """The architecture name of a weights object ("lstm" or "blstm")."""
    return "blstm" if isinstance(weights, BLSTMCSWeights) else "lstm"


# --------------------------------------------------------------------------
# The table of what a model file holds, per architecture.

#: Shape rule of one array: a function of the file's dimensions (see
#: :func:`model_dims`) returning the exact shape the array must have.
ShapeRule = Callable[[Mapping[str, int]], tuple[int, ...]]

#: Arrays every model file holds whatever its architecture.
COMMON_ARRAYS: dict[str, ShapeRule] = {"A": lambda d: (d["M"], d["N"])}

#: Architecture (``meta["arch"]``, "lstm" when absent) -> the arrays its files
#: hold besides ``meta`` and :data:`COMMON_ARRAYS`, each with its shape rule.
#: The loader reads exactly these entries (nothing else is allowed in the file)
#: and checks each declared shape before reading any data; a new architecture is
#: one entry here (with its dimensions in ``meta``, see :func:`model_dims`).
ARCH_ARRAYS: dict[str, dict[str, ShapeRule]] = {
    "lstm": {
        "W": lambda d: (d["G"] * d["H"], d["M"]),
        "R": lambda d: (d["G"] * d["H"], d["H"]),
        "b": lambda d: (d["G"] * d["H"],),
        "U": lambda d: (d["N"], d["H"]),
        "c_out": lambda d: (d["N"],),
    },
    "blstm": {
        "W": lambda d: (d["G"] * d["H"], d["M"]),
        "R": lambda d: (d["G"] * d["H"], d["H"]),
        "b": lambda d: (d["G"] * d["H"],),
        "Wb": lambda d: (d["G"] * d["H"], d["M"]),
        "Rb": lambda d: (d["G"] * d["H"], d["H"]),
        "bb": lambda d: (d["G"] * d["H"],),
        "U": lambda d: (d["N"], 2 * d["H"]),
        "c_out": lambda d: (d["N"],),
    },
}

#: Architectures whose arrays depend on their metadata (a stack of modules, say):
#: ``arch -> shapes(meta) -> {entry name: shape}``, with ``meta`` already checked
#: by the loader.  Registered by the module that defines the architecture
#: (:mod:`cscore.learned` registers "nwsomp" and "cdsn"); read through the same
#: bounded loader as :data:`ARCH_ARRAYS`.
ARCH_SHAPES: dict[str, Callable[[Mapping[str, Any]], dict[str, tuple[int, ...]]]] = {}

#: Largest ``meta`` entry accepted (bytes of JSON).
MAX_META_BYTES = 1 << 20
#: Largest total size of a file's arrays once decompressed (bytes).  Shipped
#: models are a few MB; the cap keeps a hostile file from costing more.
MAX_ARRAYS_BYTES = 256 << 20
#: Largest dimension accepted in ``meta`` (M, N, L, n_cells, ...).
MAX_DIM = 1 << 20
#: Most entries a model archive may list (checked before the directory is parsed).
MAX_ENTRIES = 64
#: Largest central directory accepted (bytes).
_MAX_DIRECTORY_BYTES = 1 << 20
#: Largest .npy header accepted (bytes).
_MAX_NPY_HEADER = 1 << 14
#: Array dtypes a model file may use (little-endian floats; uint8 for meta).
_FLOAT_DTYPES = ("<f4", "<f8")


def _fail(path: Path, what: str) -> ModelFileError:
    return ModelFileError(f"{path}: {what}")


def _strict_int(v: Any, lo: int = 0, hi: int = MAX_DIM) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def model_dims(meta: Mapping[str, Any]) -> dict[str, int]:
    """Dimensions the shape rules of :data:`ARCH_ARRAYS` are written in.

    ``M``, ``N``, ``L`` from ``meta["spec"]``; ``H`` = ``meta["n_cells"]`` and
    ``G`` = gates of ``meta["cell"]`` when present; and every other top-level
    integer field of ``meta`` under its own name (so a new architecture can
    declare its own sizes there).

    Parameters
    ----------
    meta : mapping
        Checked metadata (see :func:`read_model_meta`).

    Returns
    -------
    dict of str to int
    """
    spec = meta["spec"]
    dims = {k: int(v) for k, v in meta.items() if _strict_int(v)}
    dims.update(M=int(spec["M"]), N=int(spec["N"]), L=int(spec["L"]))
    if "n_cells" in meta:
        dims["H"] = int(meta["n_cells"])
    if meta.get("cell") in CELL_GATES:
        dims["G"] = len(CELL_GATES[meta["cell"]])
    return dims


def _check_meta(path: Path, meta: Any) -> dict[str, Any]:
    """Type-check metadata strictly; every problem is a ModelFileError."""
    if not isinstance(meta, dict):
        raise _fail(path, f"metadata must be a JSON object, got {type(meta).__name__}")
    if meta.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path} is not a {FORMAT_NAME} file")
    version = meta.get("version")
    if not _strict_int(version, 0) or version != FORMAT_VERSION:
        raise _fail(
            path, f"format version {version!r}; this cscore reads version {FORMAT_VERSION}"
        )
    arch = meta.get("arch", "lstm")
    if not isinstance(arch, str) or (arch not in ARCH_ARRAYS and arch not in ARCH_SHAPES):
        raise _fail(
            path, f"unknown architecture {arch!r}; known: {sorted({*ARCH_ARRAYS, *ARCH_SHAPES})}"
        )
    if "cell" in meta and meta["cell"] not in CELL_GATES:
        raise _fail(path, f"unknown cell type {meta['cell']!r}; known: {list(CELL_GATES)}")
    if "n_cells" in meta and not _strict_int(meta["n_cells"], 1):
        raise _fail(path, f"n_cells must be an int in [1, {MAX_DIM}], got {meta['n_cells']!r}")
    if arch in ("lstm", "blstm") and ("cell" not in meta or "n_cells" not in meta):
        raise _fail(path, "metadata lacks 'cell' or 'n_cells'")
    for k, v in meta.items():
        if isinstance(v, int) and not isinstance(v, bool) and not _strict_int(v, 0):
            raise _fail(path, f"metadata field {k!r} = {v} is out of range")
    spec = meta.get("spec")
    if not isinstance(spec, dict):
        raise _fail(path, "metadata 'spec' must be an object")
    # the fields of ProblemSpec, typed from its annotations (so a new field needs
    # no change here)
    ints = {f.name: (1 if f.name in ("M", "N", "L") else 0)
            for f in fields(ProblemSpec) if f.type in ("int", int)}  # fmt: skip
    strs = tuple(f.name for f in fields(ProblemSpec) if f.type in ("str", str))
    known = set(ints) | set(strs)
    extra = set(spec) - known
    if extra:
        raise _fail(path, f"bad problem spec: unknown fields {sorted(extra)}")
    for k, lo in ints.items():
        if k in spec and not _strict_int(spec[k], lo):
            raise _fail(path, f"bad problem spec: {k} must be an int >= {lo}, got {spec[k]!r}")
    for k in strs:
        if k in spec and not isinstance(spec[k], str):
            raise _fail(path, f"bad problem spec: {k} must be a string, got {spec[k]!r}")
    for k in ("M", "N", "L"):
        if k not in spec:
            raise _fail(path, f"bad problem spec: {k} missing")
    info = meta.get("info", {})
    if info is None:
        info = {}
    if not isinstance(info, dict):
        raise _fail(path, f"metadata 'info' must be an object, got {type(info).__name__}")
    out = dict(meta)
    out["arch"] = arch
    out["info"] = info
    return out


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


def _check_directory(path: Path, fh: IO[bytes]) -> None:
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
    if max(n_here, n_total) > MAX_ENTRIES or dir_size > _MAX_DIRECTORY_BYTES:
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


def _open_archive(path: Path) -> tuple[IO[bytes], zipfile.ZipFile]:
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
        if isinstance(exc, (zipfile.BadZipFile, zlib.error, OSError, EOFError, struct.error,
                            ValueError, NotImplementedError, RuntimeError, KeyError,
                            OverflowError, MemoryError)) and not isinstance(
            exc, (ModelFileError, FileNotFoundError)
        ):
            raise ModelFileError(f"{path} is not a readable .npz model file: {exc}") from None
        raise


_READ_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, struct.error, ValueError,
                NotImplementedError, RuntimeError, KeyError, OverflowError, MemoryError)


def _meta_from(path: Path, zf: zipfile.ZipFile) -> dict[str, Any]:
    if "meta.npy" not in zf.NameToInfo:
        raise _fail(path, "no metadata (entry 'meta' missing)")
    blob = _read_entry(path, zf, "meta", None, ("|u1",), MAX_META_BYTES)
    try:
        meta = json.loads(blob.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _fail(path, f"entry 'meta': metadata is not valid JSON: {str(exc)[:200]}") from None
    return _check_meta(path, meta)


def read_model_meta(path: str | Path) -> dict[str, Any]:
    """Read and check only the metadata of a model file (cheap and bounded).

    Parameters
    ----------
    path : path
        A model file.

    Returns
    -------
    dict
        The checked metadata (``arch`` filled in, ``info`` a dict).

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Anything wrong with the file.
    """
    path = Path(path)
    fh, zf = _open_archive(path)
    try:
        with fh, zf:
            return _meta_from(path, zf)
    except ModelFileError:
        raise
    except _READ_ERRORS as exc:
        raise _fail(path, f"unreadable entry 'meta': {exc}") from None


def read_model_arrays(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a model file of any architecture of :data:`ARCH_ARRAYS`, bounded.

    Only the entries the format defines for the file's architecture are read;
    each one's declared shape, dtype and size are checked against the metadata
    before its data is decompressed, the total is capped by
    :data:`MAX_ARRAYS_BYTES`, and every array must be finite.  Nothing is
    unpickled.

    Parameters
    ----------
    path : path
        A model file.

    Returns
    -------
    meta : dict
        Checked metadata.
    arrays : dict of str to ndarray
        The arrays of :data:`COMMON_ARRAYS` and the architecture's entry.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        Anything wrong with the file, naming the entry concerned.
    """
    path = Path(path)
    fh, zf = _open_archive(path)
    try:
        with fh, zf:
            meta = _meta_from(path, zf)
            dims = model_dims(meta)
            try:
                if meta["arch"] in ARCH_ARRAYS:
                    rules = {**COMMON_ARRAYS, **ARCH_ARRAYS[meta["arch"]]}
                    shapes = {n: tuple(int(v) for v in rule(dims)) for n, rule in rules.items()}
                else:
                    shapes = {n: rule(dims) for n, rule in COMMON_ARRAYS.items()}
                    shapes.update(ARCH_SHAPES[meta["arch"]](meta))
            except KeyError as exc:
                raise _fail(path, f"metadata lacks the dimension {exc}") from None
            except (TypeError, ValueError) as exc:
                raise _fail(path, f"entry 'meta' has unusable sizes: {exc}") from None
            present = set(zf.NameToInfo)
            wanted = {n + ".npy" for n in shapes} | {"meta.npy"}
            missing = sorted(n[:-4] for n in wanted - present)
            if missing:
                raise _fail(path, f"lacks the arrays {missing}")
            extra = sorted(present - wanted)
            if extra:
                raise _fail(path, f"holds entries the format does not define: {extra[:5]}")
            total = 0
            for shp in shapes.values():
                count = 1
                for v in shp:
                    count *= v
                total += count * 8
            if total > MAX_ARRAYS_BYTES:
                raise _fail(path, f"declared sizes total {total} bytes (cap {MAX_ARRAYS_BYTES})")
            arrays: dict[str, np.ndarray] = {}
            for n, shp in shapes.items():
                try:
                    arr = _read_entry(path, zf, n, shp, _FLOAT_DTYPES, MAX_ARRAYS_BYTES)
                except ModelFileError:
                    raise
                except _READ_ERRORS as exc:
                    raise _fail(path, f"entry {n!r} is unreadable: {exc}") from None
                if not np.isfinite(arr).all():
                    raise _fail(path, f"entry {n!r} contains NaN or infinity")
                arrays[n] = arr
            return meta, arrays
    except ModelFileError:
        raise
    except _READ_ERRORS as exc:
        raise _fail(path, f"unreadable: {exc}") from None


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


def save_model_file(
    path: str | Path,
    weights: LSTMCSWeights | BLSTMCSWeights,
    A: np.ndarray,
    spec: ProblemSpec,
    info: dict[str, Any] | None = None,
) -> None:
    """Write a model file (see the module docstring for the format), atomically.

    Parameters
    ----------
    path : path
        File to write (``.npz``; replaced atomically, see :func:`save_npz_atomic`).
    weights : LSTMCSWeights or BLSTMCSWeights
        The weights (stored as float32); their class sets ``arch``.
    A : ndarray (M, N)
        The sensing matrix the model was trained with (stored as float64).
    spec : ProblemSpec
        What the model was trained for.
    info : dict, optional
        JSON-serializable provenance.

    Raises
    ------
    ValueError
        ``A`` does not match ``spec``.
    ModelFileError
        The weights do not match ``spec``.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.shape != (spec.M, spec.N):
        raise ValueError(f"A has shape {A.shape}, spec says ({spec.M}, {spec.N})")
    weights.validate(spec.M, spec.N)
    meta = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "arch": weights_arch(weights),
        "cell": weights.cell,
        "n_cells": weights.n_cells,
        "spec": asdict(spec),
        "info": info or {},
    }
    blob = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    if blob.size > MAX_META_BYTES:
        raise ValueError(f"info is too large ({blob.size} bytes of JSON; at most {MAX_META_BYTES})")
    w32 = weights.astype(np.float32)
    arrays = {k: getattr(w32, k) for k in ARCH_ARRAYS[weights_arch(weights)]}
    save_npz_atomic(path, {"meta": blob, "A": A, **arrays})


def load_model_file(
    path: str | Path,
) -> tuple[LSTMCSWeights | BLSTMCSWeights, np.ndarray, ProblemSpec, dict[str, Any]]:
    """Read and check an LSTM-CS or BLSTM-CS model file; return ``(weights, A, spec, info)``.

    Reading is bounded (see :func:`read_model_arrays`): a damaged or hostile
    file raises :class:`ModelFileError` quickly, whatever it declares.

    Parameters
    ----------
    path : path
        A file written by :func:`save_model_file`.

    Returns
    -------
    weights : LSTMCSWeights or BLSTMCSWeights
        float32 weights (by the file's ``arch``, "lstm" when absent).
    A : ndarray (M, N) float64
        The sensing matrix.
    spec : ProblemSpec
        What the model was trained for.
    info : dict
        Free-form provenance.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ModelFileError
        Not an LSTM-CS model file, an unsupported version or architecture, or
        inconsistent contents (shapes, dtypes, sizes, non-finite values).
    """
    path = Path(path)
    meta, arrays = read_model_arrays(path)
    arch = meta["arch"]
    if arch not in ("lstm", "blstm"):
        raise _fail(path, f"architecture {arch!r} is not an LSTM-CS or BLSTM-CS model")
    try:
        spec = ProblemSpec(**meta["spec"])
    except (TypeError, ValueError) as exc:
        raise _fail(path, f"bad problem spec: {exc}") from None
    A = arrays["A"]
    if not np.any(A != 0, axis=0).all():
        raise _fail(path, "entry 'A' has an all-zero column")
    cls = BLSTMCSWeights if arch == "blstm" else LSTMCSWeights
    kw: dict[str, Any] = {k: arrays[k] for k in ARCH_ARRAYS[arch]}
    weights = cls(**kw, cell=str(meta["cell"]))
    weights.validate(spec.M, spec.N)
    return weights, np.ascontiguousarray(A, dtype=np.float64), spec, dict(meta["info"])
