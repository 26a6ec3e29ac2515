"""``cscore version``: print the installed version."""

from __future__ import annotations

import argparse

__all__ = ["HELP", "add_arguments", "run"]

HELP = "print the version"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``cscore version`` takes no options."""


def run(args: argparse.Namespace) -> int:
    """Print ``cscore <version>``; return 0."""
    from .._version import __version__

    print(f"cscore {__version__}")
    return 0
