"""What a training run interrupted by Ctrl-C hands back: the best model so far."""

from __future__ import annotations

from typing import Any

__all__ = ["TrainingInterrupted"]


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training, carrying the best weights validated so far.

    A subclass of :class:`KeyboardInterrupt`, so code that does not look for it
    is interrupted as before; ``cscore train`` catches it and saves
    :attr:`model`.

    Parameters
    ----------
    result : object or None
        The fit's result (``TrainResult``, ``NWSOMPTrainResult``) with the best
        weights by validation loss, or None when no epoch had improved on the
        starting point yet (nothing worth keeping).
    best_epoch : int
        The epoch (1-based) those weights come from; 0 with ``result`` None.

    Attributes
    ----------
    model : object or None
        The decoder built from ``result`` (set by the recipes in
        :mod:`cscore.training.recipes`), ready to save; None when there is none.
    """

    def __init__(self, result: Any = None, best_epoch: int = 0) -> None:
        super().__init__("training interrupted")
        self.result = result
        self.best_epoch = int(best_epoch)
        self.model: Any = None
