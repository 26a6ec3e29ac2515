"""How an LSTM encoder embeds a sentence (thesis section 3.5.1, Figs. 3.4-3.6, Tables 3.1-3.3).

* :func:`activations`: input gate, cell state and output of every cell after
  every word (the heatmaps of Figs. 3.4-3.5).
* :func:`keywords`: backtracking the most active cells of the final embedding:
  a cell *detects* word t when its output changes by a large amount there
  (at least ``threshold`` times that cell's largest change over the text);
  a word detected by at least 40% of the cells is a keyword (Tables 3.1-3.2).
  The first word is not counted (every cell changes there).
* :func:`topic_cells`: for many texts, the words the 5 most active cells
  detect, gathered per cell (Table 3.3: cells that collect the keywords of one
  topic).
* :func:`write_analysis` writes all of it for one text;
  :func:`write_cranfield_analysis` (``cscore text analyze``) with Cranfield
  queries as the topic texts and a chosen member of an ensemble.

Pictures need matplotlib (imported when drawing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np

from .._optional import install_hint
from .model import TextModel

__all__ = [
    "KeywordReport",
    "activations",
    "keywords",
    "plot_activations",
    "plot_keywords",
    "topic_cells",
    "write_analysis",
    "write_cranfield_analysis",
]


def activations(model: TextModel, text: str,
                side: str = "query") -> tuple[list[str], dict[str, np.ndarray]]:
    """Per-word activations of ``text`` (see :meth:`RetrievalModel.trace`).

    For an ensemble these are its first member's (:meth:`RetrievalEnsemble.trace`).

    Returns
    -------
    words : list of str
    acts : dict
        ``input_gate``, ``cell``, ``output`` ... each (n_words, n_cells).
    """
    return model.trace(text, side)


@dataclass
class KeywordReport:
    """Which words the most active cells detect in one text."""

    words: list[str]
    cells: list[int]
    detected: dict[int, list[int]] = field(default_factory=dict)

    @property
    def counts(self) -> list[int]:
        """For every word, how many of :attr:`cells` detect it (first word: 0)."""
        c = [0] * len(self.words)
        for ts in self.detected.values():
            for t in ts:
                c[t] += 1
        return c

    def keywords(self, fraction: float = 0.4) -> list[str]:
        """Words detected by more than ``fraction`` of the cells."""
        n = max(len(self.cells), 1)
        return [w for w, k in zip(self.words, self.counts) if k / n > fraction]

    def cell_words(self) -> dict[int, list[str]]:
        """Cell -> the words it detects."""
        return {c: [self.words[t] for t in ts] for c, ts in self.detected.items()}


def keywords(model: TextModel, text: str, side: str = "query", *, n_cells: int = 10,
             threshold: float = 0.5) -> KeywordReport:
    """Backtrack the ``n_cells`` most active cells of ``text``'s embedding.

    Parameters
    ----------
    model : RetrievalModel or RetrievalEnsemble
        With an LSTM, BiLSTM or RNN encoder on ``side``.
    text : str
    side : {"query", "document"}
    n_cells : int
        How many of the largest ``|y(T)|`` cells to follow.
    threshold : float
        A cell detects word t (t >= 2) when ``|y(t) - y(t-1)|`` is at least
        ``threshold`` times the cell's largest change after the first word.

    Returns
    -------
    KeywordReport
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    words, acts = model.trace(text, side)
    y = acts["output"]
    if not words:
        return KeywordReport(words, [])
    top = [int(c) for c in np.argsort(-np.abs(y[-1]), kind="stable")[:n_cells]]
    rep = KeywordReport(words, top)
    if len(words) < 2:
        return rep
    dy = np.abs(np.diff(y, axis=0))  # (T-1, H): change at word t = 1..T-1
    for c in top:
        m = float(dy[:, c].max())
        if m <= 0:
            rep.detected[c] = []
            continue
        rep.detected[c] = [int(t) + 1 for t in np.nonzero(dy[:, c] >= threshold * m)[0]]
    return rep


def topic_cells(model: TextModel, texts: Sequence[str], side: str = "query", *,
                n_cells: int = 5, threshold: float = 0.5) -> dict[int, list[tuple[int, list[str]]]]:
    """Cell -> [(text index, words it detects there)] over the 5 most active cells of each text.

    Parameters
    ----------
    model : RetrievalModel or RetrievalEnsemble
    texts : sequence of str
    side : {"query", "document"}
    n_cells : int
    threshold : float

    Returns
    -------
    dict
        Sorted by how many texts use the cell (most first).
    """
    table: dict[int, list[tuple[int, list[str]]]] = {}
    for i, t in enumerate(texts):
        rep = keywords(model, t, side, n_cells=n_cells, threshold=threshold)
        for c, ws in rep.cell_words().items():
            if ws:
                table.setdefault(c, []).append((i, ws))
    return dict(sorted(table.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def _plt() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover
        raise ImportError(f"pictures need matplotlib: {install_hint('matplotlib')}") from exc
    return plt


def plot_activations(model: TextModel, text: str, path: Union[str, Path], *,
                     side: str = "query", max_cells: int = 32) -> Path:
    """Heatmaps of input gate, cell state and output per word (Figs. 3.4-3.5).

    Rows are the ``max_cells`` most active cells of the final embedding.

    Returns
    -------
    Path
    """
    plt = _plt()
    words, acts = model.trace(text, side)
    if not words:
        raise ValueError("text has no word the model knows; nothing to draw")
    y = acts["output"]
    cells = np.argsort(-np.abs(y[-1]), kind="stable")[:max_cells]
    names = (("input_gate", "input gate i(t)"), ("cell", "cell state c(t)"),
             ("output", "output y(t)"))
    panels = [(k, lab) for k, lab in names if k in acts]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 0.4 * len(words) * 0.6,
                                                      0.18 * len(cells) + 2.2), squeeze=False)
    for ax, (k, lab) in zip(axes[0], panels):
        a = acts[k][:, cells].T
        if k == "input_gate":  # own colour range: gates often vary little (cf. Fig. 3.8)
            cmap, lo, hi = "viridis", float(a.min()), float(a.max())
            lab = f"{lab}, range {lo:.2f}-{hi:.2f}"
        else:
            lim = float(np.abs(a).max()) or 1.0
            cmap, lo, hi = "RdBu_r", -lim, lim
        im = ax.imshow(a, aspect="auto", cmap=cmap, vmin=lo, vmax=hi if hi > lo else lo + 1e-6,
                       interpolation="nearest")
        ax.set_xticks(range(len(words)))
        ax.set_xticklabels(words, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(cells)))
        ax.set_yticklabels([str(int(c)) for c in cells], fontsize=5)
        ax.set_title(lab, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.05)
    axes[0][0].set_ylabel(f"cell ({len(cells)} most active)")
    fig.suptitle(f"{side}: {text[:80]}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_keywords(report: KeywordReport, path: Union[str, Path], title: str = "") -> Path:
    """Bar chart: how many of the most active cells detect each word (Tables 3.1-3.2)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(report.words) + 1), 3))
    counts = report.counts
    n = max(len(report.cells), 1)
    colors = ["tab:red" if k / n > 0.4 else "tab:gray" for k in counts]
    ax.bar(range(len(counts)), counts, color=colors)
    ax.set_xticks(range(len(counts)))
    ax.set_xticklabels(report.words, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel(f"cells out of {n}")
    ax.axhline(0.4 * n, ls="--", c="k", lw=0.8)
    ax.set_title(title or "words detected by the most active cells (red: keywords)", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_analysis(model: TextModel, text: str, out_dir: Union[str, Path], *,
                   side: str = "query", topic_texts: Sequence[str] = (),
                   n_topic_cells: int = 12) -> dict[str, Path]:
    """Write the chapter's analysis of ``text`` into ``out_dir``.

    Files: ``activations.png`` (heatmaps), ``keywords.png`` (bar chart) and
    ``analysis.md`` (keyword table, cells' keywords, and the topic table over
    ``text`` and ``topic_texts``).  An ensemble is analyzed through its first
    member (the file says so).

    Returns
    -------
    dict
        Name -> path.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rep = keywords(model, text, side)
    if not rep.words:
        raise ValueError("text has no word the model knows; nothing to analyze")
    paths = {"activations": plot_activations(model, text, out / "activations.png", side=side),
             "keywords": plot_keywords(rep, out / "keywords.png", f"{side}: {text[:70]}")}
    lines = [f"# LSTM analysis of the {side}: \u201c{text}\u201d", "",
             f"Model: {model!r}"
             + (" (activations of its first member)" if hasattr(model, "members") else ""),
             "",
             "## Keywords (cells out of the 10 most active that detect each word)", "",
             "| " + " | ".join(rep.words) + " |", "|" + "---|" * len(rep.words),
             "| " + " | ".join("-" if t == 0 else str(k) for t, k in enumerate(rep.counts)) + " |",
             "", f"Keywords (more than 40% of the cells): {', '.join(rep.keywords()) or 'none'}",
             "", "## Words each of the most active cells detects", "",
             "| cell | words |", "|---|---|"]
    lines += [f"| {c} | {', '.join(ws) or '-'} |" for c, ws in rep.cell_words().items()]
    texts = [text, *topic_texts]
    topics = topic_cells(model, texts, side)
    cells = list(topics)[:n_topic_cells]
    lines += ["", "## Topic cells: keywords the 5 most active cells detect, per text", "",
              "| text | " + " | ".join(f"cell {c}" for c in cells) + " |",
              "|" + "---|" * (len(cells) + 1)]
    for i, t in enumerate(texts):
        row = []
        for c in cells:
            ws = [", ".join(w) for j, w in topics[c] if j == i]
            row.append(ws[0] if ws else "")
        short = t if len(t) <= 60 else t[:57] + "..."
        lines.append(f"| {short} | " + " | ".join(row) + " |")
    md = out / "analysis.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths["table"] = md
    return paths


def write_cranfield_analysis(model: TextModel, text: str, out_dir: Union[str, Path], *,
                             side: str = "query", member: int = 0,
                             n_topic_queries: int = 20) -> dict[str, Path]:
    """:func:`write_analysis` of one member, with Cranfield queries as topic texts.

    What ``cscore text analyze`` writes.

    Parameters
    ----------
    model : RetrievalModel or RetrievalEnsemble
    text : str
    out_dir : str or Path
    side : {"query", "document"}
    member : int
        For an ensemble: which member to analyze (ignored for one model).
    n_topic_queries : int
        The first ``n_topic_queries`` queries of the shipped Cranfield are
        added to the topic-cell table (0: none).

    Returns
    -------
    dict
        Name -> path (see :func:`write_analysis`).
    """
    from .data import load_cranfield

    members = getattr(model, "members", None)
    if members is not None:
        if not isinstance(member, int) or not 0 <= member < len(members):
            raise ValueError(f"member must be in [0, {len(members)}), got {member!r}")
        model = members[member]
    topic: list[str] = []
    if n_topic_queries > 0:
        topic = load_cranfield().queries[:n_topic_queries]
    return write_analysis(model, text, out_dir, side=side, topic_texts=topic)
