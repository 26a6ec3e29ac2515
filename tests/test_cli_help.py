"""Every option of every ``cscore`` subcommand has a help text that shows its default.

The whole argparse tree is walked (subcommands, their actions, nested
subcommands such as ``cscore text train``), so a new option without help, or
with a default the help does not show, fails here (issue 27).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from cscore.cli.app import build_parser

#: actions that take no value: their help need not name a default
FLAGS = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction,
         argparse._CountAction, argparse._VersionAction)


def walk(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    """(command, action) for every action below ``parser``, nested subparsers included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for nested in action.choices.values():
                yield from walk(nested)
        elif not isinstance(action, argparse._HelpAction):
            yield parser.prog, action


def shown(default: object) -> str:
    """How a default reads in a help text: ``[0, 1]`` as ``0 1``."""
    if isinstance(default, (list, tuple)):
        return " ".join(str(v) for v in default)
    return str(default)


def missing_help(parser: argparse.ArgumentParser) -> list[str]:
    """``command option: what is missing`` for every option whose help falls short."""
    out = []
    for command, action in walk(parser):
        name = "/".join(action.option_strings) or action.dest
        text = action.help or ""
        if not text.strip() or text == argparse.SUPPRESS:
            out.append(f"{command} {name}: no help")
            continue
        if not action.option_strings or isinstance(action, FLAGS):
            continue
        if "default" not in text and "required" not in text:
            out.append(f"{command} {name}: the help does not say the default")
        elif action.default not in (None, [], ()) and shown(action.default) not in text:
            out.append(f"{command} {name}: the default {shown(action.default)!r} is not shown")
    return out


def test_the_walk_reaches_every_level():
    parser = build_parser()
    commands = {command for command, _ in walk(parser)}
    assert {"cscore demo", "cscore bench", "cscore decode", "cscore train",
            "cscore text train", "cscore text search", "cscore seq bench"} <= commands
    options = {(c, o) for c, a in walk(parser) for o in a.option_strings}
    assert ("cscore demo", "--k") in options
    assert ("cscore text train", "--lr") in options


def test_every_option_has_help_with_its_default():
    assert missing_help(build_parser()) == []


def test_the_check_catches_a_bare_option_and_a_hidden_default():
    parser = argparse.ArgumentParser(prog="cscore")
    sub = parser.add_subparsers()
    p = sub.add_parser("x", prog="cscore x")
    p.add_argument("--bare", type=int, default=3)
    p.add_argument("--vague", type=int, default=7, help="a number (default: the usual)")
    p.add_argument("--fine", type=int, default=5, help="a number (default 5)")
    p.add_argument("--flag", action="store_true", help="a switch")
    assert missing_help(parser) == [
        "cscore x --bare: no help",
        "cscore x --vague: the default '7' is not shown",
    ]


def test_demo_k_help_shows_its_default(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--k K DCT coefficients kept per 8x8 block, 1..64 (default 10)" in out
