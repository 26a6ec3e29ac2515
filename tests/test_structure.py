"""Size and coupling limits of the code (docs/architecture.md, "Limits").

Files are split by concept, and these limits keep a concept from growing
until a file holds several: no Python module over 600 lines and at most 5 over
500; at most 10 underscore names imported from another module of the package
(a shared helper gets a public name in the module that owns it); no C++ header
over 800 lines and no C++ function over 120.  Each checker is tested on a
small made-up input, so a limit that holds is not a checker that sees nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import cscore

ROOT = Path(cscore.__file__).resolve().parent
CPP = Path(__file__).resolve().parents[1] / "cpp"

MODULE_LINES = 600
MODULES_OVER_500 = 5
PRIVATE_IMPORTS = 10
HEADER_LINES = 800
FUNCTION_LINES = 120


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def private_imports(path: Path) -> list[str]:
    """``from X import _name`` lines of one module, where ``_name`` is not a module.

    Importing a private *module* of the package (``from . import _core``) is how
    a package uses its private modules and is not counted.
    """
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = path.parent
        for _ in range(max(node.level - 1, 0)):
            base = base.parent
        # the package folder the names come from (relative imports only)
        where = None
        if node.level:
            where = base.joinpath(*node.module.split(".")) if node.module else base
        for alias in node.names:
            name = alias.name
            if not name.startswith("_") or name.startswith("__"):
                continue
            if where is not None and ((where / f"{name}.py").exists() or (where / name).is_dir()
                                      or name == "_core"):
                continue
            out.append(f"{path.name}: from {'.' * node.level}{node.module or ''} import {name}")
    return out


_STRIP = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'"
                    r"|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.S | re.M)
_CONTAINER = re.compile(r"^\s*(template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern)\b",
                        re.S)


def cpp_functions(text: str) -> list[tuple[str, int]]:
    """(head, line count) of every function body in C++ source, by brace matching.

    Comments, string literals and preprocessor lines are blanked first.  A brace
    opened outside any function, whose preceding statement text holds a parameter
    list and is not a namespace, class, struct, union, enum or extern block, starts
    a function; it ends at the matching brace.
    """
    text = _STRIP.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    out: list[tuple[str, int]] = []
    depth = 0
    func_depth: int | None = None
    start_line = 0
    head_start = 0
    head = ""
    line = 1
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "{":
            if func_depth is None:
                stmt = text[head_start:i]
                if "(" in stmt and not _CONTAINER.match(stmt) and "=" not in stmt.split("(")[0]:
                    func_depth = depth
                    start_line = line
                    head = " ".join(stmt.split())[:80]
                else:
                    head_start = i + 1
            depth += 1
        elif ch == "}":
            depth -= 1
            if func_depth is not None and depth == func_depth:
                out.append((head, line - start_line + 1))
                func_depth = None
            if func_depth is None:
                head_start = i + 1
        elif ch == ";" and func_depth is None:
            head_start = i + 1
    return out


def test_python_modules_are_split_by_concept():
    sizes = {str(p.relative_to(ROOT)): _line_count(p) for p in ROOT.rglob("*.py")}
    too_long = {p: n for p, n in sizes.items() if n > MODULE_LINES}
    assert not too_long, f"modules over {MODULE_LINES} lines: {too_long}"
    over_500 = sorted(p for p, n in sizes.items() if n > 500)
    assert len(over_500) <= MODULES_OVER_500, f"modules over 500 lines: {over_500}"


def test_few_private_names_cross_modules():
    found = [hit for p in sorted(ROOT.rglob("*.py")) for hit in private_imports(p)]
    assert len(found) <= PRIVATE_IMPORTS, "\n".join(found)


def test_private_import_checker(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "_mod.py").write_text("")
    (pkg / "a.py").write_text(
        "from . import _mod\nfrom ._mod import _helper, public\nfrom .b import _Thing\n")
    assert private_imports(pkg / "a.py") == ["a.py: from ._mod import _helper",
                                             "a.py: from .b import _Thing"]


@pytest.mark.skipif(not CPP.is_dir(), reason="the C++ sources are not beside the tests")
def test_cpp_headers_and_functions_are_small():
    files = sorted(CPP.rglob("*.hpp")) + sorted(CPP.rglob("*.cpp"))
    assert files
    long_headers = {f.name: _line_count(f) for f in files
                    if f.suffix == ".hpp" and _line_count(f) > HEADER_LINES}
    assert not long_headers, f"headers over {HEADER_LINES} lines: {long_headers}"
    long_functions = [(f.name, head, n) for f in files
                      for head, n in cpp_functions(f.read_text(encoding="utf-8"))
                      if n > FUNCTION_LINES]
    assert not long_functions, f"functions over {FUNCTION_LINES} lines: {long_functions}"


def test_cpp_function_checker():
    src = """
#pragma once
#if defined(__AVX2__)
#define TWICE(x) \\
    ((x) + (x))
#endif
namespace a { namespace b {
struct S { int f(int x) const { return x; } };   // method: a function of 1 line
template <class T>
inline T g(T x) {
    if (x > 0) { x = -x; }
    for (int i = 0; i < 3; ++i) {
        x += T(i);   // "{ not a brace }"
    }
    auto h = [&](int y) { return y; };
    return x;
}
static const int table[] = {1, 2, 3};
}}  // namespace
"""
    found = cpp_functions(src)
    assert [n for _, n in found] == [1, 8]
    assert found[1][0].startswith("template <class T> inline T g(T x)")
