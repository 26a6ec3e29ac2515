"""What kind of sensing matrix a decoder was given: dense, sparse or an operator.

:func:`matrix_kind` tells the kinds apart, :func:`kind_refusal` words the error
of a decoder that does not take the kind (naming those that do), and
:func:`checked_operator` checks a sparse matrix's or operator's shape and dtype.
Used by :class:`~cscore.decoders.Decoder`; which decoder takes which kind is
its registration's ``inputs`` (:mod:`cscore.decoders.registry`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._operator_products import is_operator
from .registry import decoder_specs

__all__ = [
    "checked_operator",
    "kind_refusal",
    "matrix_kind",
]


def matrix_kind(A: Any) -> str:
    """``"sparse"``, ``"operator"`` (SciPy or PyLops LinearOperator) or ``"dense"``."""
    import scipy.sparse as sp

    if sp.issparse(A):
        return "sparse"
    return "operator" if is_operator(A) else "dense"


def kind_refusal(spec: Any, kind: str) -> str:
    """The error message of a decoder that does not take a ``kind`` (sparse, operator) ``A``."""
    takes = [s.name for s in decoder_specs() if kind in s.inputs]
    return (
        f"decoder {spec.name!r} takes {' or '.join(k for k in spec.inputs if k != 'complex')} "
        f"A, not {'a sparse matrix' if kind == 'sparse' else 'a LinearOperator'}"
        + (f"; decoders that take one: {', '.join(takes)}" if takes else "")
        + (" (or pass A.toarray())" if kind == "sparse" else "")
    )


def checked_operator(A: Any, kind: str) -> Any:
    """A sparse matrix or operator with a usable 2-D shape and a numeric dtype."""
    shape = getattr(A, "shape", None)
    if shape is None or len(shape) != 2 or min(int(shape[0]), int(shape[1])) < 1:
        raise ValueError(f"A ({kind}) must have a 2-D shape (M, N) with M, N >= 1, got {shape}")
    dtype = np.dtype(getattr(A, "dtype", None) or np.float64)
    if dtype.kind not in "fc":
        raise TypeError(f"A ({kind}) must have a float or complex dtype, got {dtype}")
    return A
