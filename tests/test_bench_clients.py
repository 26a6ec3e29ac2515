"""benchmarks/ and scripts/ are clients of the public API (issue 38).

Every ``cscore`` import of ``benchmarks/*.py`` and ``scripts/*.py`` is read from
the source: no private module or name (a part starting with ``_``), nothing from
the modules that are internal by design (the NumPy test oracles, the LSTM-only
weight files), and a name imported from a module that declares ``__all__`` is in
it.  A benchmark that needs an internal uses a public equivalent, or the
comparison is dropped (docs/architecture.md's map of benchmarks/ and scripts/).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py")])
#: Modules with public-looking names that are internal: test oracles and the LSTM-only
#: weight-file layer (the models' own ``load``/``save`` and ``cscore.models`` are public).
INTERNAL = ("cscore.decoders.learned.reference", "cscore.decoders.learned.weights")


def _private(parts: list[str]) -> bool:
    return any(p.startswith("_") and p != "__version__" for p in parts)


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def violations(path: Path) -> list[str]:
    """The imports of ``path`` that reach past the public API, as ``line: what``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "cscore":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if _private(full.split(".")) or node.module in INTERNAL or full in INTERNAL:
                    out.append(f"{node.lineno}: from {node.module} import {alias.name}")
                elif not _is_module(full):
                    try:
                        public = getattr(importlib.import_module(node.module), "__all__", None)
                    except ImportError:  # an optional dependency (torch, ...) is missing
                        continue
                    if public is not None and alias.name not in public:
                        out.append(f"{node.lineno}: {alias.name} is not in "
                                   f"{node.module}.__all__")
        elif isinstance(node, ast.Import):
            out += [f"{node.lineno}: import {a.name}" for a in node.names
                    if a.name.split(".")[0] == "cscore"
                    and (_private(a.name.split(".")) or a.name in INTERNAL)]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "cscore" and _private([node.attr]):
            out.append(f"{node.lineno}: cscore.{node.attr}")
    return out


def test_the_clients_are_found() -> None:
    names = {p.name for p in CLIENTS}
    assert {"bench_lstm_quality.py", "bench_lstm_speed.py", "train_pretrained.py"} <= names


@pytest.mark.parametrize("path", CLIENTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_only_public_api(path: Path) -> None:
    assert violations(path) == []


def test_the_check_sees_private_imports(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import cscore._blas\nfrom cscore import _core\n"
                   "from cscore.seq import _esn\nfrom cscore.decoders.learned.reference import x\n"
                   "from cscore.bench.report import machine\nimport cscore\ncscore._config\n"
                   "from cscore.bench import heldout_mnist\n")
    assert [v.split(":")[0] for v in violations(bad)] == ["1", "2", "3", "4", "5", "7"]
