"""``python -m cscore`` runs the command line (same as the ``cscore`` script)."""

import sys

from .cli import main

sys.exit(main())
