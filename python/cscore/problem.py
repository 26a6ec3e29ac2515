"""What a model was trained for: :class:`ProblemSpec`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ProblemSpec"]

_TRANSFORMS = ("none", "dct", "haar")


@dataclass(frozen=True)
class ProblemSpec:
    """What a model was trained for: sizes and how signals were made sparse.

    Attributes
    ----------
    M, N, L : int
        Measurements per channel, atoms (signal length), channels per problem.
    block_size : int
        Side of the square image block a channel's signal comes from
        (``N == block_size**2``), or 0 when the signals are not image blocks.
    transform : {"none", "dct", "haar"}
        Sparsifying transform applied to each block ("none": pixels are sparse).
    levels : int
        Haar decomposition levels (0 unless ``transform == "haar"``).
    image_size : int
        Side of the (resized) images blocks were cut from, 0 if not images.
    vectorization : str
        How a block becomes a vector: "column-major" (MATLAB's ``(:)``), the
        block order being column-major too (MATLAB ``im2col(..., 'distinct')``).
    dataset : str
        Where the training signals came from (free text, e.g. "mnist").
    """

    M: int
    N: int
    L: int
    block_size: int = 0
    transform: str = "none"
    levels: int = 0
    image_size: int = 0
    vectorization: str = "column-major"
    dataset: str = ""

    def __post_init__(self) -> None:
        for name in ("M", "N", "L"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"ProblemSpec.{name} must be a positive int, got {v!r}")
        if self.transform not in _TRANSFORMS:
            raise ValueError(
                f"ProblemSpec.transform must be one of {_TRANSFORMS}, got {self.transform!r}"
            )
        if self.block_size and self.block_size**2 != self.N:
            raise ValueError(
                f"ProblemSpec: block_size**2 ({self.block_size**2}) must equal N ({self.N})"
            )

