"""The chapter's Tables 2.1/2.2 on Japanese Vowels: ESN vs learned W / W_rec vs R-DSN.

Rows are hidden sizes; columns are the fixed ESN, learning ``W`` (m=1),
learning ``W`` and ``W_rec`` (m=1 and m=3) and the R-DSN with 1..3 modules
(m=3; R-DSN(1) is the same model as "W+W_rec m=3", and R-DSN(k) is read off the
lowest k modules of one 3-module stack).  Each cell is the mean and spread over
seeds of the frame error on the test utterances; the utterance error pools the
frame scores of each utterance.  Every model uses the package defaults (chosen
on a validation split of the training utterances).
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._data import load_japanese_vowels
from ._esn import ESN
from ._metrics import frame_error, utterance_error
from ._rdsn import RDSN

__all__ = ["COLUMNS", "QUICK", "run_bench", "run_grid", "summarize", "write_outputs"]

#: column name -> (learn, m); R-DSN columns are handled separately.
COLUMNS: dict[str, tuple[tuple[str, ...], int]] = {
    "ESN": ((), 1),
    "W m=1": (("W",), 1),
    "W+W_rec m=1": (("W", "W_rec"), 1),
}
RDSN_COLUMNS = ("W+W_rec m=3 (R-DSN 1)", "R-DSN 2", "R-DSN 3")

#: The smoke-test grid of ``cscore seq bench --quick`` (:func:`run_bench`): arguments
#: of :func:`run_grid`; the stack is at most ``QUICK["n_modules"]`` deep.
QUICK: dict[str, Any] = {"sizes": (20,), "seeds": (0,), "n_train": 60, "n_test": 40,
                         "n_epochs": 2, "n_modules": 2}


def run_grid(
    sizes: Sequence[int] = (100, 500, 2000),
    seeds: Sequence[int] = (0, 1, 2),
    *,
    data_path: str | Path | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    n_epochs: int | None = None,
    n_modules: int = 3,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Fit every (size, column, seed) and return one row per fit.

    Parameters
    ----------
    sizes : sequence of int
        Hidden sizes (rows of the table).
    seeds : sequence of int
        ``random_state`` values.
    data_path : str or Path, optional
        Folder with the Japanese Vowels ``.ts`` files (default: shipped copy).
    n_train, n_test : int, optional
        Use only this many evenly spaced utterances (for quick runs).
    n_epochs : int, optional
        Override the default number of epochs (quick runs).
    n_modules : int, default 3
        Deepest R-DSN.
    log : callable
        Progress printer.

    Returns
    -------
    list of dict
        Keys: size, model, seed, frame_error, utterance_error, fit_seconds.
    """
    tr = load_japanese_vowels("train", data_path)
    te = load_japanese_vowels("test", data_path)
    itr = np.arange(len(tr)) if n_train is None else np.linspace(0, len(tr) - 1, n_train)
    ite = np.arange(len(te)) if n_test is None else np.linspace(0, len(te) - 1, n_test)
    Xtr = [tr.X[int(i)] for i in itr]
    ytr = [tr.frame_labels()[int(i)] for i in itr]
    Xte = [te.X[int(i)] for i in ite]
    yte = [te.frame_labels()[int(i)] for i in ite]
    extra: dict[str, Any] = {} if n_epochs is None else {"n_epochs": n_epochs}
    rows: list[dict[str, Any]] = []

    def record(size: int, name: str, seed: int, model: Any, secs: float, k: int | None) -> None:
        pred = model.predict(Xte, n_modules=k)
        scores = model.decision_function(Xte, n_modules=k)
        row = {
            "size": size,
            "model": name,
            "seed": seed,
            "frame_error": frame_error(yte, pred),
            "utterance_error": utterance_error(yte, scores, model.classes_),
            "fit_seconds": secs,
        }
        rows.append(row)
        log(
            f"N={size:5d} {name:22s} seed={seed} frame={row['frame_error']:.4f} "
            f"utt={row['utterance_error']:.4f} fit={secs:.1f}s"
        )

    for size in sizes:
        for seed in seeds:
            for name, (learn, m) in COLUMNS.items():
                model = ESN(n_hidden=size, learn=learn, m=m, random_state=seed, **extra)
                t = time.perf_counter()
                model.fit(Xtr, ytr)
                record(size, name, seed, model, time.perf_counter() - t, None)
            stack = RDSN(n_modules=n_modules, n_hidden=size, m=3, random_state=seed, **extra)
            stack.fit(Xtr, ytr)
            for k in range(1, n_modules + 1):
                name = RDSN_COLUMNS[0] if k == 1 else f"R-DSN {k}"
                record(size, name, seed, stack, stack.fit_seconds_[k - 1], k)
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation over seeds per (size, model).

    Parameters
    ----------
    rows : list of dict
        Output of :func:`run_grid` (or read back from its CSV).

    Returns
    -------
    list of dict
        size, model, n, frame/utterance error and fit time mean and std.
    """
    keys: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in rows:
        keys.setdefault((int(r["size"]), str(r["model"])), []).append(r)
    out = []
    for (size, model), rs in keys.items():
        d: dict[str, Any] = {"size": size, "model": model, "n": len(rs)}
        for k in ("frame_error", "utterance_error", "fit_seconds"):
            v = np.array([float(r[k]) for r in rs])
            d[k] = float(v.mean())
            d[k + "_std"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
        out.append(d)
    return out


def _markdown(summary: list[dict[str, Any]]) -> str:
    models = list(dict.fromkeys(s["model"] for s in summary))
    sizes = sorted({s["size"] for s in summary})
    cell = {(s["size"], s["model"]): s for s in summary}
    lines = []
    for metric, scale, title in (
        ("frame_error", 100.0, "Frame error (%), mean ± std over seeds"),
        ("utterance_error", 100.0, "Utterance error (%), mean ± std over seeds"),
        ("fit_seconds", 1.0, "Wall time per fit (s), mean ± std"),
    ):
        lines += [f"**{title}**", "", "| hidden | " + " | ".join(models) + " |"]
        lines.append("|---:|" + "---:|" * len(models))
        for n in sizes:
            vals = []
            for mdl in models:
                s = cell.get((n, mdl))
                vals.append(
                    "" if s is None
                    else f"{scale * s[metric]:.2f} ± {scale * s[metric + '_std']:.2f}"
                    if metric != "fit_seconds"
                    else f"{s[metric]:.1f} ± {s[metric + '_std']:.1f}"
                )
            lines.append(f"| {n} | " + " | ".join(vals) + " |")
        lines.append("")
    return "\n".join(lines)


def write_outputs(rows: list[dict[str, Any]], out_dir: str | Path, *, plot: bool = True) -> Path:
    """Write ``seq_runs.csv``, ``seq_table.md`` and (optionally) ``seq.png``.

    Parameters
    ----------
    rows : list of dict
        Output of :func:`run_grid`.
    out_dir : str or Path
        Destination folder (created).
    plot : bool, default True
        Also draw the figure (needs matplotlib).

    Returns
    -------
    Path
        The markdown table's path.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "seq_runs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary = summarize(rows)
    md = out / "seq_table.md"
    md.write_text(_markdown(summary))
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        models = list(dict.fromkeys(s["model"] for s in summary))
        for mdl in models:
            ss = sorted((s for s in summary if s["model"] == mdl), key=lambda s: s["size"])
            ax.errorbar(
                [s["size"] for s in ss],
                [100 * s["frame_error"] for s in ss],
                yerr=[100 * s["frame_error_std"] for s in ss],
                marker="o",
                capsize=3,
                label=mdl,
            )
        ax.set_xscale("log")
        ax.set_xlabel("hidden units")
        ax.set_ylabel("test frame error (%)")
        ax.set_title("Japanese Vowels, frame-level speaker classification")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "seq.png", dpi=90)
        plt.close(fig)
    return md


def run_bench(
    out_dir: str | Path,
    sizes: Sequence[int] = (100, 500, 2000),
    seeds: Sequence[int] = (0, 1, 2),
    *,
    data_path: str | Path | None = None,
    n_modules: int = 3,
    quick: bool = False,
    plot: bool = True,
    log: Callable[[str], None] = print,
) -> Path:
    """Run the grid (:func:`run_grid`) and write its outputs (:func:`write_outputs`).

    What ``cscore seq bench`` does.

    Parameters
    ----------
    out_dir : str or Path
        Destination folder (created).
    sizes, seeds : sequence of int
        Hidden sizes and seeds (ignored when ``quick``).
    data_path : str or Path, optional
        Folder with the Japanese Vowels ``.ts`` files (default: shipped copy).
    n_modules : int, default 3
        Deepest R-DSN (``quick``: at most ``QUICK["n_modules"]``).
    quick : bool
        Run the tiny smoke-test grid :data:`QUICK` instead.
    plot : bool, default True
        Also draw the figure (needs matplotlib).
    log : callable
        Progress printer.

    Returns
    -------
    Path
        The markdown table's path.
    """
    if quick:
        q = dict(QUICK)
        q["n_modules"] = min(n_modules, q["n_modules"])
        rows = run_grid(data_path=data_path, log=log, **q)
    else:
        rows = run_grid(sizes, seeds, data_path=data_path, n_modules=n_modules, log=log)
    return write_outputs(rows, out_dir, plot=plot)
