"""Settings and results of LSTM-CS / BLSTM-CS training (:mod:`cscore.training.lstm`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..decoders.learned.weights import CELL_GATES, BLSTMCSWeights, LSTMCSWeights

__all__ = ["TrainConfig", "TrainResult"]


@dataclass
class TrainConfig:
    """Training settings (defaults: what trained the pretrained models).

    Attributes
    ----------
    n_cells : int
        LSTM cells H (paper: 512), per direction for ``arch="blstm"``.
    arch : {"lstm", "blstm"}
        Unidirectional LSTM-CS or bidirectional (section 4.6).
    cell : {"paper", "lstm"}
        "paper": gates i, g, o (no forget gate); "lstm": i, f, g, o.
    optimizer : {"adam", "nesterov"}
    lr : float or None
        Step size (default 1e-3 for Adam, 3e-4 for the paper's Nesterov).
    batch_size : int
        Sequences per minibatch.
    max_epochs : int
    patience : int
        Epochs without validation improvement before stopping.
    clip : float
        Elementwise gradient clipping threshold (paper: 100).
    weight_decay : float
        L2 penalty (Adam only; 0 = none).
    output_bias : bool
        Train ``c_out`` (else it stays zero, like the paper's ``z = U v``).
    seed : int
    max_seconds : float or None
        Wall-clock budget: stop after the minibatch that exceeds it (the
        partial epoch is still validated).  None: no limit.  A run cut by the
        budget depends on the machine's speed; one that is not is reproducible.
    max_cpu_seconds : float or None
        Like ``max_seconds`` but in CPU seconds of this process
        (:func:`time.process_time`), so a budget that does not shrink when the
        machine is busy.  None: no limit.
    n_threads : int or None
        torch CPU threads (None: leave torch's setting).
    progress : bool
        Show a tqdm bar with train and validation loss.
    device : str
        torch device of the training (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).
        Off the CPU the training sequences are generated on the device too
        (:mod:`cscore.training._sequences_torch`), with torch's random
        generator: such a run follows the same recipe but not the same random
        draws as a CPU run, and GPU arithmetic is not bit-reproducible.
    """

    n_cells: int = 512
    arch: str = "lstm"
    cell: str = "paper"
    optimizer: str = "adam"
    lr: float | None = None
    batch_size: int = 256
    max_epochs: int = 25
    patience: int = 3
    clip: float = 100.0
    weight_decay: float = 0.0
    output_bias: bool = True
    seed: int = 0
    max_seconds: float | None = None
    max_cpu_seconds: float | None = None
    n_threads: int | None = None
    progress: bool = True
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.cell not in CELL_GATES:
            raise ValueError(f"cell must be one of {list(CELL_GATES)}, got {self.cell!r}")
        if self.arch not in ("lstm", "blstm"):
            raise ValueError(f"arch must be 'lstm' or 'blstm', got {self.arch!r}")
        if self.optimizer not in ("adam", "nesterov"):
            raise ValueError(f"optimizer must be 'adam' or 'nesterov', got {self.optimizer!r}")
        for name in ("n_cells", "batch_size", "max_epochs", "patience"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not isinstance(self.device, str) or not self.device:
            raise ValueError(f"device must be a torch device name, got {self.device!r}")
        if self.clip <= 0:
            raise ValueError(f"clip must be > 0, got {self.clip}")

    @property
    def step_size(self) -> float:
        """The learning rate in use."""
        if self.lr is not None:
            return float(self.lr)
        return 1e-3 if self.optimizer == "adam" else 3e-4


@dataclass
class TrainResult:
    """What :func:`fit_sequences` returns."""

    weights: LSTMCSWeights | BLSTMCSWeights
    history: list[dict[str, Any]]
    best_epoch: int
    seconds: float
    config: TrainConfig
    extra: dict[str, Any] = field(default_factory=dict)
