"""``python -m commcheck.cli``: the ``commcheck`` command (benchmarks time it this way)."""

import sys

from commcheck.cli import main

sys.exit(main())
