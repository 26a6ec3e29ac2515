"""CDSN-CS: a convolutional deep stacking network inside the greedy loop (Algorithm 4).

Section 4.7 of Palangi's thesis.  Channel j's input is the window of ``w``
channel residuals centred on j, each divided by its largest absolute entry and
concatenated, ``r = [x_{j-w//2}, ..., x_{j+w//2}]`` (channels outside
``0..L-1`` are zero).  A stack of modules ``l = 1..n`` maps it to scores over
the N atoms; module l sees the outputs of the modules below and ``r``
(eq. 4.58), has sigmoid hidden units and linear outputs (eq. 4.57):

    z(l) = [v(1), ..., v(l-1), r, 1]
    h(l) = sigmoid(W1(l) z(l))
    v(l) = W2(l)^T [h(l), 1]

The top module's ``v`` names the channel's next atom (largest score among the
atoms not yet chosen); the channel is re-fitted by least squares on its own
support, as in LSTM-CS.  All channels of an iteration are scored from the
residuals at the start of that iteration (the training data's convention).

Training: :func:`cscore.training.cdsn.fit_cdsn` (NumPy).

The constant 1 appended to ``z`` and ``h`` gives the biases.  File entries:
``W1_l`` (H, w*M + l*N + 1) and ``W2_l`` (H + 1, N) for ``l = 0..n-1``,
``arch = "cdsn"``, ``arch_params = {"window", "n_modules", "n_hidden"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...problem import ProblemSpec
from ._greedy import checked_weight
from ._greedy import sigmoid as _sigmoid
from .base import FileArray, FileParam
from .scored import ScoredGreedyModel

__all__ = ["CDSNCS", "cdsn_forward", "window_inputs", "with_one"]


def window_inputs(X: np.ndarray, window: int) -> np.ndarray:
    """Concatenate each channel's window of ``window`` residuals (zero padded).

    Parameters
    ----------
    X : ndarray (B, L, M)
        Normalized residuals per channel.
    window : int
        Odd window size w.

    Returns
    -------
    ndarray (B, L, w * M)
        Row j holds channels ``j - w//2 .. j + w//2``.
    """
    B, L, M = X.shape
    h = window // 2
    Xp = np.zeros((B, L + 2 * h, M), dtype=X.dtype)
    Xp[:, h : h + L] = X
    out = np.empty((B, L, window * M), dtype=X.dtype)
    for o in range(window):
        out[:, :, o * M : (o + 1) * M] = Xp[:, o : o + L]
    return out


def with_one(x: np.ndarray) -> np.ndarray:
    """Append a constant-1 feature to the last axis (the bias input of a module).

    Parameters
    ----------
    x : ndarray (..., d)

    Returns
    -------
    ndarray (..., d + 1)
    """
    return np.concatenate([x, np.ones((*x.shape[:-1], 1), dtype=x.dtype)], axis=-1)


def cdsn_forward(modules: list[tuple[np.ndarray, np.ndarray]], R: np.ndarray) -> list[np.ndarray]:
    """Run the stack on window inputs ``R`` (..., w*M); return every module's output.

    Parameters
    ----------
    modules : list of (W1, W2)
        ``W1`` (H, d_l + 1), ``W2`` (H + 1, N) per module.
    R : ndarray (..., w*M)

    Returns
    -------
    list of ndarray (..., N)
        ``v(1), ..., v(n)``.
    """
    shape = R.shape
    R2 = R.reshape(-1, shape[-1])  # 2-D GEMMs
    outs: list[np.ndarray] = []
    for W1, W2 in modules:
        z = with_one(np.concatenate([*outs, R2], axis=-1))
        h = _sigmoid(z @ W1.T)
        outs.append(with_one(h) @ W2)
    return [v.reshape(*shape[:-1], v.shape[-1]) for v in outs]


class CDSNCS(ScoredGreedyModel):
    """CDSN-CS (Palangi's thesis, section 4.7, Algorithm 4).

    Parameters
    ----------
    modules : list of (W1, W2)
        Per module, input weights (H, w*M + l*N + 1) and output weights (H + 1, N).
    window : int
        Odd convolution window w (channels per input).
    A : ndarray (M, N)
        The sensing matrix.
    spec : ProblemSpec
        Sizes and signal model.
    info : dict, optional
        Free-form provenance.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore import CDSNCS
    >>> from cscore.problem import ProblemSpec
    >>> rng = np.random.default_rng(0)
    >>> M, N, L, H, w = 6, 12, 3, 4, 3
    >>> mods = [(rng.normal(size=(H, w * M + 1)), rng.normal(size=(H + 1, N)))]
    >>> m = CDSNCS(mods, w, rng.normal(size=(M, N)), ProblemSpec(M=M, N=N, L=L))
    >>> m.decode(rng.normal(size=(M, L)), n_nonzero=2).shape
    (12, 3)
    """

    ARCH = "cdsn"
    JOINT = False
    FILE_PARAMS: ClassVar[Mapping[str, FileParam]] = {
        "window": FileParam(),
        "n_modules": FileParam(hi=64),
        "n_hidden": FileParam(),
    }
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = {
        "W1_{i}": FileArray(("n_hidden", "window*M + i*N + 1"), repeat="n_modules"),
        "W2_{i}": FileArray(("n_hidden + 1", "N"), repeat="n_modules"),
    }

    def __init__(
        self,
        modules: list[tuple[np.ndarray, np.ndarray]],
        window: int,
        A: np.ndarray,
        spec: ProblemSpec,
        info: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(A, spec, info)
        if not isinstance(modules, (list, tuple)) or not modules:
            raise ValueError("modules must be a non-empty list of (W1, W2) pairs")
        W1_0 = np.asarray(modules[0][0])
        if W1_0.ndim != 2:
            raise ValueError(f"W1_0 must be 2-D, got shape {W1_0.shape}")
        params = {"window": window, "n_modules": len(modules), "n_hidden": int(W1_0.shape[0])}
        shapes = self.expected_shapes(spec, params)
        mods = []
        for i, pair in enumerate(modules):
            if len(pair) != 2:
                raise ValueError(f"module {i} must be a (W1, W2) pair")
            conv = [checked_weight(name, arr, shapes[name])
                    for name, arr in zip((f"W1_{i}", f"W2_{i}"), pair)]
            mods.append((conv[0], conv[1]))
        self._modules = mods
        self._mod64 = [(a.astype(np.float64), b.astype(np.float64)) for a, b in mods]
        self._window = int(window)

    @classmethod
    def _file_dims(cls, params: Mapping[str, Any]) -> dict[str, int]:
        """No derived dimensions; the window must be odd (centred on the channel)."""
        if params["window"] % 2 == 0:
            raise ValueError(f"window must be odd, got {params['window']}")
        return {}

    @property
    def window(self) -> int:
        """Convolution window w."""
        return self._window

    @property
    def n_modules(self) -> int:
        """Stacked modules."""
        return len(self._modules)

    @property
    def n_hidden(self) -> int:
        """Hidden units per module."""
        return int(self._modules[0][0].shape[0])

    @property
    def modules(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The (W1, W2) pairs (float32)."""
        return list(self._modules)

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights (float32), named as in the file."""
        out = {}
        for i, (a, b) in enumerate(self._modules):
            out[f"W1_{i}"] = a
            out[f"W2_{i}"] = b
        return out

    def arch_params(self) -> dict[str, int]:
        """``{"window", "n_modules", "n_hidden"}``."""
        return {"window": self.window, "n_modules": self.n_modules, "n_hidden": self.n_hidden}

    @classmethod
    def _from_arrays(
        cls, arrays: dict[str, np.ndarray], A: np.ndarray, spec: ProblemSpec,
        params: dict[str, int], info: dict[str, Any],
    ) -> CDSNCS:
        mods = [(arrays[f"W1_{i}"], arrays[f"W2_{i}"]) for i in range(params["n_modules"])]
        return cls(mods, params["window"], A, spec, info)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """Top-module scores for normalized residuals ``X`` (B, L, M) -> (B, L, N).

        Parameters
        ----------
        X : ndarray (B, L, M)

        Returns
        -------
        ndarray (B, L, N)
        """
        R = window_inputs(np.asarray(X, dtype=np.float64), self._window)
        return cdsn_forward(self._mod64, R)[-1]

    def _score(self, X: np.ndarray) -> np.ndarray:
        return self.scores(X)

    def __repr__(self) -> str:
        s = self._spec
        return (f"CDSNCS(M={s.M}, N={s.N}, L={s.L}, window={self.window}, "
                f"n_modules={self.n_modules}, n_hidden={self.n_hidden}, "
                f"transform={s.transform!r}, dataset={s.dataset!r})")
