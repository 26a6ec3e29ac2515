"""The command line's structure: one-way imports, every subcommand reachable."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import cscore.cli.app as cli


@pytest.mark.parametrize("name", sorted(cli.SUBCOMMAND_MODULES))
def test_subcommand_modules_do_not_import_the_top_level_cli(name):
    mod = importlib.import_module(cli.SUBCOMMAND_MODULES[name])
    tree = ast.parse(Path(mod.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            resolved = importlib.util.resolve_name("." * node.level + target, mod.__package__) \
                if node.level else target
            assert resolved not in ("cscore.cli", "cscore.cli.app"), \
                f"{mod.__name__} imports the top-level cli"
            names = {a.name for a in node.names}
            assert not (resolved == "cscore.cli" and names & {"main", "app"})
        elif isinstance(node, ast.Import):
            assert all(a.name not in ("cscore.cli", "cscore.cli.app") for a in node.names)
    assert isinstance(mod.HELP, str) and mod.HELP
    assert callable(mod.add_arguments) and callable(mod.run)


def test_every_subcommand_has_help(capsys):
    parser = cli.build_parser()
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in cli.SUBCOMMAND_MODULES:
        assert name in out


def test_version_subcommand(capsys):
    import cscore

    assert cli.main(["version"]) == 0
    assert capsys.readouterr().out.strip() == f"cscore {cscore.__version__}"


def test_models_lists_each_model_with_its_decoder_and_the_text_models(capsys):
    import cscore

    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
    for name, _ in cscore.list_pretrained():
        model = cscore.pretrained(name)
        from cscore.decoders import decoder_specs

        expected = next(s.name for s in decoder_specs() if s.model_type is type(model))
        assert rows[name][1] == expected
    assert "0 ()" not in out
    assert "cranfield-lstm" in out.split("text encoders")[1]
