"""``cscore models``: list the pretrained models (decoders and text encoders)."""

from __future__ import annotations

import argparse

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


def run_models(args: argparse.Namespace) -> int:
    """Print the pretrained models as a table; return the exit status.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed ``cscore models`` options (``verbose``).

    Returns
    -------
    int
        0.
    """
    entries = pretrained_entries()
    if not entries:
        where = ", ".join(str(d) for d in model_dirs())
        print(f"no pretrained models installed (searched: {where})")
        return 0
    by_arch = {arch: s.name for s in decoder_specs() for arch in s.archs}
    header = ("name", "decoder", "M", "N", "L", "cells", "transform", "dataset", "size")
    rows: list[tuple[str, ...]] = []
    for e in entries:
        size = _size(e.size_bytes)
        if e.error:
            rows.append((e.name, "?", "?", "?", "?", "?", "?", f"unreadable: {e.error}", size))
            continue
        cells = f"{e.n_cells} ({e.cell})" if e.n_cells else "-"
        rows.append((e.name, by_arch.get(e.arch or "lstm", e.arch), str(e.M), str(e.N),
                     str(e.L), cells, e.transform, e.dataset, size))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for r, e in zip(rows, entries):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if getattr(args, "verbose", False):
            print(f"    {e.description}")
            print(f"    {e.path}")
    _print_text_models()
    return 0


def _print_text_models() -> None:
    """The sentence-embedding models of ``cscore text`` (thesis chapter 3)."""
    from ..text.pretrained import list_pretrained

    names = list_pretrained()
    if names:
        print(f"\ntext encoders (cscore text, cscore.text.pretrained): {', '.join(names)}")


HELP = "list the pretrained models: learned decoders and text encoders"
add_arguments = _add_arguments
run = run_models
