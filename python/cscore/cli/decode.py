"""``cscore decode``: decode a (B, M, L) array on disk into a zarr array, resumably.

``cscore decode --verify OUT`` checks a finished run instead: every chunk against
its recorded checksum (exit 0 when intact, 1 when damaged or unfinished).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

HELP = "decode measurements (.npy or zarr, B x M x L) into a zarr array, resumably"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``decode`` options to ``p``."""
    g = p.add_argument_group("decoder (a config file, or by flags)")
    g.add_argument("--config", type=Path, help="decoder config JSON (from Decoder.save; default: "
                   "none, give --decoder)")
    g.add_argument("--allow-outside", action="store_true",
                   help="let --config name files outside its own folder (refused by default)")
    from ..decoders import decoder_specs

    names = ", ".join(f"{s.name}{' (needs --model)' if s.kind == 'model' else ''}"
                      for s in decoder_specs())
    g.add_argument("--decoder", help=f"decoder name, one of: {names} (default: none, give "
                   "--config)")
    g.add_argument("--matrix", type=Path, help="sensing matrix A (M, N) as .npy (required by the "
                   "matrix decoders; default: none)")
    g.add_argument("--model", help="model decoders: pretrained name or model file "
                   "(default: none)")
    g.add_argument("--n-nonzero", type=int,
                   help="setting n_nonzero: atoms per channel (default: the decoder's)")
    g.add_argument("--tol", type=_tol,
                   help="setting tol: a residual threshold, or 'auto' (noise estimated from "
                        "the measurements) for decoders that support it (default: the decoder's)")
    g.add_argument("--device", help="setting device: a torch device ('cuda', 'cuda:1', "
                   "'cpu') for decoders that take it (needs torch; default: none, the "
                   "compiled CPU path)")
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="another setting (VALUE parsed as JSON, else a string); repeatable (default: "
        "none)",
    )
    p.add_argument("--input", type=Path, help="measurements .npy or zarr array (required)")
    p.add_argument("--output", type=Path, help="output zarr array (directory) (required)")
    p.add_argument("--chunk", type=int, help="problems per chunk (default: about 4 MiB of input)")
    p.add_argument("--scheduler", help="dask.distributed scheduler address (needs "
                   "cscore-decoders[dask]; default: none, decode in this process)")
    p.add_argument("--overwrite", action="store_true", help="discard an existing output")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--verify",
        type=Path,
        metavar="OUT",
        help="check the finished run OUT (every chunk against its checksum; with --input, "
        "also that input) and exit: 0 intact, 1 damaged or unfinished (default: none, "
        "decode)",
    )


def _tol(text: str) -> float | str:
    """``--tol``: a number or "auto"."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def build_decoder(args: argparse.Namespace) -> Any:
    """The decoder named by ``--config`` or by the flags."""
    from ..decoders import Decoder

    if args.config is not None:
        if args.decoder or args.matrix or args.model or args.set or args.n_nonzero or args.tol:
            raise ValueError("give either --config or the decoder flags, not both")
        try:
            dec = Decoder.from_config(args.config, allow_outside=args.allow_outside)
            device = getattr(args, "device", None)
            if device is None:
                return dec
            cfg = dec.config  # --device overrides the config's (its files were checked above)
            cfg["settings"] = {**cfg["settings"], "device": device}
            return Decoder.from_config(cfg, allow_outside=True)
        except TypeError as exc:  # a setting of the wrong type in the config
            raise ValueError(str(exc)) from None
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
    if getattr(args, "device", None) is not None:
        settings["device"] = args.device
    A = _load_matrix(args.matrix) if args.matrix is not None else None
    try:
        return Decoder(args.decoder, A, model=args.model, **settings)
    except TypeError as exc:  # a setting of the wrong type: the user's, not a bug
        raise ValueError(str(exc)) from None


def _load_matrix(path: Path) -> Any:
    """The sensing matrix of ``--matrix``: one array in a ``.npy`` file."""
    import numpy as np

    try:
        A = np.load(path, allow_pickle=False)
    except (EOFError, ValueError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"--matrix {path} is not a readable .npy file ({exc})") from None
    if not isinstance(A, np.ndarray):
        A.close()
        raise ValueError(f"--matrix {path} is an .npz archive; give one (M, N) array as .npy")
    return A


def verify(args: argparse.Namespace) -> int:
    """Run ``cscore decode --verify OUT``: 0 when the run is intact, 1 otherwise."""
    from ..pipelines import verify_output

    if args.output is not None or args.config or args.decoder:
        raise ValueError("--verify OUT takes only the output (and optionally --input)")
    report = verify_output(args.verify, input=args.input)
    print(report.summary())
    if not report.ok:
        print(f"cscore decode: error: {args.verify} failed verification; run the decode "
              "command again to decode the damaged or missing chunks", file=sys.stderr)
    return 0 if report.ok else 1


def _damage_note(caught: list[warnings.WarningMessage]) -> str:
    """The summary's note on chunks decoded again; other warnings are shown as usual."""
    from ..pipelines import ChunkDamageWarning

    chunks: list[int] = []
    for w in caught:
        if isinstance(w.message, ChunkDamageWarning):
            chunks += w.message.chunks
            print(f"cscore decode: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if not chunks:
        return ""
    return f"; {len(chunks)} recorded chunk(s) failed verification and were decoded again"


def _require_zarr3() -> None:
    """Refuse a missing zarr, or zarr 2, before anything is written."""
    from .._optional import require

    require("zarr", "cscore decode", min_version="3")


def _input_rows(path: Path) -> int | None:
    """M of the (B, M, L) input, read from its header only (None when unreadable here)."""
    import numpy as np

    try:
        if path.suffix == ".npy":
            return int(np.load(path, mmap_mode="r", allow_pickle=False).shape[-2])
        import zarr

        return int(zarr.open_array(str(path), mode="r").shape[-2])
    except Exception:  # decode_file reports an unreadable input in its own words
        return None


def check_orientation(dec: Any, input_path: Path) -> None:
    """Refuse a sensing matrix given as (N, M), with a hint, before any output exists.

    Parameters
    ----------
    dec : Decoder
        The decoder of ``--matrix``.
    input_path : Path
        The measurements (B, M, L).

    Raises
    ------
    ValueError
        The input's M is the matrix's column count (and not its row count).
    """
    M = _input_rows(input_path)
    if M is not None and M != dec.M and M == dec.N:
        raise ValueError(
            f"input has M = {M} measurements per channel, but --matrix is ({dec.M}, {dec.N}): "
            f"is it transposed? A sensing matrix is (M, N) = (measurements, atoms); save "
            "A.T instead (np.save(path, A.T))")


def _connect(address: str) -> Any:
    """A dask.distributed client of ``--scheduler``, connected before any output exists."""
    from .._optional import require

    distributed = require("distributed", "cscore decode --scheduler")
    try:
        return distributed.Client(address)
    except OSError as exc:  # distributed's timeout and refusal carry no errno
        raise ValueError(f"--scheduler {address}: cannot reach the scheduler ({exc})") from None


def run(args: argparse.Namespace) -> int:
    """Run ``cscore decode``; 130 when interrupted (finished chunks are kept).

    Parameters
    ----------
    args : argparse.Namespace
        The options of :func:`add_arguments`.

    Returns
    -------
    int
        0 when decoded, 130 when interrupted; ``--verify``: 0 intact, 1 not.
    """
    if args.verify is not None:
        return verify(args)
    if args.input is None or args.output is None:
        raise ValueError("give --input and --output (or --verify OUT)")
    _require_zarr3()
    dec = build_decoder(args)
    if args.matrix is not None:
        check_orientation(dec, args.input)
    client = _connect(args.scheduler) if args.scheduler else None
    try:
        return _decode(args, dec, client)
    finally:
        if client is not None:
            client.close()


def _decode(args: argparse.Namespace, dec: Any, client: Any) -> int:
    """Decode ``--input`` into ``--output`` (on ``client`` when given) and report."""
    from ..pipelines import ChunkDamageWarning, decode_file

    state = {"done": 0, "total": 0, "decoded": 0}
    was_complete = not args.overwrite and _finished(args.output)

    def on_chunk(done: int, total: int) -> None:
        state["done"], state["total"] = done, total
        state["decoded"] += 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ChunkDamageWarning)
        try:
            arr = decode_file(
                dec,
                args.input,
                args.output,
                chunk=args.chunk,
                progress=not args.no_progress,
                scheduler=client,
                overwrite=args.overwrite,
                on_chunk=on_chunk,
            )
        except KeyboardInterrupt:
            _damage_note(caught)
            print(
                f"cscore decode: interrupted; {state['done']} of {state['total'] or '?'} "
                f"chunks are finished and recorded in {args.output}; run the same command "
                "to resume",
                file=sys.stderr,
            )
            return 130
        except BaseException:
            _damage_note(caught)  # show what was found before the error
            raise
    note = _damage_note(caught)
    if was_complete and not state["decoded"]:
        print(f"{args.output} is already complete: shape {tuple(arr.shape)}, dtype "
              f"{arr.dtype}; nothing decoded (--overwrite starts afresh)", file=sys.stderr)
        return 0
    print(f"wrote {args.output}: shape {tuple(arr.shape)}, dtype {arr.dtype}{note}",
          file=sys.stderr)  # fmt: skip
    return 0


def _finished(output: Path) -> bool:
    """Whether ``output`` holds a run its manifest records as complete."""
    from ..pipelines.manifest import MANIFEST_NAME

    try:
        return json.loads((output / MANIFEST_NAME).read_text()).get("complete") is True
    except (OSError, ValueError, AttributeError):
        return False
