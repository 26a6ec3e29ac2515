"""Figures for the experiments (matplotlib is imported lazily; ``pip install cscore[plot]``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .experiments import SweepResult

__all__ = ["plot_images", "plot_phase_transition", "plot_sweep"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'cscore[plot]'") from exc
    return plt


def plot_sweep(result: SweepResult, path: str | Path, *, title: str | None = None) -> Path:
    """NMSE (log scale) and time per problem against the swept parameter."""
    plt = _pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, ys in result.nmse.items():
        ax1.semilogy(result.values, ys, marker="o", label=label)
    ax1.set_xlabel(result.param)
    ax1.set_ylabel("NMSE  ||S_hat - S||_F / ||S||_F")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=8)
    for label, ts in result.seconds.items():
        ax2.semilogy(result.values, np.asarray(ts) * 1e3, marker="o", label=label)
    ax2.set_xlabel(result.param)
    ax2.set_ylabel("time per problem [ms]")
    ax2.grid(True, which="both", alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_phase_transition(pt: dict[str, Any], path: str | Path) -> Path:
    """Success-rate maps (rho = k/M against delta = M/N), one panel per decoder."""
    plt = _pyplot()
    names = list(pt["success"])
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.4), squeeze=False)
    extent = (min(pt["deltas"]), max(pt["deltas"]), min(pt["rhos"]), max(pt["rhos"]))
    for ax, name in zip(axes[0], names):
        im = ax.imshow(
            np.asarray(pt["success"][name]),
            origin="lower",
            aspect="auto",
            extent=extent,
            vmin=0,
            vmax=1,
            cmap="viridis",
        )
        ax.set_title(name)
        ax.set_xlabel("delta = M / N")
        ax.set_ylabel("rho = k / M")
    fig.colorbar(im, ax=axes[0].tolist(), label="success rate")
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_images(
    rows: dict[str, np.ndarray], path: str | Path, *, titles: Sequence[str] | None = None
) -> Path:
    """A grid of images: one row per label (original, each decoder), columns = images."""
    plt = _pyplot()
    labels = list(rows)
    n = min(r.shape[0] for r in rows.values())
    fig, axes = plt.subplots(len(labels), n, figsize=(1.9 * n, 2.0 * len(labels)), squeeze=False)
    for i, label in enumerate(labels):
        for j in range(n):
            ax = axes[i][j]
            ax.imshow(rows[label][j], cmap="gray", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(label, fontsize=9)
            if i == 0 and titles is not None:
                ax.set_title(titles[j], fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
