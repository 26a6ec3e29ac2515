"""The package's layers (docs/architecture.md), checked by reading every import.

Each module of ``python/cscore`` belongs to a layer; a layer may import only the
layers listed for it in ``ALLOWED``.  Imports inside functions count too (a lazy
import is still a dependency), and no set of modules may import each other in a
circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cscore

ROOT = Path(cscore.__file__).resolve().parent

#: layer -> the layers its modules may import (besides their own layer)
ALLOWED: dict[str, set[str]] = {
    "infra": set(),
    "models": {"infra"},
    "decoders": {"infra", "models"},
    "datasets": {"infra"},
    "training": {"infra", "models", "decoders", "datasets"},
    "pipelines": {"infra", "models", "decoders"},
    "seq": {"infra", "models"},
    "text": {"infra", "models"},
    "bench": {"infra", "models", "decoders", "datasets", "training"},
    "cli": {"infra", "models", "decoders", "datasets", "training", "pipelines", "seq", "text",
            "bench"},
    # cscore.testing: the public conformance check (docs/decoders.md)
    "testing": {"infra", "models", "decoders"},
    "api": {"infra", "models", "decoders", "datasets", "training", "pipelines", "seq", "text",
            "bench", "cli", "testing"},
}

_PACKAGES = ("models", "decoders", "datasets", "training", "pipelines", "seq", "text", "bench",
             "cli", "testing")


def layer_of(module: str) -> str:
    """The layer of a dotted module name inside cscore."""
    parts = module.split(".")
    assert parts[0] == "cscore", module
    if len(parts) == 1 or parts[1] in ("__main__", "dask"):
        return "api"
    if parts[1] in _PACKAGES:
        return parts[1]
    return "infra"  # _core, _config, _validation, _blas, _torch, result, metrics, problem


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    base = ROOT.parent / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file() or \
        any(base.parent.glob(base.name + ".*.so"))


def imports_of(path: Path) -> set[str]:
    """Every cscore module ``path`` imports (at any depth of its code)."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "cscore")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "cscore":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if _is_module(sub) else target)
    out.discard(me)
    return out


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): imports_of(p) for p in sorted(ROOT.rglob("*.py"))}


def test_layer_of_examples():
    assert layer_of("cscore.decoders.learned.lstm") == "decoders"
    assert layer_of("cscore.models.format") == "models"
    assert layer_of("cscore._validation") == "infra"
    assert layer_of("cscore") == "api"


def test_imports_follow_the_layers():
    bad = []
    for mod, targets in _graph().items():
        src = layer_of(mod)
        for t in targets:
            dst = layer_of(t)
            if dst != src and dst not in ALLOWED[src]:
                bad.append(f"{mod} ({src}) imports {t} ({dst})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_checker_sees_a_forbidden_import(tmp_path, monkeypatch):
    # a decoder module that imports the CLI must be reported
    fake = ROOT / "decoders" / "_zz_layer_probe.py"
    monkeypatch.setattr(Path, "rglob", lambda self, pat: [fake])
    monkeypatch.setattr(Path, "read_text",
                        lambda self, encoding=None: "from ..cli import app\n")
    with pytest.raises(AssertionError, match=r"imports cscore\.cli"):
        test_imports_follow_the_layers()


def test_readme_decoder_table_is_the_registry():
    from cscore.decoders import decoder_table

    readme = ROOT.parents[1] / "README.md"
    if not readme.is_file():
        pytest.skip("README.md is not beside the package (installed elsewhere)")
    text = readme.read_text(encoding="utf-8")
    block = text.split("<!-- decoder-table -->\n", 1)[1].split("\n<!-- /decoder-table -->", 1)[0]
    assert block == decoder_table(), "run: PYTHONPATH=python python scripts/decoder_table.py"
