"""Figures for the experiments (matplotlib, a dependency, is imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import install_hint
from .sweep import SweepResult
from .theory import weak_threshold

__all__ = ["plot_images", "plot_mnist_phase", "plot_phase_transition", "plot_scaling",
           "plot_sweep", "pyplot", "save_figure"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no window).

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    ImportError
        matplotlib is not installed (the message says how to install it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib (a dependency of cscore): "
                          + install_hint("matplotlib")) from exc
    return plt


def save_figure(fig: Any, path: str | Path, dpi: int, *, title: str | None = None,
                fontsize: float | None = None, layout: bool = True) -> Path:
    """Finish ``fig`` (title, tight layout), write it to exactly ``path`` and close it.

    matplotlib would write ``out`` as ``out.png`` (and refuse ``out.v2``); a
    figure option names the file it writes, so such a name gets PNG data under
    that very name.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : path
        The file; its suffix (``.png``, ``.pdf``, ``.svg``, ...) picks the format.
    dpi : int
    title : str, optional
        The figure's title (``suptitle``).
    fontsize : float, optional
        The title's font size (default matplotlib's).
    layout : bool, default True
        Apply ``tight_layout`` (False: the caller laid the figure out).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    if title is not None:
        fig.suptitle(title, fontsize=fontsize)
    if layout:
        fig.tight_layout()
    path = Path(path)
    known = path.suffix[1:].lower() in fig.canvas.get_supported_filetypes()
    fig.savefig(path, dpi=dpi, format=None if known else "png")
    pyplot().close(fig)
    return path


def plot_sweep(result: SweepResult, path: str | Path, *, title: str | None = None) -> Path:
    """NMSE (log scale) and time per problem against the swept parameter.

    Parameters
    ----------
    result : SweepResult
        Output of :func:`cscore.bench.sweep`.
    path : path
        Output image (format from the suffix, e.g. ``.png``).
    title : str, optional
        Figure title.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    plt = pyplot()
    styles = _curve_styles(result)
    multi = len(result.nmse) > 4  # then the legend goes below the axes
    rows = -(-len(result.nmse) // 4) if multi else 0  # legend rows below the axes
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2 + 0.22 * rows))
    for label, ys in result.nmse.items():
        ax1.semilogy(result.values, ys, label=label, **{"marker": "o", **styles[label]})
    ax1.set_xlabel(_PARAM_LABELS.get(result.param, result.param))
    ax1.set_ylabel("NMSE  ||S_hat - S||_F / ||S||_F  (lower is better)")
    ax1.grid(True, which="both", alpha=0.3)
    if not multi:
        ax1.legend(fontsize=8)
    for label, ts in result.seconds.items():
        ax2.semilogy(result.values, np.asarray(ts) * 1e3, label=label,
                     **{"marker": "o", **styles[label]})
    ax2.set_xlabel(_PARAM_LABELS.get(result.param, result.param))
    ax2.set_ylabel("time per problem [ms]")
    ax2.grid(True, which="both", alpha=0.3)
    if title:
        fig.suptitle(title)
    if multi:
        bottom = 0.22 * rows / (4.2 + 0.22 * rows) + 0.02
        fig.legend(*ax1.get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8,
                   frameon=False)
        fig.tight_layout(rect=(0, bottom, 1, 1))
    return save_figure(fig, path, dpi=120, layout=not multi)


#: axis labels of the swept parameters
_PARAM_LABELS = {"k": "k (nonzeros per channel)", "sigma": "sigma (noise std)"}


def _curve_styles(result: SweepResult) -> dict[str, dict[str, Any]]:
    """Line styles of a sweep's curves ``"decoder (rule)"``: one colour (and marker)
    per decoder (``decoder[model]`` with several models) and one line style per
    stopping rule (tol solid, auto dashed, k dotted), so a decoder's curves share
    a colour and a rule's curves a line style."""
    dashes = {"tol": "-", "auto": "--", "k": ":"}
    bases: list[str] = []
    styles: dict[str, dict[str, Any]] = {}
    for label in result.nmse:
        base, _, rule = label.partition(" (")
        if base not in bases:
            bases.append(base)
        i = bases.index(base)
        styles[label] = {"color": f"C{i % 10}", "marker": "osD^v"[i // 10 % 5],
                         "linestyle": dashes.get(rule.rstrip(")"), "-")}
    return styles


def plot_phase_transition(pt: dict[str, Any], path: str | Path) -> Path:
    """Success-rate maps (rho = k/M against delta = M/N), one panel per decoder.

    Parameters
    ----------
    pt : dict
        Output of :func:`cscore.bench.phase_transition` (``deltas``, ``rhos``
        and ``success``: decoder -> (len(rhos), len(deltas)) rates).
    path : path
        Output image (format from the suffix, e.g. ``.png``).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    plt = pyplot()
    names = list(pt["success"])
    fig, axes = plt.subplots(
        1,
        len(names),
        figsize=(3.4 * len(names) + 1.2, 3.4),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    extent = (min(pt["deltas"]), max(pt["deltas"]), min(pt["rhos"]), max(pt["rhos"]))
    for i, (ax, name) in enumerate(zip(axes[0], names)):
        im = ax.imshow(
            np.asarray(pt["success"][name]),
            origin="lower",
            aspect="auto",
            extent=extent,
            vmin=0,
            vmax=1,
            cmap="viridis",
        )
        d = np.linspace(max(1e-3, extent[0]), extent[1], 60)
        ax.plot(d, weak_threshold(d), color="w", ls="--", lw=1.2,
                label="l1 weak threshold (Donoho-Tanner)")  # fmt: skip
        ax.set_ylim(extent[2], extent[3])
        ax.set_title(name)
        ax.set_xlabel("delta = M / N")
        if i == 0:
            ax.set_ylabel("rho = k / M")
            ax.legend(fontsize=7, loc="upper left")
    thr = pt.get("threshold", 1e-2)
    fig.suptitle(f"success rate (NMSE < {thr:g}), N = {pt['N']}, L = {pt['L']}, noiseless")
    fig.colorbar(im, ax=axes[0].tolist(), label="success rate")
    return save_figure(fig, path, dpi=120, layout=False)


def plot_images(
    columns: dict[str, np.ndarray],
    path: str | Path,
    *,
    subtitles: dict[str, str] | None = None,
    crop: int | None = 64,
    title: str | None = None,
) -> Path:
    """Images side by side: one column per label (original, each decoder).

    Parameters
    ----------
    columns : dict
        Label -> images (n, h, w) in [0, 1]; the first image of each is shown.
    path : path
        Output PNG.
    subtitles : dict, optional
        Label -> second title line (for example the NMSE).
    crop : int or None
        Add a second row with the central ``crop`` x ``crop`` pixels enlarged.
    title : str, optional
        A line above the figure (the problem's sizes, say).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    plt = pyplot()
    labels = list(columns)
    rows = 2 if crop else 1
    fig, axes = plt.subplots(
        rows, len(labels), figsize=(2.6 * len(labels), 2.8 * rows), squeeze=False
    )
    for j, label in enumerate(labels):
        img = np.clip(np.asarray(columns[label][0], dtype=np.float64), 0, 1)
        views = [img]
        if crop:
            h, w = img.shape
            c = min(crop, h, w)
            r0, c0 = (h - c) // 2, (w - c) // 2
            views.append(img[r0 : r0 + c, c0 : c0 + c])
        for i, view in enumerate(views):
            ax = axes[i][j]
            ax.imshow(view, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
        head = label if not subtitles or label not in subtitles else f"{label}\n{subtitles[label]}"
        axes[0][j].set_title(head, fontsize=9)
    if crop:
        axes[1][0].set_ylabel(f"center {crop}x{crop}", fontsize=8)
    return save_figure(fig, path, dpi=110, title=title or None, fontsize=9)


def plot_mnist_phase(res: dict[str, Any], path: str | Path) -> Path:
    """The thesis' Fig. 4.8: largest successful k/m against m/n, one curve per decoder.

    Parameters
    ----------
    res : dict
        Output of :func:`cscore.bench.phase_mnist.mnist_phase`.
    path : path
        Output image.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name, c in res["curve"].items():
        ax.plot(res["ratios"], c, marker="o", label=name)
    d = np.linspace(min(res["ratios"]), max(res["ratios"]), 60)
    ax.plot(d, weak_threshold(d), "k--", lw=1, label="l1 weak threshold (Donoho-Tanner)")
    ax.set_xlabel("m / n")
    ax.set_ylabel("k / m")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(
        f"MNIST: >= {res['fraction']:.0%} of problems at NMSE <= {res['nmse_ok']:g}", fontsize=10
    )
    return save_figure(fig, path, dpi=110)


def plot_bg(res: Any, path: str | Path) -> Path:
    """The Bernoulli-Gaussian benchmark: NMSE per decoder and AMP/VAMP per iteration.

    Parameters
    ----------
    res : cscore.bench.bg.BGResult
    path : path
        Output PNG.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    names = list(res.nmse_db)
    vals = [res.nmse_db[n] for n in names]
    ax1.barh(range(len(names)), vals, color=["0.3" if n == "support oracle" else "C0"
                                             for n in names])
    ax1.set_yticks(range(len(names)))
    ax1.set_yticklabels(names, fontsize=8)
    ax1.invert_yaxis()
    ax1.set_xlabel("NMSE (dB), lower is better")
    for i, v in enumerate(vals):
        ax1.text(v, i, f" {v:.1f}", va="center", fontsize=7)
    oracle = res.nmse_db.get("support oracle")
    for i, (name, curve) in enumerate(res.curves.items()):
        ax2.plot(range(1, len(curve) + 1), curve, marker=".", color=f"C{i + 1}", label=name)
        if name in res.nmse_db:  # the bar's value, where the run stopped
            ran = res.info.get("iterations_run", {}).get(name, len(curve))
            ax2.plot([ran], [res.nmse_db[name]], marker="*", markersize=10, color=f"C{i + 1}",
                     linestyle="none", label=f"{name} as run (the bar)")
    if oracle is not None:
        ax2.axhline(oracle, color="0.3", linestyle="--", label="support oracle")
    ax2.set_xlabel("iterations allowed (max_iter)")
    ax2.set_ylabel("NMSE (dB)")
    ax2.legend(fontsize=8)
    info = res.info
    return save_figure(fig, path, dpi=110, fontsize=9, title=(
        "Bernoulli-Gaussian benchmark: NMSE per decoder (left) and of AMP/VAMP per iteration "
        f"(right)\nN = {info['N']}, M = {info['M']}, Bernoulli-Gaussian rate {info['rate']}, "
        f"SNR {info['snr_db']:g} dB, condition number {info['kappa']:g}"))


def plot_scaling(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Log-log CPU time per vector against ``N``: a panel per matrix kind and batch size.

    One colour per library, one line style per stopping rule, one marker per
    method.  CPU time rather than wall time: every library runs on one thread, and
    on a shared machine the wall time also counts the time others held the core.

    Parameters
    ----------
    rows : sequence of dict
        :func:`run_scaling`'s rows.
    path : path
        PNG to write.

    Returns
    -------
    pathlib.Path
    """
    plt = pyplot()
    panels = sorted({(r["matrix"], r["batch"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.0), squeeze=False)
    colours = {lib: f"C{i}" for i, lib in enumerate(("cscore", "sklearn", "spams", "pylops"))}
    styles = {"conv": "-", "k": "--", "tol": ":"}
    markers = {"amp": "o", "omp": "s"}
    for ax, (kind, B) in zip(axes[0], panels):
        curves = sorted({(r["library"], r["method"], r["stop"]) for r in rows
                         if r["matrix"] == kind and r["batch"] == B})
        for lib, method, stop in curves:
            pts = sorted((r["N"], r["cpu_seconds_per_vector"]) for r in rows
                         if (r["library"], r["method"], r["stop"], r["matrix"], r["batch"])
                         == (lib, method, stop, kind, B))
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], color=colours.get(lib, "k"),
                      linestyle=styles.get(stop, "-."), marker=markers.get(method, "^"),
                      label=f"{lib} {method} ({stop})")
        ns = sorted({r["N"] for r in rows if r["matrix"] == kind and r["batch"] == B})
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_title(f"{kind}, batch {B}")
        ax.set_xlabel("N")
        ax.set_ylabel("CPU seconds per vector (one thread)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=110)
