"""The settings and the result of training an unrolled decoder (LISTA, LAMP):
:class:`UnrolledTrainConfig`, :class:`UnrolledTrainResult`
(:func:`cscore.training.unrolled.train_unrolled`; no torch needed to build them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..decoders.learned import UnrolledModel

__all__ = ["UnrolledTrainConfig", "UnrolledTrainResult"]


@dataclass
class UnrolledTrainConfig:
    """Settings of :func:`train_unrolled` (defaults follow Borgerding et al. where they say).

    Attributes
    ----------
    n_layers : int, default 6
        Layers T of the trained network.
    n_train : int, default 10000
        Problems drawn from the source; ``val_fraction`` of them validate.
    val_fraction : float, default 0.1
    batch_size : int, default 256
        Vectors (groups of channels for a joint model) per Adam step.
    lr : float, default 1e-3
        Learning rate of a new layer's stage.
    refine : tuple of float, default (0.5, 0.1, 0.01)
        Factors of ``lr`` of the fine-tuning stages (all layers).
    val_every : int, default 20
        Steps between validations.
    patience : int, default 10
        Validations without improvement that end a stage.
    max_steps : int, default 5000
        Steps per stage at most.
    max_seconds : float, optional
        Wall-clock budget of the training stages, shared out by their cost (the
        data draw and the untrained network's fit come first, outside it).
    seed : int, default 0
        Seed of the data draw (``seed``) and of the minibatches (``seed + 1``).
    n_threads : int, optional
        torch threads during training.
    progress : bool, default True
        Show a tqdm progress bar with the train/validation NMSE.
    device : str, default "cpu"
        torch device of the training (``"cuda"`` for a GPU; its arithmetic
        and minibatch draws do not reproduce a CPU run's numbers).
    schedule : {"layerwise", "joint"}, default "layerwise"
        "layerwise": Borgerding et al.'s growth, one layer at a time; "joint":
        all ``n_layers`` layers from the first step, at ``lr`` then at each
        ``lr * refine[i]`` (each rate a stage that ends by validation).
    matrix_lr : float, default 1.0
        Factor of the learning rate for the matrices ``B``, ``S`` (Adam moves
        every entry by about ``lr`` per step, whatever its size: a sign pattern
        of ``lr`` over an N x N matrix is a change of operator norm up to
        ``lr * N``, so the matrices may need a smaller rate than the thresholds).
    online : bool, default False
        Draw every minibatch fresh from the source (``source.draw(batch_size,
        seed + 2 + step)``) instead of from the ``n_train`` problems drawn
        once (which still give the validation split); no over-fitting of a
        large tied ``S`` to a finite training set.
    copy_previous : bool, default True
        Layer-wise: a new layer starts from the previous layer's trained
        values (else from the untrained network's own values for that layer).
    """

    n_layers: int = 6
    n_train: int = 10000
    val_fraction: float = 0.1
    batch_size: int = 256
    lr: float = 1e-3
    refine: tuple[float, ...] = (0.5, 0.1, 0.01)
    val_every: int = 20
    patience: int = 10
    max_steps: int = 5000
    max_seconds: float | None = None
    seed: int = 0
    n_threads: int | None = None
    progress: bool = True
    device: str = "cpu"
    schedule: str = "layerwise"
    matrix_lr: float = 1.0
    online: bool = False
    copy_previous: bool = True


@dataclass
class UnrolledTrainResult:
    """A trained model with its record.

    Attributes
    ----------
    model : LISTA or LAMP
        The trained network (its ``info["training"]`` holds this record).
    initial : LISTA or LAMP
        The untrained network it started from (ISTA / AMP with tuned parameters).
    val_nmse_db : list of float
        Validation NMSE (dB) of the network after training each layer.
    history : list of dict
        One entry per stage: layer, stage, lr, steps, train/val NMSE (dB), seconds.
    seconds : float
    settings : dict
    """

    model: UnrolledModel
    initial: UnrolledModel
    val_nmse_db: list[float] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)
