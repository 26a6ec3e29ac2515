"""The recurrent deep stacking network (R-DSN, thesis section 2.5): stacked ESN modules."""

from __future__ import annotations

from typing import Any

from .._validation import check_positive_int
from ._base import DEFAULTS, SeqBase
from ._checks import MAX_MODULES
from ._files import register_kind

__all__ = ["MAX_MODULES", "RDSN"]


class RDSN(SeqBase):
    """Recurrent deep stacking network (thesis section 2.5).

    ``n_modules`` ESN modules, each trained like :class:`ESN` with learned ``W``
    and ``W_rec``; module ``l > 1`` sees the (context-windowed) input and the
    scores of module ``l-1``; its input-weight rows for the data start from the
    tuned ``W`` of the module below, the rows for the scores are random, and its
    ``W_rec`` has a fresh random sparsity pattern.

    Parameters
    ----------
    n_modules : int, default 3
        Stacked modules.
    n_hidden, learn, m, spectral_radius, input_scaling, n_connections, ridge, context, \
n_epochs, step_size, grad_clip, momentum, random_state, n_threads
        As for :class:`ESN` (each module uses them); ``learn`` defaults to
        ``("W", "W_rec")``.

    Attributes
    ----------
    classes_ : ndarray
        The labels seen in ``fit``.
    modules_ : list
        The trained modules, lowest first.
    fit_seconds_ : list of float
        Wall time of ``fit`` up to the end of each module (cumulative).
    """

    _kind = "rdsn"
    n_modules: int

    def __init__(
        self,
        n_modules: int = 3,
        n_hidden: int = 500,
        learn: tuple[str, ...] = ("W", "W_rec"),
        m: int = 1,
        spectral_radius: float = DEFAULTS["spectral_radius"],
        input_scaling: float = DEFAULTS["input_scaling"],
        n_connections: int = DEFAULTS["n_connections"],
        ridge: float = DEFAULTS["ridge"],
        context: int = DEFAULTS["context"],
        n_epochs: int = DEFAULTS["n_epochs"],
        step_size: float = DEFAULTS["step_size"],
        grad_clip: float = DEFAULTS["grad_clip"],
        momentum: bool = True,
        random_state: int | None = None,
        n_threads: int | None = None,
    ) -> None:
        self._store_params(locals())

    def fit(self, X: Any, y: Any) -> RDSN:
        """Train the stack on sequences ``X`` with frame labels ``y``.

        Parameters
        ----------
        X : list of ndarray
            Sequences, each (T_i, D) float; lengths may differ.
        y : list of array_like
            (T_i,) integer frame labels per sequence (or one label per sequence).

        Returns
        -------
        self
        """
        n = check_positive_int("n_modules", self.n_modules, upper=MAX_MODULES)
        self._fit(X, y, n)
        return self


register_kind("rdsn", RDSN)
