"""Checks of the sequences, labels and ``learn`` argument given to ESN and RDSN."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MAX_MODULES", "check_labels", "check_learn", "check_sequences"]

#: Most modules an R-DSN may stack (and a model file may hold).
MAX_MODULES = 100

#: The weights ESN and RDSN can learn, in the order they are stored.
_LEARNABLE = ("W", "W_rec")


def check_sequences(name: str, X: Any, n_features: int | None = None) -> list[np.ndarray]:
    """Check a list of (T_i, D) sequences; errors name the argument ``name``.

    Parameters
    ----------
    name : str
        The argument's name, for the messages.
    X : list of array_like
        The sequences: real, finite, non-empty, all with the same D.
    n_features : int, optional
        The D the model was fit with.

    Returns
    -------
    list of ndarray
        C-contiguous float64 copies (or views) of the sequences.
    """
    if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype != object:
        raise TypeError(
            f"{name} must be a list of (T_i, D) arrays (one per sequence); got a single 2-D "
            f"array of shape {X.shape}; wrap it as [{name}] for one sequence"
        )
    if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
        raise TypeError(f"{name} must be a list of (T_i, D) arrays, got {type(X).__name__}")
    if len(X) == 0:
        raise ValueError(f"{name} must hold at least one sequence; got none")
    out = []
    for i, x in enumerate(X):
        a = np.asarray(x)
        if a.dtype.kind not in "fiu":
            raise TypeError(f"{name}[{i}] must be a real numeric array; got dtype {a.dtype}")
        if a.ndim != 2:
            raise ValueError(f"{name}[{i}] must be 2-D (T_i, D); got shape {a.shape}")
        if a.shape[0] == 0:
            raise ValueError(f"{name}[{i}] is an empty sequence (0 frames)")
        if a.shape[1] == 0:
            raise ValueError(f"{name}[{i}] has 0 features")
        if not np.isfinite(a).all():
            bad = np.argwhere(~np.isfinite(a))[0]
            raise ValueError(
                f"{name}[{i}] contains NaN or infinity (first at frame {int(bad[0])}, "
                f"feature {int(bad[1])})"
            )
        out.append(np.ascontiguousarray(a, dtype=np.float64))
    dims = {a.shape[1] for a in out}
    if len(dims) != 1:
        first = out[0].shape[1]
        j = next(i for i, a in enumerate(out) if a.shape[1] != first)
        raise ValueError(
            f"{name}: sequences have different numbers of features (ragged dims): "
            f"{name}[0] has {first}, {name}[{j}] has {out[j].shape[1]}"
        )
    if n_features is not None and out[0].shape[1] != n_features:
        raise ValueError(
            f"{name} has {out[0].shape[1]} features per frame; the model was fit with "
            f"{n_features}"
        )
    return out


def check_labels(name: str, y: Any, X: list[np.ndarray]) -> list[np.ndarray]:
    """Check frame labels against the checked sequences ``X``.

    Parameters
    ----------
    name : str
        The argument's name, for the messages.
    y : list of array_like
        (T_i,) non-negative integer labels per sequence, or one label per sequence.
    X : list of ndarray
        The sequences (from :func:`check_sequences`).

    Returns
    -------
    list of ndarray
        (T_i,) int64 labels per sequence.
    """
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise TypeError(f"{name} must be a list of (T_i,) label arrays")
    if len(y) != len(X):
        raise ValueError(f"{name} has {len(y)} sequences but X has {len(X)}")
    out = []
    for i, (lab, x) in enumerate(zip(y, X)):
        a = np.asarray(lab)
        if a.ndim == 0:
            a = np.full(x.shape[0], a)
        if a.ndim != 1 or a.shape[0] != x.shape[0]:
            raise ValueError(
                f"{name}[{i}] must be (T_i,) = ({x.shape[0]},) frame labels (or one label); "
                f"got shape {a.shape}"
            )
        if a.dtype.kind == "f":
            if not np.isfinite(a).all() or np.any(a != np.round(a)):
                raise ValueError(f"{name}[{i}] must hold integer class labels")
            a = a.astype(np.int64)
        elif a.dtype.kind not in "iu":
            raise TypeError(f"{name}[{i}] must hold integer class labels; got dtype {a.dtype}")
        if np.any(a < 0):
            raise ValueError(
                f"{name}[{i}] has a label out of range ({int(a.min())}); labels must be >= 0"
            )
        out.append(a.astype(np.int64))
    return out


def check_learn(learn: Any) -> tuple[str, ...]:
    """Check the ``learn`` argument: ``()``, ``("W",)`` or ``("W", "W_rec")``.

    Parameters
    ----------
    learn : str or iterable of str
        The weights to learn.

    Returns
    -------
    tuple of str
        The names in storage order.
    """
    if isinstance(learn, str):
        learn = (learn,)
    try:
        items = tuple(learn)
    except TypeError:
        raise TypeError(
            f"learn must be a tuple of names from {_LEARNABLE}, got {learn!r}"
        ) from None
    for it in items:
        if it not in _LEARNABLE:
            raise ValueError(f"learn: unknown weight {it!r}; choose from {_LEARNABLE}")
    if "W_rec" in items and "W" not in items:
        raise ValueError("learn: ('W_rec',) alone is not supported; use ('W', 'W_rec')")
    return tuple(w for w in _LEARNABLE if w in items)
