"""The rows of a learned model's file tables: :class:`FileParam` (a size or
option of the metadata) and :class:`FileArray` (a weight entry, its shape an
expression in the file's dimensions).

The tables themselves (``FILE_PARAMS``, ``FILE_ARRAYS``) and the protocol that
reads and writes files from them are
:class:`cscore.decoders.learned.base.LearnedModel`'s.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...models.format import MAX_DIM

__all__ = ["MISSING", "FileArray", "FileParam"]

#: The value :meth:`FileParam.checked` is given for a parameter the metadata lacks.
MISSING = object()


@dataclass(frozen=True)
class FileParam:
    """One size or option a model file's metadata holds (a row of ``FILE_PARAMS``).

    Parameters
    ----------
    kind : {"int", "flag", "str"}, default "int"
        An int in ``[lo, hi]``; a 0/1 flag (a bool is stored as 0 or 1); or one
        of ``choices``.
    lo, hi : int, default 1 and ``MAX_DIM``
        The range of an ``"int"``.
    choices : tuple of str, default ()
        The values of a ``"str"``.
    default : optional
        The value when the metadata lacks it; None (default): required.
    """

    kind: str = "int"
    lo: int = 1
    hi: int = MAX_DIM
    choices: tuple[str, ...] = ()
    default: Any = None

    def checked(self, where: str, value: Any) -> Any:
        """``value`` checked (``where`` names it in the ValueError); the default
        when it is missing.

        Parameters
        ----------
        where : str
            How the message names the parameter (``"arch_params['n_layers']"``).
        value : object
            The stored value, or the module's missing marker.

        Returns
        -------
        int or str
        """
        if value is MISSING:
            if self.default is None:
                raise ValueError(f"{where} is missing")
            value = self.default
        if self.kind == "str":
            if not isinstance(value, str) or value not in self.choices:
                raise ValueError(f"{where} must be one of {sorted(self.choices)}, got {value!r}")
            return value
        lo, hi = (0, 1) if self.kind == "flag" else (self.lo, self.hi)
        if (self.kind == "flag" and isinstance(value, bool)) or isinstance(value, np.integer):
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise ValueError(f"{where} must be an int in [{lo}, {hi}], got {value!r}")
        return value


#: How a shape expression's binary operators compute.
_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


@functools.lru_cache(maxsize=256)
def _parsed(expr: str) -> ast.expr:
    return ast.parse(expr, mode="eval").body


def _dim_value(node: ast.expr, dims: Mapping[str, Any]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        return int(dims[node.id])  # KeyError: the loader's "metadata lacks the dimension"
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_dim_value(node.left, dims), _dim_value(node.right, dims))
    raise TypeError(f"shape expressions use ints, names, +, -, * and //, not {ast.unparse(node)!r}")


@dataclass(frozen=True)
class FileArray:
    """One weight entry a model file holds (a row of ``FILE_ARRAYS``).

    Parameters
    ----------
    shape : tuple of (str or int), or callable
        One expression per axis in the file's dimensions: ``M``, ``N``, ``L``,
        the model's parameters and its :meth:`LearnedModel._file_dims`, with
        ints, ``+``, ``-``, ``*`` and ``//`` (``("G*H", "M")``); or
        ``shape(dims) -> tuple`` for a shape whose axes depend on a parameter.
    repeat : str, optional
        A parameter ``n``: the entry is ``n`` entries, its name a format string
        with ``{i}`` (``"W1_{i}"``) and ``i`` a dimension of each one's shape.
    when : str, optional
        A flag parameter: the entry is in the file only when it is set.
    """

    shape: tuple[str | int, ...] | Callable[[Mapping[str, Any]], tuple[int, ...]]
    repeat: str | None = None
    when: str | None = None

    def shapes(self, name: str, dims: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """The entries (name -> shape) this row stands for, given the file's dimensions.

        Parameters
        ----------
        name : str
            The row's name (a format string with ``{i}`` when it repeats).
        dims : mapping
            ``M``, ``N``, ``L``, the checked parameters and the derived dimensions.

        Returns
        -------
        dict of str to tuple of int
        """
        if self.when is not None and not dims[self.when]:
            return {}
        out: dict[str, tuple[int, ...]] = {}
        for i in [None] if self.repeat is None else range(int(dims[self.repeat])):
            d = dims if i is None else {**dims, "i": i}
            if callable(self.shape):
                shape = tuple(int(v) for v in self.shape(d))
            else:
                shape = tuple(v if isinstance(v, int) else _dim_value(_parsed(v), d)
                              for v in self.shape)
            key = name if i is None else name.format(i=i)
            if any(v < 0 for v in shape):
                raise ValueError(f"entry {key!r} would have the negative shape {shape}")
            out[key] = shape
        return out
