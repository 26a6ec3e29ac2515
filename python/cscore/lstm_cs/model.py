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
(training settings, data provenance).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ARCH_ARRAYS",
    "CELL_GATES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "BLSTMCSWeights",
    "LSTMCSWeights",
    "ModelFileError",
    "ProblemSpec",
    "load_model_file",
    "save_model_file",
]

FORMAT_NAME = "cscore.lstm_cs"
FORMAT_VERSION = 1

#: gate order per cell type
CELL_GATES: dict[str, str] = {"paper": "igo", "lstm": "ifgo"}

_TRANSFORMS = ("none", "dct", "haar")

#: arrays per architecture and their shapes, in the symbols G (gates), H (cells),
#: M (measurements), N (atoms); every model file also holds ``meta`` and ``A``
ARCH_ARRAYS: dict[str, dict[str, tuple[str, ...]]] = {
    "lstm": {"W": ("G*H", "M"), "R": ("G*H", "H"), "b": ("G*H",), "U": ("N", "H"),
             "c_out": ("N",)},
    "blstm": {"W": ("G*H", "M"), "R": ("G*H", "H"), "b": ("G*H",),
              "Wb": ("G*H", "M"), "Rb": ("G*H", "H"), "bb": ("G*H",),
              "U": ("N", "2*H"), "c_out": ("N",)},
}


def _check_arrays(arch: str, arrays: dict[str, Any], cell: str, H: int, M: int, N: int) -> None:
    """Check the arrays of ``arch`` against :data:`ARCH_ARRAYS`; raise ModelFileError."""
    G = len(CELL_GATES[cell])
    sizes = {"G*H": G * H, "H": H, "2*H": 2 * H, "M": M, "N": N}
    for name, dims in ARCH_ARRAYS[arch].items():
        arr = arrays[name]
        want = tuple(sizes[d] for d in dims)
        if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
            raise ModelFileError(f"weight {name} must be a float array")
        if arr.shape != want:
            raise ModelFileError(
                f"weight {name} has shape {arr.shape}, expected {want} "
                f"(arch={arch!r}, cell={cell!r}, H={H}, M={M}, N={N})"
            )
        if not np.isfinite(arr).all():
            raise ModelFileError(f"weight {name} contains NaN or infinity")


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


@dataclass
class LSTMCSWeights:
    """LSTM-CS weights in the layout described in this module's docstring."""

    W: np.ndarray
    R: np.ndarray
    b: np.ndarray
    U: np.ndarray
    c_out: np.ndarray
    cell: str = "paper"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_cells(self) -> int:
        """Number of LSTM cells H."""
        return int(self.R.shape[1])

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
        if self.cell not in CELL_GATES:
            raise ModelFileError(f"unknown cell type {self.cell!r}; known: {list(CELL_GATES)}")
        G, H = self.n_gates, self.n_cells
        want = {
            "W": (G * H, M),
            "R": (G * H, H),
            "b": (G * H,),
            "U": (N, H),
            "c_out": (N,),
        }
        for name, shape in want.items():
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
                raise ModelFileError(f"weight {name} must be a float array")
            if arr.shape != shape:
                raise ModelFileError(
                    f"weight {name} has shape {arr.shape}, expected {shape} "
                    f"(cell={self.cell!r}, H={H}, M={M}, N={N})"
                )
            if not np.isfinite(arr).all():
                raise ModelFileError(f"weight {name} contains NaN or infinity")

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
        conv = {
            k: np.ascontiguousarray(getattr(self, k), dtype=dtype)
            for k in ("W", "R", "b", "U", "c_out")
        }
        return LSTMCSWeights(**conv, cell=self.cell, extra=dict(self.extra))


@dataclass
class BLSTMCSWeights:
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

    arch = "blstm"
    _ARRAYS = ("W", "R", "b", "Wb", "Rb", "bb", "U", "c_out")

    @property
    def n_cells(self) -> int:
        """Cells H of each direction (0 if ``R`` is not 2-D)."""
        R = np.asarray(self.R)
        return int(R.shape[1]) if R.ndim == 2 else 0

    @property
    def n_gates(self) -> int:
        """Number of gates G per direction."""
        return len(CELL_GATES[self.cell])

    def validate(self, M: int, N: int) -> None:
        """Check shapes, dtypes and finiteness; raise :class:`ModelFileError`.

        Parameters
        ----------
        M, N : int
            Measurements and atoms of the problems the weights must fit.
        """
        if self.cell not in CELL_GATES:
            raise ModelFileError(f"unknown cell type {self.cell!r}; known: {list(CELL_GATES)}")
        if self.n_cells < 1:
            raise ModelFileError(f"weight R must be 2-D (G*H, H), got shape {np.shape(self.R)}")
        _check_arrays("blstm", {k: getattr(self, k) for k in self._ARRAYS}, self.cell,
                      self.n_cells, M, N)

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
        conv = {k: np.ascontiguousarray(getattr(self, k), dtype=dtype) for k in self._ARRAYS}
        return BLSTMCSWeights(**conv, cell=self.cell, extra=dict(self.extra))

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


def save_model_file(
    path: str | Path,
    weights: LSTMCSWeights | BLSTMCSWeights,
    A: np.ndarray,
    spec: ProblemSpec,
    info: dict[str, Any] | None = None,
) -> None:
    """Write a model file (see the module docstring for the format).

    Parameters
    ----------
    path : path
        File to write (``.npz``; overwritten).
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
    w32 = weights.astype(np.float32)
    arrays = {k: getattr(w32, k) for k in ARCH_ARRAYS[weights_arch(weights)]}
    with open(Path(path), "wb") as fh:
        np.savez_compressed(fh, meta=blob, A=A, **arrays)


def load_model_file(
    path: str | Path,
) -> tuple[LSTMCSWeights | BLSTMCSWeights, np.ndarray, ProblemSpec, dict[str, Any]]:
    """Read and check a model file; return ``(weights, A, spec, info)``.

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
        Not an LSTM-CS model file, an unsupported version, or inconsistent
        contents (shapes, non-finite values).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model file at {path}")
    if path.is_dir():
        raise ModelFileError(f"{path} is a directory, not a model file")
    if not zipfile.is_zipfile(path):
        raise ModelFileError(
            f"{path} is not a model file: not an .npz (zip) archive"
            + (" (the file is empty)" if path.stat().st_size == 0 else "")
        )
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise ModelFileError(f"{path} is not a readable .npz model file: {exc}") from exc
    if "meta" not in arrays:
        raise ModelFileError(f"{path} lacks the arrays ['meta']")
    try:
        meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path}: metadata is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path} is not a {FORMAT_NAME} file")
    arch = meta.get("arch", "lstm")
    if arch not in ARCH_ARRAYS:
        raise ModelFileError(f"{path}: unknown arch {arch!r}; known: {list(ARCH_ARRAYS)}")
    missing = ({"A"} | set(ARCH_ARRAYS[arch])) - set(arrays)
    if missing:
        raise ModelFileError(f"{path} lacks the arrays {sorted(missing)}")
    if meta.get("version") != FORMAT_VERSION:
        raise ModelFileError(
            f"{path} has format version {meta.get('version')!r}; this cscore reads "
            f"version {FORMAT_VERSION}"
        )
    try:
        spec = ProblemSpec(**meta["spec"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: bad problem spec: {exc}") from exc
    A = arrays["A"]
    if A.shape != (spec.M, spec.N):
        raise ModelFileError(f"{path}: A has shape {A.shape}, expected ({spec.M}, {spec.N})")
    if A.dtype.kind != "f":
        raise ModelFileError(f"{path}: A has dtype {A.dtype}; a model file stores a float A")
    if not np.isfinite(A).all():
        raise ModelFileError(f"{path}: A contains NaN or infinity")
    if not (np.linalg.norm(A, axis=0) > 0).all():
        raise ModelFileError(f"{path}: A has an all-zero column")
    weights: LSTMCSWeights | BLSTMCSWeights
    if arch == "blstm":
        weights = BLSTMCSWeights(**{k: arrays[k] for k in ARCH_ARRAYS[arch]},
                                 cell=str(meta.get("cell", "")))
    else:
        weights = LSTMCSWeights(
            W=arrays["W"],
            R=arrays["R"],
            b=arrays["b"],
            U=arrays["U"],
            c_out=arrays["c_out"],
            cell=str(meta.get("cell", "")),
        )
    weights.validate(spec.M, spec.N)
    if weights.n_cells != meta.get("n_cells"):
        raise ModelFileError(f"{path}: n_cells in metadata disagrees with the weights")
    return weights, np.ascontiguousarray(A, dtype=np.float64), spec, dict(meta.get("info", {}))
