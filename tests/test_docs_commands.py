"""Every ``cscore`` command shown in README.md and docs/*.md is a valid command, and
those of unmarked shell blocks run as written (issue 27).

Shell blocks are the fenced ```bash / ```sh / ```console blocks.  Every
``cscore`` line of every block is parsed by the real argument parser (a renamed
or removed option fails here, even in a block that cannot run in CI).  The
``cscore`` lines of a block run, in order, in a fresh temporary folder, unless
the line before its fence says why not, as for Python blocks
(``<!-- skip: needs ../shared/data -->``, ``<!-- skip: long run -->``).  Other
lines (``pip install``, ``python -m pytest``) are the CI script's own steps
(.ci/run) and are not run here.  A ``cscore`` command in an indented code block
(which this test could not see) is refused.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from cscore.cli.app import build_parser, main

#: Runs the commands (seconds each): left out of the sanitizer run like the Python examples.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = re.compile(
    r"(?:<!--\s*skip:\s*(?P<why>[^>]*?)\s*-->\s*\n)?```(?:bash|sh|console|shell)\n(?P<code>.*?)```",
    re.S)
FENCED = re.compile(r"```.*?```", re.S)
#: commands that need an optional package, by the words that say so
NEEDS = {"text train": "torch", "--train-models": "torch", "decode": "zarr"}


def commands(code: str) -> list[list[str]]:
    """The ``cscore`` commands of a shell block, as argument lists (without ``cscore``).

    Continuation lines are joined, comments dropped, ``nice -n N`` dropped, a
    ``[--option value]`` placeholder read as the option, and ``$var`` of a
    ``for var in a b c`` loop replaced by its first value.
    """
    code = code.replace("\\\n", " ")
    loops = dict(re.findall(r"\bfor\s+(\w+)\s+in\s+(\S+)", code))
    out = []
    for line in code.splitlines():
        for name, first in loops.items():
            line = line.replace(f"${name}", first)
        words = shlex.split(line.replace("[", " ").replace("]", " "), comments=True)
        if words[:1] == ["nice"]:
            words = words[3:]
        if words[:1] == ["cscore"]:
            out.append(words[1:])
    return out


def shell_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line number, code, skip reason) of each shell block of ``path``."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("code"), m.group("why"))
            for m in SHELL.finditer(text)]


def test_commands_are_read_as_a_shell_would():
    code = ("cscore a --x 1 \\\n    --y 'two words'   # a comment\npip install .\n"
            "nice -n 10 cscore b [--chunk 4]\nfor t in dct haar; do\n  cscore c --t $t\ndone\n")
    assert commands(code) == [["a", "--x", "1", "--y", "two words"], ["b", "--chunk", "4"],
                              ["c", "--t", "dct"]]


def test_the_documents_show_commands():
    found = [c for f in FILES for _, code, _ in shell_blocks(f) for c in commands(code)]
    assert len(found) >= 15
    assert ["demo", "--plot", "demo.png"] in found


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_shown_command_parses(path, capsys):
    parser = build_parser()
    for line, code, _ in shell_blocks(path):
        for argv in commands(code):
            try:
                parser.parse_args(argv)
            except SystemExit as exc:
                err = capsys.readouterr().err.strip().splitlines()[-1:]
                raise AssertionError(f"{path.name}:{line}: cscore {shlex.join(argv)}: "
                                     f"{err}") from exc


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_command_hides_in_an_indented_block(path):
    text = FENCED.sub("", path.read_text(encoding="utf-8"))
    hidden = re.findall(r"^(?: {4}|\t)(?:nice -n \d+ )?cscore .*$", text, re.M)
    assert hidden == [], f"{path.name}: put these in a fenced ```bash block: {hidden}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_unmarked_commands_run_as_written(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ran = 0
    for line, code, why in shell_blocks(path):
        if why:
            continue
        for argv in commands(code):
            joined = " ".join(argv)
            missing = [m for word, m in NEEDS.items()
                       if word in joined and importlib.util.find_spec(m) is None]
            if missing:
                pytest.skip(f"{path.name}:{line} needs {missing[0]}")
            assert main(argv) == 0, f"{path.name}:{line}: cscore {shlex.join(argv)} failed"
            ran += 1
    if ran == 0:
        pytest.skip(f"{path.name} has no unmarked cscore command")
