"""NWSOMP: SOMP whose atom choice comes from a trained one-hidden-layer network.

Nonlinear weighted SOMP (Palangi, Ward and Deng, ICASSP 2013), the baseline of
the LSTM-CS paper: a network maps a channel's residual ``r`` (divided by its
largest absolute entry) to a distribution over the N atoms,

    h = sigmoid(W1 x + b1),    p = softmax(W2 h + b2),

and SOMP adds, to the support shared by all channels, the atom with the largest
``sum_j p_j`` over the channels (instead of the largest ``||A^T R||`` row).
Every channel is then re-fitted by least squares on the joint support.

The network is trained (:func:`cscore.training.nwsomp.fit_nwsomp`, PyTorch) on the
LSTM-CS training sequences (:mod:`cscore.training.sequences`): each channel's
normalized residual after least squares on its ``t-1`` largest true atoms, with
the ``t``-th largest as the target class (cross-entropy).

File entries: ``W1`` (H, M), ``b1`` (H,), ``W2`` (N, H), ``b2`` (N,) (float32),
``arch = "nwsomp"``, ``arch_params = {"n_hidden": H}``.
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

__all__ = ["NWSOMP", "nwsomp_probs"]


def nwsomp_probs(weights: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """The network's atom probabilities for normalized residuals ``X`` (..., M).

    Parameters
    ----------
    weights : dict
        ``W1, b1, W2, b2`` (see the module docstring).
    X : ndarray (..., M)

    Returns
    -------
    ndarray (..., N)
        Softmax over atoms.
    """
    shape = X.shape
    X2 = X.reshape(-1, shape[-1])  # one 2-D GEMM (a stacked matmul is much slower)
    h = _sigmoid(X2 @ weights["W1"].T + weights["b1"])
    z = h @ weights["W2"].T + weights["b2"]
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z.reshape(*shape[:-1], z.shape[-1])


class NWSOMP(ScoredGreedyModel):
    """Nonlinear weighted SOMP (Palangi et al. 2013): a learned atom scorer in SOMP.

    Parameters
    ----------
    W1 : ndarray (H, M)
    b1 : ndarray (H,)
    W2 : ndarray (N, H)
    b2 : ndarray (N,)
        Network weights (kept as float32).
    A : ndarray (M, N)
        The sensing matrix the model was trained for.
    spec : ProblemSpec
        Sizes and signal model.
    info : dict, optional
        Free-form provenance.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore import NWSOMP
    >>> from cscore.problem import ProblemSpec
    >>> rng = np.random.default_rng(0)
    >>> M, N, L, H = 8, 16, 2, 5
    >>> m = NWSOMP(rng.normal(size=(H, M)), np.zeros(H), rng.normal(size=(N, H)),
    ...            np.zeros(N), rng.normal(size=(M, N)), ProblemSpec(M=M, N=N, L=L))
    >>> m.decode(rng.normal(size=(M, L)), n_nonzero=2).shape
    (16, 2)
    """

    ARCH = "nwsomp"
    JOINT = True
    FILE_PARAMS: ClassVar[Mapping[str, FileParam]] = {"n_hidden": FileParam()}
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = {
        "W1": FileArray(("n_hidden", "M")),
        "b1": FileArray(("n_hidden",)),
        "W2": FileArray(("N", "n_hidden")),
        "b2": FileArray(("N",)),
    }

    def __init__(
        self,
        W1: np.ndarray,
        b1: np.ndarray,
        W2: np.ndarray,
        b2: np.ndarray,
        A: np.ndarray,
        spec: ProblemSpec,
        info: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(A, spec, info)
        w = {"W1": W1, "b1": b1, "W2": W2, "b2": b2}
        H = int(np.shape(W1)[0]) if np.ndim(W1) == 2 else -1
        if H < 1:
            raise ValueError(f"W1 must be a 2-D (H, M) array, got shape {np.shape(W1)}")
        self._w = {name: checked_weight(name, w[name], shape)
                   for name, shape in self.expected_shapes(spec, {"n_hidden": H}).items()}
        self._w64 = {k: v.astype(np.float64) for k, v in self._w.items()}

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights (float32), named as in the file."""
        return dict(self._w)

    def arch_params(self) -> dict[str, int]:
        """``{"n_hidden": H}``."""
        return {"n_hidden": self.n_hidden}

    @property
    def n_hidden(self) -> int:
        """Hidden units H."""
        return int(self._w["W1"].shape[0])

    @classmethod
    def _from_arrays(
        cls, arrays: dict[str, np.ndarray], A: np.ndarray, spec: ProblemSpec,
        params: dict[str, int], info: dict[str, Any],
    ) -> NWSOMP:
        return cls(arrays["W1"], arrays["b1"], arrays["W2"], arrays["b2"], A, spec, info)

    def probs(self, X: np.ndarray) -> np.ndarray:
        """Atom probabilities for normalized residuals ``X`` (..., M) -> (..., N).

        Parameters
        ----------
        X : ndarray (..., M)

        Returns
        -------
        ndarray (..., N)
        """
        return nwsomp_probs(self._w64, np.asarray(X, dtype=np.float64))

    def _score(self, X: np.ndarray) -> np.ndarray:
        return self.probs(X).sum(axis=1)  # (b, N): summed over channels

    def __repr__(self) -> str:
        s = self._spec
        return (f"NWSOMP(M={s.M}, N={s.N}, L={s.L}, n_hidden={self.n_hidden}, "
                f"transform={s.transform!r}, dataset={s.dataset!r})")
