"""The commands' console: rich tables and progress, with one width rule for all of them."""

from __future__ import annotations

import sys

from rich.console import Console

#: int: columns when stdout is a file or a pipe (cron, nohup, a CI log): a table keeps whole
#: rows instead of wrapping at rich's default of 80. On a terminal, the terminal's width.
LOG_WIDTH = 200


def make() -> Console:
    """A rich Console without highlighting, :data:`LOG_WIDTH` wide unless on a terminal."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else LOG_WIDTH)
