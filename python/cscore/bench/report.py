"""Tidy results and a shareable report for every ``cscore bench`` run.

* ``results.csv``: one row per decoder x stopping rule x setting x problem
  (columns :data:`CSV_COLUMNS` first, then any extra ones).
* ``report.md``: the exact command, seed, versions and machine, a summary table
  (mean and spread per decoder and setting) and the figures, embedded.
"""

from __future__ import annotations

import csv
import datetime
import os
import platform
import shlex
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CSV_COLUMNS", "cpu_model", "format_duration", "summary", "summary_table", "versions",
           "write_csv", "write_report"]

#: Columns every ``results.csv`` starts with.
CSV_COLUMNS = ("decoder", "stop", "k", "m", "sigma", "problem", "nmse", "seconds")


def format_duration(seconds: float) -> str:
    """A time per problem for people: milliseconds, microseconds below 0.01 ms.

    Parameters
    ----------
    seconds : float

    Returns
    -------
    str
        Three significant digits: ``"2.87 ms"``, or ``"4.2 \u00b5s"`` when
        shorter than 0.01 ms (where milliseconds would print as 0.00).
    """
    if seconds < 1e-5:
        return f"{seconds * 1e6:.3g} \u00b5s"
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"


def write_csv(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write ``rows`` as CSV: :data:`CSV_COLUMNS` first, then the other keys in order seen.

    Parameters
    ----------
    rows : sequence of dict
        One record per problem.
    path : path
        File to write (overwritten).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    cols = list(CSV_COLUMNS)
    for r in rows:
        cols += [c for c in r if c not in cols]
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in cols})
    return path


def summary(
    rows: Sequence[dict[str, Any]], by: Sequence[str], value: str = "nmse"
) -> list[dict[str, Any]]:
    """Mean, standard deviation, median and count of ``value`` per group.

    Parameters
    ----------
    rows : sequence of dict
    by : sequence of str
        Keys that define a group (for example ``("decoder", "stop", "k")``).
    value : str, default "nmse"
        The measured column.

    Returns
    -------
    list of dict
        One record per group (in order of first appearance) with the ``by``
        keys and ``mean``, ``std``, ``median``, ``n`` (NaNs ignored).
    """
    groups: dict[tuple[Any, ...], list[float]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(b) for b in by), []).append(float(r[value]))
    out = []
    for key, vals in groups.items():
        v = np.asarray(vals, dtype=np.float64)
        v = v[np.isfinite(v)]
        rec = dict(zip(by, key))
        rec.update(
            mean=float(v.mean()) if v.size else float("nan"),
            std=float(v.std()) if v.size else float("nan"),
            median=float(np.median(v)) if v.size else float("nan"),
            n=int(v.size),
        )
        out.append(rec)
    return out


def summary_table(rows: Sequence[dict[str, Any]], by: Sequence[str], value: str = "nmse") -> str:
    """:func:`summary` as a Markdown table.

    Parameters
    ----------
    rows : sequence of dict
    by : sequence of str
    value : str, default "nmse"

    Returns
    -------
    str
        Markdown table with columns ``by``, mean, std, median, n.
    """
    recs = summary(rows, by, value)
    head = "| " + " | ".join([*by, f"mean {value}", "std", "median", "n"]) + " |"
    sep = "|---" * (len(by) + 4) + "|"
    lines = [head, sep]
    for r in recs:
        cells = [str(r[b]) for b in by]
        cells += [f"{r['mean']:.4g}", f"{r['std']:.3g}", f"{r['median']:.4g}", str(r["n"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions() -> dict[str, str]:
    """Versions of Python and of the packages a run depends on.

    Returns
    -------
    dict
        Package -> version (``"absent"`` when not installed).
    """
    out = {"python": platform.python_version()}
    from .._version import DISTRIBUTION

    # cscore is installed as DISTRIBUTION ("cscore" on the index is another project)
    for pkg, dist in (("cscore", DISTRIBUTION), ("numpy", "numpy"), ("scipy", "scipy"),
                      ("PyWavelets", "PyWavelets"), ("matplotlib", "matplotlib"),
                      ("torch", "torch")):
        try:
            out[pkg] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[pkg] = "absent"
    if out["cscore"] == "absent":
        from .._version import __version__

        out["cscore"] = f"{__version__} (source tree)"
    return out


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` where there is one), for speed reports.

    Returns
    -------
    str
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """One line describing this machine (OS, CPU, cores, BLAS threads).

    Returns
    -------
    str
    """
    cpu = cpu_model()
    from .._config import get_num_threads

    return (
        f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} logical CPUs, "
        f"cscore threads {get_num_threads()}"
    )


def write_report(
    out: str | Path,
    *,
    title: str,
    seed: int,
    sections: Sequence[tuple[str, str]],
    figures: Sequence[str | Path] = (),
    argv: Sequence[str] | None = None,
    seconds: float | None = None,
) -> Path:
    """Write ``out/report.md``.

    Parameters
    ----------
    out : path
        The run's output folder (figures are linked relative to it).
    title : str
        Heading.
    seed : int
        The run's seed.
    sections : sequence of (heading, markdown)
        Tables and notes, in order.
    figures : sequence of path
        Images to embed.
    argv : sequence of str, optional
        The command line (default ``sys.argv``).
    seconds : float, optional
        Wall time of the run.

    Returns
    -------
    pathlib.Path
        The report's path.
    """
    out = Path(out)
    argv = list(sys.argv if argv is None else argv)
    if argv and Path(argv[0]).name in ("cscore", "__main__.py"):
        argv[0] = "cscore"
    lines = [f"# {title}", "", "```", shlex.join(argv), "```", ""]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines += [f"- date: {stamp}", f"- seed: {seed}"]
    if seconds is not None:
        lines.append(f"- wall time: {seconds:.1f} s")
    lines.append(f"- machine: {machine()}")
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()))
    lines += ["- per-problem results: [results.csv](results.csv)", ""]
    for fig in figures:
        name = Path(fig).name
        lines += [f"![{name}]({name})", ""]
    for heading, body in sections:
        lines += [f"## {heading}", "", body, ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
