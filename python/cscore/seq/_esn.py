"""The echo state network with learned input and recurrent weights (thesis sections 2.2-2.4).

Thesis chapter 2 (Palangi): an ESN with sigmoid units and a linear ridge
readout whose input weights ``W`` and sparse recurrent weights ``W_rec`` are
tuned by gradient descent on the ridge cost (:mod:`cscore.seq._train`).  What the
ESN and the R-DSN (:mod:`cscore.seq._rdsn`) share is :class:`cscore.seq._base.SeqBase`.
"""

from __future__ import annotations

from typing import Any

from ._base import DEFAULTS, SeqBase
from ._files import register_kind

__all__ = ["ESN"]


class ESN(SeqBase):
    """Echo state network with sigmoid units and a ridge readout (thesis section 2.2-2.4).

    With ``learn=()`` the classic ESN: random input weights, a random sparse
    recurrent matrix scaled to ``spectral_radius`` and a ridge readout over the
    states and the inputs (eqs. 2.1-2.9).  With ``learn=("W",)`` or
    ``learn=("W", "W_rec")`` the input (and recurrent) weights are tuned for
    ``n_epochs`` epochs by the closed-form gradients through the readout with
    ``m`` steps of dependency, FISTA momentum, gradient renormalization to
    ``grad_clip`` and ``W_rec`` renormalized to ``spectral_radius`` after every
    epoch.

    Parameters
    ----------
    n_hidden : int, default 500
        Reservoir units N.
    learn : tuple of str, default ()
        Weights to learn: ``()``, ``("W",)`` or ``("W", "W_rec")``.
    m : int, default 1
        Steps of dependency in the gradients (0 = none).  A value past the
        longest training sequence is capped at its length minus one (the full
        gradient; larger values would only add zeros).  Training runs the
        epochs in Python between compiled calls, so Ctrl-C stops it.
    spectral_radius : float, default 2.0
        Largest eigenvalue magnitude lambda of ``W_rec`` (eq. 2.3); must be < 4.
    input_scaling : float, default 0.5
        Standard deviation of each unit's input drive at initialization (the
        entries of ``W`` are N(0, (input_scaling^2) / D_in)).
    n_connections : int, default 10
        Nonzeros per row of the sparse ``W_rec``.
    ridge : float, default 1.0
        Ridge parameter mu of eq. 2.9.
    context : int, default 3
        Centered context window (frames) fed to the network; odd.
    n_epochs : int, default 20
        Epochs of weight learning (ignored when ``learn=()``).  The epoch with
        the lowest training cost is kept.
    step_size : float, default 1.0
        alpha of eq. 2.36 (applied to the per-frame mean cost).
    grad_clip : float, default 1.0
        Gradients whose norm exceeds this are rescaled to it.
    momentum : bool, default True
        FISTA momentum of eqs. 2.36-2.37.
    random_state : int, optional
        Seed for the random weights.
    n_threads : int, optional
        Threads of the compiled kernels (default :func:`cscore.get_num_threads`);
        results do not depend on it.

    Attributes
    ----------
    classes_ : ndarray
        The labels seen in ``fit``.
    modules_ : list
        The trained module (weights ``W``, ``rec``, readout ``U``, cost history).
    fit_seconds_ : list of float
        Wall time of ``fit`` up to the end of each module.

    Examples
    --------
    >>> from cscore.seq import ESN, load_japanese_vowels
    >>> tr = load_japanese_vowels("train")
    >>> model = ESN(n_hidden=50, learn=("W", "W_rec"), m=1, n_epochs=2, random_state=0)
    >>> model = model.fit(tr.X[:40], tr.frame_labels()[:40])
    >>> len(model.predict(tr.X[:3]))
    3
    """

    _kind = "esn"

    def __init__(
        self,
        n_hidden: int = 500,
        learn: tuple[str, ...] = (),
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

    def fit(self, X: Any, y: Any) -> ESN:
        """Train on sequences ``X`` with frame labels ``y``.

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
        self._fit(X, y, 1)
        return self


register_kind("esn", ESN)
