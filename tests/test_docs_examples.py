"""Every Python example in README.md and docs/*.md runs as written.

The ```python blocks of one file run in order, in one namespace, in a fresh
temporary folder (a later block may use what an earlier one defined, as a reader
would).  A block is skipped only when the line before its fence says why, in an
HTML comment: ``<!-- skip: needs ../shared/data -->`` or ``<!-- skip: long run -->``
(also: ``<!-- skip: fragment -->`` for a snippet that only shows a shape, such
as a registration that needs a class defined elsewhere).  Blocks that need an
optional package (torch, zarr, dask) are skipped when it is missing.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

#: Pure-Python work (no new C++ paths): left out of the sanitizer run (scripts/sanitize.sh).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?:<!--\s*skip:\s*(?P<why>[^>]*?)\s*-->\s*\n)?```python\n(?P<code>.*?)```",
                   re.S)
OPTIONAL = {"torch": "torch", "zarr": "zarr", "dask": "dask", "distributed": "distributed"}


def blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line number, code, skip reason) of each python block of ``path``."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start("code")) + 1
        out.append((line, m.group("code"), m.group("why")))
    return out


def _missing_optional(code: str) -> str | None:
    for word, module in OPTIONAL.items():
        if re.search(rf"\b{word}\b", code) and importlib.util.find_spec(module) is None:
            return module
    return None


def test_blocks_are_found():
    assert sum(len(blocks(f)) for f in FILES) >= 10
    sample = "<!-- skip: long run -->\n```python\nx = 1\n```\n\n```python\ny = 2\n```\n"
    found = [(m.group("why"), m.group("code")) for m in FENCE.finditer(sample)]
    assert found == [("long run", "x = 1\n"), (None, "y = 2\n")]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_examples_run_as_written(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    found = blocks(path)
    if not found:
        pytest.skip(f"{path.name} has no python example")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran = 0
    for line, code, why in found:
        if why:
            continue
        missing = _missing_optional(code)
        if missing:
            pytest.skip(f"{path.name}:{line} needs {missing}")
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{path.name}, block at line {line}: {exc!r}") from exc
        ran += 1
    if ran == 0:
        pytest.skip(f"every example of {path.name} is marked skip")
