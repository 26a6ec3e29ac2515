"""``cscore decode``: decode a (B, M, L) array on disk into a zarr array, resumably."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HELP = "decode measurements (.npy or zarr, B x M x L) into a zarr array, resumably"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``decode`` options to ``p``."""
    g = p.add_argument_group("decoder (a config file, or by flags)")
    g.add_argument("--config", type=Path, help="decoder config JSON (from Decoder.save)")
    from ..decoders import decoder_specs

    names = ", ".join(f"{s.name}{' (needs --model)' if s.kind == 'model' else ''}"
                      for s in decoder_specs())
    g.add_argument("--decoder", help=f"decoder name, one of: {names}")
    g.add_argument("--matrix", type=Path, help="sensing matrix A (M, N) as .npy")
    g.add_argument("--model", help="model decoders: pretrained name or model file")
    g.add_argument("--n-nonzero", type=int, help="setting n_nonzero")
    g.add_argument("--tol", type=float, help="setting tol")
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="another setting (VALUE parsed as JSON, else a string); repeatable",
    )
    p.add_argument("--input", type=Path, required=True, help="measurements .npy or zarr array")
    p.add_argument("--output", type=Path, required=True, help="output zarr array (directory)")
    p.add_argument("--chunk", type=int, help="problems per chunk (default: about 4 MiB of input)")
    p.add_argument("--scheduler", help="dask.distributed scheduler address (needs cscore[dask])")
    p.add_argument("--overwrite", action="store_true", help="discard an existing output")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def build_decoder(args: argparse.Namespace) -> Any:
    """The decoder named by ``--config`` or by the flags."""
    import numpy as np

    from ..decoders import Decoder

    if args.config is not None:
        if args.decoder or args.matrix or args.model or args.set or args.n_nonzero or args.tol:
            raise ValueError("give either --config or the decoder flags, not both")
        return Decoder.from_config(args.config)
    if not args.decoder:
        raise ValueError("name the decoder: --config FILE or --decoder NAME")
    settings: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        settings[key.replace("-", "_")] = _parse_value(value)
    if args.n_nonzero is not None:
        settings["n_nonzero"] = args.n_nonzero
    if args.tol is not None:
        settings["tol"] = args.tol
    A = np.load(args.matrix, allow_pickle=False) if args.matrix is not None else None
    return Decoder(args.decoder, A, model=args.model, **settings)


def run(args: argparse.Namespace) -> int:
    """Run ``cscore decode``; 130 when interrupted (finished chunks are kept)."""
    from ..pipelines import decode_file

    dec = build_decoder(args)
    state = {"done": 0, "total": 0}

    def on_chunk(done: int, total: int) -> None:
        state["done"], state["total"] = done, total

    try:
        arr = decode_file(
            dec,
            args.input,
            args.output,
            chunk=args.chunk,
            progress=not args.no_progress,
            scheduler=args.scheduler,
            overwrite=args.overwrite,
            on_chunk=on_chunk,
        )
    except KeyboardInterrupt:
        print(
            f"cscore decode: interrupted; {state['done']} of {state['total'] or '?'} chunks "
            f"are finished and recorded in {args.output}; run the same command to resume",
            file=sys.stderr,
        )
        return 130
    print(f"wrote {args.output}: shape {tuple(arr.shape)}, dtype {arr.dtype}", file=sys.stderr)
    return 0
