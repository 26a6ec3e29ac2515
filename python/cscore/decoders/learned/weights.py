"""LSTM-CS and BLSTM-CS weights: the layout and their model files.

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
before the field existed), with the arrays each needs (:data:`ARCH_ARRAYS`, the
table :class:`~cscore.LSTMCS` and :class:`~cscore.BLSTMCS` declare their files by):

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


Files: the common container of :mod:`cscore.models.format`, with ``cell`` and
``n_cells`` in the metadata and the arrays above as entries, read and written by
the one model-file protocol (:meth:`cscore.LSTMCS.load`, :meth:`~cscore.LSTMCS.save`);
:func:`load_model_file` and :func:`save_model_file` are deprecated aliases.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from ...models.format import ARCHITECTURES, ModelFileError
from ...problem import ProblemSpec
from .base import FileArray

__all__ = [
    "ARCH_ARRAYS",
    "CELL_GATES",
    "BLSTMCSWeights",
    "LSTMCSWeights",
    "load_model_file",
    "save_model_file",
]

#: gate order per cell type
CELL_GATES: dict[str, str] = {"paper": "igo", "lstm": "ifgo"}

_W = TypeVar("_W", bound="_WeightsMixin")


@dataclass
class _WeightsMixin:
    """What LSTMCSWeights and BLSTMCSWeights share: the cell type and free ``extra``
    (keyword-only fields), the gate and cell counts, validation, casting.

    Subclasses (dataclasses) set ``arch`` and ``_ARRAYS`` (their array fields, in
    the order of their positional parameters).
    """

    arch: ClassVar[str]
    _ARRAYS: ClassVar[tuple[str, ...]]
    cell: str = field(default="paper", kw_only=True)
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)

    @property
    def n_cells(self) -> int:
        """Number of LSTM cells H (of each direction; 0 if ``R`` is not 2-D)."""
        R = np.asarray(getattr(self, "R"))  # noqa: B009 (a field of every subclass)
        return int(R.shape[1]) if R.ndim == 2 else 0

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

    def astype(self: _W, dtype: Any) -> _W:
        """Return a copy with every array cast to ``dtype`` (C-contiguous).

        Parameters
        ----------
        dtype : dtype
            float32 or float64.

        Returns
        -------
        LSTMCSWeights or BLSTMCSWeights
            Of the same class.
        """
        return type(self)(**self._cast_arrays(dtype), cell=self.cell,  # type: ignore[call-arg]
                          extra=dict(self.extra))

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

    arch: ClassVar[str] = "lstm"
    _ARRAYS: ClassVar[tuple[str, ...]] = ("W", "R", "b", "U", "c_out")


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
    for name, entry in ARCH_ARRAYS[arch].items():
        arr = getattr(weights, name)
        shape = entry.shapes(name, dims)[name]
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

    arch: ClassVar[str] = "blstm"
    _ARRAYS: ClassVar[tuple[str, ...]] = ("W", "R", "b", "Wb", "Rb", "bb", "U", "c_out")

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


#: The entries of each LSTM architecture's file, in the dimensions ``M``, ``N``,
#: ``H`` (cells) and ``G`` (gates of the cell type): the table
#: :attr:`cscore.LSTMCS.FILE_ARRAYS` and :attr:`cscore.BLSTMCS.FILE_ARRAYS` are,
#: and the shapes :meth:`LSTMCSWeights.validate` checks.
_ONE_DIRECTION: dict[str, FileArray] = {
    "W": FileArray(("G*H", "M")),
    "R": FileArray(("G*H", "H")),
    "b": FileArray(("G*H",)),
}
ARCH_ARRAYS: dict[str, dict[str, FileArray]] = {
    "lstm": {**_ONE_DIRECTION, "U": FileArray(("N", "H")), "c_out": FileArray(("N",))},
    "blstm": {
        **_ONE_DIRECTION,
        **{k + "b": v for k, v in _ONE_DIRECTION.items()},
        "U": FileArray(("N", "2*H")),
        "c_out": FileArray(("N",)),
    },
}


def save_model_file(
    path: str | Path,
    weights: LSTMCSWeights | BLSTMCSWeights,
    A: np.ndarray,
    spec: ProblemSpec,
    info: dict[str, Any] | None = None,
) -> None:
    """Deprecated: ``LSTMCS(weights, A, spec, info).save(path)`` (or ``BLSTMCS``).

    Parameters
    ----------
    path : path
        File to write (replaced atomically).
    weights : LSTMCSWeights or BLSTMCSWeights
        The weights; their class sets ``arch``.
    A : ndarray (M, N)
        The sensing matrix the model was trained with.
    spec : ProblemSpec
        What the model was trained for.
    info : dict, optional
        JSON-serializable provenance.
    """
    warnings.warn("save_model_file is deprecated: use LSTMCS(weights, A, spec, info).save(path) "
                  "(BLSTMCS for BLSTMCSWeights)", DeprecationWarning, stacklevel=2)
    if not isinstance(weights, (LSTMCSWeights, BLSTMCSWeights)):
        raise TypeError(f"weights must be LSTMCSWeights or BLSTMCSWeights, got "
                        f"{type(weights).__name__}")
    ARCHITECTURES[weights.arch].model_class(weights, A, spec, info).save(path)  # type: ignore[misc]


def load_model_file(
    path: str | Path,
) -> tuple[LSTMCSWeights | BLSTMCSWeights, np.ndarray, ProblemSpec, dict[str, Any]]:
    """Deprecated: ``LSTMCS.load(path)`` (its ``weights``, ``A``, ``spec``, ``info``).

    Parameters
    ----------
    path : path
        An LSTM-CS or BLSTM-CS model file.

    Returns
    -------
    weights : LSTMCSWeights or BLSTMCSWeights
    A : ndarray (M, N) float64
    spec : ProblemSpec
    info : dict
    """
    warnings.warn("load_model_file is deprecated: use LSTMCS.load(path) and its weights, A, "
                  "spec and info", DeprecationWarning, stacklevel=2)
    model = ARCHITECTURES["lstm"].model_class.load(path)  # type: ignore[union-attr]
    return model.weights, np.array(model.A), model.spec, dict(model.info)
