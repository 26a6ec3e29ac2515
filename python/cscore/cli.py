"""The ``cscore`` command line: ``cscore <subcommand> ...``.

Subcommands register themselves in :data:`SUBCOMMANDS`; each is a pair of
functions ``(add_arguments(parser), run(args) -> int)``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

__all__ = ["main"]

AddArgs = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

#: name -> (help, add_arguments, run)
SUBCOMMANDS: dict[str, tuple[str, AddArgs, Run]] = {}


def _version(_args: argparse.Namespace) -> int:
    import cscore

    print(f"cscore {cscore.__version__}")
    return 0


SUBCOMMANDS["version"] = ("print the version", lambda p: None, _version)


def _register_subcommands() -> None:
    """Import the modules that add entries to :data:`SUBCOMMANDS`."""
    from .bench import cli as _bench_cli  # noqa: F401  (bench, demo)
    from .lstm_cs import (
        cli_models,  # noqa: F401  (models)
        cli_train,  # noqa: F401  (train)
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand.

    Returns
    -------
    argparse.ArgumentParser
        The ``cscore`` parser; each subcommand's namespace carries ``_run``.
    """
    _register_subcommands()
    parser = argparse.ArgumentParser(
        prog="cscore", description="Compressive-sensing decoders: decode, train, benchmark."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add_args, run) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_args(p)
        p.set_defaults(_run=run)
    return parser


#: Exceptions that mean "bad input or environment", reported without a traceback.
#: (``ModelFileError`` is a ``ValueError``.)  Anything else is a bug and keeps
#: its traceback; ``CSCORE_TRACEBACK=1`` shows tracebacks for these too.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
    ImportError,
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cscore`` console script.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 for bad arguments or unusable input
        (reported as ``cscore: error: ...`` on stderr, without a traceback).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "_run"):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except USER_ERRORS as exc:
        if os.environ.get("CSCORE_TRACEBACK"):
            raise
        if isinstance(exc, ImportError) and exc.name:
            msg = f"{exc} (is the optional dependency {exc.name!r} installed?)"
        else:
            msg = str(exc) or type(exc).__name__
        print(f"cscore: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
