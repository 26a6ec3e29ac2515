"""``cscore models``: list the pretrained models (decoders and text encoders)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..decoders import decoder_specs
from ..models.registry import model_dirs, pretrained_entries

__all__ = ["run_models"]


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also print descriptions and file paths"
    )


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """``rows`` under ``header`` in left-aligned columns, without trailing blanks."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def run_models(args: argparse.Namespace) -> int:
    """Print the pretrained models as two tables; return the exit status.

    The first table holds the learned decoders (``cscore.pretrained``), one row
    per model with its decoder name and problem; the second the sentence
    encoders of ``cscore text`` (``cscore.text.pretrained``).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed ``cscore models`` options (``verbose``).

    Returns
    -------
    int
        0.
    """
    verbose = bool(getattr(args, "verbose", False))
    entries = pretrained_entries()
    if not entries:
        where = ", ".join(str(d) for d in model_dirs())
        print(f"no pretrained decoder models installed (searched: {where})")
    else:
        by_arch: dict[str, str] = {}  # the first decoder registered for an architecture
        for s in decoder_specs():
            for arch in s.archs:
                by_arch.setdefault(arch, s.name)
        header = ("name", "decoder", "M", "N", "L", "cells", "transform", "dataset", "size")
        rows: list[tuple[str, ...]] = []
        for e in entries:
            size = _size(e.size_bytes)
            if e.error:
                rows.append((e.name, "?", "?", "?", "?", "?", "?", f"unreadable: {e.error}",
                             size))
                continue
            cells = f"{e.n_cells} ({e.cell})" if e.n_cells else "-"
            rows.append((e.name, by_arch.get(e.arch or "lstm", e.arch), str(e.M), str(e.N),
                         str(e.L), cells, e.transform, e.dataset, size))
        lines = _table(header, rows)
        print("decoder models (cscore.pretrained, cscore decode --model, cscore bench --model):")
        print(lines[0])
        for line, e in zip(lines[1:], entries):
            print(line)
            if verbose:
                print(f"    {e.description}")
                print(f"    {e.path}")
    _print_text_models(verbose)
    return 0


def _text_row(name: str, path: Path) -> tuple[str, ...]:
    """One text encoder's row: its kind and sizes, read from the file."""
    from ..text.model import load_model

    size = _size(path.stat().st_size)
    try:
        model = load_model(path)
    except (ValueError, OSError) as exc:
        return (name, "?", "?", "?", "?", "?", f"unreadable: {exc}", size)
    members = getattr(model, "members", None) or [model]
    first = members[0]
    trigrams = getattr(first.hasher, "trigrams", None)
    return (name, model.kind, str(len(members)), str(model.dim),
            str(len(trigrams)) if trigrams is not None else "?", str(first.max_words),
            str(model.info.get("dataset", "-")), size)


def _print_text_models(verbose: bool = False) -> None:
    """The sentence-embedding models of ``cscore text`` (thesis chapter 3), as a table."""
    from ..text.pretrained import STORE

    files = STORE.files()
    if not files:
        print("\nno pretrained text encoders installed (searched: "
              f"{', '.join(str(d) for d in STORE.dirs())})")
        return
    header = ("name", "kind", "members", "dim", "trigrams", "max words", "dataset", "size")
    lines = _table(header, [_text_row(name, path) for name, path in files.items()])
    print("\ntext encoders (cscore.text.pretrained, cscore text search/analyze/eval --model):")
    print(lines[0])
    for line, path in zip(lines[1:], files.values()):
        print(line)
        if verbose:
            print(f"    {path}")


HELP = "list the pretrained models: learned decoders and text encoders"
add_arguments = _add_arguments
run = run_models
