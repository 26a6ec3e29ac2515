"""What OMP and SOMP share on every path (compiled, PyTorch, operators).

The layout of each decoder's measurements (:class:`GreedyLayout`: OMP takes
columns ``y`` (M,) or (M, B), SOMP problems ``Y`` (M, L) or (B, M, L)), the
check of their row count, the stopping rule resolved from ``n_nonzero`` and
``tol`` (:func:`resolve_stopping`) and the warning for problems stopped
"dependent".  The decoders are :mod:`cscore.decoders.greedy`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._validation import check_nonnegative_float, check_positive_int, transposed_hint

__all__ = [
    "DEPENDENT_MSG",
    "OMP",
    "SOMP",
    "GreedyLayout",
    "checked_rows",
    "resolve_stopping",
]

DEPENDENT_MSG = (
    "{fn}: {count} of {total} problem(s) stopped early because no further atom could "
    "reduce the residual (the best atom was linearly dependent on the chosen ones, or "
    "the residual is orthogonal to every column of A); the requested n_nonzero/tol "
    "may not have been met for them (stop_reason 'dependent')."
)


class GreedyLayout(NamedTuple):
    """How a greedy decoder takes its measurements.

    Attributes
    ----------
    fn : str
        The decoder (``"omp"`` or ``"somp"``), named in messages.
    y_name : str
        The measurements' name in messages.
    y_ndims : tuple of int
        Accepted numbers of dimensions.
    empty : tuple of int
        ``(ndim, axis)`` of an accepted empty batch.
    row_axis : int
        The axis of the M measurement rows.
    """

    fn: str
    y_name: str
    y_ndims: tuple[int, ...]
    empty: tuple[int, int]
    row_axis: int

    @property
    def single_ndim(self) -> int:
        """The number of dimensions of one problem given without a batch axis."""
        return self.y_ndims[0]


#: OMP: one vector ``y`` (M,) or B vectors as columns (M, B).
OMP = GreedyLayout("omp", "y", (1, 2), (2, 1), 0)
#: SOMP: one MMV problem ``Y`` (M, L) or a batch (B, M, L).
SOMP = GreedyLayout("somp", "Y", (2, 3), (3, 0), -2)


def checked_rows(layout: GreedyLayout, shape_Y: tuple[int, ...], shape_A: tuple[int, int]) -> None:
    """``ValueError`` unless the measurements have ``M`` rows along the layout's axis."""
    M = shape_A[0]
    rows = shape_Y[layout.row_axis]
    if rows != M:
        axis = "the first axis" if layout.row_axis == 0 else "the second-to-last axis"
        raise ValueError(
            f"{layout.y_name} must have M = {M} rows (A has shape {tuple(shape_A)}) along "
            f"{axis}; got {layout.y_name} of shape {tuple(shape_Y)}"
            + transposed_hint(tuple(shape_A), rows)
        )


def resolve_stopping(n_nonzero: Any, tol: Any, M: int, N: int) -> tuple[int, bool, float]:
    """Return (max_atoms, cap_is_n_nonzero, tol_or_minus_one) from the user's rule.

    With neither rule, ``n_nonzero = max(1, int(0.1 * N))`` capped at ``min(M, N)``;
    with ``tol`` alone, at most ``min(M, N)`` atoms.
    """
    cap = min(M, N)
    tol_value = -1.0
    if tol is not None:
        tol_value = check_nonnegative_float("tol", tol)
    if n_nonzero is not None:
        k = check_positive_int(
            "n_nonzero", n_nonzero, upper=cap, upper_desc=f"min(M, N) for A of shape {(M, N)}"
        )
        return k, True, tol_value
    if tol is not None:
        return cap, False, tol_value
    return min(cap, max(1, int(0.1 * N))), True, tol_value
