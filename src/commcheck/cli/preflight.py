"""``commcheck preflight``: find every state that would lose a session, and set aside what can be.

Set aside (kept intact, renamed ``*.damaged-<time>``): damaged, cut-off or read-only perflogs;
a results database that is empty, damaged, of another schema or read-only. Refused (exit 2): a
reports or state path that is a file or not writable, a run already using the state directory.
"""

from __future__ import annotations

import sys

from commcheck import paths
from commcheck.cli import runstate
from commcheck.errors import EXIT_OK, EXIT_USAGE


def add_parsers(sub) -> None:
    pre = sub.add_parser('preflight', help='set aside damaged perflogs and results databases; '
                                           'name what would lose a session')
    pre.set_defaults(func=cmd_preflight)


def cmd_preflight(args) -> int:
    from commcheck.results import preflight
    found = preflight.problems(paths.REPORTS_DIR, paths.STATE_DIR)
    for line in found:
        print(f'ERROR: {line}', file=sys.stderr)
    if found:
        return EXIT_USAGE
    lock = runstate.RunLock(paths.STATE_DIR)
    lock.acquire(sys.argv)          # never move a file a running session writes
    try:
        moved = preflight.protect(paths.PERFLOG_DIR, paths.RESULTS_DB)
    finally:
        lock.release()
    for line in moved:
        print(f'commcheck: {line}')
    if not moved:
        print('commcheck: perflogs and results database are sound')
    return EXIT_OK
