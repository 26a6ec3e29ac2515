"""``cscore decoders``: list the registered decoders and what each accepts.

One row per decoder of the registry (:func:`cscore.decoders.decoder_specs`):
what it is built from, the problem layout, its stopping rules, and whether it
takes a dense matrix, a scipy sparse matrix, a ``LinearOperator``, complex data
and a GPU.  Argument parsing and printing only.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["HELP", "accepts", "add_arguments", "run"]

HELP = "list the decoders and what each accepts (dense, sparse, operator, complex, GPU)"

#: the columns of :func:`accepts`, in the order printed
ACCEPTS = ("dense", "sparse", "operator", "complex", "GPU")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``cscore decoders``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser, extended in place.
    """
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print each decoder's description and settings")


def accepts(spec: Any) -> dict[str, bool]:
    """What the decoder of ``spec`` accepts.

    Parameters
    ----------
    spec : DecoderSpec
        A registry entry.

    Returns
    -------
    dict
        :data:`ACCEPTS` -> bool.  ``dense``, ``sparse``, ``operator``,
        ``complex``: the input kinds the registry records (``spec.inputs``: a
        NumPy ``A``, a scipy sparse matrix, a ``LinearOperator``, complex data;
        a model decoder takes its model's dense ``A``); ``GPU``: it takes a torch
        device (the setting ``device=``, docs/gpu.md).
    """
    kinds = set(getattr(spec, "inputs", ("dense",)))
    if spec.complex_ok:
        kinds.add("complex")
    out = {kind: kind in kinds for kind in ACCEPTS[:-1]}
    out["GPU"] = "device" in spec.settings  # the torch backend's device= (docs/gpu.md)
    return out


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """``rows`` under ``header`` in left-aligned columns, without trailing blanks."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def run(args: argparse.Namespace) -> int:
    """Print one row per registered decoder; return 0.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options (``verbose``).

    Returns
    -------
    int
        0.
    """
    from ..decoders import decoder_specs

    rows = []
    for s in decoder_specs():
        ok = accepts(s)
        rows.append((s.name, "model" if s.kind == "model" else "matrix",
                     "per channel" if s.layout == "columns" else "MMV",
                     ",".join(s.stopping) or "own",
                     *("yes" if ok[c] else "no" for c in ACCEPTS)))
    header = ("decoder", "from", "problem", "stopping", *ACCEPTS)
    for line in _table(header, rows):
        print(line)
    print()
    print("from: a sensing matrix A, or a model (--model; cscore models lists them)")
    print("problem: MMV decodes the L channels of (M, L) together; per channel: each alone")
    print("stopping: n_nonzero, tol, auto (noise estimated); own: its own convergence")
    print("dense, sparse, operator: A as a NumPy array, a scipy sparse matrix or a "
          "scipy LinearOperator; complex: complex64/complex128 data")
    print("GPU: takes device='cuda' (any torch device; needs PyTorch, docs/gpu.md)")
    if getattr(args, "verbose", False):
        print()
        for s in decoder_specs():
            print(f"{s.name}: {s.description}")
            print(f"    settings: {', '.join(s.settings) or '-'}")
    return 0
