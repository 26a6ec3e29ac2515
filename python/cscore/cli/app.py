"""The ``cscore`` command line: ``cscore <subcommand> ...``.

Each subcommand lives in its own module, which defines ``HELP`` (a one-line
description), ``add_arguments(parser)`` and ``run(args) -> int``.  The table
:data:`SUBCOMMAND_MODULES` names them; this module imports them (lazily, when
the parser is built) and they never import this module back.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
from typing import Callable, NoReturn

__all__ = ["SUBCOMMAND_MODULES", "build_parser", "main"]

AddArgs = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

#: subcommand name -> module that defines ``HELP``, ``add_arguments`` and ``run``.
SUBCOMMAND_MODULES: dict[str, str] = {
    "version": "cscore.cli.version",
    "demo": "cscore.cli.demo",
    "bench": "cscore.cli.bench",
    "train": "cscore.cli.train",
    "models": "cscore.cli.models",
    "decode": "cscore.cli.decode",
    "decoders": "cscore.cli.decoders",
    "seq": "cscore.cli.seq",
    "text": "cscore.cli.text",
}


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose "invalid choice" errors suggest the closest choice."""

    def error(self, message: str) -> NoReturn:
        """Report ``message`` (with "did you mean ...?" for a near miss) and exit 2."""
        bad = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if bad:
            choices = re.findall(r"'([^']*)'", bad.group(2))
            close = difflib.get_close_matches(bad.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
        super().error(message)


def load_subcommands() -> dict[str, tuple[str, AddArgs, Run]]:
    """Import every subcommand module.

    Returns
    -------
    dict
        name -> ``(help, add_arguments, run)`` in the order of
        :data:`SUBCOMMAND_MODULES`.
    """
    out: dict[str, tuple[str, AddArgs, Run]] = {}
    for name, module_name in SUBCOMMAND_MODULES.items():
        mod = importlib.import_module(module_name)
        out[name] = (mod.HELP, mod.add_arguments, mod.run)
    return out


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand.

    Returns
    -------
    argparse.ArgumentParser
        The ``cscore`` parser; each subcommand's namespace carries ``_run``.
    """
    from .._version import __version__

    parser = _Parser(
        prog="cscore", description="Compressive-sensing decoders: decode, train, benchmark."
    )
    parser.add_argument("-V", "--version", action="version", version=f"cscore {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add_args, run) in load_subcommands().items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_args(p)
        p.set_defaults(_run=run)
        _name_commands(p, name)
    return parser


def _name_commands(parser: argparse.ArgumentParser, command: str) -> None:
    """Record on ``parser`` and its nested subparsers the command each one is.

    ``cscore text train`` then reports its errors as ``cscore text train: error:``,
    as argparse does for its own errors of that subparser.
    """
    parser.set_defaults(_command=command)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, nested in action.choices.items():
                _name_commands(nested, f"{command} {name}")


#: Exceptions that mean "bad input or environment", reported without a traceback.
#: (``ModelFileError`` is a ``ValueError``; any ``OSError`` with an ``errno`` -- a
#: file system's report such as "File name too long" -- is one too.)  Anything
#: else is a bug and keeps its traceback; ``CSCORE_TRACEBACK=1`` shows tracebacks for these too.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
    ImportError,
)


def _os_message(exc: OSError) -> str:
    """A file-system error in one line, a very long file name shortened."""
    name = os.fsdecode(exc.filename) if exc.filename is not None else None
    if name is not None and len(name) > 200:
        name = f"{name[:100]}...({len(name)} characters)"
    what = exc.strerror or type(exc).__name__
    return f"{what}: {name}" if name is not None else what


def error_prefix(command: str | None) -> str:
    """The one prefix of every error message: ``cscore <command>: error:``.

    Parameters
    ----------
    command : str or None
        The subcommand (None: the top level).

    Returns
    -------
    str
    """
    return f"cscore {command}: error:" if command else "cscore: error:"


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
        (reported as ``cscore <command>: error: ...`` on stderr, without a
        traceback), 130 when interrupted (Ctrl-C: one line, no traceback).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    args._argv = ["cscore", *(sys.argv[1:] if argv is None else argv)]  # the exact command
    if not hasattr(args, "_run"):
        parser.print_help()
        return 2
    command = getattr(args, "_command", args.command)
    try:
        status = int(args._run(args) or 0)
        sys.stdout.flush()  # a reader that went away shows here, where it is handled
        return status
    except KeyboardInterrupt:
        if os.environ.get("CSCORE_TRACEBACK"):
            raise
        print(f"cscore {command}: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
    except BrokenPipeError:
        # the reader went away (``cscore models | head``): not an error of ours;
        # stdout goes to devnull so that the interpreter's final flush is quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command cut off this way
    except USER_ERRORS as exc:
        if os.environ.get("CSCORE_TRACEBACK"):
            raise
        if isinstance(exc, ImportError) and exc.name and "pip install" not in str(exc):
            msg = f"{exc} (is the optional dependency {exc.name!r} installed?)"
        else:
            msg = str(exc) or type(exc).__name__
        print(f"{error_prefix(command)} {msg}", file=sys.stderr)
        return 2
    except OSError as exc:
        # a file system's report (it carries an errno: a name too long, a full disk,
        # ...) is about the user's paths; an OSError without one is a bug
        if exc.errno is None or os.environ.get("CSCORE_TRACEBACK"):
            raise
        print(f"{error_prefix(command)} {_os_message(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
