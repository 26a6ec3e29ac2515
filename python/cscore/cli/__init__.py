"""The ``cscore`` command line: argparse and printing only.

:mod:`cscore.cli.app` builds the parser from one module per subcommand
(``version``, ``demo``, ``bench``, ``train``, ``models``, ``decode``, ``decoders``, ``seq``,
``text``); the work they start lives in the library (:mod:`cscore.bench`,
:mod:`cscore.training`, :mod:`cscore.pipelines`, :mod:`cscore.seq`,
:mod:`cscore.text`), which never imports this package.
"""

from __future__ import annotations

from .app import build_parser, main

__all__ = ["build_parser", "main"]
