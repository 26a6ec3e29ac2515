"""Rewrite the decoder table in README.md from the registry (`cscore.decoders.decoder_table`).

    PYTHONPATH=python python scripts/decoder_table.py

The table sits between the markers ``<!-- decoder-table -->`` and
``<!-- /decoder-table -->``; tests/test_architecture.py checks it is current.
"""

from __future__ import annotations

import re
from pathlib import Path

from cscore.decoders import decoder_table

README = Path(__file__).resolve().parents[1] / "README.md"
PATTERN = re.compile(r"(<!-- decoder-table -->\n).*?(\n<!-- /decoder-table -->)", re.S)


def main() -> None:
    """Replace the table between the markers with the registry's."""
    text = README.read_text(encoding="utf-8")
    new, n = PATTERN.subn(lambda m: m.group(1) + decoder_table() + m.group(2), text)
    if n != 1:
        raise SystemExit("README.md has no <!-- decoder-table --> block")
    README.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
